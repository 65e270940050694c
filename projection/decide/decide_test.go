package decide

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/rows"
	"github.com/tablejournal/tablejournal/store"
	"github.com/tablejournal/tablejournal/wire"
)

var t0 = time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)

func entry(seq uint64, id string, ops ...events.RowOp) Entry {
	return Entry{Seq: seq, At: t0.Add(time.Duration(seq) * time.Second), ID: id,
		Cmd: &events.Command{ID: id, Table: "orders", PK: "p", Ops: ops}}
}

func upsert(rk string, kv ...any) events.RowOp {
	return events.RowOp{Op: events.OpUpsert, RK: rk, Entity: ent(kv...)}
}

func ent(kv ...any) edm.Entity {
	e := edm.Entity{}
	for i := 0; i < len(kv); i += 2 {
		e[kv[i].(string)] = edm.Int64(int64(kv[i+1].(int)))
	}
	return e
}

func op(kind events.OpKind, rk string, kv ...any) events.RowOp {
	o := events.RowOp{Op: kind, RK: rk}
	if kind != events.OpDelete {
		o.Entity = ent(kv...)
	}
	return o
}

func ifv(o events.RowOp, v int64) events.RowOp { o.IfVersion = &v; return o }

// Short names for the statuses in the tables below.
type status = wire.Status

const (
	applied   = wire.StatusApplied
	rejected  = wire.StatusRejected
	duplicate = wire.StatusDuplicate
)

func withPrior(e Entry, seq uint64, st wire.Status) Entry {
	e.Prior = Prior{Seq: seq, Status: st}
	return e
}

// runBatch applies entries to a batch over an empty partition and returns
// the statuses and the tip state after.
//
// A batch that says it is full before an entry because it must commit
// first (the same command ID again) is "committed" as the Applier does: a
// fresh batch continues from its state, knowing the IDs it applied. The
// batch returned carries the results of all.
func runBatch(t *testing.T, state map[string]*rowState, entries ...Entry) *Txn {
	t.Helper()
	b, _ := runTxns(t, state, 0, entries...)
	return b
}

// runTxns is runBatch on a partition whose fence holds eraseSeq as its
// newest erase; it also returns how many transactions the entries took.
func runTxns(t *testing.T, state map[string]*rowState, eraseSeq uint64, entries ...Entry) (*Txn, int) {
	t.Helper()
	txns := 1
	b := NewTxn("p", state, events.Limits{})
	b.Seen = map[string]uint64{}
	b.Erase.To = eraseSeq
	var results []Result
	for i := 0; i < len(entries); i++ {
		err := b.Add(entries[i])
		if errors.Is(err, ErrFull) && len(b.Results) > 0 && b.totalOps < store.MaxOps {
			next := make(map[string]*rowState)
			for rk, s := range state {
				next[rk] = s
			}
			for rk, s := range b.Cur {
				next[rk] = s
			}
			seen := b.Seen
			for id, s := range b.AppliedIDs {
				seen[id] = s
			}
			results = append(results, b.Results...)
			state = next
			b = NewTxn("p", state, events.Limits{})
			b.Seen = seen
			b.Erase.To = eraseSeq
			txns++
			i--
			continue
		}
		if err != nil {
			t.Fatalf("add seq %d: %v", entries[i].Seq, err)
		}
	}
	b.Results = append(results, b.Results...)
	return b, txns
}

