// Package replaytest is the test harness that replay's packages share: a
// pipeline with a replay.Source and a handle of every part of replay on it
// (Env), the real backends, a seeded workload and its model, and row
// comparisons.
package replaytest

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"math/rand/v2"
	"sort"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tablejournal/tablejournal/journal/tablelayout"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/internal/azurite"
	"github.com/tablejournal/tablejournal/journal"
	"github.com/tablejournal/tablejournal/journal/journaltest"
	"github.com/tablejournal/tablejournal/projection"
	"github.com/tablejournal/tablejournal/projection/projectiontest"
	"github.com/tablejournal/tablejournal/replay"
	"github.com/tablejournal/tablejournal/replay/erasure"
	"github.com/tablejournal/tablejournal/replay/history"
	"github.com/tablejournal/tablejournal/replay/rebuild"
	"github.com/tablejournal/tablejournal/replay/repair"
	"github.com/tablejournal/tablejournal/replay/retention"
	"github.com/tablejournal/tablejournal/replay/snapshot"
	"github.com/tablejournal/tablejournal/rows"
	"github.com/tablejournal/tablejournal/store"
	"github.com/tablejournal/tablejournal/store/storetest"
	"github.com/tablejournal/tablejournal/wire"
)

// Azurite is the one Azurite of this test binary.
var Azurite *azurite.Server

// Main runs a test binary of replay with its Azurite: a package's
// TestMain is func TestMain(m *testing.M) { os.Exit(replaytest.Main(m)) }.
func Main(m *testing.M) int { return azurite.Run(m, &Azurite) }

// Backend opens a fresh table store; small says to keep workloads small
// (Azurite answers in milliseconds, not microseconds); paged says the
// store is wrapped to page like Azure (storetest.Paging).
type Backend struct {
	Name         string
	Small, Paged bool
	Open         func(t testing.TB) store.Store
	// Ordered opens the store without the shuffle of projectiontest.
	Ordered func(t testing.TB) store.Store
}

// Stores returns the two real Backends of projectiontest, each store with
// its tables' layout checked when the test ends.
func Stores() []Backend {
	var out []Backend
	for _, b := range projectiontest.Backends(Azurite.ConnectionString()) {
		out = append(out, Backend{Name: b.Name, Small: b.Name == "azurite", Open: b.Open, Ordered: b.Ordered})
	}
	return out
}

// Backends returns the two real Backends, and each again through the
// Azure-paging wrapper: small scan budgets, and an empty page with a
// continuation first in every query and every third query, so that every
// reader is seen to follow continuations through empty pages.
func Backends() []Backend {
	var out []Backend
	for _, b := range Stores() {
		budget := 20
		if b.Small {
			budget = 100 // fewer round trips to Azurite, the same paths
		}
		out = append(out, b, Backend{Name: b.Name + "-paged", Small: b.Small, Paged: true, Open: func(t testing.TB) store.Store {
			// Paged like Azure, then shuffled: Paging needs its store's
			// order.
			p := &storetest.Paging{Store: b.Ordered(t), Budget: budget, EmptyEvery: 3, EmptyFirst: true}
			t.Cleanup(func() {
				if p.EmptyPages() == 0 {
					t.Errorf("%s: no empty page met: the paging wrapper was not exercised", b.Name)
				}
			})
			return projectiontest.Shuffled(t, p)
		}})
	}
	return out
}

// tableSeq gives every test its own table names on the shared Azurite.
var tableSeq atomic.Int64

func UniqueTable(prefix string) string {
	return fmt.Sprintf("%s%d%d", prefix, time.Now().UnixNano()%1_000_000, tableSeq.Add(1))
}

// Quiet is a logger that drops everything.
var Quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// Env is one pipeline (projectiontest's harness, its projector running in
// the background) and a replay.Source on its store, with a handle of each
// part of replay the test asked for (With); the others are nil.
type Env struct {
	*projectiontest.Harness
	T   testing.TB
	Ctx context.Context
	URL string
	Src *replay.Source

	Hist      *history.Reader     // With(History)
	Repair    *repair.Planner     // With(Repair)
	Rebuild   *rebuild.Rebuilder  // With(Rebuild)
	Snap      *snapshot.Snapshots // With(Snapshot)
	Pruner    *retention.Pruner   // With(Retention)
	Compactor *retention.Compactor
	Eraser    *erasure.Eraser // With(Erasure)

	// Stop stops the projector.
	Stop func()

	parts Part
}

