package cli

import "github.com/tablejournal/tablejournal/store"

// partition is what --pk selects: that partition when given (--pk "" is the
// partition with the empty key, which Azure allows), else the whole table.
func (rc *replayCmd) partition() store.Partition {
	if rc.set["pk"] {
		return store.InPartition(rc.pk)
	}
	return store.AllPartitions
}

// pkJSON is a partition in JSON output: the key, or null for the whole
// table.
func pkJSON(pk string, all bool) any {
	if all {
		return nil
	}
	return pk
}