func TestBatchOperations(t *testing.T) {
	tests := []struct {
		name     string
		entries  []Entry
		statuses []status
		// want tip version of "a" after, -1 for no tip
		tipVersion int64
		added      int // version rows written for "a"
	}{
		{"insert", []Entry{entry(1, "c1", op(events.OpInsert, "a", "x", 1))}, []status{applied}, 0, 0},
		{"insert twice rejects", []Entry{
			entry(1, "c1", op(events.OpInsert, "a", "x", 1)),
			entry(2, "c2", op(events.OpInsert, "a", "x", 2))}, []status{applied, rejected}, 0, 0},
		{"replace missing rejects", []Entry{entry(1, "c1", op(events.OpReplace, "a", "x", 1))}, []status{rejected}, -1, 0},
		{"merge missing rejects", []Entry{entry(1, "c1", op(events.OpMerge, "a", "x", 1))}, []status{rejected}, -1, 0},
		{"delete missing rejects", []Entry{entry(1, "c1", op(events.OpDelete, "a"))}, []status{rejected}, -1, 0},
		{"update keeps old version", []Entry{
			entry(1, "c1", upsert("a", "x", 1)),
			entry(2, "c2", upsert("a", "x", 2))}, []status{applied, applied}, 1, 1},
		{"delete writes copy and tombstone", []Entry{
			entry(1, "c1", upsert("a", "x", 1)),
			entry(2, "c2", op(events.OpDelete, "a"))}, []status{applied, applied}, -1, 2},
		{"re-insert continues after tombstone", []Entry{
			entry(1, "c1", upsert("a", "x", 1)),
			entry(2, "c2", op(events.OpDelete, "a")),
			entry(3, "c3", op(events.OpInsert, "a", "x", 3))}, []status{applied, applied, applied}, 2, 2},
		{"ifVersion match", []Entry{
			entry(1, "c1", upsert("a", "x", 1)),
			entry(2, "c2", ifv(op(events.OpReplace, "a", "x", 2), 0))}, []status{applied, applied}, 1, 1},
		{"ifVersion mismatch rejects", []Entry{
			entry(1, "c1", upsert("a", "x", 1)),
			entry(2, "c2", ifv(op(events.OpReplace, "a", "x", 2), 5))}, []status{applied, rejected}, 0, 0},
		{"ifVersion on missing row rejects", []Entry{
			entry(1, "c1", ifv(upsert("a", "x", 2), 0))}, []status{rejected}, -1, 0},
		{"same command id again is duplicate", []Entry{
			entry(1, "c1", upsert("a", "x", 1)),
			entry(2, "c1", upsert("a", "x", 1))}, []status{applied, duplicate}, 0, 0},
		{"same command id after the row changed is duplicate", []Entry{
			entry(1, "c1", op(events.OpInsert, "a", "x", 1)),
			entry(2, "c2", op(events.OpMerge, "a", "y", 2)),
			entry(3, "c1", op(events.OpInsert, "a", "x", 1))}, []status{applied, applied, duplicate}, 1, 0},
		{"an earlier outcome that applied makes a duplicate", []Entry{
			withPrior(entry(5, "c1", upsert("a", "x", 1)), 2, applied)}, []status{duplicate}, -1, 0},
		{"an earlier rejection does not", []Entry{
			withPrior(entry(5, "c1", upsert("a", "x", 1)), 2, rejected)}, []status{applied}, 0, 0},
		{"same row twice in one command makes one version", []Entry{
			entry(1, "c1", upsert("a", "x", 1), upsert("a", "x", 2))}, []status{applied}, 0, 0},
		{"same row twice, then again", []Entry{
			entry(1, "c1", upsert("a", "x", 1), upsert("a", "x", 2)),
			entry(2, "c2", op(events.OpReplace, "a", "x", 3), op(events.OpMerge, "a", "y", 3))}, []status{applied, applied}, 1, 1},
		{"inserted and deleted by one command leaves nothing", []Entry{
			entry(1, "c1", op(events.OpInsert, "a", "x", 1), op(events.OpDelete, "a"))}, []status{applied}, -1, 0},
		{"deleted and inserted by one command", []Entry{
			entry(1, "c1", upsert("a", "x", 1)),
			entry(2, "c2", op(events.OpDelete, "a"), op(events.OpInsert, "a", "x", 2))}, []status{applied, applied}, 1, 1},
		{"ifVersion after an op of the same command sees its version", []Entry{
			entry(1, "c1", upsert("a", "x", 1)),
			entry(2, "c2", upsert("a", "x", 2), ifv(op(events.OpReplace, "a", "x", 3), 1))}, []status{applied, applied}, 1, 1},
		{"ifVersion after an op of the same command, stale", []Entry{
			entry(1, "c1", upsert("a", "x", 1)),
			entry(2, "c2", upsert("a", "x", 2), ifv(op(events.OpReplace, "a", "x", 3), 0))}, []status{applied, rejected}, 0, 0},
		{"rejected op rejects the whole command", []Entry{
			entry(1, "c1", upsert("a", "x", 1), op(events.OpReplace, "b", "x", 1))}, []status{rejected}, -1, 0},
		{"invalid entry rejects and goes on", []Entry{
			{Seq: 1, ID: "bad", Err: errors.New("undecodable")},
			entry(2, "c2", upsert("a", "x", 1))}, []status{rejected, applied}, 0, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := runBatch(t, map[string]*rowState{}, tt.entries...)
			var got []status
			for _, r := range b.Results {
				got = append(got, r.Status)
			}
			if len(got) != len(tt.statuses) {
				t.Fatalf("statuses %v, want %v", got, tt.statuses)
			}
			for i := range got {
				if got[i] != tt.statuses[i] {
					t.Fatalf("statuses %v, want %v (reasons: %+v)", got, tt.statuses, b.Results)
				}
			}
			for _, r := range b.Results {
				if r.Status != applied && (r.Rows != nil || r.Changes != nil) {
					t.Errorf("%s command %s reports rows %v and changes %v", r.Status, r.ID, r.Rows, r.Changes)
				}
			}
			s := b.state("a")
			switch {
			case tt.tipVersion < 0 && s.Tip != nil:
				t.Errorf("tip at version %d, want none", s.Tip.Version)
			case tt.tipVersion >= 0 && (s.Tip == nil || s.Tip.Version != tt.tipVersion):
				t.Errorf("tip %+v, want version %d", s.Tip, tt.tipVersion)
			}
			if n := len(b.added["a"]); n != tt.added {
				t.Errorf("%d version rows added, want %d", n, tt.added)
			}
		})
	}
}