// A Part names parts of replay for an Env to build on its source; they
// combine with |.
type Part uint8

// The parts of replay.
const (
	History   Part = 1 << iota // Env.Hist
	Repair                     // Env.Repair
	Rebuild                    // Env.Rebuild
	Snapshot                   // Env.Snap
	Retention                  // Env.Pruner and Env.Compactor
	Erasure                    // Env.Eraser
)

// An Option configures NewEnv.
type Option func(*envOptions)

type envOptions struct {
	journal journal.Config
	parts   Part
}

// With builds the parts named on the Env's source; without it the Env has
// only its pipeline and Src.
func With(parts Part) Option { return func(o *envOptions) { o.parts |= parts } }

// WithJournal configures the journal (AllowTrim for a test that trims it,
// AllowMsgDelete for one that erases).
func WithJournal(cfg journal.Config) Option { return func(o *envOptions) { o.journal = cfg } }

// NewEnv starts a pipeline on st, with the replay parts opts ask for.
func NewEnv(t testing.TB, st store.Store, opts ...Option) *Env {
	t.Helper()
	var o envOptions
	for _, f := range opts {
		f(&o)
	}
	h := projectiontest.Start(t, st, projectiontest.Options{Journal: o.journal})
	h.StartProjector(projection.Config{Journal: o.journal, Logger: Quiet})
	ctx := journaltest.Context(t, 5*time.Minute)
	e := &Env{Harness: h, T: t, Ctx: ctx, URL: h.Server.ClientURL(), parts: o.parts}
	e.Stop = func() {
		if err := h.StopProjector(); err != nil {
			t.Errorf("projector: %v", err)
		}
	}
	src, err := replay.New(ctx, replay.Config{Store: st, JetStream: h.JS, Logger: Quiet})
	if err != nil {
		t.Fatal(err)
	}
	e.SetSource(src)
	return e
}

// SetSource makes src the Env's source, and builds its asked-for parts on
// it.
func (e *Env) SetSource(src *replay.Source) {
	e.Src = src
	if e.parts&History != 0 {
		e.Hist = history.New(src)
	}
	if e.parts&Repair != 0 {
		e.Repair = repair.New(src)
	}
	if e.parts&Rebuild != 0 {
		e.Rebuild = rebuild.New(src)
	}
	if e.parts&Snapshot != 0 {
		e.Snap = snapshot.New(src)
	}
	if e.parts&Retention != 0 {
		e.Pruner, e.Compactor = retention.NewPruner(src), retention.NewCompactor(src)
	}
	if e.parts&Erasure != 0 {
		e.Eraser = erasure.New(src)
	}
}

// Publish publishes cmds in order, pipelined, and returns their sequences.
func (e *Env) Publish(cmds []*events.Command) []uint64 { return e.PublishAll(e.Ctx, cmds) }

// Await waits, with the Env's deadline, until every id has an
// outcome.
func (e *Env) Await(ids []string) map[string]wire.Outcome {
	return e.AwaitOutcomes(e.Ctx, ids)
}

// Key names a logical row.
type Key struct{ PK, RK string }

// TableModel is projectiontest's model of SPEC §2 and §4 seen from one
// table, its rows named by Key as the replay tests name stored rows.
type TableModel struct {
	*projectiontest.Model
	Table string
}

func NewModel(table string) TableModel {
	return TableModel{Model: projectiontest.NewModel(), Table: table}
}

func (m TableModel) ID(k Key) projectiontest.RowID {
	return projectiontest.RowID{Table: m.Table, PK: k.PK, RK: k.RK}
}

// ApplyOK applies c at seq and reports whether it applied.
func (m TableModel) ApplyOK(seq uint64, c *events.Command) bool { return m.Apply(seq, c) == "applied" }

