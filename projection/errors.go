package projection

import "fmt"

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
