package replay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/tablejournal/tablejournal/journal"
)

// outcome returns the outcome that tells where command id is in the
// journal and what it did: the applied one if the ID was ever applied
// (a later re-publish beyond the duplicate window adds a "duplicate"
// outcome, which LookupOutcome returns as the latest), else the latest.
func (r *Replayer) outcome(ctx context.Context, id string) (journal.Outcome, error) {
	if err := r.needJournal("outcome of " + id); err != nil {
		return journal.Outcome{}, err
	}
	o, err := journal.LookupOutcome(ctx, r.js, id)
	if errors.Is(err, journal.ErrNotFound) {
		return journal.Outcome{}, fmt.Errorf("command %s: %w (never published, or not projected yet)", id, ErrNoOutcome)
	}
	if err != nil {
		return journal.Outcome{}, err
	}
	if o.Status != journal.StatusDuplicate {
		return o, nil
	}
	all, err := r.allOutcomes(ctx, id)
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

// allOutcomes reads every outcome stored for command id, oldest first.
func (r *Replayer) allOutcomes(ctx context.Context, id string) ([]journal.Outcome, error) {
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
	}
	cons, err := r.js.OrderedConsumer(ctx, journal.OutcomesStream, jetstream.OrderedConsumerConfig{
		FilterSubjects:    []string{journal.OutcomeSubject(id)},
		DeliverPolicy:     jetstream.DeliverAllPolicy,
		InactiveThreshold: time.Minute,
	})
	if err != nil {
		return nil, fmt.Errorf("outcomes of %s: %w", id, err)
	}
	defer func() {
		if info := cons.CachedInfo(); info != nil {
			_ = r.js.DeleteConsumer(context.WithoutCancel(ctx), journal.OutcomesStream, info.Name)
		}
	}()
	it, err := cons.Messages()
	if err != nil {
		return nil, fmt.Errorf("outcomes of %s: %w", id, err)
	}
	defer it.Stop()
	var out []journal.Outcome
	for {
		m, err := it.Next(jetstream.NextContext(ctx))
		if err != nil {
			return nil, fmt.Errorf("outcomes of %s: %w", id, err)
		}
		var o journal.Outcome
		if err := json.Unmarshal(m.Data(), &o); err != nil {
			return nil, fmt.Errorf("outcome of %s: %w", id, err)
		}
		out = append(out, o)
		md, err := m.Metadata()
		if err != nil || md.NumPending == 0 {
			return out, nil
		}
	}
}
