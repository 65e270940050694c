package repair

import (
	"context"
	"errors"
	"fmt"

	"github.com/tablejournal/tablejournal/journal"
	"github.com/tablejournal/tablejournal/replay"
	"github.com/tablejournal/tablejournal/wire"
)

// refuseUndoErase refuses to undo an erase: what it removed is gone for
// good. The error wraps replay.ErrErased.
func (r *Planner) refuseUndoErase(ctx context.Context, o wire.Outcome) error {
	if r.Journal() == nil {
		return nil
	}
	m, err := r.Journal().Get(ctx, o.Seq)
	if errors.Is(err, journal.ErrNotFound) {
		return nil
	}
	if err != nil || !journal.IsEraseMsg(m.Header) {
		return err
	}
	e, err := journal.DecodeEraseMsg(m)
	if err != nil {
		return err
	}
	return fmt.Errorf("undo %s: an erase cannot be undone, what it removed is gone for good: %w",
		o.ID, &replay.ErasedError{Table: e.Table, PK: e.PK, RK: e.RK, Cmd: e.ID, Seq: o.Seq, At: m.Time})
}
