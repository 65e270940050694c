package replay_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"os"
	"sort"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/internal/azurite"
	"github.com/tablejournal/tablejournal/journal"
	"github.com/tablejournal/tablejournal/journal/journaltest"
	"github.com/tablejournal/tablejournal/projection"
	"github.com/tablejournal/tablejournal/projection/projectiontest"
	"github.com/tablejournal/tablejournal/replay"
	"github.com/tablejournal/tablejournal/rows"
	"github.com/tablejournal/tablejournal/store"
	"github.com/tablejournal/tablejournal/store/storetest"
	"github.com/tablejournal/tablejournal/wire"
)

// azuriteSrv is the one Azurite of this test binary.
var azuriteSrv *azurite.Server

func TestMain(m *testing.M) { os.Exit(azurite.Run(m, &azuriteSrv)) }

// backend opens a fresh table store; small says to keep workloads small
// (Azurite answers in milliseconds, not microseconds); paged says the
// store is wrapped to page like Azure (storetest.Paging).
type backend struct {
	name         string
	small, paged bool
	open         func(t testing.TB) store.Store
	// ordered opens the store without the shuffle of projectiontest.
	ordered func(t testing.TB) store.Store
}

// stores returns the two real backends of projectiontest, each store with
// its tables' layout checked when the test ends.
func stores() []backend {
	var out []backend
	for _, b := range projectiontest.Backends(azuriteSrv.ConnectionString()) {
		out = append(out, backend{name: b.Name, small: b.Name == "azurite", open: b.Open, ordered: b.Ordered})
	}
	return out
}

// backends returns the two real backends, and each again through the
// Azure-paging wrapper: small scan budgets, and an empty page with a
// continuation first in every query and every third query, so that every
// reader is seen to follow continuations through empty pages.
func backends() []backend {
	var out []backend
	for _, b := range stores() {
		budget := 20
		if b.small {
			budget = 100 // fewer round trips to Azurite, the same paths
		}
		out = append(out, b, backend{name: b.name + "-paged", small: b.small, paged: true, open: func(t testing.TB) store.Store {
			// Paged like Azure, then shuffled: Paging needs its store's
			// order.
			p := &storetest.Paging{Store: b.ordered(t), Budget: budget, EmptyEvery: 3, EmptyFirst: true}
			t.Cleanup(func() {
				if p.EmptyPages() == 0 {
					t.Errorf("%s: no empty page met: the paging wrapper was not exercised", b.name)
				}
			})
			return projectiontest.Shuffled(t, p)
		}})
	}
	return out
}

// tableSeq gives every test its own table names on the shared Azurite.
var tableSeq atomic.Int64

