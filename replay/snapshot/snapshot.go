package snapshot

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/klauspost/compress/zstd"
	"golang.org/x/sync/errgroup"

	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/internal/retry"
	"github.com/tablejournal/tablejournal/replay"
	"github.com/tablejournal/tablejournal/replay/history"
	"github.com/tablejournal/tablejournal/replay/internal/run"
	"github.com/tablejournal/tablejournal/rows"
	"github.com/tablejournal/tablejournal/store"
	"github.com/tablejournal/tablejournal/wire"
)

// Config configures Snapshot.
type Config struct {
	// Table is the table to export. Required.
	Table string
	// Seq is the journal sequence the snapshot is consistent at. If zero,
	// the highest sequence the projector has fully applied (AppliedSeq).
	Seq uint64
	// Workers is the number of partitions read at once. If zero, the
	// Source's Workers. With 1, the table is read in one scan.
	Workers int
}

// Stats says what a snapshot holds.
type Stats struct {
	Header     Header
	Partitions int64 // partitions read (0 when the table was read in one scan)
	Entities   int64 // tips, version rows and fences written
	Elapsed    time.Duration
}

// Take writes table as it stood at a journal sequence to w: its tip and
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
func (r *Snapshots) Take(ctx context.Context, w io.Writer, cfg Config) (Stats, error) {
	start := time.Now()
	var stats Stats
	if cfg.Table == "" {
		return stats, errors.New("snapshot: no table")
	}
	layout, err := r.Layout(ctx, cfg.Table)
	if err != nil {
		return stats, fmt.Errorf("snapshot: %w", err)
	}
	vt, err := rows.VersionTable(cfg.Table, layout)
	if err != nil {
		return stats, fmt.Errorf("snapshot: %w", err)
	}
	seq, err := r.takeSeq(ctx, cfg, vt)
	if err != nil {
		return stats, err
	}
	h := Header{Format: FormatVersion, Table: cfg.Table, Seq: seq, Journal: r.Config().Journal}
	if layout == wire.LayoutPlain {
		h.Layout = layout
	}
	stats.Header = h
	workers := cfg.Workers
	if workers <= 0 {
		workers = r.Config().Workers
	}
	var pks []string
	if workers > 1 {
		if pks, err = r.partitions(ctx, vt); err != nil {
			return stats, fmt.Errorf("snapshot: %w", err)
		}
	}
	stats.Partitions = int64(len(pks))
	n, err := r.write(ctx, w, h, vt, pks, workers)
	stats.Entities, stats.Elapsed = n, time.Since(start)
	return stats, err
}

// takeSeq is the sequence a snapshot is taken at, checked: the table
// exists and its history (in vt, the table's VersionTable) is not pruned
// there.
func (r *Snapshots) takeSeq(ctx context.Context, cfg Config, vt string) (uint64, error) {
	seq := cfg.Seq
	var err error
	if seq == 0 {
		if seq, err = r.AppliedSeq(ctx); err != nil {
			return 0, fmt.Errorf("snapshot: %w", err)
		}
	} else if seq, err = r.Resolve(ctx, replay.Seq(seq)); err != nil {
		// As asof: beyond the head is no point (a rebuild from such a
		// snapshot would skip every command up to it); unchecked without
		// a journal.
		return 0, fmt.Errorf("snapshot: %w", err)
	}
	if _, err := r.Store().Query(ctx, vt, store.Query{AllPartitions: true, Limit: 1}); err != nil {
		return 0, fmt.Errorf("snapshot %s: %w", cfg.Table, err)
	}
	if err := replay.CheckPrunedIn(ctx, r.Store(), vt, store.AllPartitions, seq); err != nil {
		return 0, fmt.Errorf("snapshot: %w", replay.Logical(err, cfg.Table)) // pruned (replay.PrunedError)
	}
	return seq, nil
}

