package projection

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/internal/retry"
	"github.com/tablejournal/tablejournal/rows"
	"github.com/tablejournal/tablejournal/store"
	"github.com/tablejournal/tablejournal/wire"
)

// Applier applies the commands of one partition to a table store, batching
// consecutive commands into one transaction when they fit. It is safe for
// concurrent use on different partitions; one partition must be applied by
// one goroutine at a time, in journal order. Several Appliers (in several
// processes) may apply the same partition at the same time: every
// transaction is fenced (see FenceKey), so only decisions taken on the
// table's actual state are committed.
type Applier struct {
	store  store.Store
	cache  *rowCache
	policy *retryPolicy
	log    *slog.Logger
	stats  *Stats
	epochs atomic.Uint64
	// ids remembers applied command IDs across calls (RememberIDs).
	ids sync.Map

	rememberIDs bool
	tablesMu    sync.Mutex
	tables      map[string]bool
}

// ApplierConfig configures an Applier.
type ApplierConfig struct {
	// CacheRows bounds the row-state cache. If zero, 100,000 rows; negative
	// disables the cache (every batch reads its rows back).
	CacheRows int
	// MaxRetry bounds the time spent retrying transient store errors of one
	// call. If zero, there is no bound: an outage of any length is waited
	// out, with a warning every few seconds.
	MaxRetry time.Duration
	// RememberIDs keeps the ID of every command applied, across calls, so
	// that a command ID applies at most once however far apart its copies
	// are in the journal, without an outcomes stream to ask (replay's
	// rebuild reads the journal once, in order). Memory grows with the
	// commands applied. The projector asks the outcomes stream instead.
	RememberIDs bool
	// Logger receives warnings (store outages) and errors (the table
	// disagrees with what was written). If nil, slog.Default().
	Logger *slog.Logger
	// Stats receives the counters; if nil, the Applier keeps its own.
	Stats *Stats
}