func uniqueTable(prefix string) string {
	return fmt.Sprintf("%s%d%d", prefix, time.Now().UnixNano()%1_000_000, tableSeq.Add(1))
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// env is one pipeline (projectiontest's harness, its projector running in
// the background) and a Replayer on its store.
type env struct {
	*projectiontest.Harness
	t    testing.TB
	ctx  context.Context
	js   jetstream.JetStream
	url  string
	j    *journal.Journal
	w    *journal.Writer
	st   store.Store
	rp   *replay.Replayer
	stop func()
}

// newEnv starts a pipeline on st; jcfg, if given, configures the journal
// (AllowTrim for a test that trims it).
func newEnv(t testing.TB, st store.Store, jcfg ...journal.Config) *env {
	t.Helper()
	var jc journal.Config
	if len(jcfg) > 0 {
		jc = jcfg[0]
	}
	h := projectiontest.Start(t, st, projectiontest.Options{Journal: jc})
	h.StartProjector(projection.Config{Journal: jc, Logger: quiet})
	ctx := journaltest.Context(t, 5*time.Minute)
	e := &env{Harness: h, t: t, ctx: ctx, js: h.JS, url: h.Server.ClientURL(), j: h.Journal, w: h.Writer, st: st}
	e.stop = func() {
		if err := h.StopProjector(); err != nil {
			t.Errorf("projector: %v", err)
		}
	}
	var err error
	e.rp, err = replay.New(ctx, replay.Config{Store: st, JetStream: h.JS, Logger: quiet})
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// publish publishes cmds in order, pipelined, and returns their sequences.
func (e *env) publish(cmds []*events.Command) []uint64 { return e.PublishAll(e.ctx, cmds) }

// awaitOutcomes waits, with the env's deadline, until every id has an
// outcome.
func (e *env) awaitOutcomes(ids []string) map[string]wire.Outcome {
	return e.AwaitOutcomes(e.ctx, ids)
}

// key names a logical row.
type key struct{ pk, rk string }

// tableModel is projectiontest's model of SPEC §2 and §4 seen from one
// table, its rows named by key as the replay tests name stored rows.
type tableModel struct {
	*projectiontest.Model
	table string
}

func newModel(table string) tableModel {
	return tableModel{Model: projectiontest.NewModel(), table: table}
}

func (m tableModel) id(k key) projectiontest.RowID {
	return projectiontest.RowID{Table: m.table, PK: k.pk, RK: k.rk}
}

// apply applies c at seq and reports whether it applied.
func (m tableModel) apply(seq uint64, c *events.Command) bool { return m.Apply(seq, c) == "applied" }

// history returns every version of a row, oldest first.
func (m tableModel) history(k key) []projectiontest.Version { return m.Rows[m.id(k)] }

// latest returns the row's newest version, a tombstone included; nil if
// it never existed.
func (m tableModel) latest(k key) *projectiontest.Version {
	h := m.history(k)
	if len(h) == 0 {
		return nil
	}
	return &h[len(h)-1]
}

// at returns the row's newest version at or before seq and whether the
// row exists then.
func (m tableModel) at(k key, seq uint64) (projectiontest.Version, bool) { return m.At(m.id(k), seq) }

// keys returns every row of the table the model knows, sorted.
func (m tableModel) keys() []key {
	var ks []key
	for _, id := range m.IDs() {
		if id.Table == m.table {
			ks = append(ks, key{id.PK, id.RK})
		}
	}
	return ks
}

// stateAt returns the live rows of a partition (or all) at seq.
func (m tableModel) stateAt(part store.Partition, seq uint64) map[key]projectiontest.Version {
	out := make(map[key]projectiontest.Version)
	for id, v := range m.StateAt(m.table, part, seq) {
		out[key{id.PK, id.RK}] = v
	}
	return out
}

// workload generates n commands on table over pks × rks, seeded: every op
// kind, every EDM type, ifVersion guards right and wrong, some commands
// naming a row twice, so that some commands are rejected.
func workload(rng *rand.Rand, table, prefix string, n int, pks, rks []string) []*events.Command {
	gen := newModel(table)
	cmds := make([]*events.Command, 0, n)
	for i := range n {
		c := &events.Command{ID: fmt.Sprintf("%s-%05d", prefix, i), Table: table, PK: pks[rng.IntN(len(pks))], Issuer: "replay-test"}
		nops := 1 + rng.IntN(3)
		for range nops {
			rk := rks[rng.IntN(len(rks))]
			l := gen.latest(key{c.PK, rk})
			exists := l != nil && !l.Deleted
			var op events.OpKind
			switch x := rng.IntN(10); {
			case !exists && x < 5:
				op = events.OpInsert
			case !exists && x < 8:
				op = events.OpUpsert
			case !exists:
				op = []events.OpKind{events.OpUpsertMerge, events.OpReplace, events.OpDelete}[rng.IntN(3)]
			case x < 3:
				op = events.OpReplace
			case x < 5:
				op = events.OpMerge
			case x < 6:
				op = events.OpUpsert
			case x < 7:
				op = events.OpUpsertMerge
			case x < 9:
				op = events.OpDelete
			default:
				op = events.OpInsert // rejected: the row exists
			}
			ro := events.RowOp{Op: op, RK: rk}
			if op != events.OpDelete {
				ro.Entity = randomEntity(rng, i)
			}
			if op != events.OpInsert && rng.IntN(6) == 0 {
				v := int64(rng.IntN(4))
				if exists && rng.IntN(3) > 0 {
					v = l.Version
				}
				ro.IfVersion = &v
			}
			c.Ops = append(c.Ops, ro)
		}
		gen.apply(uint64(i+1), c)
		cmds = append(cmds, c)
	}
	return cmds
}

func randomEntity(rng *rand.Rand, i int) events.Entity {
	e := events.Entity{"n": events.Int32(int32(i))}
	if rng.IntN(2) == 0 {
		e["status"] = events.String([]string{"new", "paid", "shipped", "ünïcode ✓"}[rng.IntN(4)])
	}
	if rng.IntN(2) == 0 {
		e["qty"] = events.Int64(1<<53 + int64(rng.IntN(1000)))
	}
	if rng.IntN(3) == 0 {
		e["total"] = events.Double(float64(rng.IntN(100000)) / 100)
	}
	if rng.IntN(3) == 0 {
		e["flag"] = events.Bool(rng.IntN(2) == 0)
	}
	if rng.IntN(4) == 0 {
		e["when"] = events.DateTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(rng.Int64N(1e15))))
	}
	if rng.IntN(4) == 0 {
		g, _ := events.Guid(fmt.Sprintf("%08x-0000-4000-8000-%012x", rng.Uint32(), rng.Int64N(1<<40)))
		e["ref"] = g
	}
	if rng.IntN(4) == 0 {
		e["blob"] = events.Binary([]byte(fmt.Sprintf("b%d\x00\xff", i)))
	}
	return e
}

