package replay

import (
	"context"
	"errors"
	"fmt"

	"github.com/tablejournal/tablejournal/journal"
)

// Outcome returns the outcome that tells where command id is in the
// journal and what it did: the applied one if the ID was ever applied
// (a later re-publish beyond the duplicate window adds a "duplicate"
// outcome, which is the latest), else the latest.
func (r *Source) Outcome(ctx context.Context, id string) (journal.Outcome, error) {
	if err := r.NeedJournal("outcome of " + id); err != nil {
		return journal.Outcome{}, err
	}
	oc := journal.NewOutcomes(r.js)
	o, err := oc.Latest(ctx, id)
	if errors.Is(err, journal.ErrNotFound) {
		return journal.Outcome{}, fmt.Errorf("command %s: %w (never published, or not projected yet)", id, ErrNoOutcome)
	}
	if err != nil || o.Status != journal.StatusDuplicate {
		return o, err
	}
	all, err := oc.History(ctx, id)
	if err != nil {
		return journal.Outcome{}, err
	}
	for _, x := range all {
		if x.Status == journal.StatusApplied {
			return x, nil
		}
	}
	return o, nil
}
