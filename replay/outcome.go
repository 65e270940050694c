package replay

import (
	"context"
	"errors"
	"fmt"

	"github.com/tablejournal/tablejournal/journal"
	"github.com/tablejournal/tablejournal/journal/outcomes"
	"github.com/tablejournal/tablejournal/wire"
)

// Outcome returns the outcome that tells where command id is in the
// journal and what it did: the applied one if the ID was ever applied
// (a later re-publish beyond the duplicate window adds a "duplicate"
// outcome, which is the latest), else the latest.
func (r *Source) Outcome(ctx context.Context, id string) (wire.Outcome, error) {
	if err := r.NeedJournal("outcome of " + id); err != nil {
		return wire.Outcome{}, err
	}
	oc := outcomes.NewReader(r.js)
	o, err := oc.Latest(ctx, id)
	if errors.Is(err, journal.ErrNotFound) {
		return wire.Outcome{}, fmt.Errorf("command %s: %w (never published, or not projected yet)", id, ErrNoOutcome)
	}
	if err != nil || o.Status != wire.StatusDuplicate {
		return o, err
	}
	all, err := oc.History(ctx, id)
	if err != nil {
		return wire.Outcome{}, err
	}
	for _, x := range all {
		if x.Status == wire.StatusApplied {
			return x, nil
		}
	}
	return o, nil
}
