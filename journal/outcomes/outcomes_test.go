package outcomes_test

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/tablejournal/tablejournal/journal"
	"github.com/tablejournal/tablejournal/journal/journaltest"
	"github.com/tablejournal/tablejournal/journal/outcomes"
	"github.com/tablejournal/tablejournal/wire"
)

func TestOutcomes(t *testing.T) {
	e := newEnv(t)
	stream, err := outcomes.Ensure(e.ctx, e.js)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := outcomes.Ensure(e.ctx, e.js); err != nil {
		t.Fatalf("Ensure again: %v", err)
	}
	oc := outcomes.NewReader(e.js)
	at := time.Date(2026, 11, 21, 10, 0, 0, 123456700, time.UTC)

	// IDs may contain dots, which must not split the subject.
	applied := wire.Outcome{
		ID: "01JD3X.9Q7Z:a-b", Seq: 7, Table: "orders", PK: "customer-42", Status: wire.StatusApplied,
		Rows: []wire.RowVersion{{RK: "order-7", Version: 3, Op: "upsert"}, {RK: "order-6", Version: 4, Op: "delete", Deleted: true}},
		At:   at,
	}
	if _, err := oc.Latest(e.ctx, applied.ID); !errors.Is(err, journal.ErrNotFound) {
		t.Fatalf("Latest before publish: %v, want ErrNotFound", err)
	}
	if h, err := oc.History(e.ctx, applied.ID); err != nil || len(h) != 0 {
		t.Fatalf("History before publish: %v, %v; want none", h, err)
	}

	// Published before Await is called.
	if err := outcomes.PublishOutcome(e.ctx, e.js, applied); err != nil {
		t.Fatal(err)
	}
	got, err := oc.Await(e.ctx, applied.ID, applied.Seq)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, applied) {
		t.Fatalf("Await = %+v, want %+v", got, applied)
	}
	if got, err := oc.Latest(e.ctx, applied.ID); err != nil || !reflect.DeepEqual(got, applied) {
		t.Fatalf("Latest = %+v, %v", got, err)
	}

	// Republishing the outcome of the same journal message stores nothing.
	if err := outcomes.PublishOutcome(e.ctx, e.js, applied); err != nil {
		t.Fatal(err)
	}
	if info, err := stream.Info(e.ctx); err != nil || info.State.Msgs != 1 {
		t.Fatalf("outcomes after republish: %v messages (%v), want 1", info.State.Msgs, err)
	}

	// Published after Await is waiting: Await subscribes first, then the
	// outcome lands.
	rejected := wire.Outcome{ID: "cmd-2", Seq: 8, Table: "orders", PK: "customer-42",
		Status: wire.StatusRejected, Reason: "insert: row order-7 exists", At: at}
	type result struct {
		o   wire.Outcome
		err error
	}
	done := make(chan result, 1)
	subs := e.nc.NumSubscriptions()
	go func() {
		o, err := oc.Await(e.ctx, rejected.ID, rejected.Seq)
		done <- result{o, err}
	}()
	// Await subscribes on the connection the outcome is published
	// through, which keeps the order of what it sends.
	journaltest.WaitFor(t, 10*time.Second, "Await to subscribe", func() bool { return e.nc.NumSubscriptions() > subs })
	select {
	case r := <-done:
		t.Fatalf("Await returned before the outcome existed: %+v, %v", r.o, r.err)
	default:
	}
	if err := outcomes.PublishOutcome(e.ctx, e.js, rejected); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-done:
		if r.err != nil || !reflect.DeepEqual(r.o, rejected) {
			t.Fatalf("Await = %+v, %v, want %+v", r.o, r.err, rejected)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Await did not return after the outcome was published")
	}
	// Await creates no consumer, and ends its subscription.
	if info, err := stream.Info(e.ctx); err != nil || info.State.Consumers != 0 {
		t.Fatalf("consumers on %s after Await: %+v, %v; want none", wire.OutcomesStream, info.State, err)
	}
	if n := e.nc.NumSubscriptions(); n != subs {
		t.Fatalf("subscriptions after Await: %d, want %d", n, subs)
	}

	// A later outcome for the same ID (re-published after the dedup window)
	// is the latest; the earlier one is kept.
	dup := applied
	dup.Seq, dup.Status, dup.Rows, dup.Reason = 900, wire.StatusDuplicate, nil, "already applied at seq 7"
	if err := outcomes.PublishOutcome(e.ctx, e.js, dup); err != nil {
		t.Fatal(err)
	}
	if got, err := oc.Latest(e.ctx, applied.ID); err != nil || got.Status != wire.StatusDuplicate {
		t.Fatalf("Latest after a later outcome = %+v, %v", got, err)
	}
	if info, err := stream.Info(e.ctx); err != nil || info.State.Msgs != 3 {
		t.Fatalf("outcomes: %d messages (%v), want 3", info.State.Msgs, err)
	}
	// Await returns the outcome of the sequence asked for, not the latest.
	for _, want := range []wire.Outcome{applied, dup} {
		if got, err := oc.Await(e.ctx, applied.ID, want.Seq); err != nil || !reflect.DeepEqual(got, want) {
			t.Fatalf("Await(seq %d) = %+v, %v; want %+v", want.Seq, got, err, want)
		}
	}
	if h, err := oc.History(e.ctx, applied.ID); err != nil || !reflect.DeepEqual(h, []wire.Outcome{applied, dup}) {
		t.Fatalf("History = %+v, %v; want the applied outcome, then the duplicate", h, err)
	}

	// No outcome for that sequence: Await ends with its context.
	for _, tt := range []struct {
		id  string
		seq uint64
	}{{applied.ID, 901}, {"never", 1}} {
		ctx, cancel := context.WithTimeout(e.ctx, 200*time.Millisecond)
		if _, err := oc.Await(ctx, tt.id, tt.seq); !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Await(%s seq %d) = %v, want the context's deadline", tt.id, tt.seq, err)
		}
		cancel()
	}
	journaltest.WaitFor(t, 10*time.Second, "the consumers to be deleted", func() bool {
		info, err := stream.Info(e.ctx)
		return err == nil && info.State.Consumers == 0
	})
}

