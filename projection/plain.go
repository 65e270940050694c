package projection

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"golang.org/x/sync/errgroup"

	"github.com/tablejournal/tablejournal/projection/decide"
	"github.com/tablejournal/tablejournal/rows"
	"github.com/tablejournal/tablejournal/store"
)

// plain is the plain layout (SPEC §4, "The plain layout"): the versioned
// layout in the table's history table (tableLayout.rows), fenced and
// written as versioned does, and the current rows in the table itself,
// written after each history transaction from the history's tips (mirror).
//
// Exactly once: the history transaction alone decides what applied; the
// table is then brought to the history's tips for every row the
// transaction's commands name, whether it wrote them now or found them
// written before (a redelivery after a crash between the two writes). A
// write to the table is conditional on its etag (an insert where it has no
// row) and only moves a row forward, so a stale owner cannot move it back,
// and a conflict is read again and reconciled.
type plain struct{ versioned }

// mirror brings the table's rows named by the transaction just committed
// to the history's state of them; an erase's key to what the history holds
// of it after the erase.
func (plain) mirror(ctx context.Context, r *partitionRun) error {
	es := r.entries[r.next:r.end]
	want := make(map[string]*rowState)
	for _, e := range es {
		if e.Erase == nil {
			continue
		}
		// The erase deleted the key's history: the table's rows of it go
		// too (those the history holds again, written after it, stay).
		rks, err := r.a.mirrorKeys(ctx, r.part, e.Erase.RK)
		if err != nil {
			return err
		}
		if err := r.countMirrorErased(ctx, rks, e.Erase.RK == nil); err != nil {
			return err
		}
		states, err := r.a.load(ctx, r.tl, r.part.pk, rks)
		if err != nil {
			return err
		}
		for rk, st := range states {
			want[rk] = st
		}
	}
	for _, rk := range decide.TouchedRKs(es) {
		st := r.tx.Cur[rk]
		if st == nil {
			st = r.v.rows[rk]
		}
		if st != nil {
			want[rk] = st
		}
	}
	return r.a.mirrorRows(ctx, r.part, r.v.f.Seq, want)
}

// countMirrorErased counts, in the erase's outcome, the rows of the plain
// table that the erase of rks (listed from the table when listed) removes.
func (r *partitionRun) countMirrorErased(ctx context.Context, rks []string, listed bool) error {
	n := len(rks)
	if !listed {
		cur, err := r.a.mirrorState(ctx, r.part, rks)
		if err != nil {
			return err
		}
		n = 0
		for _, m := range cur {
			if m.Exists {
				n++
			}
		}
	}
	r.tx.CountErased(n)
	return nil
}

// mirrored is what the projector knows of a row of a plain table.
type mirrored = decide.PlainRow

// mirrorAttempts bounds how often a row of a plain table is read again
// after a write to it conflicted (another writer moved it meanwhile).
const mirrorAttempts = 8

// mirrorRows brings the rows of part (a plain table) to the history's
// states want: a row with a tip is written from it unless the table's
// _seq is at or past the tip's; a row without one is deleted unless the
// table's is newer than upTo (the history's fence the states were read
// under) or than its tombstone. Writes go in one transaction per
// store.MaxOps rows, each conditional; a conflict reads the rows again.
func (a *Applier) mirrorRows(ctx context.Context, part partKey, upTo uint64, want map[string]*rowState) error {
	pending := make([]string, 0, len(want))
	for rk := range want {
		pending = append(pending, rk)
	}
	slices.Sort(pending)
	for attempt := 0; len(pending) > 0; attempt++ {
		if attempt == mirrorAttempts {
			return fmt.Errorf("%w: plain table %s/%q: rows %q kept changing under the projector", ErrConflict, part.table, part.pk, pending)
		}
		cur, err := a.mirrorState(ctx, part, pending)
		if err != nil {
			return err
		}
		var ops []store.Op
		for _, rk := range pending {
			if op, ok := decide.PlainOp(rk, want[rk], cur[rk], upTo); ok {
				ops = append(ops, op)
			}
		}
		pending = pending[:0]
		for len(ops) > 0 {
			n := min(len(ops), store.MaxOps)
			chunk := ops[:n]
			ops = ops[n:]
			conflict, err := a.mirrorWrite(ctx, part, chunk, want)
			if err != nil {
				return err
			}
			for _, op := range conflict {
				pending = append(pending, op.RK)
			}
		}
	}
	return nil
}

// mirrorWrite commits ops in the plain table part, retrying transient
// errors, and remembers the rows written. On a conflict (a row not as
// read) it forgets what it knew of them and returns the ops to decide
// again: the entity-group transaction wrote none of them.
func (a *Applier) mirrorWrite(ctx context.Context, part partKey, ops []store.Op, want map[string]*rowState) ([]store.Op, error) {
	etags, err := a.transactRetrying(ctx, "write current rows of ", part, ops)
	if errors.Is(err, store.ErrExists) || errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrPrecondition) {
		a.stats.FenceConflicts.Add(1)
		for _, op := range ops {
			a.mirrors.drop(part, op.RK)
		}
		return ops, nil
	}
	if err != nil {
		return nil, fmt.Errorf("write current rows of %s/%q: %w", part.table, part.pk, err)
	}
	for i, op := range ops {
		m := mirrored{}
		if op.Kind != store.Delete {
			m = mirrored{Exists: true, Seq: want[op.RK].Tip.Seq}
			if i < len(etags) {
				m.ETag = etags[i]
			}
		}
		a.mirrors.put(part, op.RK, m)
	}
	return nil, nil
}