// seeded is the state after a seeded workload: the model, every
// command's outcome and journal time.
type seeded struct {
	table, other string
	model        tableModel
	cmds         []*events.Command
	seqs         []uint64
	outcomes     map[string]wire.Outcome
	times        map[uint64]time.Time // journal time of every sequence
	head         uint64
}

// seed publishes a workload on two tables and waits for every outcome.
func (e *env) seed(rng *rand.Rand, n int, pks, rks []string) *seeded {
	e.t.Helper()
	s := &seeded{table: uniqueTable("Orders"), other: uniqueTable("Other")}
	cmds := workload(rng, s.table, "c", n, pks, rks)
	other := workload(rng, s.other, "o", n/8, pks[:1], rks[:2])
	// Interleave the other table's commands.
	for i, c := range other {
		at := (i + 1) * len(cmds) / (len(other) + 1)
		cmds = append(cmds[:at], append([]*events.Command{c}, cmds[at:]...)...)
	}
	s.cmds = cmds
	s.seqs = e.publish(cmds)
	ids := make([]string, len(cmds))
	for i, c := range cmds {
		ids[i] = c.ID
	}
	s.outcomes = e.awaitOutcomes(ids)
	s.model = newModel(s.table)
	s.times = make(map[uint64]time.Time)
	// Apply in journal order.
	idx := make([]int, len(cmds))
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(a, b int) bool { return s.seqs[idx[a]] < s.seqs[idx[b]] })
	statuses := map[wire.Status]int{}
	for _, i := range idx {
		c := cmds[i]
		o := s.outcomes[c.ID]
		s.times[s.seqs[i]] = o.At
		if c.Table != s.table {
			continue
		}
		applied := s.model.apply(s.seqs[i], c)
		statuses[o.Status]++
		if applied != (o.Status == wire.StatusApplied) {
			e.t.Fatalf("%s at seq %d: model applied=%v, projector %s (%s)", c.ID, s.seqs[i], applied, o.Status, o.Reason)
		}
	}
	if statuses[wire.StatusApplied] == 0 || statuses[wire.StatusRejected] == 0 {
		e.t.Fatalf("workload too tame: %v", statuses)
	}
	s.head = s.seqs[idx[len(idx)-1]]
	e.t.Logf("seeded %d commands (%v) on %s and %s, head %d", len(cmds), statuses, s.table, s.other, s.head)
	return s
}