// TestOutcomesAwaitAll: the outcomes of many publishes are read in one
// pass from the mark taken before publishing, except those of commands the
// journal held already, whose outcomes are older and are awaited by ID and
// sequence. Outcomes stored before the mark, and later outcomes of the same
// IDs, are not taken for them.
func TestOutcomesAwaitAll(t *testing.T) {
	e := newEnv(t)
	if _, err := outcomes.Ensure(e.ctx, e.js); err != nil {
		t.Fatal(err)
	}
	oc := outcomes.NewReader(e.js)
	at := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	out := func(id string, seq uint64, st wire.Status) wire.Outcome {
		return wire.Outcome{ID: id, Seq: seq, Table: "orders", PK: "p", Status: st, At: at}
	}
	publish := func(os ...wire.Outcome) {
		for _, o := range os {
			if err := outcomes.PublishOutcome(e.ctx, e.js, o); err != nil {
				t.Fatal(err)
			}
		}
	}
	old := out("held", 3, wire.StatusApplied)
	publish(old, out("new-1", 1, wire.StatusRejected)) // an earlier outcome of an ID published again below
	from, err := oc.Last(e.ctx)
	if err != nil || from != 2 {
		t.Fatalf("Last = %d, %v; want 2", from, err)
	}
	from++
	rs := []journal.PublishResult{{ID: "new-1", Seq: 10}, {ID: "held", Seq: 3, Duplicate: true}, {ID: "new-2", Seq: 11}}
	want := []wire.Outcome{out("new-1", 10, wire.StatusApplied), old, out("new-2", 11, wire.StatusApplied)}

	done := make(chan []wire.Outcome, 1)
	go func() {
		got, err := oc.AwaitAll(e.ctx, from, rs)
		if err != nil {
			t.Error(err)
		}
		done <- got
	}()
	publish(out("held", 12, wire.StatusDuplicate), want[2], want[0], out("new-1", 13, wire.StatusDuplicate))
	select {
	case got := <-done:
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("AwaitAll =\n%+v, want\n%+v", got, want)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("AwaitAll did not return")
	}

	// Follow sees every outcome from a sequence on, with its sequence.
	var seqs []uint64
	err = oc.Follow(e.ctx, 4, func(seq uint64, o wire.Outcome) bool {
		seqs = append(seqs, seq)
		return o.Seq == 13
	})
	if err != nil || !reflect.DeepEqual(seqs, []uint64{4, 5, 6}) {
		t.Fatalf("Follow from 4: %v, %v; want 4 5 6", seqs, err)
	}

	// What is missing is reported when ctx ends.
	ctx, cancel := context.WithTimeout(e.ctx, 300*time.Millisecond)
	defer cancel()
	got, err := oc.AwaitAll(ctx, from, []journal.PublishResult{{ID: "new-2", Seq: 11}, {ID: "gone", Seq: 99}})
	if !errors.Is(err, context.DeadlineExceeded) || got[0].Seq != 11 {
		t.Fatalf("AwaitAll with one missing: %+v, %v", got, err)
	}
}

