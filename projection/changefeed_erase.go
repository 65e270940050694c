package projection

import "github.com/tablejournal/tablejournal/wire"

// eraseNotice is the change of an applied erase: its notice (wire.ChangeErase:
// the key and no values; Partition for a whole partition); none for an entry
// that is no erase.
func eraseNotice(e Entry) []Change {
	if e.Erase == nil {
		return nil
	}
	if e.Erase.RK == nil {
		return []Change{{Kind: wire.ChangeErase, Partition: true}}
	}
	return []Change{{Kind: wire.ChangeErase, RK: *e.Erase.RK}}
}
