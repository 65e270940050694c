package projection

import (
	"errors"
	"fmt"

	"github.com/tablejournal/tablejournal/rows"
)

// ApplyError says why a shard stopped at a row it cannot apply: which row
// (table, partition, natural RowKey and the stored RowKey that failed) and
// which command (journal sequence and ID). The shard stops rather than skip
// the command; README.md ("When a shard stops") says how to get it going.
type ApplyError struct {
	Table, PK, RK string
	// StoreKey is the stored RowKey the failing operation wrote.
	StoreKey string
	Seq      uint64
	Cmd      string
	Err      error
}

func (e *ApplyError) Error() string {
	return fmt.Sprintf("cannot apply journal sequence %d (command %s) to table %s partition %q row %q (stored key %q): %v",
		e.Seq, e.Cmd, e.Table, e.PK, e.RK, e.StoreKey, e.Err)
}

func (e *ApplyError) Unwrap() error { return e.Err }

// HeldError says a partition is held: a row of it that the projector did
// not write (rows.ErrForeignRow) stands where the layout expects its own,
// so the partition's commands from journal sequence Seq (command Cmd) on
// wait, neither applied nor rejected, until the row is dealt with (SPEC
// §5, "A held partition"; docs/operating.md, "A held partition"). Only
// that partition waits: the projector goes on with the others.
type HeldError struct {
	Table, PK string
	// Key is the stored RowKey of the foreign row.
	Key string
	Seq uint64
	Cmd string
	Err error
}

func (e *HeldError) Error() string {
	return fmt.Sprintf("partition %s/%q held at journal sequence %d (command %s): row %q: %v",
		e.Table, e.PK, e.Seq, e.Cmd, e.Key, e.Err)
}

func (e *HeldError) Unwrap() error { return e.Err }

// held turns an error of r's run that met a foreign row into a HeldError
// at the first entry not applied; other errors are returned as they are.
func (r *partitionRun) held(err error) error {
	var fe *rows.ForeignRowError
	if !errors.As(err, &fe) || r.next >= len(r.entries) {
		return err
	}
	e := r.entries[r.next]
	return &HeldError{Table: r.part.table, PK: r.part.pk, Key: fe.Key, Seq: e.Seq, Cmd: e.ID, Err: err}
}