// History returns every version of a row, oldest first.
func (m TableModel) History(k Key) []projectiontest.Version { return m.Rows[m.ID(k)] }

// Latest returns the row's newest version, a tombstone included; nil if
// it never existed.
func (m TableModel) Latest(k Key) *projectiontest.Version {
	h := m.History(k)
	if len(h) == 0 {
		return nil
	}
	return &h[len(h)-1]
}

// AtKey returns the row's newest version at or before seq and whether the
// row exists then.
func (m TableModel) AtKey(k Key, seq uint64) (projectiontest.Version, bool) {
	return m.At(m.ID(k), seq)
}

// Keys returns every row of the table the model knows, sorted.
func (m TableModel) Keys() []Key {
	var ks []Key
	for _, id := range m.IDs() {
		if id.Table == m.Table {
			ks = append(ks, Key{id.PK, id.RK})
		}
	}
	return ks
}

// StateAtKey returns the live rows of a partition (or all) at seq.
func (m TableModel) StateAtKey(part store.Partition, seq uint64) map[Key]projectiontest.Version {
	out := make(map[Key]projectiontest.Version)
	for id, v := range m.StateAt(m.Table, part, seq) {
		out[Key{id.PK, id.RK}] = v
	}
	return out
}

// Workload generates n commands on table over pks × rks, Seeded: every op
// kind, every EDM type, ifVersion guards right and wrong, some commands
// naming a row twice, so that some commands are rejected.
func Workload(rng *rand.Rand, table, prefix string, n int, pks, rks []string) []*events.Command {
	gen := NewModel(table)
	cmds := make([]*events.Command, 0, n)
	for i := range n {
		c := &events.Command{ID: fmt.Sprintf("%s-%05d", prefix, i), Table: table, PK: pks[rng.IntN(len(pks))], Issuer: "replay-test"}
		nops := 1 + rng.IntN(3)
		for range nops {
			rk := rks[rng.IntN(len(rks))]
			l := gen.Latest(Key{c.PK, rk})
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
				ro.Entity = RandomEntity(rng, i)
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
		gen.ApplyOK(uint64(i+1), c)
		cmds = append(cmds, c)
	}
	return cmds
}

func RandomEntity(rng *rand.Rand, i int) edm.Entity {
	e := edm.Entity{"n": edm.Int32(int32(i))}
	if rng.IntN(2) == 0 {
		e["status"] = edm.String([]string{"new", "paid", "shipped", "ünïcode ✓"}[rng.IntN(4)])
	}
	if rng.IntN(2) == 0 {
		e["qty"] = edm.Int64(1<<53 + int64(rng.IntN(1000)))
	}
	if rng.IntN(3) == 0 {
		e["total"] = edm.Double(float64(rng.IntN(100000)) / 100)
	}
	if rng.IntN(3) == 0 {
		e["flag"] = edm.Bool(rng.IntN(2) == 0)
	}
	if rng.IntN(4) == 0 {
		e["when"] = edm.DateTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Add(time.Duration(rng.Int64N(1e15))))
	}
	if rng.IntN(4) == 0 {
		g, _ := edm.Guid(fmt.Sprintf("%08x-0000-4000-8000-%012x", rng.Uint32(), rng.Int64N(1<<40)))
		e["ref"] = g
	}
	if rng.IntN(4) == 0 {
		e["blob"] = edm.Binary([]byte(fmt.Sprintf("b%d\x00\xff", i)))
	}
	return e
}

// Seeded is the state after a Seeded Workload: the model, every
// command's outcome and journal time.
type Seeded struct {
	Table, Other string
	Model        TableModel
	Cmds         []*events.Command
	Seqs         []uint64
	Outcomes     map[string]wire.Outcome
	Times        map[uint64]time.Time // journal time of every sequence
	Head         uint64
}

// Seed publishes a Workload on two tables and waits for every outcome.
func (e *Env) Seed(rng *rand.Rand, n int, pks, rks []string) *Seeded {
	e.T.Helper()
	return e.SeedIn(wire.LayoutVersioned, rng, n, pks, rks)
}