// mirrorState returns what the plain table part holds of rks: from the
// cache, else read.
func (a *Applier) mirrorState(ctx context.Context, part partKey, rks []string) (map[string]mirrored, error) {
	out := make(map[string]mirrored, len(rks))
	var need []string
	for _, rk := range rks {
		if m, ok := a.mirrors.get(part, rk); ok {
			out[rk] = m
		} else {
			need = append(need, rk)
		}
	}
	// Point reads, at once: a batch of rows the cache does not hold (new
	// rows, a restart) would otherwise wait one round trip per row.
	got := make([]mirrored, len(need))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(mirrorReads)
	for i, rk := range need {
		g.Go(func() (err error) {
			got[i], err = retryStore(gctx, a.policy, "read current row of "+part.table, func() (mirrored, error) {
				return readMirrored(gctx, a.store, part, rk)
			})
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	for i, rk := range need {
		a.mirrors.put(part, rk, got[i])
		out[rk] = got[i]
	}
	return out, nil
}

// prefetch reads the table's rows rks that the mirror cache does not hold,
// beside the load of their history, and caches those it could read: the
// mirror after the commit then finds them cached instead of reading them
// one round trip later. A row read before the history's commit is no
// hazard: the mirror's writes are conditional on it and a conflict reads
// it again. A read that fails is left to the mirror, which reads again
// and reports it (a foreign row holds the partition there, as before).
func (plain) prefetch(ctx context.Context, a *Applier, part partKey, rks []string) {
	var g errgroup.Group
	g.SetLimit(mirrorReads)
	for _, rk := range rks {
		if _, ok := a.mirrors.get(part, rk); ok {
			continue
		}
		g.Go(func() error {
			if m, err := readMirrored(ctx, a.store, part, rk); err == nil {
				a.mirrors.put(part, rk, m)
			}
			return nil
		})
	}
	_ = g.Wait()
}

// mirrorReads bounds the point reads of a plain table's rows in flight for
// one partition batch.
const mirrorReads = 16

// readMirrored reads a row of a plain table. A row without the system
// columns the projector writes is foreign (rows.ErrForeignRow): the
// partition is held until it is dealt with (SPEC §5).
func readMirrored(ctx context.Context, s store.Store, part partKey, rk string) (mirrored, error) {
	e, err := s.Get(ctx, part.table, part.pk, rk)
	switch {
	case errors.Is(err, store.ErrNotFound), errors.Is(err, store.ErrTableNotFound):
		return mirrored{}, nil
	case err != nil:
		return mirrored{}, fmt.Errorf("read %s/%q/%q: %w", part.table, part.pk, rk, err)
	}
	seq, hasSeq := e.Props[rows.ColSeq]
	if _, hasCmd := e.Props[rows.ColCmd]; !hasSeq || !hasCmd {
		return mirrored{}, &rows.ForeignRowError{PK: part.pk, Key: rk, Why: "of plain table " + part.table + " lacks the system columns"}
	}
	return mirrored{Exists: true, Seq: uint64(seq.Int), ETag: e.ETag}, nil
}

// mirrorKeys lists the RowKeys of the plain table part an erase of rk
// (nil: the partition) concerns.
func (a *Applier) mirrorKeys(ctx context.Context, part partKey, rk *string) ([]string, error) {
	if rk != nil {
		return []string{*rk}, nil
	}
	return retryStore(ctx, a.policy, "list current rows of "+part.table, func() ([]string, error) {
		var keys []string
		err := store.All(ctx, a.store, part.table, store.Query{PK: part.pk}, func(e store.Entity) error {
			keys = append(keys, e.RK)
			return nil
		})
		if errors.Is(err, store.ErrTableNotFound) {
			return nil, nil
		}
		return keys, err
	})
}

// mirrorCache remembers the rows of plain tables as last read or written,
// so a hot row's write needs no read. It never outvotes the table: every
// write is conditional on the etag it holds, and a conflict forgets it. It
// is bounded: past its size it starts again empty.
type mirrorCache struct {
	mu    sync.Mutex
	max   int
	n     int
	parts map[partKey]map[string]mirrored
}

func newMirrorCache(max int) *mirrorCache {
	if max == 0 {
		max = 100_000
	}
	return &mirrorCache{max: max, parts: make(map[partKey]map[string]mirrored)}
}

func (c *mirrorCache) get(part partKey, rk string) (mirrored, bool) {
	if c.max <= 0 {
		return mirrored{}, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	m, ok := c.parts[part][rk]
	return m, ok
}

func (c *mirrorCache) put(part partKey, rk string, m mirrored) {
	if c.max <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.n >= c.max {
		clear(c.parts)
		c.n = 0
	}
	p := c.parts[part]
	if p == nil {
		p = make(map[string]mirrored)
		c.parts[part] = p
	}
	if _, ok := p[rk]; !ok {
		c.n++
	}
	p[rk] = m
}

func (c *mirrorCache) drop(part partKey, rk string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.parts[part][rk]; ok {
		delete(c.parts[part], rk)
		c.n--
	}
}

func (c *mirrorCache) dropPartition(part partKey) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.n -= len(c.parts[part])
	delete(c.parts, part)
}

func (c *mirrorCache) clear() {
	c.mu.Lock()
	defer c.mu.Unlock()
	clear(c.parts)
	c.n = 0
}