// write writes the snapshot of h's table, whose rows of the versioned
// layout are in vt (its history, for a plain table), at h's sequence to w:
// in one scan when pks is nil, else partition by partition, workers at
// once. It returns the entities written.
func (r *Snapshots) write(ctx context.Context, w io.Writer, h Header, vt string, pks []string, workers int) (int64, error) {
	if _, err := io.WriteString(w, snapshotMagic); err != nil {
		return 0, err
	}
	zw, err := zstd.NewWriter(w, zstd.WithEncoderLevel(zstd.SpeedDefault))
	if err != nil {
		return 0, err
	}
	hb, _ := json.Marshal(h)
	out := &lockedWriter{w: zw}
	if _, err := out.Write(appendString(nil, string(hb))); err != nil {
		zw.Close()
		return 0, err
	}
	var total, read atomic.Int64
	if pks == nil {
		bw := &blockWriter{out: out, total: &total}
		err = snapRange(ctx, r.Store(), vt, store.AllPartitions, h.Seq, &read, bw.add)
		if err == nil {
			err = bw.flush()
		}
	} else {
		err = run.Parallel(ctx, workers, pks, func(ctx context.Context, pk string) error {
			bw := &blockWriter{out: out, total: &total}
			if err := snapRange(ctx, r.Store(), vt, store.InPartition(pk), h.Seq, &read, bw.add); err != nil {
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
		return 0, fmt.Errorf("snapshot %s: %w", h.Table, err)
	}
	trailer := binary.AppendUvarint([]byte{0}, uint64(total.Load()))
	if _, err := out.Write(trailer); err != nil {
		zw.Close()
		return 0, err
	}
	if err := zw.Close(); err != nil {
		return 0, fmt.Errorf("snapshot %s: %w", h.Table, err)
	}
	return total.Load(), nil
}

// partitions returns the partition keys of table, listed by the store from
// the table itself, in key order.
func (r *Snapshots) partitions(ctx context.Context, table string) ([]string, error) {
	pks := []string{}
	err := r.Store().Partitions(ctx, table, func(pk string) error {
		if n := len(pks); n > 0 && store.CompareKeys(pks[n-1], pk) >= 0 {
			return fmt.Errorf("the store listed partition %q after %q", pk, pks[n-1])
		}
		pks = append(pks, pk)
		return nil
	})
	return pks, err
}

// keyOrder checks that one scan of a store returns only rows of the
// partition asked for, in key order.
type keyOrder struct {
	part store.Partition
	prev *store.Entity
}

func (o *keyOrder) check(e store.Entity) error {
	switch {
	case !o.part.All && e.PK != o.part.PK:
		return fmt.Errorf("a read of partition %q returned a row of partition %q", o.part.PK, e.PK)
	case o.prev != nil && (store.CompareKeys(o.prev.PK, e.PK) > 0 || o.prev.PK == e.PK && store.CompareKeys(o.prev.RK, e.RK) >= 0):
		return fmt.Errorf("the store returned %q/%q after %q/%q", e.PK, e.RK, o.prev.PK, o.prev.RK)
	}
	o.prev = &e
	return nil
}

// snapRange emits the rows of one partition, or of the table, as they stood
// at seq, and adds to kept the rows read that it emitted. It fails if the
// store returns a row outside the partition or out of key order.
func snapRange(ctx context.Context, st store.Store, table string, part store.Partition, seq uint64, kept *atomic.Int64, emit func(store.Entity) error) error {
	type key struct{ pk, rk string }
	filter := replay.SeqAtMost(seq)
	tips := make(map[key]int64) // the version of each tip written
	order := keyOrder{part: part}
	newest := make(map[string]store.Entity) // the newest row at or before seq of each partition
	seen := func(e store.Entity) {
		if n, ok := newest[e.PK]; !ok || n.Props[rows.ColSeq].Int < e.Props[rows.ColSeq].Int {
			newest[e.PK] = e
		}
	}
	from, to := rows.TipRange()
	err := store.All(ctx, st, table, part.Query(store.Query{From: from, To: to, Filter: filter}), func(e store.Entity) error {
		if err := order.check(e); err != nil {
			return err
		}
		seen(e)
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
	order = keyOrder{part: part}
	q := part.Query(store.Query{From: rows.OldPrefix, To: "old;", Filter: filter})
	err = store.All(ctx, st, table, q, func(e store.Entity) error {
		if err := order.check(e); err != nil {
			return err
		}
		seen(e)
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
	if err != nil {
		return err
	}
	// The erase markers (SPEC §10) written at or before seq: a copy says
	// "erased" where the original does, as a rebuild's does (issue 36,
	// item 7: snapshots dropped them).
	order = keyOrder{part: part}
	from, to = rows.ErasedRange()
	err = store.All(ctx, st, table, part.Query(store.Query{From: from, To: to, Filter: filter}), func(e store.Entity) error {
		if err := order.check(e); err != nil {
			return err
		}
		if !rows.IsErasedKey(e.RK) {
			return nil
		}
		seen(e)
		kept.Add(1)
		return emit(e)
	})
	if err != nil {
		return err
	}
	// The fences, read after the rows: a prune that removed rows the scans
	// missed has moved its horizon by then.
	return replay.FenceRows(ctx, st, table, part, func(e store.Entity) error {
		f, ok := fenceAt(e, newest[e.PK], seq)
		if !ok {
			return nil
		}
		kept.Add(1)
		return emit(f)
	})
}

// fenceAt is the fence row a snapshot at seq holds for a partition whose
// stored fence is stored and whose newest row at or before seq is newest:
// the stored fence when it is not newer than seq, else the sequence,
// command and time of newest. Either way it keeps the partition's prune
// horizon (SPEC §4) as stored: the rows were read after the prune, so a
// copy lacks what the original lacks and must refuse where it refuses. ok
// is false when there is nothing to carry.
func fenceAt(stored, newest store.Entity, seq uint64) (store.Entity, bool) {
	if s, ok := stored.Props[rows.ColSeq]; ok && s.Type == edm.TypeInt64 && uint64(s.Int) <= seq {
		return stored, true
	}
	h := rows.HorizonOf(stored.Props)
	if newest.Props == nil && h.Seq == 0 {
		return store.Entity{}, false
	}
	props := edm.Entity{}
	if newest.Props != nil {
		for _, c := range []string{rows.ColSeq, rows.ColCmd, rows.ColAt} {
			props[c] = newest.Props[c]
		}
	} else {
		// No row at or before seq, only a horizon: the fence says nothing
		// was applied after the snapshot's sequence.
		props[rows.ColSeq] = edm.Int64(int64(seq))
		props[rows.ColCmd] = edm.String(h.Cmd)
		props[rows.ColAt] = stored.Props[rows.ColAt]
	}
	if es, ok := stored.Props[rows.ColEraseSeq]; ok && es.Type == edm.TypeInt64 && uint64(es.Int) <= seq {
		props[rows.ColEraseSeq] = es
	}
	h.Put(props)
	return store.Entity{PK: stored.PK, RK: rows.FenceKey, Props: props}, true
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

// LoadConfig configures Load.
type LoadConfig struct {
	// Into is the table written; it must be empty or not exist. Required.
	Into string
	// Resume allows a non-empty Into, to finish a load that stopped: rows
	// are then upserted rather than inserted.
	Resume bool
	// Workers is the number of transactions run at once. If zero, the
	// Source's Workers.
	Workers int
	// SkipErasureCheck loads without a journal: the rows of keys erased
	// after the snapshot's sequence, which Load drops when it can read the
	// erases from the journal, are then loaded back. Without it, Load
	// without a journal fails with ErrErasureUnchecked.
	SkipErasureCheck bool
}

// LoadStats says what a load wrote.
type LoadStats struct {
	Header Header
	// Entities counts the rows written: for a plain snapshot, the
	// history's and the table's rows derived from its tips.
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
func (r *Snapshots) Load(ctx context.Context, in io.Reader, cfg LoadConfig) (LoadStats, error) {
	start := time.Now()
	var stats LoadStats
	if cfg.Into == "" {
		return stats, errors.New("load: no destination table")
	}
	zr, d, err := openStream(in)
	if err != nil {
		return stats, fmt.Errorf("load: %w", err)
	}
	defer zr.Close()
	if stats.Header, err = d.header(); err != nil {
		return stats, fmt.Errorf("load: %w", err)
	}
	l, err := r.newLoader(ctx, cfg, stats.Header)
	if err != nil {
		return stats, fmt.Errorf("load: %w", err)
	}
	readErr := l.readBlocks(d)
	err = run.Wait(ctx, l.g)
	stats.Entities, stats.Transactions, stats.Erased, stats.Elapsed = l.entities.Load(), l.nTx.Load(), l.erasedRows, time.Since(start)
	if err != nil {
		return stats, fmt.Errorf("load into %s: %w", cfg.Into, err)
	}
	if readErr != nil {
		return stats, fmt.Errorf("load into %s: %w", cfg.Into, readErr)
	}
	return stats, nil
}

// openStream checks a snapshot's magic and opens its zstd stream.
func openStream(in io.Reader) (*zstd.Decoder, *snapReader, error) {
	magic := make([]byte, len(snapshotMagic))
	if _, err := io.ReadFull(in, magic); err != nil || string(magic) != snapshotMagic {
		return nil, nil, fmt.Errorf("%w: not a tablejournal snapshot", ErrBadSnapshot)
	}
	zr, err := zstd.NewReader(in)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %v", ErrBadSnapshot, err)
	}
	return zr, &snapReader{r: bufio.NewReaderSize(zr, 1<<16)}, nil
}

// loader writes the blocks of one snapshot into a table, in transactions
// run on a bounded group.
type loader struct {
	st         store.Store
	into       string // the table of the versioned layout's rows
	plain      string // for a plain snapshot, the table of the history's tips
	kind       store.OpKind
	erased     *history.ErasedKeys
	old        *format1 // for a format-1 snapshot
	g          *errgroup.Group
	gctx       context.Context
	entities   atomic.Int64
	nTx        atomic.Int64
	erasedRows int64
}

// newLoader checks the destination, creates it and reads the erases after
// the snapshot's sequence.
func (r *Snapshots) newLoader(ctx context.Context, cfg LoadConfig, h Header) (*loader, error) {
	if r.Journal() == nil && !cfg.SkipErasureCheck {
		return nil, fmt.Errorf("%w: no journal to read the erasures after sequence %d from; a key erased since would be loaded back", ErrErasureUnchecked, h.Seq)
	}
	erased, err := history.New(r.Source).ErasedAfter(ctx, h.Table, h.Seq)
	if err != nil {
		return nil, err
	}
	l := &loader{st: r.Store(), into: cfg.Into, kind: store.Insert, erased: erased}
	tables := []string{cfg.Into}
	if h.Layout == wire.LayoutPlain {
		// The snapshot holds the history; the table is its tips, written
		// beside it (SPEC §4, the plain layout): the copy reads as plain
		// (replay.Source.Layout: a history table and no tip row).
		if l.into, err = wire.HistoryTable(cfg.Into); err != nil {
			return nil, err
		}
		l.plain = cfg.Into
		tables = append(tables, l.into)
	}
	for _, t := range tables {
		if !cfg.Resume {
			if err := replay.CheckEmpty(ctx, r.Store(), t); err != nil {
				return nil, err
			}
		}
		if err := r.Store().CreateTable(ctx, t); err != nil && !errors.Is(err, store.ErrTableExists) {
			return nil, fmt.Errorf("create %s: %w", t, err)
		}
	}
	if cfg.Resume {
		l.kind = store.Upsert
	}
	if h.Format == 1 {
		l.old = newFormat1()
	}
	workers := cfg.Workers
	if workers <= 0 {
		workers = r.Config().Workers
	}
	l.g, l.gctx = errgroup.WithContext(ctx)
	l.g.SetLimit(max(1, workers))
	return l, nil
}

// send runs one transaction on the group, once fewer than workers run.
func (l *loader) send(table, pk string, ops []store.Op) error {
	if l.gctx.Err() != nil {
		return context.Cause(l.gctx)
	}
	l.g.Go(func() error {
		if err := transact(l.gctx, l.st, table, pk, ops); err != nil {
			return err
		}
		l.entities.Add(int64(len(ops)))
		l.nTx.Add(1)
		return nil
	})
	return nil
}

// readBlocks reads the blocks up to the trailer and sends their rows, and
// checks the trailer's count.
func (l *loader) readBlocks(d *snapReader) error {
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
		if err := l.block(pk, es); err != nil {
			return err
		}
	}
}

// block sends the rows of one block kept (not intermediate versions of
// format 1, not erased), in transactions within a transaction's bytes.
func (l *loader) block(pk string, es []store.Entity) error {
	var ops, plain []store.Op
	bytes := 0
	for _, e := range es {
		if l.old != nil {
			var keep bool
			if e, keep = l.old.move(e); !keep {
				continue
			}
		}
		if l.erased.Drops(e) {
			l.erasedRows++
			continue
		}
		sz := edm.EntitySize(e.PK, e.RK, e.Props) * 4 / 3
		if len(ops) > 0 && bytes+sz > replay.TxBudget {
			if err := l.send(l.into, pk, ops); err != nil {
				return err
			}
			ops, bytes = nil, 0
		}
		ops = append(ops, store.Op{Kind: l.kind, RK: e.RK, Props: e.Props})
		bytes += sz
		if l.plain != "" && strings.HasPrefix(e.RK, rows.TipPrefix) {
			tip, err := rows.DecodeRow(e)
			if err != nil {
				return fmt.Errorf("%w: %v", ErrBadSnapshot, err)
			}
			plain = append(plain, store.Op{Kind: l.kind, RK: tip.RK, Props: rows.PlainProps(tip)})
		}
	}
	if len(ops) > 0 {
		if err := l.send(l.into, pk, ops); err != nil {
			return err
		}
	}
	return l.sendPlain(pk, plain)
}

// sendPlain writes a plain table's rows, the history's tips of one block,
// in transactions within a transaction's bytes: after the history's, as
// the projector writes (SPEC §4), though a load is not read until done.
func (l *loader) sendPlain(pk string, ops []store.Op) error {
	for len(ops) > 0 {
		n, bytes := 0, 0
		for n < len(ops) && n < 100 {
			sz := edm.EntitySize(pk, ops[n].RK, ops[n].Props) * 4 / 3
			if n > 0 && bytes+sz > replay.TxBudget {
				break
			}
			n, bytes = n+1, bytes+sz
		}
		if err := l.send(l.plain, pk, ops[:n]); err != nil {
			return err
		}
		ops = ops[n:]
	}
	return nil
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
