package outcomes

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"golang.org/x/sync/errgroup"

	"github.com/tablejournal/tablejournal/internal/jsapi"
	"github.com/tablejournal/tablejournal/journal"
	"github.com/tablejournal/tablejournal/wire"
)

// everyInFlight bounds the per-subject requests of Every in flight at
// once: enough to hide the round trips, few enough not to crowd a shared
// server.
const everyInFlight = 32

// everyBatch is how many outcomes one request of Every asks for per
// subject; an ID has one or two, and the rest of a longer subject is asked
// for again (jsapi.DirectBatch).
const everyBatch = 64

// Every passes fn every outcome stored on the subjects of ids
// (wire.OutcomeSubject: each ID's every outcome, and for an ID that has no
// usable form, every outcome on outcomes.=), raw, with its OUTCOMES
// sequence and subject, one call at a time, in no particular order. It
// costs requests in proportion to len(ids) and creates no consumer, so it
// serves any number of IDs (an erase of a partition of 100,000 commands):
//
//   - a batched multi_last per thousand subjects (as LatestAll, fresh)
//     finds the newest outcome of each subject stored before the call;
//   - each subject that has one is read whole with one batched direct get,
//     everyInFlight at once. An answer that lacks the newest outcome found
//     came from a replica behind, and the subject is read again from the
//     stream's leader.
//
// A stream that does not exist holds nothing.
func (o *Reader) Every(ctx context.Context, ids []string, fn func(seq uint64, subject string, data []byte) error) error {
	newest := make(map[string]uint64, len(ids))
	var subjects []string
	flush := func() error {
		if len(subjects) == 0 {
			return nil
		}
		err := jsapi.FreshDirectBatch(ctx, o.js, o.replies, o.stream, subjects, &o.hint, func(m jsapi.Msg) error {
			newest[m.Subject] = m.Seq
			return nil
		})
		subjects = subjects[:0]
		return err
	}
	seen := make(map[string]bool, len(ids))
	for _, id := range ids {
		subj := wire.OutcomeSubject(id)
		if seen[subj] {
			continue
		}
		seen[subj] = true
		subjects = append(subjects, subj)
		if len(subjects) == jsapi.MultiLastMax-1 { // and the sentinel
			if err := flush(); err != nil {
				return everyErr(err)
			}
		}
	}
	if err := flush(); err != nil {
		return everyErr(err)
	}

	var mu sync.Mutex
	deliver := func(ms []jsapi.Msg) error {
		mu.Lock()
		defer mu.Unlock()
		for _, m := range ms {
			if err := fn(m.Seq, m.Subject, m.Data); err != nil {
				return err
			}
		}
		return nil
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(everyInFlight)
	for subj, last := range newest {
		g.Go(func() error {
			ms, err := o.subjectAll(gctx, subj, last)
			if err != nil {
				return err
			}
			return deliver(ms)
		})
	}
	return everyErr(g.Wait())
}

func everyErr(err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("outcomes: %w", err)
}

// subjectAll reads every outcome on subject, one batched direct get; the
// answer must reach sequence newest (found fresh before), else it came
// from a replica behind and the subject is read from the leader, one
// request per outcome.
func (o *Reader) subjectAll(ctx context.Context, subject string, newest uint64) ([]jsapi.Msg, error) {
	var ms []jsapi.Msg
	_, err := jsapi.DirectBatch(ctx, o.js, o.replies, o.stream, jsapi.DirectBatchReq{Seq: 1, NextFor: subject, Batch: everyBatch}, func(m jsapi.Msg) error {
		ms = append(ms, m)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", subject, err)
	}
	if len(ms) > 0 && ms[len(ms)-1].Seq >= newest {
		return ms, nil
	}
	ms = ms[:0]
	for seq := uint64(1); ; {
		m, err := jsapi.LeaderGet(ctx, o.js, o.stream, jsapi.MsgGetReq{Seq: seq, NextFor: subject})
		if errors.Is(err, journal.ErrNotFound) {
			return ms, nil
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", subject, err)
		}
		ms = append(ms, m)
		seq = m.Seq + 1
	}
}