func TestBatchMergeAndTombstoneValues(t *testing.T) {
	b := runBatch(t, map[string]*rowState{},
		entry(1, "c1", upsert("a", "x", 1, "y", 1)),
		entry(2, "c2", op(events.OpMerge, "a", "y", 2, "z", 2)),
		entry(3, "c3", op(events.OpDelete, "a")))
	want := ent("x", 1, "y", 2, "z", 2)
	rows := b.added["a"]
	if len(rows) != 3 {
		t.Fatalf("%d version rows, want 3 (v0, v1, tombstone v2)", len(rows))
	}
	if !rows[1].Props.Equal(want) || rows[1].Version != 1 || rows[1].Cmd != "c2" {
		t.Errorf("v1 = %+v, want merged %v by c2", rows[1], want)
	}
	tomb := rows[2]
	if !tomb.Deleted || tomb.Version != 2 || tomb.Cmd != "c3" || tomb.Seq != 3 || !tomb.Props.Equal(want) {
		t.Errorf("tombstone = %+v, want deleted v2 by c3 with last values", tomb)
	}
	if !tomb.At.Equal(t0.Add(3 * time.Second)) {
		t.Errorf("tombstone _at = %v, want the journal time of seq 3", tomb.At)
	}
}

func TestBatchSkipsRedelivered(t *testing.T) {
	committed := &rows.Row{RK: "a", Version: 4, Seq: 10, Cmd: "c10", Tip: true, Props: ent("x", 1)}
	state := map[string]*rowState{"a": {Tip: committed, Latest: committed}}
	b := runBatch(t, state,
		entry(9, "c9", op(events.OpInsert, "a", "x", 9)), // handled before the crash
		entry(10, "c10", upsert("a", "x", 1)),            // this one too
		entry(11, "c11", upsert("a", "x", 2)))
	got := []status{b.Results[0].Status, b.Results[1].Status, b.Results[2].Status}
	if got[0] != Skipped || got[1] != Skipped || got[2] != applied {
		t.Fatalf("statuses %v, want [skipped skipped applied]", got)
	}
	if v := b.state("a").Tip.Version; v != 5 {
		t.Errorf("tip version %d, want 5", v)
	}
}

func TestBatchTxOps(t *testing.T) {
	base := &rows.Row{PK: "p", RK: "a", Version: 0, Seq: 11, Cmd: "c11", Tip: true, Props: ent("x", 1), ETag: "e1"}
	state := map[string]*rowState{"a": {Tip: base, Latest: base}}
	b := runBatch(t, state, entry(12, "c12", upsert("a", "x", 2)), entry(13, "c13", op(events.OpDelete, "a")))
	ops := b.TxOps()
	kinds := map[string]store.OpKind{}
	for _, o := range ops {
		kinds[o.RK] = o.Kind
	}
	// Version rows are keyed by the sequence that wrote them: v0 by 11,
	// v1 by 12, the tombstone v2 by 13.
	want := map[string]store.OpKind{
		rows.VersionKey("a", 11): store.Insert, rows.VersionKey("a", 12): store.Insert,
		rows.VersionKey("a", 13): store.Insert, rows.TipKey("a"): store.Delete,
	}
	if len(kinds) != len(want) || len(ops) != len(want) {
		t.Fatalf("ops %v, want %v", kinds, want)
	}
	for k, v := range want {
		if kinds[k] != v {
			t.Errorf("op on %q = %v, want %v", k, kinds[k], v)
		}
	}
	for _, o := range ops {
		if o.RK == rows.TipKey("a") && o.IfMatch != "e1" {
			t.Errorf("tip delete IfMatch %q, want the etag read", o.IfMatch)
		}
	}
}

