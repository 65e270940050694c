package replay

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/klauspost/compress/zstd"
	"golang.org/x/sync/errgroup"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/internal/retry"
	"github.com/tablejournal/tablejournal/rows"
	"github.com/tablejournal/tablejournal/store"
)

// SnapshotConfig configures Snapshot.
type SnapshotConfig struct {
	// Table is the table to export. Required.
	Table string
	// Seq is the journal sequence the snapshot is consistent at. If zero,
	// the highest sequence the projector has fully applied (AppliedSeq).
	Seq uint64
	// Workers is the number of partitions read at once. If zero, the
	// Replayer's Workers. With 1, the table is read in one scan.
	Workers int
}

// SnapshotStats says what a snapshot holds.
type SnapshotStats struct {
	Header     Header
	Partitions int64 // partitions read (0 when the table was read in one scan)
	Entities   int64 // tips and version rows written
	Elapsed    time.Duration
}

// Snapshot writes table as it stood at a journal sequence to w: its tip and
// version rows (tombstones included) with their system columns, in the
// format described in format.go, zstd-compressed.
//
// Partitions are read in parallel, each in two range scans (its tips, then
// its version rows) that the store filters to _seq <= Seq. The projector
// may keep writing while the snapshot reads, so a row may already be newer
// than Seq: its newest version at or before Seq is then written as the tip
// (the version row of it, copied when the newer version came, is not), or
// as it stands if it is a tombstone. The result is the table exactly as the
// projector had left it at Seq.
//
// The partitions come from the table itself (store.Store.Partitions, one
// index seek per partition), never from the journal: a subject in the
// journal says only that a message was published there, perhaps one that
// was rejected.
//
// Snapshot checks what it writes against what it read: every row must come
// from the partition asked for, in strictly ascending key order, and the
// count recorded in the file must equal the rows read less the tips'
// copies it left out; otherwise it fails and the file is not usable.
func (r *Replayer) Snapshot(ctx context.Context, w io.Writer, cfg SnapshotConfig) (SnapshotStats, error) {
	start := time.Now()
	var stats SnapshotStats
	if cfg.Table == "" {
		return stats, errors.New("snapshot: no table")
	}
	seq := cfg.Seq
	if seq == 0 {
		var err error
		if seq, err = r.AppliedSeq(ctx); err != nil {
			return stats, fmt.Errorf("snapshot: %w", err)
		}
	} else {
		// As asof: beyond the head is no point (a rebuild from such a
		// snapshot would skip every command up to it); unchecked without
		// a journal.
		var err error
		if seq, err = r.Resolve(ctx, Seq(seq)); err != nil {
			return stats, fmt.Errorf("snapshot: %w", err)
		}
	}
	if _, err := r.st.Query(ctx, cfg.Table, store.Query{AllPartitions: true, Limit: 1}); err != nil {
		return stats, fmt.Errorf("snapshot %s: %w", cfg.Table, err)
	}
	if err := checkHorizons(ctx, r.st, cfg.Table, store.AllPartitions, seq); err != nil {
		return stats, fmt.Errorf("snapshot: %w", err) // pruned (prune.go)
	}
	h := Header{Format: FormatVersion, Table: cfg.Table, Seq: seq, Journal: r.cfg.Journal}
	stats.Header = h
	workers := cfg.Workers
	if workers <= 0 {
		workers = r.cfg.Workers
	}
	var pks []string
	if workers > 1 {
		var err error
		if pks, err = r.partitions(ctx, cfg.Table); err != nil {
			return stats, fmt.Errorf("snapshot: %w", err)
		}
	}

	if _, err := io.WriteString(w, snapshotMagic); err != nil {
		return stats, err
	}
	zw, err := zstd.NewWriter(w, zstd.WithEncoderLevel(zstd.SpeedDefault))
	if err != nil {
		return stats, err
	}
	hb, _ := json.Marshal(h)
	out := &lockedWriter{w: zw}
	if _, err := out.Write(appendString(nil, string(hb))); err != nil {
		zw.Close()
		return stats, err
	}

	var total, read atomic.Int64
	if pks == nil {
		bw := &blockWriter{out: out, total: &total}
		err = snapRange(ctx, r.st, cfg.Table, store.AllPartitions, seq, &read, bw.add)
		if err == nil {
			err = bw.flush()
		}
	} else {
		stats.Partitions = int64(len(pks))
		err = parallel(ctx, workers, pks, func(ctx context.Context, pk string) error {
			bw := &blockWriter{out: out, total: &total}
			if err := snapRange(ctx, r.st, cfg.Table, store.InPartition(pk), seq, &read, bw.add); err != nil {
				return err
			}
			return bw.flush()
		})
	}
	if err == nil && total.Load() != read.Load() {
		err = fmt.Errorf("wrote %d entities but kept %d of those read", total.Load(), read.Load())
	}
	if err != nil {
		zw.Close()
		return stats, fmt.Errorf("snapshot %s: %w", cfg.Table, err)
	}
	trailer := binary.AppendUvarint([]byte{0}, uint64(total.Load()))
	if _, err := out.Write(trailer); err != nil {
		zw.Close()
		return stats, err
	}
	if err := zw.Close(); err != nil {
		return stats, fmt.Errorf("snapshot %s: %w", cfg.Table, err)
	}
	stats.Entities, stats.Elapsed = total.Load(), time.Since(start)
	return stats, nil
}