// TestLatestOutcomes: Reader.LatestAll, one batched look-up, returns the
// latest outcome of each ID asked for that has one, and nothing else — not
// the stream's newest outcome, which the look-up reads as its freshness
// sentinel.
func TestLatestOutcomes(t *testing.T) {
	e := newEnv(t)
	if _, err := outcomes.Ensure(e.ctx, e.js); err != nil {
		t.Fatal(err)
	}
	if got, err := outcomes.NewReader(e.js).LatestAll(e.ctx, []string{"a"}); err != nil || len(got) != 0 {
		t.Fatalf("on an empty stream: %v, %v; want none", got, err)
	}
	for _, o := range []wire.Outcome{
		{ID: "a", Seq: 1, Status: wire.StatusApplied},
		{ID: "a", Seq: 4, Status: wire.StatusDuplicate},
		{ID: "b", Seq: 2, Status: wire.StatusRejected, Reason: "row exists"},
		{ID: "newest", Seq: 9, Status: wire.StatusApplied},
	} {
		if err := outcomes.PublishOutcome(e.ctx, e.js, o); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		name string
		ids  []string
		want map[string]uint64 // ID → seq of its latest outcome
	}{
		{"latest of each", []string{"a", "b"}, map[string]uint64{"a": 4, "b": 2}},
		{"without an outcome", []string{"b", "none"}, map[string]uint64{"b": 2}},
		{"the sentinel is not asked for", []string{"none"}, map[string]uint64{}},
		{"repeated IDs", []string{"a", "a"}, map[string]uint64{"a": 4}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := outcomes.NewReader(e.js).LatestAll(e.ctx, tt.ids)
			if err != nil {
				t.Fatal(err)
			}
			seqs := make(map[string]uint64)
			for id, o := range got {
				seqs[id] = o.Seq
			}
			if !reflect.DeepEqual(seqs, tt.want) {
				t.Fatalf("LatestAll(%v) = %v, want %v", tt.ids, seqs, tt.want)
			}
		})
	}
}

