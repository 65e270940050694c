package rebuild

import (
	"container/heap"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"iter"
	"math"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/internal/retry"
	"github.com/tablejournal/tablejournal/replay"
	"github.com/tablejournal/tablejournal/replay/history"
	"github.com/tablejournal/tablejournal/replay/internal/run"
	"github.com/tablejournal/tablejournal/rows"
	"github.com/tablejournal/tablejournal/store"
	"github.com/tablejournal/tablejournal/wire"
)

// DiffKind says how a stored row of the checked table differs from the
// reference (the journal re-projected, or another table).
type DiffKind string

// The kinds of differences.
const (
	// Missing: the reference has the row, the checked table does not.
	Missing DiffKind = "missing"
	// Extra: the checked table has a row the reference does not.
	Extra DiffKind = "extra"
	// Changed: both have the row, with other values in some columns.
	Changed DiffKind = "changed"
)

// Difference is one stored row that differs: a tip, a version row or a
// row outside the layout, named by its PartitionKey and stored RowKey.
type Difference struct {
	Kind DiffKind
	PK   string
	// Key is the RowKey as stored ("tip:<rk>", "old:<rk>:<inverted seq>",
	// or anything a writer outside the journal used).
	Key string
	// Got is the checked table's row and Want the reference's; nil when
	// absent.
	Got, Want edm.Entity
	// Columns are, for Changed, the columns that differ (Before is the
	// reference's value, After the checked table's), by name.
	Columns []history.PropChange
	// Plain marks a row of a plain table itself (SPEC §4) that differs from
	// its history's tip: Key is then the service's RowKey, Want the row as
	// the tip says it must be.
	Plain bool
}

// DiffStats sums up a comparison.
type DiffStats struct {
	// Table is the checked table; Against the reference table (for Verify,
	// the scratch table the journal was re-projected into).
	Table, Against string
	// Seq is the journal sequence both were compared at; math.MaxInt64
	// means every row as stored.
	Seq uint64
	// TableLost says, for Verify, that the checked table does not exist in
	// the store although its journal has commands: every row is Missing.
	TableLost bool
	// Rows counts the stored rows compared: the rows of either side.
	Rows                    int64
	Missing, Extra, Changed int64
	// Rebuild is, for Verify, what the re-projection did.
	Rebuild *Stats
	Elapsed time.Duration
}

// Identical reports whether no difference was found.
func (s DiffStats) Identical() bool { return s.Missing+s.Extra+s.Changed == 0 }

// Differences returns the number of differences found.
func (s DiffStats) Differences() int64 { return s.Missing + s.Extra + s.Changed }

// DiffConfig configures DiffTables.
type DiffConfig struct {
	// Table is the checked table, Against the reference; both required and
	// in the Source's store.
	Table, Against string
	// Seq is the journal sequence both tables are compared at: each as the
	// projector had left it then (see Snapshot). If zero, every row as
	// stored.
	Seq uint64
	// OnDiff, if set, is called with each difference, partition by
	// partition in key order. An error it returns stops the comparison.
	OnDiff func(Difference) error
	// Progress, if set, is called about ten times a second and at the end
	// with the phase ("compare") and the rows compared; total is -1. It is
	// called from another goroutine, but never while OnDiff runs.
	Progress func(phase string, done, total int64)
}