// partitions returns the partition keys of table, listed by the store from
// the table itself, in key order.
func (r *Replayer) partitions(ctx context.Context, table string) ([]string, error) {
	pks := []string{}
	err := r.st.Partitions(ctx, table, func(pk string) error {
		if n := len(pks); n > 0 && store.CompareKeys(pks[n-1], pk) >= 0 {
			return fmt.Errorf("the store listed partition %q after %q", pk, pks[n-1])
		}
		pks = append(pks, pk)
		return nil
	})
	return pks, err
}

// snapRange emits the rows of one partition, or of the table, as they stood
// at seq, and adds to kept the rows read that it emitted. It fails if the
// store returns a row outside the partition or out of key order.
func snapRange(ctx context.Context, st store.Store, table string, part store.Partition, seq uint64, kept *atomic.Int64, emit func(store.Entity) error) error {
	type key struct{ pk, rk string }
	filter := seqAtMost(seq)
	tips := make(map[key]int64) // the version of each tip written
	var prev *store.Entity
	inOrder := func(e store.Entity) error {
		switch {
		case !part.All && e.PK != part.PK:
			return fmt.Errorf("a read of partition %q returned a row of partition %q", part.PK, e.PK)
		case prev != nil && (store.CompareKeys(prev.PK, e.PK) > 0 || prev.PK == e.PK && store.CompareKeys(prev.RK, e.RK) >= 0):
			return fmt.Errorf("the store returned %q/%q after %q/%q", e.PK, e.RK, prev.PK, prev.RK)
		}
		prev = &e
		return nil
	}
	from, to := rows.TipRange()
	err := store.All(ctx, st, table, part.Query(store.Query{From: from, To: to, Filter: filter}), func(e store.Entity) error {
		if err := inOrder(e); err != nil {
			return err
		}
		tips[key{e.PK, e.RK[len(rows.TipPrefix):]}] = e.Props[rows.ColVersion].Int
		kept.Add(1)
		return emit(e)
	})
	if err != nil {
		return err
	}
	var (
		last  key
		first = true
	)
	prev = nil
	q := part.Query(store.Query{From: rows.OldPrefix, To: "old;", Filter: filter})
	return store.All(ctx, st, table, q, func(e store.Entity) error {
		if err := inOrder(e); err != nil {
			return err
		}
		rk, keySeq, _, ok := rows.ParseKey(e.RK)
		if !ok || keySeq != uint64(e.Props[rows.ColSeq].Int) {
			// Not a row of the layout keyed by sequence: a snapshot of it
			// (format 2) would load as something else.
			return fmt.Errorf("%w: row %q/%q (move a table of the version-keyed layout with replay rebuild --into)", rows.ErrLayout, e.PK, e.RK)
		}
		v := e.Props[rows.ColVersion].Int
		k := key{e.PK, rk}
		newest := first || k != last
		first, last = false, k
		tipV, hasTip := tips[k]
		if hasTip && v >= tipV {
			// The tip written above, copied into a version row after the
			// tips were read: it is in the snapshot once, as the tip.
			return nil
		}
		if newest && !hasTip && !e.Props[rows.ColDeleted].Bool {
			// The tip at seq, copied into a version row after seq.
			e.RK = rows.TipKey(rk)
		}
		kept.Add(1)
		return emit(e)
	})
}

