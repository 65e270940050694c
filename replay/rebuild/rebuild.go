package rebuild

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"strings"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"golang.org/x/sync/errgroup"

	"github.com/tablejournal/tablejournal/journal"
	"github.com/tablejournal/tablejournal/projection"
	"github.com/tablejournal/tablejournal/replay"
	"github.com/tablejournal/tablejournal/replay/internal/run"
	"github.com/tablejournal/tablejournal/replay/retention"
	"github.com/tablejournal/tablejournal/replay/snapshot"
	"github.com/tablejournal/tablejournal/rows"
	"github.com/tablejournal/tablejournal/store"
	"github.com/tablejournal/tablejournal/wire"
)

// Config configures Rebuild.
type Config struct {
	// Table is the table whose commands are re-projected. If empty, the
	// snapshot's table; one of them is required.
	Table string
	// Into is the table written; it must be empty or not exist. Required.
	Into string
	// To is the last journal sequence applied. If zero, the head when the
	// rebuild starts.
	To uint64
	// Snapshot, if set, is loaded into Into first (see Load); the rebuild
	// then replays only the journal after the snapshot's sequence.
	Snapshot io.Reader
	// Resume allows a non-empty Into: the rebuild continues one that
	// stopped, skipping the commands whose effect is already there (the
	// projector's own redelivery check on the rows' _seq).
	Resume bool
	// Workers is the number of partitions applied at once. If zero, the
	// Source's Workers.
	Workers int
	// Layout is the layout Into is projected in (SPEC §4). If empty, the
	// source table's, as its journal sets it: a plain table rebuilds
	// into a plain table (Into and Into's history table).
	Layout wire.Layout
	// Progress, if set, is called about ten times a second and at the end
	// with the commands done and the commands to do (an estimate when To
	// is before the head).
	Progress func(done, total int64)
}

// Stats says what a rebuild did.
type Stats struct {
	Table, Into string
	// Layout is the layout Into was projected in.
	Layout wire.Layout
	// From and To are the journal sequences replayed (From is 1, or the
	// snapshot's sequence plus one).
	From, To uint64
	// Loaded is the number of entities loaded from the snapshot.
	Loaded int64
	// Erased counts the snapshot's rows dropped because their key was
	// erased after it (snapshot.LoadStats.Erased).
	Erased int64
	// Commands counts the journal messages replayed, by outcome.
	Commands, Applied, Rejected, Duplicates, Skipped int64
	Elapsed                                          time.Duration
}

