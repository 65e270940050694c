package projection_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/events/rules"
	"github.com/tablejournal/tablejournal/journal"
	"github.com/tablejournal/tablejournal/projection"
	"github.com/tablejournal/tablejournal/projection/projectiontest"
	"github.com/tablejournal/tablejournal/rows"
	"github.com/tablejournal/tablejournal/store"
	"github.com/tablejournal/tablejournal/wire"
)

// eraseEntry is an erase of rk (nil: the partition) of orders/pk at seq.
func eraseEntry(seq uint64, id, pk string, rk *string) projection.Entry {
	return projection.Entry{Seq: seq, ID: id, At: time.Date(2026, 11, 21, 11, 0, int(seq%60), 0, time.UTC),
		Erase: &events.Erase{ID: id, Table: "orders", PK: pk, RK: rk}}
}

// eraseWorkload is commands on partitions p (whose values hold secret) and
// q: 60 rows of p written twice (120 stored rows and more, so that erasing
// p takes several transactions), 5 rows of q.
func eraseWorkload(secret string) (p, q []projection.Entry) {
	seq := uint64(0)
	for round := range 2 {
		for i := 0; i < 60; i += 3 {
			seq++
			var ops []events.RowOp
			for j := i; j < i+3; j++ {
				ops = append(ops, events.RowOp{Op: events.OpUpsert, RK: fmt.Sprintf("r%d", j),
					Entity: edm.Entity{"v": edm.String(fmt.Sprintf("%s-%d-%d", secret, j, round))}})
			}
			e := cmdEntry(seq, fmt.Sprintf("p%d", seq), ops...)
			p = append(p, e)
		}
	}
	for i := range 5 {
		seq++
		e := cmdEntry(seq, fmt.Sprintf("q%d", seq), rowOp(events.OpUpsert, fmt.Sprintf("r%d", i), i))
		e.Cmd.PK = "q"
		q = append(q, e)
	}
	return p, q
}

// storedRows lists every stored entity of table, all partitions.
func storedRows(t *testing.T, st store.Store, table string) []store.Entity {
	t.Helper()
	es, err := store.Collect(context.Background(), st, table, store.Query{AllPartitions: true})
	if err != nil {
		t.Fatal(err)
	}
	return es
}

// holding lists the stored rows of table with a String value that contains
// s.
func holding(t *testing.T, st store.Store, table, s string) []string {
	var keys []string
	for _, e := range storedRows(t, st, table) {
		for _, v := range e.Props {
			if v.Type == edm.TypeString && strings.Contains(v.Str, s) {
				keys = append(keys, e.PK+"/"+e.RK)
			}
		}
	}
	return keys
}

func keysOf(t *testing.T, st store.Store, pk string) []string {
	var keys []string
	for _, e := range storedRows(t, st, "orders") {
		if e.PK == pk {
			keys = append(keys, e.RK)
		}
	}
	return keys
}

func applyAll(t *testing.T, app *projection.Applier, pk string, es []projection.Entry) []projection.Result {
	t.Helper()
	var rs []projection.Result
	var mu sync.Mutex
	if err := app.Apply(context.Background(), "orders", pk, es, statuses(&rs, &mu)); err != nil {
		t.Fatalf("apply to %s: %v", pk, err)
	}
	return rs
}