// NewApplier returns an Applier writing to s.
func NewApplier(s store.Store, cfg ApplierConfig) *Applier {
	if cfg.CacheRows == 0 {
		cfg.CacheRows = 100_000
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Stats == nil {
		cfg.Stats = &Stats{}
	}
	a := &Applier{store: s, tables: make(map[string]bool), log: cfg.Logger, stats: cfg.Stats,
		policy: newRetryPolicy(cfg.MaxRetry, cfg.Logger, cfg.Stats), rememberIDs: cfg.RememberIDs}
	if cfg.CacheRows > 0 {
		a.cache = newRowCache(cfg.CacheRows)
	}
	return a
}

// Stats returns the Applier's counters.
func (a *Applier) Stats() *Stats { return a.stats }

// Hooks let a caller of Apply (replay's rebuild) see the results of each
// transaction at the points exactly-once needs. The projector takes the
// same steps itself, without hooks (partitionRun, batch.go).
type Hooks struct {
	// BeforeCommit receives the results that wrote nothing (rejected,
	// duplicate, skipped) before the transaction of their batch commits, so
	// that no later command's effect is durable before their outcome is.
	// It may settle a skipped result (set its Status and Stored).
	BeforeCommit func(ctx context.Context, rs []Result) error
	// AfterCommit receives the applied results once their transaction
	// committed.
	AfterCommit func(ctx context.Context, rs []Result) error
}

// ErrConflict reports that the table changed under the projector: a version
// row it meant to insert exists or a tip it meant to change is gone. It is
// retried after reloading the rows; only repeated conflicts surface.
var ErrConflict = errors.New("table changed under the projector")

// view is the applier's view of one partition during Apply: the fence it
// was taken at and the rows read under it.
type view struct {
	valid bool
	f     fence
	epoch uint64
	rows  map[string]*rowState
	// fresh: rows were read from the store since the fence was last
	// checked, so a decision that writes nothing must check it again.
	fresh bool
}

// Apply applies entries, all of table and pk and in journal order, handing
// the results of each transaction to h. It returns nil once every entry
// has a result handed to hooks; an error means a persistent store failure,
// and entries from the failed batch on were not applied. The projector
// takes the same steps itself, without hooks (batch.go).
func (a *Applier) Apply(ctx context.Context, table, pk string, entries []Entry, h Hooks) error {
	run, err := a.partition(ctx, table, pk, entries)
	if err != nil {
		return err
	}
	for run.more() {
		if err := run.decide(ctx); err != nil {
			return err
		}
		if err := callHook(ctx, h.BeforeCommit, run.results(), false); err != nil {
			return err
		}
		committed, err := run.commit(ctx)
		if err != nil {
			return err
		}
		if committed {
			if err := callHook(ctx, h.AfterCommit, run.results(), true); err != nil {
				return err
			}
		}
	}
	return nil
}

// partitionRun is one partition's entries on their way into the table, one
// transaction at a time: decide the next transaction against the table
// (decide), then commit it (commit), until every entry is committed
// (more). Between the two the caller settles and publishes the results
// that wrote nothing; after commit, the applied ones.
type partitionRun struct {
	a       *Applier
	part    partKey
	entries []Entry
	// invalid: every entry is invalid (undecodable, or on a subject that
	// names no valid table): each is rejected on its own, without reading
	// the partition's rows or fence — its table may not even be a valid
	// name — and nothing is written.
	invalid bool
	next    int // the first entry not committed
	end     int // after decide: tx holds entries[next:end]
	v       view
	tx      *txn
	// seen: IDs applied before, by sequence (this call's, and with
	// RememberIDs every call's).
	seen               map[string]uint64
	contention, wedged int
	// prune is the prune decided last, to commit (prune.go).
	prune *pruneWork
}

// partition starts applying entries, all of table and pk and in journal
// order.
func (a *Applier) partition(ctx context.Context, table, pk string, entries []Entry) (*partitionRun, error) {
	r := &partitionRun{a: a, part: partKey{table, pk}, entries: entries, seen: make(map[string]uint64)}
	if len(touchedRKs(entries)) == 0 && !anyErase(entries) && !hasPrune(entries) {
		r.invalid = true
		return r, nil
	}
	// Only valid commands name a valid table.
	if err := a.ensureTable(ctx, table); err != nil {
		return nil, err
	}
	if a.rememberIDs {
		for _, e := range entries {
			if s, ok := a.ids.Load(e.ID); ok {
				r.seen[e.ID] = s.(uint64)
			}
		}
	}
	return r, nil
}

// more reports whether entries remain to be decided and committed.
func (r *partitionRun) more() bool { return r.next < len(r.entries) }

// results are the results of the transaction decided last, in journal
// order; the caller may settle skipped ones in place before commit.
func (r *partitionRun) results() []Result { return r.tx.results }

// decide decides the next transaction on the partition's rows as the table
// holds them: the fence (rule 4) and the rows under it, from the cache
// when cached under the same fence (rule 5). A rejection is decided on the
// rows' state, so when rows were read since the fence was last checked the
// fence is read again, and the transaction decided again if it moved (rule
// 6).
func (r *partitionRun) decide(ctx context.Context) error {
	if r.invalid {
		r.tx = newTxn(r.part.pk, map[string]*rowState{}, events.Limits{})
		for _, e := range r.entries {
			if err := r.tx.add(e); err != nil {
				return err
			}
		}
		r.end = len(r.entries)
		return nil
	}
	if isPrune(r.entries[r.next]) {
		return r.decidePrune(ctx)
	}
	for {
		if err := r.a.begin(ctx, r.part, &r.v); err != nil {
			return err
		}
		behind, err := r.a.loadView(ctx, r.part, &r.v, touchedRKs(r.entries[r.next:]))
		if err != nil {
			return err
		}
		if behind {
			// A row read is newer than the view's fence: another writer
			// committed since the fence was read or cached. Commands it
			// applied would be skipped on that row while the view's other
			// rows lack their effects, and a rejection decided on them is
			// published before anything is written: read the fence again.
			if ok, err := r.a.check(ctx, r.part, &r.v); err != nil || !ok {
				if err != nil {
					return err
				}
				continue
			}
		}
		r.tx = newTxn(r.part.pk, r.v.rows, r.a.store.Limits())
		r.tx.seen = r.seen
		r.tx.er.to = r.v.f.eraseSeq
		for r.end = r.next; r.end < len(r.entries); r.end++ {
			if r.end > r.next && isPrune(r.entries[r.end]) {
				break // a prune takes transactions of its own
			}
			if err := r.tx.add(r.entries[r.end]); errors.Is(err, errFull) {
				break
			}
		}
		if !r.v.fresh || !dependsOnState(r.tx.results) {
			r.logDecided(false)
			return nil
		}
		if ok, err := r.a.check(ctx, r.part, &r.v); err != nil || ok {
			if ok {
				r.logDecided(true)
			}
			return err
		}
	}
}

// logDecided logs at Debug the transaction just decided and the view it
// was decided on (the fence, whether its etag is known, the rows' epoch,
// whether rows were read since the fence was checked, and whether the fence
// was checked again for it): what to read when an outcome looks wrong.
func (r *partitionRun) logDecided(checked bool) {
	if !r.a.log.Enabled(context.Background(), slog.LevelDebug) {
		return
	}
	var results strings.Builder
	for _, res := range r.tx.results {
		fmt.Fprintf(&results, "%d:%s ", res.Seq, res.Status)
	}
	r.a.log.Debug("transaction decided", LogTable, r.part.table, LogPK, r.part.pk,
		"fence", r.v.f.String(), "etag_known", r.v.f.etag != "", "epoch", r.v.epoch, "fresh", r.v.fresh || checked,
		"checked", checked, "results", strings.TrimSpace(results.String()))
}

// commit commits the transaction decided last, with the fence. It returns
// false when the table was not as the view said: the transaction must be
// decided again (decide), on the rows the table holds now.
func (r *partitionRun) commit(ctx context.Context) (bool, error) {
	if r.invalid {
		r.next = r.end
		return true, nil
	}
	if r.prune != nil {
		return r.commitPrune(ctx)
	}
	for _, res := range r.tx.results {
		if res.Status == wire.StatusApplied && res.Stored { // a skipped command found applied
			r.seen[res.ID] = max(r.seen[res.ID], res.Seq)
		}
	}
	err := r.a.commit(ctx, r.part, &r.v, r.tx)
	var ce *conflictError
	if errors.As(err, &ce) {
		r.a.log.Debug("transaction refused; deciding again", LogTable, r.part.table, LogPK, r.part.pk,
			"fence", r.v.f.String(), "epoch", r.v.epoch, "fence_moved", ce.fence, "err", ce.err)
		return false, r.conflict(ctx, ce)
	}
	if err != nil {
		return false, err
	}
	r.committed()
	return true, nil
}

// conflict handles a transaction the table refused: the partition's view
// and cache are dropped (the store wins) and it is decided again.
func (r *partitionRun) conflict(ctx context.Context, ce *conflictError) error {
	r.a.forget(r.part, &r.v)
	if ce.fence {
		// Another writer committed first: reload and decide again.
		r.contention++
		r.a.stats.FenceConflicts.Add(1)
		return retry.Sleep(ctx, min(time.Duration(r.contention)*10*time.Millisecond, time.Second))
	}
	// A row was not as the fence said: the table was changed by something
	// other than a fenced projector. Read it again; if it still cannot
	// apply, stop and say where.
	r.wedged++
	r.a.disagree(r.part.table, r.part.pk, "a row is not as its partition's fence says", ce.err)
	if r.wedged > 1 {
		return ce.applyError(r.part.table, r.part.pk)
	}
	return nil
}

// committed takes a committed transaction into the view, the cache and the
// IDs applied.
func (r *partitionRun) committed() {
	a, v, b := r.a, &r.v, r.tx
	if b.wrote {
		a.confirm(r.part, v)
	}
	for rk, s := range b.cur {
		v.rows[rk] = s
		if !v.fresh {
			a.cache.put(rowKey{r.part.table, r.part.pk, rk}, *s, v.epoch)
		}
	}
	for id, s := range b.appliedIDs {
		r.seen[id] = s
		if a.rememberIDs {
			a.ids.Store(id, s)
		}
	}
	r.next = r.end
}

func dependsOnState(rs []Result) bool {
	for _, r := range rs {
		if r.dependsOnState {
			return true
		}
	}
	return false
}

// begin makes sure v holds the partition's fence with its etag: from the
// cache, else read from the table. After a commit on a store that does not
// report etags, the fence is read again; if its content is still what the
// commit wrote, nobody wrote since and the view holds.
func (a *Applier) begin(ctx context.Context, part partKey, v *view) error {
	if !v.valid {
		if f, epoch, ok := a.cache.fence(part); ok {
			*v = view{valid: true, f: f, epoch: epoch, rows: make(map[string]*rowState)}
		} else {
			f, err := a.readFence(ctx, part.table, part.pk)
			if err != nil {
				return err
			}
			a.adopt(part, v, f)
		}
	}
	if v.f.exists && v.f.etag == "" {
		f, err := a.readFence(ctx, part.table, part.pk)
		if err != nil {
			return err
		}
		if f.sameContent(v.f) {
			v.f.etag = f.etag
			a.cache.setFence(part, v.f, v.epoch)
		} else {
			a.adopt(part, v, f)
		}
	}
	return nil
}

// adopt starts a new view at fence f, read from the table; cached rows of
// the partition are no longer valid.
func (a *Applier) adopt(part partKey, v *view, f fence) {
	if v.f.exists && (!f.exists || f.seq < v.f.seq) {
		a.disagree(part.table, part.pk, "the partition's fence went back: the store lost confirmed writes",
			fmt.Errorf("the projector wrote %v, the table holds %v", v.f, f))
	}
	*v = view{valid: true, f: f, epoch: a.epochs.Add(1), rows: make(map[string]*rowState)}
	a.cache.setFence(part, f, v.epoch)
}

// forget drops the view and the cached rows of a partition: the store wins.
func (a *Applier) forget(part partKey, v *view) {
	a.cache.dropPartition(part)
	// Keep v.f: adopt compares the fence read next with it.
	v.rows = make(map[string]*rowState)
	v.valid, v.f.etag = false, ""
}

// check reads the fence again: true if it has not moved since the view was
// taken (the rows read meanwhile are the table's state at this moment);
// else the view is replaced by the fence read and false returned.
func (a *Applier) check(ctx context.Context, part partKey, v *view) (bool, error) {
	f, err := a.readFence(ctx, part.table, part.pk)
	if err != nil {
		return false, err
	}
	if f.exists == v.f.exists && f.etag == v.f.etag {
		a.confirm(part, v)
		return true, nil
	}
	a.stats.FenceConflicts.Add(1)
	a.cache.dropPartition(part)
	a.adopt(part, v, f)
	return false, nil
}

// loadView adds the rows rks to the view: from the cache when cached under
// the view's epoch, else read from the table.
//
// It reports whether a row read is newer than the view's fence (its _seq
// is past the fence's, or there is no fence): the view is behind the
// table, which every transaction moves fence and rows together.
func (a *Applier) loadView(ctx context.Context, part partKey, v *view, rks []string) (behind bool, err error) {
	var need []string
	for _, rk := range rks {
		if _, ok := v.rows[rk]; ok {
			continue
		}
		if s, ok := a.cache.get(rowKey{part.table, part.pk, rk}, v.epoch); ok {
			v.rows[rk] = s
			continue
		}
		need = append(need, rk)
	}
	if len(need) == 0 {
		return false, nil
	}
	loaded, err := a.load(ctx, part.table, part.pk, need)
	if err != nil {
		return false, err
	}
	for rk, s := range loaded {
		v.rows[rk] = s
		if l := s.Latest; l != nil && (!v.f.exists || l.Seq > v.f.seq) {
			behind = true
		}
	}
	v.fresh = true
	return behind, nil
}

// confirm records that the view's fence held up to now: the rows read
// under it are the table's state at one moment, so they may be cached
// (rows known not to exist too). Rows read but never confirmed are not
// cached: read just after another writer committed, they could mix with
// cached rows from before it.
func (a *Applier) confirm(part partKey, v *view) {
	if !v.fresh {
		return
	}
	for rk, s := range v.rows {
		a.cache.put(rowKey{part.table, part.pk, rk}, *s, v.epoch)
	}
	v.fresh = false
}

// disagree reports that the table is not what the projector wrote.
func (a *Applier) disagree(table, pk, what string, err error) {
	a.stats.Disagreements.Add(1)
	a.log.Error("the table disagrees with what the projector wrote; the table wins",
		LogTable, table, LogPK, pk, "what", what, "err", err)
}

// callHook hands the results of one kind (applied or not) to hook, and
// copies back what the hook settled.
func callHook(ctx context.Context, hook func(context.Context, []Result) error, rs []Result, applied bool) error {
	if hook == nil {
		return nil
	}
	var sel []Result
	var idx []int
	for i, r := range rs {
		if (r.Status == wire.StatusApplied && !r.Stored) == applied {
			sel = append(sel, r)
			idx = append(idx, i)
		}
	}
	if len(sel) == 0 {
		return nil
	}
	if err := hook(ctx, sel); err != nil {
		return err
	}
	for k, i := range idx {
		rs[i] = sel[k]
	}
	return nil
}

// conflictError is a transaction refused because the table was not as the
// view said: the fence moved (fence), or a row op failed while the fence
// held.
type conflictError struct {
	fence bool
	op    opSource
	err   error
}

func (e *conflictError) Error() string { return fmt.Sprintf("%v: %v", ErrConflict, e.err) }
func (e *conflictError) Unwrap() error { return ErrConflict }

func (e *conflictError) applyError(table, pk string) error {
	return &ApplyError{Table: table, PK: pk, RK: e.op.rk, StoreKey: e.op.key, Seq: e.op.seq, Cmd: e.op.cmd,
		Err: fmt.Errorf("%w: %w", ErrConflict, e.err)}
}

// opSource says which row and command a store op of a batch belongs to.
type opSource struct {
	rk, key string
	seq     uint64
	cmd     string
}

// commit writes the batch in one transaction with the fence, retrying
// transient errors under the one retry policy. A batch that writes nothing
// commits nothing. On success the view's fence is the one written.
func (a *Applier) commit(ctx context.Context, part partKey, v *view, b *txn) error {
	if b.er.entry != nil {
		return a.commitErase(ctx, part, v, b)
	}
	rowOps := b.txOps()
	if len(rowOps) == 0 {
		return nil
	}
	sort.Slice(rowOps, func(i, j int) bool { return rowOps[i].RK < rowOps[j].RK })
	next := b.last
	if v.f.exists && v.f.seq > next.seq {
		next = fence{exists: true, seq: v.f.seq, cmd: v.f.cmd, at: v.f.at}
	}
	next.eraseSeq = v.f.eraseSeq
	next.horizon = v.f.horizon // a prune's horizon stays (prune.go)
	// The fence goes first: a stale view fails on it, whatever else differs.
	ops := append([]store.Op{v.f.op(next)}, rowOps...)
	etags, err := a.transact(ctx, part, ops)
	if err != nil {
		return a.commitFailed(ctx, part, v, b, ops, err)
	}
	b.wrote = true
	next.etag = ""
	if len(etags) > 0 {
		next.etag = etags[0]
	}
	v.f = next
	a.cache.setFence(part, v.f, v.epoch)
	return nil
}

// transact commits ops in the partition, retrying transient errors under
// the one retry policy, and returns the etags the store reports.
func (a *Applier) transact(ctx context.Context, part partKey, ops []store.Op) ([]string, error) {
	return retryStore(ctx, a.policy, "transaction in "+part.table, func() ([]string, error) {
		etags, err := store.TransactETags(ctx, a.store, part.table, part.pk, ops)
		if errors.Is(err, store.ErrTableNotFound) {
			a.forgetTable(part.table)
			if cerr := a.ensureTable(ctx, part.table); cerr != nil {
				return nil, cerr
			}
			return nil, fmt.Errorf("table %s was missing: %w", part.table, store.ErrBusy)
		}
		return etags, err
	})
}

// commitFailed says why a transaction failed: a conflictError when the
// table was not as the view said (the fence moved, or a row op failed
// while the fence held), an ApplyError when a row op failed otherwise,
// else the store's error.
func (a *Applier) commitFailed(ctx context.Context, part partKey, v *view, b *txn, ops []store.Op, err error) error {
	var te *store.TxError
	rowOp := errors.As(err, &te) && te.Index > 0 && te.Index < len(ops)
	if !errors.Is(err, store.ErrExists) && !errors.Is(err, store.ErrNotFound) && !errors.Is(err, store.ErrPrecondition) {
		if rowOp {
			return (&conflictError{op: b.source(ops[te.Index].RK), err: err}).applyError(part.table, part.pk)
		}
		return fmt.Errorf("transaction on %s/%q: %w", part.table, part.pk, err)
	}
	ce := &conflictError{fence: true, err: err}
	switch {
	case te != nil && te.Index == 0:
	case rowOp:
		ce.fence = false
		ce.op = b.source(ops[te.Index].RK)
	default:
		// The store did not say which op failed: the fence did if it
		// moved.
		f, ferr := a.readFence(ctx, part.table, part.pk)
		if ferr != nil {
			return ferr
		}
		held := f.exists == v.f.exists && (!f.exists || f.etag == v.f.etag)
		ce.fence = !held
	}
	return ce
}

// load reads the state of rows: from the cache, else a point read of the
// tip and, for a row without one, the newest version row (its tombstone).
func (a *Applier) load(ctx context.Context, table, pk string, rks []string) (map[string]*rowState, error) {
	return retryStore(ctx, a.policy, "read rows of "+table, func() (map[string]*rowState, error) {
		return rows.Load(ctx, a.store, table, pk, rks)
	})
}

func (a *Applier) ensureTable(ctx context.Context, table string) error {
	a.tablesMu.Lock()
	known := a.tables[table]
	a.tablesMu.Unlock()
	if known {
		return nil
	}
	err := retryStoreErr(ctx, a.policy, "create table "+table, func() error {
		err := a.store.CreateTable(ctx, table)
		if errors.Is(err, store.ErrTableExists) {
			return nil
		}
		return err
	})
	if err != nil {
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
