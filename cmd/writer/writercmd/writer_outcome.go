package writercmd

import (
	"context"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/tablejournal/tablejournal/journal"
	"github.com/tablejournal/tablejournal/journal/outcomes"
)

// awaitOutcomes waits for the outcomes of the published results rs and
// stores each in its result: each the outcome of its own journal sequence.
// from is the OUTCOMES sequence after the last outcome stored before the
// first of them was published (outcomes.Reader.AwaitAll).
func awaitOutcomes(ctx context.Context, js jetstream.JetStream, from uint64, rs []*writeResult) error {
	pubs := make([]journal.PublishResult, len(rs))
	for i, r := range rs {
		pubs[i] = journal.PublishResult{ID: r.ID, Seq: r.Seq, Duplicate: r.Duplicate}
	}
	outs, err := outcomes.NewReader(js).AwaitAll(ctx, from, pubs)
	for i, r := range rs {
		if outs[i].ID != "" {
			o := outs[i]
			r.Outcome = &o
		}
	}
	return err
}