func TestBatchFullAndOversize(t *testing.T) {
	b := NewTxn("p", map[string]*rowState{}, events.Limits{})
	seq := uint64(0)
	var err error
	for err == nil {
		seq++
		err = b.Add(entry(seq, "c"+string(rune('a'+seq%26))+strings.Repeat("x", int(seq)), upsert("r"+strings.Repeat("k", int(seq)), "x", 1)))
	}
	if !errors.Is(err, ErrFull) || b.totalOps != store.MaxOps {
		t.Fatalf("err %v after %d ops, want ErrFull at exactly %d ops", err, b.totalOps, store.MaxOps)
	}
	// One command too large on its own is rejected, not a stuck batch.
	big := edm.Entity{}
	for i := 0; i < 5; i++ {
		big["p"+string(rune('a'+i))] = edm.Binary(make([]byte, 60<<10))
	}
	b = NewTxn("p", map[string]*rowState{}, events.Limits{})
	var ops []events.RowOp
	for i := 0; i < 20; i++ {
		ops = append(ops, events.RowOp{Op: events.OpUpsert, RK: "r" + strings.Repeat("x", i), Entity: big})
	}
	if err := b.Add(entry(1, "big", ops...)); err != nil {
		t.Fatal(err)
	}
	if r := b.Results[0]; r.Status != rejected || !strings.Contains(r.Reason, "too large") {
		t.Fatalf("result %+v, want rejected as too large", r)
	}
	if len(b.TxOps()) != 0 {
		t.Fatal("a rejected command left store operations")
	}
}

// TestBatchOneVersionPerCommand: a command's ops on one row make one
// version, whose values are the row's after the last op, and a tombstone
// holds the values the row had before the deleting command.
func TestBatchOneVersionPerCommand(t *testing.T) {
	b := runBatch(t, map[string]*rowState{},
		entry(1, "c1", upsert("a", "x", 1)),
		entry(2, "c2", op(events.OpReplace, "a", "x", 2), op(events.OpMerge, "a", "y", 2), upsert("b", "x", 2)),
		entry(3, "c3", op(events.OpReplace, "a", "x", 3), op(events.OpDelete, "a"), op(events.OpInsert, "c", "x", 3), op(events.OpDelete, "c")))
	r2, r3 := b.Results[1], b.Results[2]
	if r2.Seq != 2 || len(r2.Rows) != 2 || r2.Rows[0] != (wire.RowVersion{RK: "a", Version: 1, Op: events.OpMerge}) || r2.Rows[1].RK != "b" {
		t.Fatalf("c2 rows %+v, want a v1 (merge) then b", r2.Rows)
	}
	if ch := r2.Changes[0]; ch.Kind != wire.ChangeUpdate || !ch.Before.Equal(ent("x", 1)) || !ch.After.Equal(ent("x", 2, "y", 2)) {
		t.Errorf("c2 change of a: %+v", ch)
	}
	if r3.Seq != 3 || len(r3.Rows) != 1 || r3.Rows[0] != (wire.RowVersion{RK: "a", Version: 2, Op: events.OpDelete, Deleted: true}) {
		t.Fatalf("c3 rows %+v, want only the tombstone of a (c was inserted and deleted)", r3.Rows)
	}
	if ch := r3.Changes[0]; ch.Kind != wire.ChangeDelete || !ch.Before.Equal(ent("x", 2, "y", 2)) || ch.After != nil {
		t.Errorf("c3 change of a: %+v", ch)
	}
	rows := b.added["a"]
	if len(rows) != 3 {
		t.Fatalf("%d version rows of a, want 3 (v0, v1, tombstone v2)", len(rows))
	}
	if tomb := rows[2]; !tomb.Deleted || tomb.Version != 2 || tomb.Seq != 3 || !tomb.Props.Equal(ent("x", 2, "y", 2)) {
		t.Errorf("tombstone %+v, want v2 at 3 with the values before c3", tomb)
	}
	if s := b.state("c"); s.Latest != nil || s.Tip != nil || len(b.added["c"]) != 0 {
		t.Errorf("row c inserted and deleted in one command left %+v and %d version rows", s, len(b.added["c"]))
	}
	keys := map[string]bool{}
	for _, o := range b.TxOps() {
		if keys[o.RK] {
			t.Fatalf("two operations on %q", o.RK)
		}
		keys[o.RK] = true
	}
}
