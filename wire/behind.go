package wire

import (
	"fmt"
	"strings"
	"time"
)

// BehindBucketPrefix names the key-value bucket recording the partitions
// a projection found behind what it applied (the store lost confirmed
// writes): BehindBucket names one per journal and consumer prefix.
const BehindBucketPrefix = "TABLEJOURNAL_BEHIND"

// BehindBucket returns the bucket recording the partitions behind for the
// projector consumers named durable on journal stream: BehindBucketPrefix
// for the defaults ("JOURNAL", "projector"), else
// BehindBucketPrefix_<stream>_<durable>, each a different store.
func BehindBucket(stream, durable string) string {
	if stream == "" {
		stream = JournalStream
	}
	if durable == "" {
		durable = "projector"
	}
	if stream == JournalStream && durable == "projector" {
		return BehindBucketPrefix
	}
	clean := func(s string) string {
		return strings.Map(func(r rune) rune {
			if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
				return r
			}
			return '_'
		}, s)
	}
	return BehindBucketPrefix + "_" + clean(stream) + "_" + clean(durable)
}

// BehindKey is the key of a partition in a BehindBucket:
// <table>.<pk-token> (PKToken).
func BehindKey(table, pk string) string {
	return table + "." + PKToken(pk)
}

// ParseBehindKey is the inverse of BehindKey.
func ParseBehindKey(key string) (table, pk string, err error) {
	table, tok, ok := strings.Cut(key, ".")
	if !ok || table == "" {
		return "", "", fmt.Errorf("%w: %q is not <table>.<pk-token>", ErrBadSubject, key)
	}
	pk, err = ParsePKToken(tok)
	return table, pk, err
}

// BehindPartition is the value of a partition's key in a BehindBucket, in
// JSON: a partition whose table lacks writes the projector applied and
// the store confirmed. It is written once, when the partition is found,
// and deleted when the partition is rebuilt from the journal.
type BehindPartition struct {
	Table string `json:"table"`
	PK    string `json:"pk"`
	// TableSeq is the journal sequence the partition's fence held when it
	// was found (0: no fence); AppliedSeq a later command that applied (Cmd
	// its ID) whose effect the table lacked.
	TableSeq   uint64 `json:"tableSeq"`
	AppliedSeq uint64 `json:"appliedSeq"`
	Cmd        string `json:"cmd"`
	// Found is when it was found; Instance the projector that found it.
	Found    time.Time `json:"found"`
	Instance string    `json:"instance,omitempty"`
}

func (b BehindPartition) String() string {
	return fmt.Sprintf("%s/%q: the table holds up to seq %d, seq %d (command %s) applied", b.Table, b.PK, b.TableSeq, b.AppliedSeq, b.Cmd)
}