// DiffTables compares two tables of the Source's store row for row,
// tips, version rows and rows outside the layout, in every column but the
// store's Timestamp and etag, each table as it stood at a journal sequence:
// a blue/green rebuild (Rebuild into a shadow table, then DiffTables of
// the live table against it at the rebuild's sequence) shows whether
// readers can be switched to the shadow. It reads each table twice (its
// tips, then all its rows, partition by partition when the store lists
// partitions) and holds one partition's tip keys in memory.
func (r *Rebuilder) DiffTables(ctx context.Context, cfg DiffConfig) (DiffStats, error) {
	if cfg.Table == "" || cfg.Against == "" {
		return DiffStats{}, errors.New("diff: name both tables")
	}
	if cfg.Seq == 0 {
		cfg.Seq = math.MaxInt64
	}
	// A plain table is compared by its history (SPEC §4), as a versioned
	// one is; then each plain side with its history's tips, so that two
	// equal histories whose tables differ are not called identical.
	var vts [2]string
	for i, t := range []string{cfg.Table, cfg.Against} {
		vt, err := r.VersionTable(ctx, t)
		if err != nil {
			return DiffStats{}, fmt.Errorf("diff: %w", err)
		}
		vts[i] = vt
	}
	st, err := compareTables(ctx, side{st: r.Store(), table: vts[0]}, side{st: r.Store(), table: vts[1]}, cfg.Seq, cfg.OnDiff, cfg.Progress)
	for i, t := range []string{cfg.Table, cfg.Against} {
		if err == nil && vts[i] != t {
			err = comparePlain(ctx, r.Store(), t, vts[i], &st, cfg.OnDiff)
		}
	}
	st.Table, st.Against = cfg.Table, cfg.Against
	return st, err
}

// VerifyConfig configures Verify.
type VerifyConfig struct {
	// Table is the live table checked. Required.
	Table string
	// Seq is the journal sequence the table is checked at. If zero, the
	// highest sequence the projector has fully applied (AppliedSeq).
	Seq uint64
	// Scratch is the store the journal is re-projected into, in a fresh
	// table that is deleted afterwards. If nil, the Source's store. A
	// local embedded store keeps the check from writing to the live
	// account.
	Scratch store.Store
	// Workers is the number of partitions re-projected at once. If zero,
	// the Source's Workers.
	Workers int
	// OnDiff and Progress are as in DiffConfig; Progress is called with
	// phase "rebuild" (commands) first, then "compare" (rows).
	OnDiff   func(Difference) error
	Progress func(phase string, done, total int64)
	// Snapshot, if set, is loaded into the scratch table first and the
	// journal replayed after it (Config.Snapshot): for a table whose
	// journal is trimmed at a horizon, the check then covers the commands
	// since the snapshot.
	Snapshot io.Reader
}

// Verify checks that a live table still equals its journal: it
// re-projects the journal up to Seq into a scratch table, through the
// projector's own apply code (Rebuild), and compares it with the live table
// as it stood at Seq, row for row (DiffTables). Any difference means the
// table was written outside the journal, restored wrongly, or projected
// wrongly.
func (r *Rebuilder) Verify(ctx context.Context, cfg VerifyConfig) (DiffStats, error) {
	start := time.Now()
	if err := r.NeedJournal("verify"); err != nil {
		return DiffStats{}, err
	}
	if cfg.Table == "" {
		return DiffStats{}, errors.New("verify: no table")
	}
	seq := cfg.Seq
	if seq == 0 {
		var err error
		if seq, err = r.AppliedSeq(ctx); err != nil {
			return DiffStats{}, fmt.Errorf("verify: %w", err)
		}
	}
	scratch := r
	if cfg.Scratch != nil {
		c := r.Config()
		c.Store = cfg.Scratch
		src, err := replay.New(ctx, c)
		if err != nil {
			return DiffStats{}, fmt.Errorf("verify: %w", err)
		}
		scratch = New(src)
	}
	layout, err := r.Layout(ctx, cfg.Table)
	if err != nil {
		return DiffStats{}, fmt.Errorf("verify: %w", err)
	}
	into := scratchName(cfg.Table, layout)
	liveRows, err := rows.VersionTable(cfg.Table, layout)
	if err != nil {
		return DiffStats{}, fmt.Errorf("verify: %w", err)
	}
	intoRows, err := rows.VersionTable(into, layout)
	if err != nil {
		return DiffStats{}, fmt.Errorf("verify: %w", err)
	}
	defer func() {
		// Cleanup runs even when ctx was cancelled.
		for _, t := range slices.Compact([]string{into, intoRows}) {
			err := scratch.Store().DeleteTable(context.WithoutCancel(ctx), t)
			if err != nil && !errors.Is(err, store.ErrTableNotFound) {
				r.Config().Logger.Warn("verify: scratch table not deleted", "table", t, "err", err)
			}
		}
	}()
	rc := Config{Table: cfg.Table, Into: into, To: seq, Workers: cfg.Workers, Snapshot: cfg.Snapshot, Layout: layout}
	if cfg.Progress != nil {
		rc.Progress = func(done, total int64) { cfg.Progress("rebuild", done, total) }
	}
	rs, err := scratch.Rebuild(ctx, rc)
	if err != nil {
		return DiffStats{}, fmt.Errorf("verify %s: %w", cfg.Table, err)
	}
	// A plain table's history is compared as a versioned table is, then
	// the table itself with the history's tips.
	live := side{st: r.Store(), table: liveRows}
	// A table the store lost is drift, not an error: compared as empty,
	// every row the journal made is missing.
	if _, _, err := store.First(ctx, live.st, live.table, store.Query{AllPartitions: true, Limit: 1}); errors.Is(err, store.ErrTableNotFound) {
		live.lost = true
	}
	st, err := compareTables(ctx, live, side{st: scratch.Store(), table: intoRows}, seq, cfg.OnDiff, cfg.Progress)
	if err == nil && layout == wire.LayoutPlain {
		err = comparePlain(ctx, r.Store(), cfg.Table, liveRows, &st, cfg.OnDiff)
	}
	st.Table = cfg.Table
	st.TableLost = live.lost
	st.Rebuild = &rs
	st.Elapsed = time.Since(start)
	if err != nil {
		return st, fmt.Errorf("verify %s: %w", cfg.Table, err)
	}
	return st, nil
}