// lockedWriter serializes the blocks of concurrent readers.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// blockWriter groups the entities of one reader into blocks of at most
// MaxBlock entities of one partition.
type blockWriter struct {
	out   io.Writer
	total *atomic.Int64
	pk    string
	n     int
	body  []byte
	buf   []byte
}

func (b *blockWriter) add(e store.Entity) error {
	if b.n > 0 && (e.PK != b.pk || b.n == MaxBlock) {
		if err := b.flush(); err != nil {
			return err
		}
	}
	b.pk = e.PK
	b.n++
	b.body = appendEntity(b.body, e)
	return nil
}

func (b *blockWriter) flush() error {
	if b.n == 0 {
		return nil
	}
	b.buf = binary.AppendUvarint(b.buf[:0], uint64(b.n))
	b.buf = appendString(b.buf, b.pk)
	b.buf = append(b.buf, b.body...)
	if _, err := b.out.Write(b.buf); err != nil {
		return err
	}
	b.total.Add(int64(b.n))
	b.n, b.body = 0, b.body[:0]
	return nil
}

// parallel runs fn for every item on at most n goroutines and returns the
// first error, cancelling the others.
func parallel[T any](ctx context.Context, n int, items []T, fn func(context.Context, T) error) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(max(1, n))
	for _, it := range items {
		if gctx.Err() != nil {
			break
		}
		g.Go(func() error { return fn(gctx, it) })
	}
	return wait(ctx, g)
}

// wait waits for g and returns the first error of its goroutines, or the
// cause of ctx (the context g was derived from) when ctx ended.
func wait(ctx context.Context, g *errgroup.Group) error {
	err := g.Wait()
	if cause := context.Cause(ctx); cause != nil {
		return cause
	}
	return err
}

// LoadConfig configures Load.
type LoadConfig struct {
	// Into is the table written; it must be empty or not exist. Required.
	Into string
	// Resume allows a non-empty Into, to finish a load that stopped: rows
	// are then upserted rather than inserted.
	Resume bool
	// Workers is the number of transactions run at once. If zero, the
	// Replayer's Workers.
	Workers int
}

// LoadStats says what a load wrote.
type LoadStats struct {
	Header       Header
	Entities     int64
	Transactions int64
	// Erased counts the snapshot's rows not loaded because their row or
	// partition was erased after the snapshot's sequence (SPEC §10), read
	// from the journal; always 0 without a journal connection.
	Erased  int64
	Elapsed time.Duration
}

