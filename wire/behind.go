package wire

import (
	"crypto/sha256"
	"encoding/hex"
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
// for the defaults (JournalStream, DefaultDurable), else
// BehindBucketPrefix_<stream>_<durable>, each a different store.
func BehindBucket(stream, durable string) string {
	if stream == "" {
		stream = JournalStream
	}
	if durable == "" {
		durable = DefaultDurable
	}
	if stream == JournalStream && durable == DefaultDurable {
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
// <table-token>.sha256.<hex SHA-256 of the partition key>. The table is
// its lower-case token (TableToken), so every spelling of a table is one
// key; the partition key is only hashed, and the value does not hold it
// (BehindPartition.PK is left out), because a bucket's stream denies
// message deletes and a purged message's bytes stay in the stream's files:
// an erase of the partition (docs/erasure.md) could not remove it.
func BehindKey(table, pk string) string {
	return TableToken(table) + "." + behindHashTag + "." + BehindPKHash(pk)
}

const behindHashTag = "sha256"

// BehindPKHash is the hex SHA-256 of a partition key, as BehindKey holds it.
func BehindPKHash(pk string) string {
	h := sha256.Sum256([]byte(pk))
	return hex.EncodeToString(h[:])
}

// LegacyBehindKey is the key the first record of partitions behind wrote:
// <table>.<pk-token>, the partition key in clear. Nothing writes it now;
// an erase removes such keys too.
func LegacyBehindKey(table, pk string) string {
	return table + "." + PKToken(pk)
}

// ParseBehindKey splits a BehindKey into the table token and the
// partition key's hash; for a LegacyBehindKey it gives the table as
// spelled, the hash, and the partition key in pk (legacy true).
func ParseBehindKey(key string) (table, hash, pk string, legacy bool, err error) {
	toks := strings.Split(key, ".")
	switch {
	case len(toks) == 3 && toks[0] != "" && toks[1] == behindHashTag && len(toks[2]) == 2*sha256.Size:
		return toks[0], toks[2], "", false, nil
	case len(toks) == 2 && toks[0] != "":
		pk, err = ParsePKToken(toks[1])
		if err != nil {
			return "", "", "", false, err
		}
		return toks[0], BehindPKHash(pk), pk, true, nil
	}
	return "", "", "", false, fmt.Errorf("%w: %q is not <table>.sha256.<hash>", ErrBadSubject, key)
}

// BehindPartition is the value of a partition's key in a BehindBucket, in
// JSON: a partition whose table lacks writes the projector applied and
// the store confirmed. It is written once, when the partition is found,
// and deleted when the partition is rebuilt from the journal or erased.
// The bucket holds it without PK (see BehindKey): a reader finds the
// partition key from the journal (the subject of the message at
// AppliedSeq, else TableSeq, else of any message of the table whose key
// hashes to the entry's), and sets PKErased when no message is left.
type BehindPartition struct {
	Table string `json:"table"`
	PK    string `json:"pk,omitempty"`
	// PKErased: the journal holds no message of the partition any more
	// (erased), so its key is unknown.
	PKErased bool `json:"pkErased,omitempty"`
	// TableSeq is the journal sequence the partition's fence held when it
	// was found (0: no fence); AppliedSeq a later command that applied (Cmd
	// its ID) whose effect the table lacked.
	TableSeq   uint64 `json:"tableSeq"`
	AppliedSeq uint64 `json:"appliedSeq"`
	Cmd        string `json:"cmd"`
	// Found is when it was found; Instance the projector that found it.
	Found    time.Time `json:"found"`
	Instance string    `json:"instance,omitempty"`
	// Reason is why the partition is recorded: "" the store lost
	// confirmed writes (above); ReasonForeignRow it is held (SPEC §5, "A
	// held partition"): Row is the stored RowKey of a row the projector
	// did not write, AppliedSeq and Cmd the first command held, TableSeq
	// 0. A held entry is removed when the partition applies again, or by
	// projector resume, and never rebuilt.
	Reason string `json:"reason,omitempty"`
	Row    string `json:"row,omitempty"`
}

// ReasonForeignRow is the BehindPartition.Reason of a held partition.
const ReasonForeignRow = "foreign-row"

// Held reports whether b records a held partition rather than one behind.
func (b BehindPartition) Held() bool { return b.Reason == ReasonForeignRow }

func (b BehindPartition) String() string {
	if b.Held() {
		return fmt.Sprintf("%s/%q: held at seq %d (command %s) by row %q, which the projector did not write", b.Table, b.PK, b.AppliedSeq, b.Cmd, b.Row)
	}
	if b.PKErased {
		return fmt.Sprintf("%s/(erased): the table holds up to seq %d, seq %d (command %s) applied", b.Table, b.TableSeq, b.AppliedSeq, b.Cmd)
	}
	return fmt.Sprintf("%s/%q: the table holds up to seq %d, seq %d (command %s) applied", b.Table, b.PK, b.TableSeq, b.AppliedSeq, b.Cmd)
}