// scratchName returns a fresh table name for table's re-projection: the
// table's name, "Verify" and 12 random hex digits, within Azure's 63, and
// room for "History" when the layout is plain.
func scratchName(table string, layout wire.Layout) string {
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	name, room := table, 63-6-12
	if layout == wire.LayoutPlain {
		room -= len(wire.HistorySuffix)
	}
	if len(name) > room {
		name = name[:room]
	}
	return name + "Verify" + hex.EncodeToString(b)
}

// plainRecheck is how long comparePlain waits before it reads a row that
// differs again: the table lags its history by at most the batch a
// projector has in flight (SPEC §4), so a live projector may be between
// its two writes.
const plainRecheck = time.Second

// comparePlain compares the plain table with its history's tips, as both
// are stored now, and reports each row that differs (Difference.Plain)
// both times it is read, plainRecheck apart.
func comparePlain(ctx context.Context, s store.Store, table, hist string, st *DiffStats, onDiff func(Difference) error) error {
	ms, err := rows.ComparePlain(ctx, s, table, hist, store.AllPartitions)
	if err != nil || len(ms) == 0 {
		return err
	}
	if err := retry.Sleep(ctx, plainRecheck); err != nil {
		return err
	}
	again, err := rows.ComparePlain(ctx, s, table, hist, store.AllPartitions)
	if err != nil {
		return err
	}
	var compared atomic.Int64
	rep := reporter{stats: st, compared: &compared, onDiff: onDiff}
	for _, m := range again {
		d := Difference{PK: m.PK, Key: m.RK, Got: m.Got, Want: m.Want, Plain: true}
		switch {
		case m.Got == nil:
			d.Kind = Missing
		case m.Want == nil:
			d.Kind = Extra
		default:
			d.Kind, d.Columns = Changed, history.Diff(m.Want, m.Got)
		}
		if err := rep.report(&d); err != nil {
			return err
		}
	}
	return nil
}

// side is one table of a comparison.
type side struct {
	st    store.Store
	table string
	lost  bool // the table does not exist: compared as empty (Verify)
}