// Rebuild re-projects the journal up to a point into a fresh table,
// through projection.Applier: the projector's own apply code, without
// outcomes or change feed. Partitions are dispatched to Workers goroutines
// by a hash of their key, so each partition's commands apply in journal
// order while different partitions apply in parallel. The result equals
// the source table's state at To (AsOf), row for row and version for
// version, in every column but the store's Timestamp and etag.
func (r *Rebuilder) Rebuild(ctx context.Context, cfg Config) (Stats, error) {
	start := time.Now()
	st := Stats{Table: cfg.Table, Into: cfg.Into, From: 1}
	if err := r.NeedJournal("rebuild"); err != nil {
		return st, err
	}
	if cfg.Into == "" {
		return st, errors.New("rebuild: no destination table")
	}
	if cfg.Snapshot == nil && cfg.Table == "" {
		return st, errors.New("rebuild: no source table")
	}
	if cfg.Table != "" && strings.EqualFold(cfg.Table, cfg.Into) {
		return st, fmt.Errorf("rebuild: %w: %s is %s; rebuild into a new table", ErrIntoSource, cfg.Into, cfg.Table)
	}
	head, err := r.Journal().Head(ctx)
	if err != nil {
		return st, err
	}
	st.To = cfg.To
	if st.To == 0 {
		st.To = head
	}
	if st.To > head {
		return st, fmt.Errorf("rebuild: %w: sequence %d is beyond the journal's head %d", replay.ErrBadPoint, st.To, head)
	}
	if err := retention.NewCompactor(r.Source).CheckHorizon(ctx, cfg.Table, fromJournal(cfg), st.To); err != nil {
		return st, fmt.Errorf("rebuild: %w", err)
	}
	if cfg.Snapshot == nil {
		n, err := r.countMessages(ctx, wire.TableFilters(cfg.Table))
		if err != nil {
			return st, fmt.Errorf("rebuild: %w", err)
		}
		if n == 0 {
			return st, fmt.Errorf("rebuild: %w: %s (journal %s)", ErrUnknownTable, cfg.Table, r.Journal().Name())
		}
	}
	if cfg.Snapshot != nil {
		ls, err := snapshot.New(r.Source).Load(ctx, cfg.Snapshot, snapshot.LoadConfig{Into: cfg.Into, Workers: cfg.Workers, Resume: cfg.Resume})
		if err != nil {
			return st, fmt.Errorf("rebuild: %w", err)
		}
		if cfg.Table != "" && !strings.EqualFold(cfg.Table, ls.Header.Table) {
			return st, fmt.Errorf("rebuild: the snapshot is of table %s, not %s", ls.Header.Table, cfg.Table)
		}
		if ls.Header.Seq > st.To {
			return st, fmt.Errorf("rebuild: %w: the snapshot is at sequence %d, after %d", replay.ErrBadPoint, ls.Header.Seq, st.To)
		}
		st.Table, st.From, st.Loaded, st.Erased = ls.Header.Table, ls.Header.Seq+1, ls.Entities, ls.Erased
		if strings.EqualFold(st.Table, cfg.Into) {
			return st, fmt.Errorf("rebuild: %w: %s is %s; rebuild into a new table", ErrIntoSource, cfg.Into, st.Table)
		}
	}
	if st.Layout = cfg.Layout; st.Layout == "" {
		if st.Layout, err = r.Layout(ctx, st.Table); err != nil {
			return st, fmt.Errorf("rebuild: %w", err)
		}
	}
	intoRows, err := rows.VersionTable(cfg.Into, st.Layout)
	if err != nil {
		return st, fmt.Errorf("rebuild: %w", err)
	}
	if srcRows, err := r.VersionTable(ctx, st.Table); err == nil && (strings.EqualFold(srcRows, cfg.Into) || strings.EqualFold(srcRows, intoRows) || strings.EqualFold(st.Table, intoRows)) {
		return st, fmt.Errorf("rebuild: %w: %s or its history would be %s's tables; rebuild into a new table", ErrIntoSource, cfg.Into, st.Table)
	}
	if cfg.Snapshot == nil && !cfg.Resume {
		for _, t := range []string{cfg.Into, intoRows} {
			if err := replay.CheckEmpty(ctx, r.Store(), t); err != nil {
				return st, fmt.Errorf("rebuild: %w", err)
			}
		}
	}
	if err := retention.NewCompactor(r.Source).CheckHorizon(ctx, st.Table, st.From, st.To); err != nil {
		return st, fmt.Errorf("rebuild: %w", err)
	}
	if err := r.checkNotTrimmed(ctx, st.From); err != nil {
		return st, fmt.Errorf("rebuild: %w", err)
	}
	for _, t := range []string{cfg.Into, intoRows} {
		if err := r.Store().CreateTable(ctx, t); err != nil && !errors.Is(err, store.ErrTableExists) {
			return st, fmt.Errorf("rebuild: create %s: %w", t, err)
		}
	}
	err = r.replay(ctx, cfg, &st)
	st.Elapsed = time.Since(start)
	return st, err
}

// fromJournal is the first sequence a rebuild reads from the journal when
// it has no snapshot (1), or 0 when it is not known before the snapshot
// is read.
func fromJournal(cfg Config) uint64 {
	if cfg.Snapshot == nil {
		return 1
	}
	return 0
}

// replay applies the journal messages of st.Table in [st.From, st.To] to
// cfg.Into.
func (r *Rebuilder) replay(ctx context.Context, cfg Config, st *Stats) error {
	if st.From > st.To {
		if cfg.Progress != nil {
			cfg.Progress(0, 0)
		}
		return nil
	}
	workers := cfg.Workers
	if workers <= 0 {
		workers = r.Config().Workers
	}
	filters := wire.TableFilters(st.Table)
	total := int64(st.To - st.From + 1)
	if n, err := r.countMessages(ctx, filters); err == nil && n < total {
		total = n
	}

	// RememberIDs: a command ID applies at most once however far apart its
	// copies are in the journal, as the projector decides it from the
	// outcomes stream.
	applier := projection.NewApplier(r.Store(), projection.ApplierConfig{RememberIDs: true, Layouts: fixedLayout(st.Layout)})
	var done atomic.Int64
	var c counts
	hooks := projection.Hooks{BeforeCommit: c.count, AfterCommit: c.count}

	// One worker per channel; a message goes to the worker of its
	// partition, so that a partition is applied in journal order.
	chans := make([]chan journal.Msg, workers)
	g, gctx := errgroup.WithContext(ctx)
	for i := range chans {
		chans[i] = make(chan journal.Msg, 1024)
		g.Go(func() error {
			err := r.rebuildWorker(gctx, applier, cfg.Into, chans[i], hooks, &done)
			if err != nil {
				for range chans[i] { // unblock the reader
				}
			}
			return err
		})
	}
	stopProgress := run.Progress(cfg.Progress, &done, total)
	readErr := r.Journal().ReadAny(gctx, st.From, st.To, filters, func(m journal.Msg) error {
		i := 0
		if _, _, pk, err := wire.ParseJournalSubject(m.Subject); err == nil {
			h := fnv.New32a()
			h.Write([]byte(pk))
			i = int(h.Sum32() % uint32(workers))
		}
		select {
		case chans[i] <- m:
			return nil
		case <-gctx.Done():
			return context.Cause(gctx)
		}
	})
	for _, ch := range chans {
		close(ch)
	}
	err := run.Wait(ctx, g)
	stopProgress()
	st.Commands, st.Applied, st.Rejected, st.Duplicates, st.Skipped =
		done.Load(), c.applied.Load(), c.rejected.Load(), c.dups.Load(), c.skipped.Load()
	if err != nil {
		return fmt.Errorf("rebuild %s into %s: %w", st.Table, cfg.Into, err)
	}
	if readErr != nil {
		return fmt.Errorf("rebuild %s into %s: %w", st.Table, cfg.Into, readErr)
	}
	return nil
}