// SeedIn is Seed with the seeded table (not the other) set to layout
// first (SPEC §3).
func (e *Env) SeedIn(layout wire.Layout, rng *rand.Rand, n int, pks, rks []string) *Seeded {
	e.T.Helper()
	s := &Seeded{Table: UniqueTable("Orders"), Other: UniqueTable("Other")}
	e.SetLayout(e.Ctx, s.Table, layout)
	cmds := Workload(rng, s.Table, "c", n, pks, rks)
	other := Workload(rng, s.Other, "o", n/8, pks[:1], rks[:2])
	// Interleave the other table's commands.
	for i, c := range other {
		at := (i + 1) * len(cmds) / (len(other) + 1)
		cmds = append(cmds[:at], append([]*events.Command{c}, cmds[at:]...)...)
	}
	s.Cmds = cmds
	s.Seqs = e.Publish(cmds)
	ids := make([]string, len(cmds))
	for i, c := range cmds {
		ids[i] = c.ID
	}
	s.Outcomes = e.Await(ids)
	s.Model = NewModel(s.Table)
	s.Times = make(map[uint64]time.Time)
	// Apply in journal order.
	idx := make([]int, len(cmds))
	for i := range idx {
		idx[i] = i
	}
	sort.Slice(idx, func(a, b int) bool { return s.Seqs[idx[a]] < s.Seqs[idx[b]] })
	// The layout settings are journal messages too: a time point
	// before the first command resolves to one of them (as-of there is
	// the empty table, as at 0).
	if j := e.Src.Journal(); j != nil {
		settings, err := tablelayout.Settings(e.Ctx, j)
		if err != nil {
			e.T.Fatal(err)
		}
		for _, seq := range settings {
			m, err := j.Get(e.Ctx, seq)
			if err != nil {
				e.T.Fatal(err)
			}
			s.Times[seq] = m.Time
		}
	}
	statuses := map[wire.Status]int{}
	for _, i := range idx {
		c := cmds[i]
		o := s.Outcomes[c.ID]
		s.Times[s.Seqs[i]] = o.At
		if c.Table != s.Table {
			continue
		}
		applied := s.Model.ApplyOK(s.Seqs[i], c)
		statuses[o.Status]++
		if applied != (o.Status == wire.StatusApplied) {
			e.T.Fatalf("%s at seq %d: model applied=%v, projector %s (%s)", c.ID, s.Seqs[i], applied, o.Status, o.Reason)
		}
	}
	if statuses[wire.StatusApplied] == 0 || statuses[wire.StatusRejected] == 0 {
		e.T.Fatalf("Workload too tame: %v", statuses)
	}
	s.Head = s.Seqs[idx[len(idx)-1]]
	e.T.Logf("Seeded %d commands (%v) on %s and %s, head %d", len(cmds), statuses, s.Table, s.Other, s.Head)
	return s
}

