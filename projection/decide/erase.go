package decide

import (
	"fmt"

	"github.com/tablejournal/tablejournal/wire"
)

// EraseState is what a transaction knows of erases.
type EraseState struct {
	// To is the fence's _eraseSeq: an entry at or below it was handled
	// before an erase, which may have removed the rows that would say so.
	To uint64
	// Entry is the erase this transaction applies, alone.
	Entry *Entry
}

// addErased adds e to the batch when it is an erase, or was handled before
// the partition's newest erase, or follows an erase in the batch (ErrFull:
// an erase is alone in its transaction). done says e was dealt with here.
func (b *Txn) addErased(e Entry, res Result) (done bool, err error) {
	switch {
	case b.Erase.Entry != nil:
		return true, ErrFull
	case e.Seq <= b.Erase.To:
		res.Status, res.Erased = Skipped, true
		b.Results = append(b.Results, res)
		return true, nil
	case e.Erase == nil:
		return false, nil
	case len(b.Results) > 0:
		return true, ErrFull
	}
	if dup := b.duplicateErase(e); dup != "" {
		res.Status, res.Reason = wire.StatusDuplicate, dup
		b.Results = append(b.Results, res)
		return true, nil
	}
	b.Erase.Entry = &e
	b.AppliedIDs[e.ID] = e.Seq
	// An erase applies whatever the rows hold; its outcome names no row.
	res.Status, res.Changes = wire.StatusApplied, EraseNotice(e)
	b.Results = append(b.Results, res)
	return true, nil
}

// CountErased adds n rows to those the erase this transaction applies
// removed (Result.ErasedRows), as the driver deletes them.
func (b *Txn) CountErased(n int) {
	if b.Erase.Entry == nil {
		return
	}
	for i := range b.Results {
		if b.Results[i].Seq == b.Erase.Entry.Seq {
			b.Results[i].ErasedRows += int64(n)
			return
		}
	}
}

// duplicateErase says why the erase e is a duplicate, or "": an ID
// applies at most once, ever, and an erase applied again long after would
// remove what the partition got since.
func (b *Txn) duplicateErase(e Entry) string {
	if s, ok := b.Seen[e.ID]; ok && s < e.Seq {
		return fmt.Sprintf("command %s already applied at journal sequence %d", e.ID, s)
	}
	if e.Prior.Seq != 0 && e.Prior.Seq < e.Seq && (e.Prior.Status == wire.StatusApplied || e.Prior.Status == wire.StatusDuplicate) {
		return fmt.Sprintf("command %s already applied at journal sequence %d", e.ID, e.Prior.Seq)
	}
	return ""
}

// EraseNotice is the change of an applied erase: its notice (wire.ChangeErase:
// the key and no values; Partition for a whole partition); none for an entry
// that is no erase.
func EraseNotice(e Entry) []Change {
	if e.Erase == nil {
		return nil
	}
	if e.Erase.RK == nil {
		return []Change{{Kind: wire.ChangeErase, Partition: true}}
	}
	return []Change{{Kind: wire.ChangeErase, RK: *e.Erase.RK}}
}