// fixedLayout is the ApplierConfig.Layouts of a rebuild: every table it
// writes (the one it rebuilds into) is projected in l.
func fixedLayout(l wire.Layout) func(context.Context, string) (wire.Layout, error) {
	return func(context.Context, string) (wire.Layout, error) { return l, nil }
}

// counts counts a rebuild's commands by outcome.
type counts struct {
	applied, rejected, dups, skipped atomic.Int64
}

// count is the hook that counts the results of a transaction.
func (c *counts) count(_ context.Context, rs []projection.Result) error {
	for _, res := range rs {
		switch res.Status {
		case wire.StatusApplied:
			c.applied.Add(1)
		case wire.StatusRejected:
			c.rejected.Add(1)
		case wire.StatusDuplicate:
			c.dups.Add(1)
		case projection.Skipped:
			c.skipped.Add(1)
		}
	}
	return nil
}

// rebuildWorker applies the messages it receives, taking whatever is queued
// at once so that consecutive commands of a partition share transactions.
func (r *Rebuilder) rebuildWorker(ctx context.Context, a *projection.Applier, into string, ch <-chan journal.Msg, h projection.Hooks, done *atomic.Int64) error {
	type part struct{ table, pk string }
	const maxBatch = 1024
	batch := make([]journal.Msg, 0, maxBatch)
	for m := range ch {
		batch = append(batch[:0], m)
	drain:
		for len(batch) < maxBatch {
			select {
			case m, ok := <-ch:
				if !ok {
					break drain
				}
				batch = append(batch, m)
			default:
				break drain
			}
		}
		groups := make(map[part][]projection.Entry)
		var order []part
		for _, m := range batch {
			table, pk, e := projection.EntryFromMsg(m)
			p := part{table, pk}
			if _, ok := groups[p]; !ok {
				order = append(order, p)
			}
			groups[p] = append(groups[p], e)
		}
		for _, p := range order {
			if err := a.Apply(ctx, into, p.pk, groups[p], h); err != nil {
				return fmt.Errorf("%s/%q: %w", p.table, p.pk, err)
			}
			done.Add(int64(len(groups[p])))
		}
	}
	return nil
}

// checkNotTrimmed fails with replay.ErrBadPoint when the journal no longer holds
// sequence from: reading it would skip the removed commands silently and
// rebuild something that never was.
func (r *Rebuilder) checkNotTrimmed(ctx context.Context, from uint64) error {
	s, err := r.JetStream().Stream(ctx, r.Journal().Name())
	if err != nil {
		return err
	}
	info, err := s.Info(ctx)
	if err != nil {
		return fmt.Errorf("journal %s: %w", r.Journal().Name(), err)
	}
	if first := info.State.FirstSeq; first > from && from <= info.State.LastSeq && !erasureOnly(info.Config) && !retention.Compacted(info.Config, first) {
		return fmt.Errorf("%w: the journal starts at sequence %d, and commands %d..%d are gone; rebuild from a snapshot taken at %d or later",
			replay.ErrBadPoint, first, from, first-1, first-1)
	}
	return nil
}

// countMessages counts the journal's messages matching any of filters.
func (r *Rebuilder) countMessages(ctx context.Context, filters []string) (int64, error) {
	s, err := r.JetStream().Stream(ctx, r.Journal().Name())
	if err != nil {
		return 0, err
	}
	var n int64
	for _, filter := range filters {
		info, err := s.Info(ctx, jetstream.WithSubjectFilter(filter))
		if err != nil {
			return 0, fmt.Errorf("subjects of %s: %w", r.Journal().Name(), err)
		}
		for _, c := range info.State.Subjects {
			n += int64(c)
		}
	}
	return n, nil
}