// SameRow compares a row read by replay with a model version.
func SameRow(got rows.Row, want projectiontest.Version) error {
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

// AllRows reads every stored entity of a table, for whole-table
// comparisons (every column but Timestamp and etag).
func AllRows(t testing.TB, ctx context.Context, st store.Store, table string) map[Key]edm.Entity {
	t.Helper()
	out := make(map[Key]edm.Entity)
	err := store.All(ctx, st, table, store.Query{AllPartitions: true}, func(e store.Entity) error {
		if e.RK == rows.FenceKey {
			return nil // the projector's bookkeeping; snapshots leave it out
		}
		out[Key{e.PK, e.RK}] = e.Props
		return nil
	})
	if err != nil {
		t.Fatalf("read %s: %v", table, err)
	}
	return out
}

// SameTables compares two whole tables, row for row.
func SameTables(t testing.TB, what string, got, want map[Key]edm.Entity) {
	t.Helper()
	bad := 0
	for k, w := range want {
		g, ok := got[k]
		switch {
		case !ok:
			t.Errorf("%s: row %q/%q missing", what, k.PK, k.RK)
			bad++
		case !g.Equal(w):
			t.Errorf("%s: row %q/%q:\n got  %#v\n want %#v", what, k.PK, k.RK, g, w)
			bad++
		}
		if bad > 5 {
			t.Fatalf("%s: too many differences", what)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("%s: extra row %q/%q", what, k.PK, k.RK)
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

// CurrentRows reads the current (tip) rows of a table as replay rows.
func CurrentRows(t testing.TB, ctx context.Context, st store.Store, table string) map[Key]rows.Row {
	t.Helper()
	out := make(map[Key]rows.Row)
	err := rows.Reader{Store: st}.Current(ctx, table, store.AllPartitions, func(r rows.Row) error {
		out[Key{r.PK, r.RK}] = r
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// AsOfRows reads a table's rows at seq through replay.
func AsOfRows(t testing.TB, ctx context.Context, hist *history.Reader, table string, part store.Partition, seq uint64) map[Key]rows.Row {
	t.Helper()
	out := make(map[Key]rows.Row)
	var last *rows.Row
	err := hist.AsOf(ctx, table, part, seq, func(r rows.Row) error {
		if last != nil && (store.CompareKeys(last.PK, r.PK) > 0 || last.PK == r.PK && store.CompareKeys(last.RK, r.RK) >= 0) {
			t.Errorf("asof out of order: %q/%q after %q/%q", r.PK, r.RK, last.PK, last.RK)
		}
		last = &r
		out[Key{r.PK, r.RK}] = r
		return nil
	})
	if err != nil {
		t.Fatalf("asof %s/%s at %d: %v", table, part, seq, err)
	}
	return out
}

// SameState compares two sets of current rows in every column.
func SameState(t testing.TB, what string, got, want map[Key]rows.Row) {
	t.Helper()
	for k, w := range want {
		g, ok := got[k]
		if !ok {
			t.Fatalf("%s: row %q/%q missing", what, k.PK, k.RK)
		}
		if g.Version != w.Version || g.Cmd != w.Cmd || g.Seq != w.Seq || !g.At.Equal(w.At) || g.Op != w.Op || !g.Props.Equal(w.Props) {
			t.Fatalf("%s: row %q/%q:\n got  %+v\n want %+v", what, k.PK, k.RK, g, w)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Fatalf("%s: extra row %q/%q", what, k.PK, k.RK)
		}
	}
}

// DeepRow writes a row with depth versions through the projector's own
// apply code, at sequences base+1 .. base+depth: an insert, replaces, and
// (from depth 3) a delete and a re-insert in the middle. It returns the
// index of the tombstone, or -1.
func DeepRow(t testing.TB, st store.Store, table, pk, rk string, depth int, base uint64, gone bool) int {
	t.Helper()
	a := projection.NewApplier(st, projection.ApplierConfig{CacheRows: -1})
	del := -1
	if depth >= 3 {
		del = depth / 2
	}
	at := time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)
	entries := make([]projection.Entry, 0, depth)
	for i := range depth {
		op := events.RowOp{Op: events.OpReplace, RK: rk, Entity: edm.Entity{"i": edm.Int32(int32(i)), "pad": edm.String("some text")}}
		switch {
		case i == 0 || i == del+1:
			op.Op = events.OpInsert
		case i == del || gone && i == depth-1:
			op = events.RowOp{Op: events.OpDelete, RK: rk}
		}
		id := fmt.Sprintf("%s-%s-%d", table, rk, i)
		entries = append(entries, projection.Entry{
			Seq: base + uint64(i) + 1, At: at.Add(time.Duration(i) * time.Millisecond), ID: id,
			Cmd: &events.Command{ID: id, Table: table, PK: pk, Ops: []events.RowOp{op}},
		})
	}
	applied := 0
	err := a.Apply(context.Background(), table, pk, entries, projection.Hooks{AfterCommit: func(_ context.Context, rs []projection.Result) error {
		applied += len(rs)
		return nil
	}})
	if err != nil || applied != depth {
		t.Fatalf("build %d versions: %d applied, %v", depth, applied, err)
	}
	return del
}
