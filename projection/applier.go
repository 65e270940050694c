package projection

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/cenkalti/backoff/v4"

	"github.com/tablejournal/tablejournal/store"
)

// Applier applies the commands of one partition to a table store, batching
// consecutive commands into one transaction when they fit. It is safe for
// concurrent use on different partitions; one partition must be applied by
// one goroutine at a time, in journal order.
type Applier struct {
	store store.Store
	cache *rowCache
	// Backoff returns the retry policy for transient store errors; a
	// persistent failure returns an error after it gives up.
	newBackoff func() backoff.BackOff

	tablesMu sync.Mutex
	tables   map[string]bool
}

// ApplierConfig configures an Applier.
type ApplierConfig struct {
	// CacheRows bounds the row-state cache. If zero, 100,000 rows; negative
	// disables the cache (every batch reads its rows back).
	CacheRows int
	// MaxRetry bounds the time spent retrying transient store errors of one
	// batch. If zero, one minute.
	MaxRetry time.Duration
}

// NewApplier returns an Applier writing to s.
func NewApplier(s store.Store, cfg ApplierConfig) *Applier {
	if cfg.CacheRows == 0 {
		cfg.CacheRows = 100_000
	}
	if cfg.MaxRetry == 0 {
		cfg.MaxRetry = time.Minute
	}
	a := &Applier{store: s, tables: make(map[string]bool)}
	if cfg.CacheRows > 0 {
		a.cache = newRowCache(cfg.CacheRows)
	}
	a.newBackoff = func() backoff.BackOff { return busyBackoff(cfg.MaxRetry) }
	return a
}

// Hooks let the caller publish outcomes at the points exactly-once needs.
type Hooks struct {
	// BeforeCommit receives the results that wrote nothing (rejected,
	// duplicate, skipped) before the transaction of their batch commits, so
	// that no later command's effect is durable before their outcome is.
	BeforeCommit func(ctx context.Context, rs []Result) error
	// AfterCommit receives the applied results once their transaction
	// committed.
	AfterCommit func(ctx context.Context, rs []Result) error
}

// ErrConflict reports that the table changed under the projector: a version
// row it meant to insert exists or a tip it meant to change is gone. It is
// retried after reloading the rows; only repeated conflicts surface.
var ErrConflict = errors.New("table changed under the projector")

// Apply applies entries, all of table and pk and in journal order. It
// returns nil once every entry has a result handed to hooks; an error means
// a persistent store failure, and entries from the failed batch on were not
// applied.
func (a *Applier) Apply(ctx context.Context, table, pk string, entries []Entry, h Hooks) error {
	if len(touchedRKs(entries)) > 0 { // only valid commands name a valid table
		if err := a.ensureTable(ctx, table); err != nil {
			return err
		}
	}
	conflicts := 0
	// known holds the state of rows already read or written during this call,
	// so a partition's later batches do not read them again.
	known := make(map[string]*rowState)
	for i := 0; i < len(entries); {
		var need []string
		for _, rk := range touchedRKs(entries[i:]) {
			if _, ok := known[rk]; !ok {
				need = append(need, rk)
			}
		}
		loaded, err := a.load(ctx, table, pk, need)
		if err != nil {
			return err
		}
		for rk, s := range loaded {
			known[rk] = s
			a.cache.put(rowKey{table, pk, rk}, *s) // rows known not to exist too
		}
		b := newBatch(pk, known)
		j := i
		for ; j < len(entries); j++ {
			if err := b.add(entries[j]); errors.Is(err, errFull) {
				break
			}
		}
		if err := callHook(ctx, h.BeforeCommit, b.results, false); err != nil {
			return err
		}
		err = a.commit(ctx, table, pk, b.txOps())
		if errors.Is(err, ErrConflict) && conflicts < 3 {
			conflicts++
			a.cache.dropPartition(table, pk)
			known = make(map[string]*rowState)
			continue
		}
		if err != nil {
			return err
		}
		for rk, s := range b.cur {
			known[rk] = s
			a.cache.put(rowKey{table, pk, rk}, *s)
		}
		if err := callHook(ctx, h.AfterCommit, b.results, true); err != nil {
			return err
		}
		i = j
	}
	return nil
}

func callHook(ctx context.Context, hook func(context.Context, []Result) error, rs []Result, applied bool) error {
	if hook == nil {
		return nil
	}
	var sel []Result
	for _, r := range rs {
		if (r.Status == Applied) == applied {
			sel = append(sel, r)
		}
	}
	if len(sel) == 0 {
		return nil
	}
	return hook(ctx, sel)
}

