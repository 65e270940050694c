package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/tablejournal/tablejournal/journal"
)

// awaitOutcome waits for the outcome of command id published at journal
// sequence seq.
//
// It does not use journal.Writer.Await, which returns the latest outcome
// of an ID: a command ID published again after the duplicate window has
// two outcomes, applied at the first sequence and duplicate at the second,
// and the latest may not yet be the one of this publish. So it reads every
// outcome of the ID, from the first, until the one of seq. It subscribes
// before it reads, so it never misses one, and it does not poll.
func awaitOutcome(ctx context.Context, js jetstream.JetStream, id string, seq uint64) (journal.Outcome, error) {
	var found journal.Outcome
	err := readOutcomes(ctx, js, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{journal.OutcomeSubject(id)},
		DeliverPolicy:  jetstream.DeliverAllPolicy,
	}, func(o journal.Outcome) bool {
		if o.ID == id && o.Seq == seq {
			found = o
			return true
		}
		return false
	})
	return found, err
}

// readOutcomes passes the outcomes cfg selects to fn, in order, until fn
// returns true or ctx ends.
func readOutcomes(ctx context.Context, js jetstream.JetStream, cfg jetstream.OrderedConsumerConfig, fn func(journal.Outcome) bool) error {
	cfg.InactiveThreshold = time.Minute
	cons, err := js.OrderedConsumer(ctx, journal.OutcomesStream, cfg)
	if err != nil {
		return err
	}
	defer deleteConsumer(ctx, js, cons)
	it, err := cons.Messages()
	if err != nil {
		return err
	}
	defer it.Stop()
	for {
		m, err := it.Next(jetstream.NextContext(ctx))
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return err
		}
		var o journal.Outcome
		if err := json.Unmarshal(m.Data(), &o); err != nil {
			return fmt.Errorf("outcome on %s: %w", m.Subject(), err)
		}
		if fn(o) {
			return nil
		}
	}
}

// deleteConsumer removes an ordered consumer once done with, rather than
// leaving it to the server's inactivity threshold.
func deleteConsumer(ctx context.Context, js jetstream.JetStream, cons jetstream.Consumer) {
	info := cons.CachedInfo()
	if info == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	_ = js.DeleteConsumer(ctx, journal.OutcomesStream, info.Name)
}

// awaitOutcomes waits for the outcomes of the published results rs and
// stores each in its result. Outcomes of new commands are read in one pass
// over the outcomes stream from after sequence after, which the caller read
// before it published the first of them; a command the journal already held
// may have its outcome from before, so it is awaited by its ID.
func awaitOutcomes(ctx context.Context, js jetstream.JetStream, after uint64, rs []*writeResult) error {
	want := make(map[uint64]*writeResult)
	var held []*writeResult
	for _, r := range rs {
		switch {
		case r.Outcome != nil:
		case r.Duplicate:
			held = append(held, r)
		default:
			want[r.Seq] = r
		}
	}
	if len(want) > 0 {
		err := readOutcomes(ctx, js, jetstream.OrderedConsumerConfig{
			FilterSubjects: []string{journal.OutcomesPrefix + ".>"},
			DeliverPolicy:  jetstream.DeliverByStartSequencePolicy,
			OptStartSeq:    after + 1,
		}, func(o journal.Outcome) bool {
			if r, ok := want[o.Seq]; ok && r.ID == o.ID {
				r.Outcome = &o
				delete(want, o.Seq)
			}
			return len(want) == 0
		})
		if err != nil {
			return fmt.Errorf("%d outcomes missing: %w", len(want), err)
		}
	}
	for i, r := range held {
		o, err := awaitOutcome(ctx, js, r.ID, r.Seq)
		if err != nil {
			return fmt.Errorf("%d outcomes missing: %w", len(held)-i, err)
		}
		r.Outcome = &o
	}
	return nil
}