// compareTables compares got (the checked table) with want (the
// reference), both as they stood at seq.
func compareTables(ctx context.Context, got, want side, seq uint64, onDiff func(Difference) error, progress func(string, int64, int64)) (DiffStats, error) {
	start := time.Now()
	stats := DiffStats{Table: got.table, Against: want.table, Seq: seq}
	for _, s := range []side{got, want} {
		if s.lost {
			continue
		}
		if _, _, err := store.First(ctx, s.st, s.table, store.Query{AllPartitions: true, Limit: 1}); err != nil {
			return stats, fmt.Errorf("diff: table %s: %w", s.table, err)
		}
	}
	parts, err := unionPartitions(ctx, got, want)
	if err != nil {
		return stats, fmt.Errorf("diff: %w", err)
	}
	var rows atomic.Int64
	stop := func() {}
	if progress != nil {
		// progress runs on a ticker goroutine and onDiff on this one:
		// never both at once, so that a caller's two callbacks may share
		// state (a terminal line) without a lock of their own.
		var mu sync.Mutex
		if onDiff != nil {
			diff := onDiff
			onDiff = func(d Difference) error {
				mu.Lock()
				defer mu.Unlock()
				return diff(d)
			}
		}
		stop = run.Progress(func(done, _ int64) {
			mu.Lock()
			defer mu.Unlock()
			progress("compare", done, -1)
		}, &rows, 0)
	}
	defer stop()
	for _, part := range parts {
		if err := comparePartition(ctx, got, want, part, seq, &stats, &rows, onDiff); err != nil {
			return stats, fmt.Errorf("diff %s against %s: %w", got.table, want.table, err)
		}
	}
	stats.Rows, stats.Elapsed = rows.Load(), time.Since(start)
	return stats, nil
}