// TestLatestOutcomesConcurrent: one Reader answers look-ups from many
// goroutines at once, each with its own IDs' outcomes (their answers share
// one subscription: one per look-up was most of its latency), and leaves
// no subscription behind; a look-up given up midway disturbs none of the
// others.
func TestLatestOutcomesConcurrent(t *testing.T) {
	e := newEnv(t)
	if _, err := outcomes.Ensure(e.ctx, e.js); err != nil {
		t.Fatal(err)
	}
	const workers, rounds = 8, 25
	for i := range workers * 2 {
		if err := outcomes.PublishOutcome(e.ctx, e.js, wire.Outcome{ID: fmt.Sprintf("id%d", i), Seq: uint64(i + 1), Status: wire.StatusApplied}); err != nil {
			t.Fatal(err)
		}
	}
	oc := outcomes.NewReader(e.js)
	if _, err := oc.LatestAll(e.ctx, []string{"id0"}); err != nil {
		t.Fatal(err)
	}
	subs := e.nc.NumSubscriptions()
	var wg sync.WaitGroup
	errs := make(chan error, workers+1)
	for w := range workers {
		wg.Go(func() {
			// Worker w asks for its two IDs and one without an outcome.
			ids := []string{fmt.Sprintf("id%d", 2*w), fmt.Sprintf("id%d", 2*w+1), fmt.Sprintf("none%d", w)}
			for range rounds {
				got, err := oc.LatestAll(e.ctx, ids)
				if err != nil {
					errs <- err
					return
				}
				if len(got) != 2 || got[ids[0]].Seq != uint64(2*w+1) || got[ids[1]].Seq != uint64(2*w+2) {
					errs <- fmt.Errorf("worker %d: LatestAll(%v) = %v", w, ids, got)
					return
				}
			}
		})
	}
	wg.Go(func() {
		// Given up before its answer can arrive: the others go on.
		for range rounds {
			ctx, cancel := context.WithCancel(e.ctx)
			cancel()
			if _, err := oc.LatestAll(ctx, []string{"id0", "id1"}); !errors.Is(err, context.Canceled) {
				errs <- fmt.Errorf("a look-up with its context cancelled: %v, want context.Canceled", err)
				return
			}
		}
	})
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := e.nc.NumSubscriptions(); n != subs {
		t.Errorf("%d subscriptions on the connection after the look-ups, %d before", n, subs)
	}
}

// TestAwaitBeforeOutcomesExist: a writer that waits right after the
// projector started may ask before OUTCOMES exists (issue 28, item 9);
// Await waits within its deadline instead of failing with "stream not
// found", and takes the outcome once the stream and the outcome are there.
func TestAwaitBeforeOutcomesExist(t *testing.T) {
	e := newEnv(t)
	oc := outcomes.NewReader(e.js)
	want := wire.Outcome{ID: "early", Seq: 3, Table: "t", PK: "p", Status: wire.StatusApplied,
		At: time.Date(2026, 11, 27, 0, 0, 0, 0, time.UTC)}
	type result struct {
		o   wire.Outcome
		err error
	}
	done := make(chan result, 1)
	subs := e.nc.NumSubscriptions()
	go func() {
		o, err := oc.Await(e.ctx, want.ID, want.Seq)
		done <- result{o, err}
	}()
	journaltest.WaitFor(t, 10*time.Second, "Await to subscribe", func() bool { return e.nc.NumSubscriptions() > subs })
	// Let its look-up find no stream (it answers at once) before the
	// stream is created.
	ctx, cancel := context.WithTimeout(e.ctx, 10*time.Second)
	defer cancel()
	if _, err := oc.Latest(ctx, want.ID); !errors.Is(err, jetstream.ErrStreamNotFound) {
		t.Fatalf("Latest before OUTCOMES exists: %v, want ErrStreamNotFound", err)
	}
	select {
	case r := <-done:
		t.Fatalf("Await returned before the outcome existed: %+v, %v", r.o, r.err)
	default:
	}
	if _, err := outcomes.Ensure(e.ctx, e.js); err != nil {
		t.Fatal(err)
	}
	if err := outcomes.PublishOutcome(e.ctx, e.js, want); err != nil {
		t.Fatal(err)
	}
	select {
	case r := <-done:
		if r.err != nil || !reflect.DeepEqual(r.o, want) {
			t.Fatalf("Await = %+v, %v, want %+v", r.o, r.err, want)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Await did not return after the outcome was published")
	}
}