// commit runs one transaction, retrying transient errors with backoff.
func (a *Applier) commit(ctx context.Context, table, pk string, ops []store.Op) error {
	if len(ops) == 0 {
		return nil
	}
	sort.Slice(ops, func(i, j int) bool { return ops[i].RK < ops[j].RK })
	op := func() error {
		err := a.store.Transact(ctx, table, pk, ops)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, store.ErrBusy):
			return err
		case errors.Is(err, store.ErrExists), errors.Is(err, store.ErrNotFound), errors.Is(err, store.ErrPrecondition):
			return backoff.Permanent(fmt.Errorf("%w: %w", ErrConflict, err))
		case errors.Is(err, store.ErrTableNotFound):
			a.forgetTable(table)
			if cerr := a.ensureTable(ctx, table); cerr != nil {
				return backoff.Permanent(cerr)
			}
			return err
		default:
			return backoff.Permanent(err)
		}
	}
	if err := backoff.Retry(op, backoff.WithContext(a.newBackoff(), ctx)); err != nil {
		return fmt.Errorf("transaction on %s/%q: %w", table, pk, err)
	}
	return nil
}

// load reads the state of rows: from the cache, else a point read of the
// tip and, for a row without one, the newest version row (its tombstone).
func (a *Applier) load(ctx context.Context, table, pk string, rks []string) (map[string]*rowState, error) {
	state := make(map[string]*rowState, len(rks))
	var missing []string
	for _, rk := range rks {
		if s, ok := a.cache.get(rowKey{table, pk, rk}); ok {
			state[rk] = s
		} else {
			missing = append(missing, rk)
		}
	}
	if len(missing) == 0 {
		return state, nil
	}
	if len(missing) >= rangeLoadMin {
		var err error
		if missing, err = loadRanges(ctx, a.store, table, pk, missing, state); err != nil {
			return nil, err
		}
	}
	var (
		mu       sync.Mutex
		wg       sync.WaitGroup
		firstErr error
		sem      = make(chan struct{}, 8)
	)
	for _, rk := range missing {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			s, err := readRowState(ctx, a.store, table, pk, rk)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				if firstErr == nil {
					firstErr = err
				}
				return
			}
			state[rk] = s
		}()
	}
	wg.Wait()
	return state, firstErr
}

// rangeLoadMin is the number of rows of one partition from which load
// reads them with two range queries instead of point reads per row.
const rangeLoadMin = 2

// loadRanges reads the state of many rows of one partition with two range
// queries: the tips between the least and the greatest row, then, for the
// rows without a tip, the version rows over their histories, of which each
// row's first is its newest (a deleted row's tombstone). Each query reads one page of a
// bounded size, so rows scattered over a large partition cost at most two
// wasted requests: the rows a page did not cover are returned in rest and
// read one by one.
func loadRanges(ctx context.Context, s store.Store, table, pk string, rks []string, state map[string]*rowState) (rest []string, err error) {
	limit := min(4*len(rks), store.PageSize(0))
	from, to := TipKey(rks[0]), TipKey(rks[0])
	for _, rk := range rks {
		from = minKey(from, TipKey(rk))
		to = maxKey(to, TipKey(rk))
	}
	// No key holds a control character, so nothing sorts between a key and
	// the key followed by a space.
	tips, err := queryPage(ctx, s, table, store.Query{PK: pk, From: from, To: to + " ", Limit: limit})
	if err != nil {
		return nil, err
	}
	var tipless []string
	for _, rk := range rks {
		switch r, ok := tips.rows[rk]; {
		case ok:
			state[rk] = &rowState{tip: r, latest: r}
		case tips.covers(TipKey(rk) + " "):
			tipless = append(tipless, rk)
		default:
			rest = append(rest, rk)
		}
	}
	if len(tipless) == 0 {
		return rest, nil
	}
	from, to = HistoryRange(tipless[0])
	for _, rk := range tipless {
		f, t := HistoryRange(rk)
		from, to = minKey(from, f), maxKey(to, t)
	}
	// No filter on _deleted: the store would read the histories of the
	// live rows in the range anyway, all of them, to find the few matches;
	// unfiltered, the bounded page stops it and the rest is read per row.
	tombs, err := queryPage(ctx, s, table, store.Query{PK: pk, From: from, To: to, Limit: limit})
	if err != nil {
		return nil, err
	}
	for _, rk := range tipless {
		_, to := HistoryRange(rk)
		switch r, ok := tombs.rows[rk]; {
		case ok: // the first of a row's versions read is its newest
			state[rk] = &rowState{latest: r}
		case tombs.covers(to):
			state[rk] = &rowState{}
		default:
			rest = append(rest, rk)
		}
	}
	return rest, nil
}

// rowPage is one page of rows read by loadRanges: the first row read of
// each natural RowKey, and how far the page reached.
type rowPage struct {
	rows map[string]*Row
	last string // the greatest key read
	more bool   // the range goes on after last
}

