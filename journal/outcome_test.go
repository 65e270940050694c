package journal_test

import (
	"context"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/tablejournal/tablejournal/journal"
)

func TestOutcomes(t *testing.T) {
	e := newEnv(t, journal.Config{})
	outcomes, err := journal.EnsureOutcomes(e.ctx, e.js)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := journal.EnsureOutcomes(e.ctx, e.js); err != nil {
		t.Fatalf("EnsureOutcomes again: %v", err)
	}
	w := journal.NewWriter(e.js, "")
	at := time.Date(2026, 11, 21, 10, 0, 0, 123456700, time.UTC)

	// IDs may contain dots, which must not split the subject.
	applied := journal.Outcome{
		ID: "01JD3X.9Q7Z:a-b", Seq: 7, Table: "orders", PK: "customer-42", Status: journal.StatusApplied,
		Rows: []journal.RowVersion{{RK: "order-7", Version: 3, Op: "upsert"}, {RK: "order-6", Version: 4, Op: "delete", Deleted: true}},
		At:   at,
	}
	if _, err := journal.LookupOutcome(e.ctx, e.js, applied.ID); !errors.Is(err, journal.ErrNotFound) {
		t.Fatalf("LookupOutcome before publish: %v, want ErrNotFound", err)
	}

	// Published before Await is called.
	if err := journal.PublishOutcome(e.ctx, e.js, applied); err != nil {
		t.Fatal(err)
	}
	got, err := w.Await(e.ctx, applied.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, applied) {
		t.Fatalf("Await = %+v, want %+v", got, applied)
	}
	if got, err := journal.LookupOutcome(e.ctx, e.js, applied.ID); err != nil || !reflect.DeepEqual(got, applied) {
		t.Fatalf("LookupOutcome = %+v, %v", got, err)
	}

	// Republishing the outcome of the same journal message stores nothing.
	if err := journal.PublishOutcome(e.ctx, e.js, applied); err != nil {
		t.Fatal(err)
	}
	if info, err := outcomes.Info(e.ctx); err != nil || info.State.Msgs != 1 {
		t.Fatalf("outcomes after republish: %v messages (%v), want 1", info.State.Msgs, err)
	}

	// Published after Await is waiting: Await subscribes first, then the
	// outcome lands.
	rejected := journal.Outcome{ID: "cmd-2", Seq: 8, Table: "orders", PK: "customer-42",
		Status: journal.StatusRejected, Reason: "insert: row order-7 exists", At: at}
	type result struct {
		o   journal.Outcome
		err error
	}
	done := make(chan result, 1)
	go func() {
		o, err := w.Await(e.ctx, rejected.ID)
		done <- result{o, err}
	}()
	waitFor(t, 10*time.Second, "Await to subscribe", func() bool {
		info, err := outcomes.Info(e.ctx)
		return err == nil && info.State.Consumers > 0
	})
	select {
	case r := <-done:
		t.Fatalf("Await returned before the outcome existed: %+v, %v", r.o, r.err)
	default:
	}
	if err := journal.PublishOutcome(e.ctx, e.js, rejected); err != nil {
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
	// Await cleans up its consumer.
	waitFor(t, 10*time.Second, "Await's consumer to be deleted", func() bool {
		info, err := outcomes.Info(e.ctx)
		return err == nil && info.State.Consumers == 0
	})

	// A later outcome for the same ID (re-published after the dedup window)
	// is the latest; the earlier one is kept.
	dup := applied
	dup.Seq, dup.Status, dup.Rows, dup.Reason = 900, journal.StatusDuplicate, nil, "already applied at seq 7"
	if err := journal.PublishOutcome(e.ctx, e.js, dup); err != nil {
		t.Fatal(err)
	}
	if got, err := journal.LookupOutcome(e.ctx, e.js, applied.ID); err != nil || got.Status != journal.StatusDuplicate {
		t.Fatalf("LookupOutcome after a later outcome = %+v, %v", got, err)
	}
	if info, err := outcomes.Info(e.ctx); err != nil || info.State.Msgs != 3 {
		t.Fatalf("outcomes: %d messages (%v), want 3", info.State.Msgs, err)
	}

	// No outcome: Await ends with its context.
	ctx, cancel := context.WithTimeout(e.ctx, 200*time.Millisecond)
	defer cancel()
	if _, err := w.Await(ctx, "never"); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Await(never) = %v, want the context's deadline", err)
	}
}