// sameRow compares a row read by replay with a model version.
func sameRow(got rows.Row, want projectiontest.Version) error {
	switch {
	case got.Version != want.Version:
		return fmt.Errorf("version %d, want %d", got.Version, want.Version)
	case got.Seq != want.Seq || got.Cmd != want.Cmd || got.Op != want.Op:
		return fmt.Errorf("written by %s (%s) at %d, want %s (%s) at %d", got.Cmd, got.Op, got.Seq, want.Cmd, want.Op, want.Seq)
	case got.Deleted != want.Deleted:
		return fmt.Errorf("deleted %v, want %v", got.Deleted, want.Deleted)
	case !got.Props.Equal(want.Props):
		return fmt.Errorf("props %#v, want %#v", got.Props, want.Props)
	}
	return nil
}

// allRows reads every stored entity of a table, for whole-table
// comparisons (every column but Timestamp and etag).
func allRows(t testing.TB, ctx context.Context, st store.Store, table string) map[key]events.Entity {
	t.Helper()
	out := make(map[key]events.Entity)
	err := store.All(ctx, st, table, store.Query{AllPartitions: true}, func(e store.Entity) error {
		if e.RK == rows.FenceKey {
			return nil // the projector's bookkeeping; snapshots leave it out
		}
		out[key{e.PK, e.RK}] = e.Props
		return nil
	})
	if err != nil {
		t.Fatalf("read %s: %v", table, err)
	}
	return out
}

// sameTables compares two whole tables, row for row.
func sameTables(t testing.TB, what string, got, want map[key]events.Entity) {
	t.Helper()
	bad := 0
	for k, w := range want {
		g, ok := got[k]
		switch {
		case !ok:
			t.Errorf("%s: row %q/%q missing", what, k.pk, k.rk)
			bad++
		case !g.Equal(w):
			t.Errorf("%s: row %q/%q:\n got  %#v\n want %#v", what, k.pk, k.rk, g, w)
			bad++
		}
		if bad > 5 {
			t.Fatalf("%s: too many differences", what)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("%s: extra row %q/%q", what, k.pk, k.rk)
			bad++
		}
	}
	if bad > 0 {
		t.FailNow()
	}
	if len(want) == 0 {
		t.Fatalf("%s: nothing compared", what)
	}
}

// currentRows reads the current (tip) rows of a table as replay rows.
func currentRows(t testing.TB, ctx context.Context, st store.Store, table string) map[key]rows.Row {
	t.Helper()
	out := make(map[key]rows.Row)
	err := rows.Reader{Store: st}.Current(ctx, table, store.AllPartitions, func(r rows.Row) error {
		out[key{r.PK, r.RK}] = r
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// asofRows reads a table's rows at seq through replay.
func asofRows(t testing.TB, ctx context.Context, rp *replay.Replayer, table string, part store.Partition, seq uint64) map[key]rows.Row {
	t.Helper()
	out := make(map[key]rows.Row)
	var last *rows.Row
	err := rp.AsOf(ctx, table, part, seq, func(r rows.Row) error {
		if last != nil && (store.CompareKeys(last.PK, r.PK) > 0 || last.PK == r.PK && store.CompareKeys(last.RK, r.RK) >= 0) {
			t.Errorf("asof out of order: %q/%q after %q/%q", r.PK, r.RK, last.PK, last.RK)
		}
		last = &r
		out[key{r.PK, r.RK}] = r
		return nil
	})
	if err != nil {
		t.Fatalf("asof %s/%s at %d: %v", table, part, seq, err)
	}
	return out
}

// sameState compares two sets of current rows in every column.
func sameState(t testing.TB, what string, got, want map[key]rows.Row) {
	t.Helper()
	for k, w := range want {
		g, ok := got[k]
		if !ok {
			t.Fatalf("%s: row %q/%q missing", what, k.pk, k.rk)
		}
		if g.Version != w.Version || g.Cmd != w.Cmd || g.Seq != w.Seq || !g.At.Equal(w.At) || g.Op != w.Op || !g.Props.Equal(w.Props) {
			t.Fatalf("%s: row %q/%q:\n got  %+v\n want %+v", what, k.pk, k.rk, g, w)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Fatalf("%s: extra row %q/%q", what, k.pk, k.rk)
		}
	}
}
