package projection

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

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
	store store.Store
	// layouts says a table's layout (ApplierConfig.Layouts); tableLayouts
	// caches the answers, by table token; mirrors are the plain tables'
	// rows as last read or written (plain.go).
	layouts      func(ctx context.Context, table string) (wire.Layout, error)
	tableLayouts sync.Map
	mirrors      *mirrorCache
	cache        *rowCache
	policy       *retryPolicy
	log          *slog.Logger
	stats        *Stats
	epochs       atomic.Uint64
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
	// Layouts says the layout of a table (SPEC §4), asked once per table:
	// the projector reads the journal's setting (tablelayout.Of), a
	// rebuild the source table's. An error is the journal's (ErrPublish:
	// the batch is tried again). If nil, every table is versioned.
	Layouts func(ctx context.Context, table string) (wire.Layout, error)
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
	a := &Applier{store: s, layouts: cfg.Layouts, mirrors: newMirrorCache(cfg.CacheRows), tables: make(map[string]bool), log: cfg.Logger, stats: cfg.Stats,
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

// disagree reports that the table is not what the projector wrote.
func (a *Applier) disagree(table, pk, what string, err error) {
	a.stats.Disagreements.Add(1)
	a.log.Error("the table disagrees with what the projector wrote; the table wins",
		LogTable, table, LogPK, pk, "what", what, "err", err)
}

// transact commits ops, the fence's write first, in the partition,
// retrying transient errors under the one retry policy, and returns the
// etag the fence now has, on which the partition's next transaction is
// conditional.
func (a *Applier) transact(ctx context.Context, part partKey, ops []store.Op) (string, error) {
	etags, err := a.transactRetrying(ctx, "transaction in ", part, ops)
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

// transactRetrying commits ops in part, retrying transient errors under
// the one retry policy, and creating the table again if it went missing.
func (a *Applier) transactRetrying(ctx context.Context, what string, part partKey, ops []store.Op) ([]string, error) {
	return retryStore(ctx, a.policy, what+part.table, func() ([]string, error) {
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
}

func firstOr(etags []string) string {
	if len(etags) == 0 {
		return ""
	}
	return etags[0]
}

// load reads the state of rows of a table laid out as tl: a point read of
// the tip and, for a row without one, the newest version row (its
// tombstone).
func (a *Applier) load(ctx context.Context, tl tableLayout, pk string, rks []string) (map[string]*rowState, error) {
	return retryStore(ctx, a.policy, "read rows of "+tl.rows, func() (map[string]*rowState, error) {
		return tl.layout.load(ctx, a.store, tl.rows, pk, rks)
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