// TestEraseApplier: erasing a row, then the whole partition, removes every
// tip, version and tombstone row of the key and leaves the fence and a
// marker; other partitions are untouched; a redelivery of the erased
// commands re-creates nothing; a rebuild of the same journal equals the
// table; a row re-inserted after the erase starts at version 0.
func TestEraseApplier(t *testing.T) {
	for _, b := range backends() {
		t.Run(b.Name, func(t *testing.T) {
			st := b.Open(t)
			p, q := eraseWorkload("SECRET")
			// r1 also gets a tombstone.
			del := cmdEntry(p[len(p)-1].Seq+1, "pdel", rowOp(events.OpDelete, "r1", 0))
			p = append(p, del)
			rk := "r0"
			eraseRow := eraseEntry(1000, "erase-row", "p", &rk)
			erasePart := eraseEntry(1001, "erase-part", "p", nil)
			after := cmdEntry(1002, "after", rowOp(events.OpInsert, "r0", 7))
			journalP := append(append([]projection.Entry{}, p...), eraseRow)

			app := projection.NewApplier(st, projection.ApplierConfig{Logger: projectiontest.QuietLogger()})
			applyAll(t, app, "q", q)
			qBefore := keysOf(t, st, "q")
			rs := applyAll(t, app, "p", journalP)
			if got := statusOf(rs, eraseRow.Seq); got != wire.StatusApplied {
				t.Fatalf("row erase: %s", got)
			}
			for _, k := range keysOf(t, st, "p") {
				if got, _, _, ok := rows.ParseKey(k); ok && got == rk {
					t.Fatalf("row erase left %s", k)
				}
			}
			if n := len(holding(t, st, "orders", "SECRET-0-")); n != 0 {
				t.Fatalf("%d rows still hold r0's values", n)
			}
			if len(holding(t, st, "orders", "SECRET-5-")) == 0 {
				t.Fatal("the row erase removed another row")
			}

			journalP = append(journalP, erasePart)
			rs = applyAll(t, app, "p", journalP[len(journalP)-1:])
			if got := statusOf(rs, erasePart.Seq); got != wire.StatusApplied {
				t.Fatalf("partition erase: %s", got)
			}
			want := []string{rows.ErasedKey, rows.FenceKey}
			if got := keysOf(t, st, "p"); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("partition p after its erase holds %v, want %v", got, want)
			}
			if got := holding(t, st, "orders", "SECRET"); len(got) != 0 {
				t.Fatalf("rows still hold erased values: %v", got)
			}
			if got := keysOf(t, st, "q"); fmt.Sprint(got) != fmt.Sprint(qBefore) {
				t.Fatalf("partition q changed: %v, was %v", got, qBefore)
			}

			// A redelivery of everything (a fresh projector, no cache).
			app2 := projection.NewApplier(st, projection.ApplierConfig{Logger: projectiontest.QuietLogger()})
			for _, r := range applyAll(t, app2, "p", journalP) {
				if r.Status != projection.Skipped {
					t.Fatalf("redelivered seq %d: %s, want skipped", r.Seq, r.Status)
				}
			}
			if got := keysOf(t, st, "p"); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("a redelivery re-created rows: %v", got)
			}

			journalP = append(journalP, after)
			rs = applyAll(t, app2, "p", journalP[len(journalP)-1:])
			if len(rs) != 1 || rs[0].Status != wire.StatusApplied || rs[0].Rows[0].Version != 0 {
				t.Fatalf("insert after the erase: %+v", rs)
			}

			// The erase's ID published again much later is a duplicate: it
			// must not erase what the partition got since.
			again := eraseEntry(1003, "erase-part", "p", nil)
			again.Prior = projection.Prior{Seq: erasePart.Seq, Status: wire.StatusApplied}
			journalP = append(journalP, again)
			rs = applyAll(t, app2, "p", journalP[len(journalP)-1:])
			if got := statusOf(rs, again.Seq); got != wire.StatusDuplicate {
				t.Fatalf("the erase's ID again: %s, want duplicate", got)
			}
			if got := keysOf(t, st, "p"); len(got) != 3 {
				t.Fatalf("after the duplicate erase partition p holds %v, want the re-inserted r0 beside fence and marker", got)
			}

			// A rebuild of the same journal equals the table.
			rebuilt := projectiontest.SQLite(t)
			app3 := projection.NewApplier(rebuilt, projection.ApplierConfig{Logger: projectiontest.QuietLogger(), RememberIDs: true})
			applyAll(t, app3, "q", q)
			applyAll(t, app3, "p", journalP)
			projectiontest.CompareStores(t, st, rebuilt, "orders")
		})
	}
}

// failNthTx fails the nth transaction through it (counting from arm) as
// a crash would: the transaction is not applied.
type failNthTx struct {
	store.Store
	n     atomic.Int64
	armed atomic.Bool
}

var errCrash = errors.New("crash between erase transactions")

func (f *failNthTx) Transact(ctx context.Context, table, pk string, ops []store.Op) ([]string, error) {
	if f.armed.Load() && f.n.Add(-1) == 0 {
		return nil, errCrash
	}
	return f.Store.Transact(ctx, table, pk, ops)
}

