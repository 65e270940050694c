package projection

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/internal/retry"
	"github.com/tablejournal/tablejournal/projection/decide"
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
	// record, when set, writes a partition found behind to the durable
	// record before the apply goes on (the projector's; behind.go).
	record func(context.Context, wire.BehindPartition)
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

// Hooks are what a caller of Apply adds around each transaction, at the
// points exactly-once needs: the projector publishes outcomes and change
// events there (batch.go), replay's rebuild counts the results. A hook
// returns what it settles; the results it is handed are its own copy.
type Hooks struct {
	// Ready is called once per Apply, after the partition's rows are read
	// for its first transaction and before anything is decided; the
	// projector waits there for its outcome look-up, which runs meanwhile
	// (lookup.go). It may set the entries' Prior and own outcome.
	Ready func(ctx context.Context) error
	// Settle receives the results that wrote nothing (rejected, duplicate,
	// skipped) before the transaction of their batch commits, so that no
	// later command's effect is durable before their outcome is, and
	// returns them as it settled them, in the same order: a skipped result
	// it recovered carries the outcome it had, and Stored marks those
	// whose outcome it made durable. The driver keeps what it returns (nil:
	// the results as they were).
	Settle func(ctx context.Context, rs []Result) ([]Result, error)
	// BeforeCommit receives the same results, as Settle returned them,
	// before the transaction commits.
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
// the results of each transaction to h. It is the one driver of the
// exactly-once path: the projector (batch.go) and replay's rebuild both
// call it. Each transaction is decided on the table, its results that
// wrote nothing go to h.BeforeCommit, it commits, and its applied results
// go to h.AfterCommit; a transaction the table refused is decided again.
// What a transaction is decided and committed as depends on its kind
// (txKind). Apply returns nil once every entry has a result handed to
// hooks; an error means a persistent store failure (or a hook's error),
// and entries from the failed transaction on were not applied.
func (a *Applier) Apply(ctx context.Context, table, pk string, entries []Entry, h Hooks) error {
	r, err := a.partition(ctx, table, pk, entries)
	if err != nil {
		return err
	}
	r.ready = h.Ready
	for r.next < len(r.entries) {
		kind := kindOf(r.entries[r.next])
		if err := kind.decide(ctx, r); err != nil {
			return err
		}
		if err := r.beforeCommit(ctx, h); err != nil {
			return err
		}
		committed, err := kind.commit(ctx, r)
		if err != nil {
			return err
		}
		if committed {
			if rs, _ := selectResults(r.tx.Results, true); len(rs) > 0 && h.AfterCommit != nil {
				if err := h.AfterCommit(ctx, rs); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

// txKind is a kind of transaction: how the transaction that starts at
// r.entries[r.next] is decided on the table (decide sets r.tx to the
// results of r.entries[r.next:r.end]) and committed (commit reports false
// when the table was not as decided: the transaction is decided again).
type txKind interface {
	decide(ctx context.Context, r *partitionRun) error
	commit(ctx context.Context, r *partitionRun) (bool, error)
}

// kindOf is the kind of the transaction that starts with e: a message that
// cannot apply (rejectOnly), an erase (eraseTx, erase.go), a prune
// (pruneTx, prune.go), else the commands that write rows (rowsTx).
func kindOf(e Entry) txKind {
	switch {
	case e.Err != nil:
		return rejectOnly{}
	case e.Erase != nil:
		return eraseTx{}
	case decide.IsPrune(e):
		return &pruneTx{}
	}
	return rowsTx{}
}

// ownTx reports whether e takes a transaction of its own kind (an erase,
// a prune), after the ones before it.
func ownTx(e Entry) bool { return e.Erase != nil || decide.IsPrune(e) }

// partitionRun is one partition's entries on their way into the table, one
// transaction at a time (Apply).
type partitionRun struct {
	a       *Applier
	part    partKey
	entries []Entry
	next    int // the first entry not committed
	end     int // after decide: tx holds entries[next:end]
	v       view
	tx      *txn
	// seen: IDs applied before, by sequence (this call's, and with
	// RememberIDs every call's).
	seen               map[string]uint64
	contention, wedged int
	// touched are the RowKeys the entries touch, once each, with the
	// index of the last entry touching each (touchedFrom).
	touched []touchedRK
	// ready is Hooks.Ready until awaitReady called it.
	ready func(ctx context.Context) error
}

type touchedRK struct {
	rk   string
	last int
}

// touchedFrom lists the RowKeys entries[from:] touch, once each: what
// decide.TouchedRKs(r.entries[from:]) lists, without a map per transaction (a hot
// partition's batch was listed again for each of its transactions).
func (r *partitionRun) touchedFrom(from int) []string {
	if r.touched == nil {
		at := make(map[string]int)
		r.touched = make([]touchedRK, 0, len(r.entries))
		for i, e := range r.entries {
			if e.Cmd == nil {
				continue
			}
			for _, op := range e.Cmd.Ops {
				if j, ok := at[op.RK]; ok {
					r.touched[j].last = i
					continue
				}
				at[op.RK] = len(r.touched)
				r.touched = append(r.touched, touchedRK{op.RK, i})
			}
		}
	}
	rks := make([]string, 0, len(r.touched))
	for _, t := range r.touched {
		if t.last >= from {
			rks = append(rks, t.rk)
		}
	}
	return rks
}

// awaitReady calls Hooks.Ready the first time; every kind of transaction
// does before it decides anything (rowsTx once its rows are read).
func (r *partitionRun) awaitReady(ctx context.Context) error {
	ready := r.ready
	if ready == nil {
		return nil
	}
	r.ready = nil
	return ready(ctx)
}

// partition starts applying entries, all of table and pk and in journal
// order.
func (a *Applier) partition(ctx context.Context, table, pk string, entries []Entry) (*partitionRun, error) {
	r := &partitionRun{a: a, part: partKey{table, pk}, entries: entries, seen: make(map[string]uint64)}
	// Only valid messages name a valid table: without one, nothing is read
	// or written (rejectOnly).
	if !slices.ContainsFunc(entries, func(e Entry) bool { return e.Err == nil }) {
		return r, nil
	}
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

// newTxn starts the transaction at r.next on the view's rows.
func (r *partitionRun) newTxn() *txn {
	tx := decide.NewTxn(r.part.pk, r.v.rows, r.a.store.Limits())
	tx.Seen = r.seen
	tx.Erase.To = r.v.f.EraseSeq
	return tx
}

// rejectOnly is a transaction of messages that cannot apply (undecodable,
// invalid, or on a subject that names no valid table): each is rejected on
// the message alone, without reading the partition's rows or fence (its
// table may not even be a valid name), and nothing is written.
type rejectOnly struct{}

func (rejectOnly) decide(ctx context.Context, r *partitionRun) error {
	if err := r.awaitReady(ctx); err != nil {
		return err
	}
	r.tx = decide.NewTxn(r.part.pk, map[string]*rowState{}, events.Limits{})
	for r.end = r.next; r.end < len(r.entries) && r.entries[r.end].Err != nil; r.end++ {
		if err := r.tx.Add(r.entries[r.end]); err != nil {
			return err
		}
	}
	return nil
}

func (rejectOnly) commit(_ context.Context, r *partitionRun) (bool, error) {
	r.next = r.end // nothing to write
	return true, nil
}

// rowsTx is a transaction of consecutive commands that write rows (and
// messages that cannot apply among them), as many as fit the store's
// limits, up to the next erase or prune.
type rowsTx struct{}

// decide decides the transaction on the partition's rows as the table
// holds them: the fence (rule 4) and the rows under it, from the cache
// when cached under the same fence (rule 5). A rejection is decided on the
// rows' state, so when rows were read since the fence was last checked the
// fence is read again, and the transaction decided again if it moved (rule
// 6).
func (rowsTx) decide(ctx context.Context, r *partitionRun) error {
	for {
		if err := r.a.begin(ctx, r.part, &r.v); err != nil {
			return err
		}
		behind, err := r.a.loadView(ctx, r.part, &r.v, r.touchedFrom(r.next))
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
		// The rows are read: what remains to decide on are the earlier
		// outcomes of the commands' IDs.
		if err := r.awaitReady(ctx); err != nil {
			return err
		}
		r.tx = r.newTxn()
		for r.end = r.next; r.end < len(r.entries); r.end++ {
			if r.end > r.next && ownTx(r.entries[r.end]) {
				break
			}
			if err := r.tx.Add(r.entries[r.end]); errors.Is(err, decide.ErrFull) {
				break
			}
		}
		if !r.v.fresh || !dependsOnState(r.tx.Results) {
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

func (rowsTx) commit(ctx context.Context, r *partitionRun) (bool, error) {
	return r.commitWith(ctx, r.a.commitRows)
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
	for _, res := range r.tx.Results {
		fmt.Fprintf(&results, "%d:%s ", res.Seq, res.Status)
	}
	r.a.log.Debug("transaction decided", LogTable, r.part.table, LogPK, r.part.pk,
		"fence", r.v.f.String(), "etag_known", r.v.f.ETag != "", "epoch", r.v.epoch, "fresh", r.v.fresh || checked,
		"checked", checked, "results", strings.TrimSpace(results.String()))
}

// commitWith commits the transaction decided last with write, which writes
// it with the fence. It returns false when the table was not as the view
// said: the transaction must be decided again, on the rows the table holds
// now.
func (r *partitionRun) commitWith(ctx context.Context, write func(context.Context, partKey, *view, *txn) error) (bool, error) {
	for _, res := range r.tx.Results {
		if res.Status == wire.StatusApplied && res.Stored { // a skipped command found applied
			r.seen[res.ID] = max(r.seen[res.ID], res.Seq)
		}
	}
	err := write(ctx, r.part, &r.v, r.tx)
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
	if b.Wrote {
		a.confirm(r.part, v)
	}
	for rk, s := range b.Cur {
		v.rows[rk] = s
		if !v.fresh {
			a.cache.put(rowKey{r.part.table, r.part.pk, rk}, *s, v.epoch)
		}
	}
	for id, s := range b.AppliedIDs {
		r.seen[id] = s
		if a.rememberIDs {
			a.ids.Store(id, s)
		}
	}
	r.next = r.end
}

func dependsOnState(rs []Result) bool {
	for _, r := range rs {
		if r.DependsOnState {
			return true
		}
	}
	return false
}

// begin makes sure v holds the partition's fence with its etag: from the
// cache, else read from the table. (After a commit the view holds the
// fence it wrote, with the etag the store reported.)
func (a *Applier) begin(ctx context.Context, part partKey, v *view) error {
	if v.valid {
		return nil
	}
	if f, epoch, ok := a.cache.fence(part); ok {
		*v = view{valid: true, f: f, epoch: epoch, rows: make(map[string]*rowState)}
		return nil
	}
	f, err := a.readFence(ctx, part.table, part.pk)
	if err != nil {
		return err
	}
	a.adopt(ctx, part, v, f)
	return nil
}

// adopt starts a new view at fence f, read from the table; cached rows of
// the partition are no longer valid.
func (a *Applier) adopt(ctx context.Context, part partKey, v *view, f fence) {
	if v.f.Exists && (!f.Exists || f.Seq < v.f.Seq) {
		a.disagree(part.table, part.pk, "the partition's fence went back: the store lost confirmed writes",
			fmt.Errorf("the projector wrote %v, the table holds %v", v.f, f))
		a.behind(ctx, wire.BehindPartition{Table: part.table, PK: part.pk, TableSeq: f.Seq, AppliedSeq: v.f.Seq, Cmd: v.f.Cmd})
	}
	*v = view{valid: true, f: f, epoch: a.epochs.Add(1), rows: make(map[string]*rowState)}
	a.cache.setFence(part, f, v.epoch)
}

// forget drops the view and the cached rows of a partition: the store wins.
func (a *Applier) forget(part partKey, v *view) {
	a.cache.dropPartition(part)
	// Keep v.f: adopt compares the fence read next with it.
	v.rows = make(map[string]*rowState)
	v.valid, v.f.ETag = false, ""
}

// check reads the fence again: true if it has not moved since the view was
// taken (the rows read meanwhile are the table's state at this moment);
// else the view is replaced by the fence read and false returned.
func (a *Applier) check(ctx context.Context, part partKey, v *view) (bool, error) {
	f, err := a.readFence(ctx, part.table, part.pk)
	if err != nil {
		return false, err
	}
	if f.Exists == v.f.Exists && f.ETag == v.f.ETag {
		a.confirm(part, v)
		return true, nil
	}
	a.stats.FenceConflicts.Add(1)
	a.cache.dropPartition(part)
	a.adopt(ctx, part, v, f)
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
		if l := s.Latest; l != nil && (!v.f.Exists || l.Seq > v.f.Seq) {
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

// beforeCommit hands the results of the transaction decided last that
// wrote nothing to h.Settle, keeps what it settled, and hands them to
// h.BeforeCommit.
func (r *partitionRun) beforeCommit(ctx context.Context, h Hooks) error {
	rs, idx := selectResults(r.tx.Results, false)
	if len(rs) == 0 {
		return nil
	}
	if h.Settle != nil {
		settled, err := h.Settle(ctx, slices.Clone(rs))
		if err != nil {
			return err
		}
		if settled != nil {
			if len(settled) != len(rs) {
				return fmt.Errorf("settle hook returned %d results for %d", len(settled), len(rs))
			}
			for k, i := range idx {
				r.tx.Results[i] = settled[k]
			}
			rs = settled
		}
	}
	if h.BeforeCommit == nil {
		return nil
	}
	return h.BeforeCommit(ctx, slices.Clone(rs))
}

// selectResults returns a copy of the results of rs of one kind, applied
// (and not stored before) or not, with their indexes in rs.
func selectResults(rs []Result, applied bool) ([]Result, []int) {
	var sel []Result
	var idx []int
	for i, r := range rs {
		if (r.Status == wire.StatusApplied && !r.Stored) == applied {
			sel = append(sel, r)
			idx = append(idx, i)
		}
	}
	return sel, idx
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
	return &ApplyError{Table: table, PK: pk, RK: e.op.RK, StoreKey: e.op.Key, Seq: e.op.Seq, Cmd: e.op.Cmd,
		Err: fmt.Errorf("%w: %w", ErrConflict, e.err)}
}

// commitRows writes the batch in one transaction with the fence, retrying
// transient errors under the one retry policy. A batch that writes nothing
// commits nothing. On success the view's fence is the one written.
func (a *Applier) commitRows(ctx context.Context, part partKey, v *view, b *txn) error {
	rowOps := b.TxOps()
	if len(rowOps) == 0 {
		return nil
	}
	sort.Slice(rowOps, func(i, j int) bool { return rowOps[i].RK < rowOps[j].RK })
	next := b.Last
	if v.f.Exists && v.f.Seq > next.Seq {
		next = fence{Exists: true, Seq: v.f.Seq, Cmd: v.f.Cmd, At: v.f.At}
	}
	next.EraseSeq = v.f.EraseSeq
	next.Horizon = v.f.Horizon // a prune's horizon stays (prune.go)
	// The fence goes first: a stale view fails on it, whatever else differs.
	ops := append([]store.Op{v.f.Op(next)}, rowOps...)
	etag, err := a.transact(ctx, part, ops)
	if err != nil {
		return a.commitFailed(ctx, part, v, b, ops, err)
	}
	b.Wrote = true
	next.ETag = etag
	v.f = next
	a.cache.setFence(part, v.f, v.epoch)
	return nil
}

// transact commits ops, the fence's write first, in the partition,
// retrying transient errors under the one retry policy, and returns the
// etag the fence now has, on which the partition's next transaction is
// conditional.
func (a *Applier) transact(ctx context.Context, part partKey, ops []store.Op) (string, error) {
	etags, err := retryStore(ctx, a.policy, "transaction in "+part.table, func() ([]string, error) {
		etags, err := a.store.Transact(ctx, part.table, part.pk, ops)
		if errors.Is(err, store.ErrTableNotFound) {
			a.forgetTable(part.table)
			if cerr := a.ensureTable(ctx, part.table); cerr != nil {
				return nil, cerr
			}
			return nil, fmt.Errorf("table %s was missing: %w", part.table, store.ErrBusy)
		}
		return etags, err
	})
	if err != nil {
		return "", err
	}
	if len(etags) != len(ops) || etags[0] == "" {
		// Never the fence write "on etag \"\"": that would be unconditional.
		return "", fmt.Errorf("transaction in %s/%q committed, but the store reported %d etags for %d ops, the fence's %q",
			part.table, part.pk, len(etags), len(ops), firstOr(etags))
	}
	return etags[0], nil
}

func firstOr(etags []string) string {
	if len(etags) == 0 {
		return ""
	}
	return etags[0]
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
			return (&conflictError{op: b.Source(ops[te.Index].RK), err: err}).applyError(part.table, part.pk)
		}
		return fmt.Errorf("transaction on %s/%q: %w", part.table, part.pk, err)
	}
	ce := &conflictError{fence: true, err: err}
	switch {
	case te != nil && te.Index == 0:
	case rowOp:
		ce.fence = false
		ce.op = b.Source(ops[te.Index].RK)
	default:
		// The store did not say which op failed: the fence did if it
		// moved.
		f, ferr := a.readFence(ctx, part.table, part.pk)
		if ferr != nil {
			return ferr
		}
		held := f.Exists == v.f.Exists && (!f.Exists || f.ETag == v.f.ETag)
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