// unionPartitions lists the partitions of both tables, so that each is
// compared with one partition's tips in memory.
func unionPartitions(ctx context.Context, a, b side) ([]store.Partition, error) {
	set := make(map[string]bool)
	for _, s := range []side{a, b} {
		if s.lost {
			continue
		}
		err := s.st.Partitions(ctx, s.table, func(pk string) error {
			set[pk] = true
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("partitions of %s: %w", s.table, err)
		}
	}
	pks := make([]string, 0, len(set))
	for pk := range set {
		pks = append(pks, pk)
	}
	sort.Slice(pks, func(i, j int) bool { return store.CompareKeys(pks[i], pks[j]) < 0 })
	out := make([]store.Partition, len(pks))
	for i, pk := range pks {
		out[i] = store.InPartition(pk)
	}
	return out, nil
}

// comparePartition merges the two sides' views of one partition (or of
// the table), both in key order.
func comparePartition(ctx context.Context, got, want side, part store.Partition, seq uint64, stats *DiffStats, compared *atomic.Int64, onDiff func(Difference) error) error {
	gotFences, wantFences := make(fenceMap), make(fenceMap)
	nextGot, stopGot := iter.Pull2(viewAt(ctx, got, part, seq, gotFences))
	defer stopGot()
	nextWant, stopWant := iter.Pull2(viewAt(ctx, want, part, seq, wantFences))
	defer stopWant()
	rep := reporter{stats: stats, compared: compared, onDiff: onDiff}
	g, gerr, gok := nextGot()
	w, werr, wok := nextWant()
	for gok || wok {
		switch {
		case gerr != nil:
			return gerr
		case werr != nil:
			return werr
		}
		c := 0
		switch {
		case !gok:
			c = 1
		case !wok:
			c = -1
		default:
			c = store.CompareEntities(g, w)
		}
		var err error
		switch {
		case c < 0:
			err = rep.report(&Difference{Kind: Extra, PK: g.PK, Key: g.RK, Got: g.Props})
			g, gerr, gok = nextGot()
		case c > 0:
			err = rep.report(&Difference{Kind: Missing, PK: w.PK, Key: w.RK, Want: w.Props})
			w, werr, wok = nextWant()
		default:
			err = rep.report(changed(g.PK, g.RK, g.Props, w.Props))
			g, gerr, gok = nextGot()
			w, werr, wok = nextWant()
		}
		if err != nil {
			return err
		}
	}
	return compareFences(gotFences, wantFences, seq, rep)
}

// changed is the difference of a row both sides hold, nil when they hold
// the same.
func changed(pk, key string, got, want edm.Entity) *Difference {
	if cols := history.Diff(want, got); len(cols) > 0 {
		return &Difference{Kind: Changed, PK: pk, Key: key, Got: got, Want: want, Columns: cols}
	}
	return nil
}

// compareFences compares the fences, once both sides were read: each as
// it stood at seq.
func compareFences(gotFences, wantFences fenceMap, seq uint64, rep reporter) error {
	pks := make([]string, 0, len(gotFences)+len(wantFences))
	for pk := range gotFences {
		pks = append(pks, pk)
	}
	for pk := range wantFences {
		if _, ok := gotFences[pk]; !ok {
			pks = append(pks, pk)
		}
	}
	sort.Slice(pks, func(i, j int) bool { return store.CompareKeys(pks[i], pks[j]) < 0 })
	for _, pk := range pks {
		g, gok := gotFences[pk].at(seq)
		w, wok := wantFences[pk].at(seq)
		var d *Difference
		switch {
		case gok && !wok:
			d = &Difference{Kind: Extra, PK: pk, Key: rows.FenceKey, Got: g}
		case wok && !gok:
			d = &Difference{Kind: Missing, PK: pk, Key: rows.FenceKey, Want: w}
		case gok && wok:
			d = changed(pk, rows.FenceKey, g, w)
		default:
			continue
		}
		if err := rep.report(d); err != nil {
			return err
		}
	}
	return nil
}

// reporter counts the rows compared and the differences, and passes the
// differences on.
type reporter struct {
	stats    *DiffStats
	compared *atomic.Int64
	onDiff   func(Difference) error
}

// report counts one row compared, and d when it is a difference.
func (r reporter) report(d *Difference) error {
	r.compared.Add(1)
	if d == nil {
		return nil
	}
	switch d.Kind {
	case Missing:
		r.stats.Missing++
	case Extra:
		r.stats.Extra++
	case Changed:
		r.stats.Changed++
	}
	if r.onDiff == nil {
		return nil
	}
	return r.onDiff(*d)
}

// fenceAt is what a view learns of a partition's fence (rows.FenceKey):
// the stored row, and the newest row written at or before the view's
// sequence.
type fenceAt struct {
	stored  edm.Entity
	newest  edm.Entity
	newestS uint64
}

// at returns the fence as the projector had left it at seq: the stored one
// if it is not newer than seq, else the columns of the partition's newest
// row at or before seq (the fence holds the newest command applied to the
// partition, and every applied command writes its sequence on its rows); a
// table without a stored fence (written before fences, or loaded from a
// snapshot) is given the same. ok is false when there is none.
func (f *fenceAt) at(seq uint64) (edm.Entity, bool) {
	if f == nil {
		return nil, false
	}
	if s, ok := f.stored[rows.ColSeq]; ok && s.Type == edm.TypeInt64 && uint64(s.Int) <= seq {
		return f.stored, true
	}
	if f.newest == nil {
		return nil, false
	}
	return edm.Entity{rows.ColSeq: f.newest[rows.ColSeq], rows.ColCmd: f.newest[rows.ColCmd],
		rows.ColAt: f.newest[rows.ColAt]}, true
}

// errStopView ends a view's scan when the consumer stops pulling.
var errStopView = errors.New("view stopped")

// viewAt yields the stored rows of a partition (or of the table) as the
// projector had left them at seq, in (PartitionKey, RowKey) order: rows
// written after seq are left out, and a row whose tip is newer than seq
// has its newest version at or before seq as its tip (unless that is a
// tombstone), as Snapshot writes it. Rows outside the layout, or without a
// _seq, are yielded as they are.
//
// It reads the tips first (their keys and sequences are held), then every
// row in one scan; versions that become tips are held until the scan
// reaches their key.
func viewAt(ctx context.Context, s side, part store.Partition, seq uint64, fences fenceMap) iter.Seq2[store.Entity, error] {
	return func(yield func(store.Entity, error) bool) {
		if s.lost {
			return
		}
		tipSeq, err := tipSeqs(ctx, s, part)
		if err != nil {
			yield(store.Entity{}, err)
			return
		}
		var (
			held    entityHeap // versions shown as tips, in key order
			lastOld rowKey
			found   bool // the newest version at or before seq of lastOld was met
			later   bool // lastOld has a version row written after seq
		)
		emit := func(e store.Entity) error {
			for held.Len() > 0 && store.CompareEntities(held[0], e) < 0 {
				if !yield(heap.Pop(&held).(store.Entity), nil) {
					return errStopView
				}
			}
			if !yield(e, nil) {
				return errStopView
			}
			return nil
		}
		err = store.All(ctx, s.st, s.table, part.Query(store.Query{}), func(e store.Entity) error {
			if e.RK == rows.FenceKey {
				fences.of(e.PK).stored = e.Props // compared once the partition is read
				return nil
			}
			rk, _, tip, ok := rows.ParseKey(e.RK)
			at, hasSeq := rowSeq(e)
			if !ok || !hasSeq {
				return emit(e) // not a row of the layout: as it is
			}
			k := rowKey{e.PK, rk}
			if !tip && k != lastOld {
				lastOld, found, later = k, false, false
			}
			if at > seq {
				later = later || !tip
				return nil // written after seq
			}
			fences.newest(e, at)
			if tip {
				return emit(e)
			}
			first := !found
			found = true
			// The newest version at or before seq was the tip at seq when a
			// later command replaced the tip (a newer tip) or deleted the row
			// (a newer version row, its tombstone). Without either, a live
			// version row without a tip is what the table holds, and shows
			// as it is.
			ts, hasTip := tipSeq[k]
			if first && (hasTip && ts > seq || !hasTip && later) && !e.Props[rows.ColDeleted].Bool {
				// Its tip at seq, copied here when a later command came.
				e.RK = rows.TipKey(rk)
				heap.Push(&held, e)
				return nil
			}
			return emit(e)
		})
		if err != nil {
			if !errors.Is(err, errStopView) {
				yield(store.Entity{}, err)
			}
			return
		}
		for held.Len() > 0 {
			if !yield(heap.Pop(&held).(store.Entity), nil) {
				return
			}
		}
	}
}

// rowKey names a row of the layout.
type rowKey struct{ pk, rk string }

// tipSeqs reads the _seq of every tip of a partition (or of the table).
func tipSeqs(ctx context.Context, s side, part store.Partition) (map[rowKey]uint64, error) {
	tipSeq := make(map[rowKey]uint64)
	from, to := rows.TipRange()
	err := store.All(ctx, s.st, s.table, part.Query(store.Query{From: from, To: to}), func(e store.Entity) error {
		if rk, _, tip, ok := rows.ParseKey(e.RK); ok && tip {
			if v, ok := rowSeq(e); ok {
				tipSeq[rowKey{e.PK, rk}] = v
			}
		}
		return nil
	})
	return tipSeq, err
}

// fenceMap holds what a view learns of each partition's fence.
type fenceMap map[string]*fenceAt

func (m fenceMap) of(pk string) *fenceAt {
	f := m[pk]
	if f == nil {
		f = &fenceAt{}
		m[pk] = f
	}
	return f
}

// newest notes a row of the layout at or before the view's sequence.
func (m fenceMap) newest(e store.Entity, at uint64) {
	if f := m.of(e.PK); f.newest == nil || at > f.newestS {
		f.newest, f.newestS = e.Props, at
	}
}

// rowSeq returns a row's _seq when it has a valid one.
func rowSeq(e store.Entity) (uint64, bool) {
	v, ok := e.Props[rows.ColSeq]
	if !ok || v.Type != edm.TypeInt64 || v.Int < 0 {
		return 0, false
	}
	return uint64(v.Int), true
}

// entityHeap orders entities by (PartitionKey, RowKey).
type entityHeap []store.Entity

func (h entityHeap) Len() int           { return len(h) }
func (h entityHeap) Less(i, j int) bool { return store.CompareEntities(h[i], h[j]) < 0 }
func (h entityHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *entityHeap) Push(x any)        { *h = append(*h, x.(store.Entity)) }
func (h *entityHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}