// covers reports whether every key before bound was read.
func (p rowPage) covers(bound string) bool {
	return !p.more || (p.last != "" && store.CompareKeys(p.last, bound) >= 0)
}

func queryPage(ctx context.Context, s store.Store, table string, q store.Query) (rowPage, error) {
	page, err := retryReads(ctx, func() (store.Page, error) { return s.Query(ctx, table, q) })
	switch {
	case errors.Is(err, store.ErrTableNotFound):
		return rowPage{rows: map[string]*Row{}}, nil
	case err != nil:
		return rowPage{}, fmt.Errorf("read rows %s/%q: %w", table, q.PK, err)
	}
	p := rowPage{rows: make(map[string]*Row, len(page.Entities)), more: page.Continuation != ""}
	for _, e := range page.Entities {
		p.last = e.RK
		r, err := DecodeRow(e)
		if err != nil {
			return rowPage{}, err
		}
		if _, seen := p.rows[r.RK]; !seen {
			p.rows[r.RK] = &r
		}
	}
	return p, nil
}

func minKey(a, b string) string {
	if store.CompareKeys(a, b) <= 0 {
		return a
	}
	return b
}

func maxKey(a, b string) string {
	if store.CompareKeys(a, b) >= 0 {
		return a
	}
	return b
}

// readRowState reads what the apply needs to know of one row with at most
// two requests: the tip, and when there is none, the newest version row.
func readRowState(ctx context.Context, s store.Store, table, pk, rk string) (*rowState, error) {
	st, err := retryReads(ctx, func() (*rowState, error) {
		e, err := s.Get(ctx, table, pk, TipKey(rk))
		switch {
		case err == nil:
			r, err := DecodeRow(e)
			if err != nil {
				return nil, err
			}
			return &rowState{tip: &r, latest: &r}, nil
		case errors.Is(err, store.ErrTableNotFound):
			return &rowState{}, nil
		case !errors.Is(err, store.ErrNotFound):
			return nil, err
		}
		from, to := HistoryRange(rk)
		newest, ok, err := store.First(ctx, s, table, store.Query{PK: pk, From: from, To: to, Limit: 1})
		if err != nil {
			return nil, err
		}
		if !ok {
			return &rowState{}, nil
		}
		r, err := DecodeRow(newest)
		if err != nil {
			return nil, err
		}
		return &rowState{latest: &r}, nil
	})
	if err != nil {
		return nil, fmt.Errorf("read row %s/%q/%q: %w", table, pk, rk, err)
	}
	return st, nil
}

// maxBusyWait caps each wait before retrying a request the store refused
// as busy. Throttling limits are per second (Azure's targets are entities
// and requests per second), so a longer wait lets capacity go unused, and
// since a shard's batch waits for its slowest partition, one partition
// asleep for the library's default of up to a minute stalls its whole
// shard. Against store/simazure answering ErrBusy unretried
// (BenchmarkSimAzure spread, see docs/ARCHITECTURE.md) the projector
// reached 0.56 of the account limit uncapped, 0.73 capped.
const maxBusyWait = time.Second

// busyBackoff is the retry policy for store.ErrBusy: exponential from
// 50 ms, each wait at most maxBusyWait give or take the library's ±50%
// jitter, for maxElapsed in all.
func busyBackoff(maxElapsed time.Duration) *backoff.ExponentialBackOff {
	b := backoff.NewExponentialBackOff()
	b.InitialInterval = 50 * time.Millisecond
	b.MaxInterval = maxBusyWait
	b.MaxElapsedTime = maxElapsed
	return b
}

// retryReads calls read until it succeeds, fails with an error other than
// store.ErrBusy, or has been retried with backoff for the default fifteen
// minutes.
func retryReads[T any](ctx context.Context, read func() (T, error)) (T, error) {
	b := busyBackoff(backoff.DefaultMaxElapsedTime)
	return backoff.RetryWithData(func() (T, error) {
		v, err := read()
		return v, retryable(err)
	}, backoff.WithContext(b, ctx))
}

func retryable(err error) error {
	if errors.Is(err, store.ErrBusy) {
		return err
	}
	return backoff.Permanent(err)
}

func (a *Applier) ensureTable(ctx context.Context, table string) error {
	a.tablesMu.Lock()
	known := a.tables[table]
	a.tablesMu.Unlock()
	if known {
		return nil
	}
	if err := a.store.CreateTable(ctx, table); err != nil && !errors.Is(err, store.ErrTableExists) {
		return fmt.Errorf("create table %s: %w", table, err)
	}
	a.tablesMu.Lock()
	a.tables[table] = true
	a.tablesMu.Unlock()
	return nil
}

func (a *Applier) forgetTable(table string) {
	a.tablesMu.Lock()
	delete(a.tables, table)
	a.tablesMu.Unlock()
}