// Load reads a snapshot and writes its rows into a fresh table, in
// transactions of at most 100 entities of one partition (and at most a
// transaction's bytes), several at once. The table then equals the
// snapshotted one at the snapshot's sequence; Rebuild with the same
// snapshot continues it with the journal after that sequence.
func (r *Replayer) Load(ctx context.Context, in io.Reader, cfg LoadConfig) (LoadStats, error) {
	start := time.Now()
	var stats LoadStats
	if cfg.Into == "" {
		return stats, errors.New("load: no destination table")
	}
	magic := make([]byte, len(snapshotMagic))
	if _, err := io.ReadFull(in, magic); err != nil || string(magic) != snapshotMagic {
		return stats, fmt.Errorf("load: %w: not a tablejournal snapshot", ErrBadSnapshot)
	}
	zr, err := zstd.NewReader(in)
	if err != nil {
		return stats, fmt.Errorf("load: %w: %v", ErrBadSnapshot, err)
	}
	defer zr.Close()
	d := &snapReader{r: bufio.NewReaderSize(zr, 1<<16)}
	if stats.Header, err = d.header(); err != nil {
		return stats, fmt.Errorf("load: %w", err)
	}
	erased, err := r.erasedAfter(ctx, stats.Header.Table, stats.Header.Seq)
	if err != nil {
		return stats, fmt.Errorf("load: %w", err)
	}
	if !cfg.Resume {
		if err := checkEmpty(ctx, r.st, cfg.Into); err != nil {
			return stats, fmt.Errorf("load: %w", err)
		}
	}
	if err := r.st.CreateTable(ctx, cfg.Into); err != nil && !errors.Is(err, store.ErrTableExists) {
		return stats, fmt.Errorf("load: create %s: %w", cfg.Into, err)
	}
	kind := store.Insert
	if cfg.Resume {
		kind = store.Upsert
	}
	workers := cfg.Workers
	if workers <= 0 {
		workers = r.cfg.Workers
	}

	type tx struct {
		pk  string
		ops []store.Op
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(max(1, workers))
	var entities, nTx atomic.Int64
	// send runs one transaction on the group, once fewer than workers run.
	send := func(t tx) error {
		if gctx.Err() != nil {
			return context.Cause(gctx)
		}
		g.Go(func() error {
			if err := transact(gctx, r.st, cfg.Into, t.pk, t.ops); err != nil {
				return err
			}
			entities.Add(int64(len(t.ops)))
			nTx.Add(1)
			return nil
		})
		return nil
	}
	var old *format1
	if stats.Header.Format == 1 {
		old = newFormat1()
	}
	readErr := func() error {
		var read uint64
		for {
			pk, es, err := d.block()
			if err != nil {
				return err
			}
			if es == nil {
				n, err := d.uvarint()
				if err != nil {
					return err
				}
				if n != read {
					return fmt.Errorf("%w: trailer counts %d entities, read %d", ErrBadSnapshot, n, read)
				}
				return nil
			}
			read += uint64(len(es))
			var ops []store.Op
			bytes := 0
			for _, e := range es {
				if old != nil {
					var keep bool
					if e, keep = old.move(e); !keep {
						continue
					}
				}
				if erased.drops(e) {
					stats.Erased++
					continue
				}
				sz := events.EntitySize(e.PK, e.RK, e.Props) * 4 / 3
				if len(ops) > 0 && bytes+sz > txBudget {
					if err := send(tx{pk, ops}); err != nil {
						return err
					}
					ops, bytes = nil, 0
				}
				ops = append(ops, store.Op{Kind: kind, RK: e.RK, Props: e.Props})
				bytes += sz
			}
			if len(ops) == 0 {
				continue
			}
			if err := send(tx{pk, ops}); err != nil {
				return err
			}
		}
	}()
	err = wait(ctx, g)
	stats.Entities, stats.Transactions, stats.Elapsed = entities.Load(), nTx.Load(), time.Since(start)
	if err != nil {
		return stats, fmt.Errorf("load into %s: %w", cfg.Into, err)
	}
	if readErr != nil {
		return stats, fmt.Errorf("load into %s: %w", cfg.Into, readErr)
	}
	return stats, nil
}

// transact runs one transaction, retrying while the store is busy.
func transact(ctx context.Context, st store.Store, table, pk string, ops []store.Op) error {
	op := func() error {
		_, err := st.Transact(ctx, table, pk, ops)
		if err == nil || errors.Is(err, store.ErrBusy) {
			return err
		}
		return backoff.Permanent(err)
	}
	b := retry.Backoff(50*time.Millisecond, time.Minute, time.Minute)
	if err := backoff.Retry(op, backoff.WithContext(b, ctx)); err != nil {
		return fmt.Errorf("transaction on %s/%q: %w", table, pk, err)
	}
	return nil
}