// TestEraseCrashMidway: a partition erase that takes several transactions
// stops after the first (a crash); the rows left still hold values and
// the fence does not name the erase. The erase redelivered to a fresh
// applier finishes the job.
func TestEraseCrashMidway(t *testing.T) {
	for _, b := range backends() {
		t.Run(b.Name, func(t *testing.T) {
			st := &failNthTx{Store: b.Open(t)}
			p, _ := eraseWorkload("SECRET")
			app := projection.NewApplier(st, projection.ApplierConfig{Logger: projectiontest.QuietLogger()})
			applyAll(t, app, "p", p)
			erase := eraseEntry(500, "erase-p", "p", nil)
			st.n.Store(2)
			st.armed.Store(true)
			err := app.Apply(context.Background(), "orders", "p", []projection.Entry{erase}, projection.Hooks{})
			if !errors.Is(err, errCrash) {
				t.Fatalf("erase through the crashing store: %v", err)
			}
			st.armed.Store(false)
			left := holding(t, st, "orders", "SECRET")
			if len(left) == 0 {
				t.Fatal("the first transaction erased everything: the test erases too few rows")
			}
			app2 := projection.NewApplier(st, projection.ApplierConfig{Logger: projectiontest.QuietLogger()})
			rs := applyAll(t, app2, "p", append(p, erase))
			if got := statusOf(rs, erase.Seq); got != wire.StatusApplied {
				t.Fatalf("the erase again: %s, want applied", got)
			}
			if got := holding(t, st, "orders", "SECRET"); len(got) != 0 {
				t.Fatalf("rows still hold erased values: %v", got)
			}
			want := []string{rows.ErasedKey, rows.FenceKey}
			if got := keysOf(t, st, "p"); fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("partition p holds %v, want %v", got, want)
			}
		})
	}
}

// TestEraseInvalid: an erase message is checked at the projector like a
// command: one that carries values, or disagrees with its subject, is
// rejected by its rule and writes nothing.
func TestEraseInvalid(t *testing.T) {
	st := projectiontest.SQLite(t)
	good := &events.Erase{ID: "e1", Table: "orders", PK: "p"}
	msg, err := journal.EraseMessage(good, wire.ContentTypeJSON)
	if err != nil {
		t.Fatal(err)
	}
	stored := func(subject string, data []byte) journal.Msg {
		return journal.Msg{Seq: 1, Subject: subject, Header: msg.Header, Data: data, Time: time.Unix(1, 0)}
	}
	sub := "journal.orders.0." + wire.PKToken("p")
	for _, tt := range []struct {
		name string
		m    journal.Msg
		rule string
	}{
		{"values", stored(sub, []byte(`{"id":"e1","table":"orders","pk":"p","entity":{"name":"Ada"}}`)), string(rules.UnknownField)},
		{"subject", stored("journal.orders.0."+wire.PKToken("q"), msg.Data), wire.RuleSubjectMismatch},
		{"rk", stored(sub, []byte(`{"id":"e1","table":"orders","pk":"p","rk":"a#b"}`)), string(rules.KeyForbiddenChar)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			table, pk, e := projection.EntryFromMsg(tt.m)
			if e.Erase != nil || e.Err == nil {
				t.Fatalf("entry %+v: want an error", e)
			}
			app := projection.NewApplier(st, projection.ApplierConfig{Logger: projectiontest.QuietLogger()})
			var rs []projection.Result
			var mu sync.Mutex
			if err := app.Apply(context.Background(), table, pk, []projection.Entry{e}, statuses(&rs, &mu)); err != nil {
				t.Fatal(err)
			}
			if len(rs) != 1 || rs[0].Status != wire.StatusRejected || rs[0].Code != wire.CodeInvalid || rs[0].Rule != tt.rule {
				t.Fatalf("results %+v, want rejected by rule %s", rs, tt.rule)
			}
		})
	}
	table, pk, e := projection.EntryFromMsg(stored(sub, msg.Data))
	if e.Err != nil || !e.Erase.Equal(good) || table != "orders" || pk != "p" {
		t.Fatalf("a good erase: %s %s %+v", table, pk, e)
	}
}

// BenchmarkErasePartition erases a partition of 500 rows with one
// version each (1,000 stored rows: 11 transactions), per backend.
func BenchmarkErasePartition(b *testing.B) {
	for _, be := range backends() {
		b.Run(be.Name, func(b *testing.B) {
			for i := 0; b.Loop(); i++ {
				b.StopTimer()
				st := be.Open(b)
				app := projection.NewApplier(st, projection.ApplierConfig{Logger: projectiontest.QuietLogger()})
				var es []projection.Entry
				for round := range 2 {
					for r := 0; r < 500; r += 25 {
						var ops []events.RowOp
						for j := r; j < r+25; j++ {
							ops = append(ops, rowOp(events.OpUpsert, fmt.Sprintf("r%d", j), round))
						}
						es = append(es, cmdEntry(uint64(len(es)+1), fmt.Sprintf("c%d", len(es)+1), ops...))
					}
				}
				if err := app.Apply(context.Background(), "orders", "p", es, projection.Hooks{}); err != nil {
					b.Fatal(err)
				}
				b.StartTimer()
				if err := app.Apply(context.Background(), "orders", "p", []projection.Entry{eraseEntry(10_000, "erase", "p", nil)}, projection.Hooks{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
