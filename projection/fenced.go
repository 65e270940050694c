package projection

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/tablejournal/tablejournal/store"
	"github.com/tablejournal/tablejournal/wire"
)

// fenced is one partition as the driver knows it: its fence and the rows
// read under it (the view), kept in the Applier's row cache across calls
// while the fence holds (rules 4–6 of docs/ARCHITECTURE.md, "Exactly
// once"). It is the one place the fence and the cache are read and
// changed: every kind of transaction decides on it and commits through it.
type fenced struct {
	a    *Applier
	part partKey
	// tl is the partition's table's layout: where its versioned rows and
	// fence are (tl.rows), and what else a commit writes.
	tl tableLayout
	v  view
}

// rowsPart is the partition in the table of the versioned rows and the
// fence (the table itself, or a plain table's history).
func (s *fenced) rowsPart() partKey { return partKey{s.tl.rows, s.part.pk} }

// view is the driver's view of one partition: the fence it was taken at
// and the rows read under it.
type view struct {
	valid bool
	f     fence
	epoch uint64
	rows  map[string]*rowState
	// fresh: rows were read from the store since the fence was last
	// checked, so a decision that writes nothing must check it again.
	fresh bool
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

// begin makes sure the view holds the partition's fence with its etag: from the
// cache, else read from the table. (After a commit the view holds the
// fence it wrote, with the etag the store reported.)
func (s *fenced) begin(ctx context.Context) error {
	if s.v.valid || s.fromCache() {
		return nil
	}
	f, err := s.a.readFence(ctx, s.tl.rows, s.part.pk)
	if err != nil {
		return err
	}
	s.adopt(ctx, f)
	return nil
}

// fromCache starts a view at the partition's cached fence, if it is cached.
func (s *fenced) fromCache() bool {
	f, epoch, ok := s.a.cache.fence(s.part)
	if ok {
		s.v = view{valid: true, f: f, epoch: epoch, rows: make(map[string]*rowState)}
	}
	return ok
}

// open makes the view hold the partition's fence and the rows rks, and
// reports whether a row read is newer than the fence (loadRows). A
// partition neither cached nor in a view has its fence and its rows read
// at once: a fence that does not exist proves that nothing was ever
// committed to the partition before it was read (every transaction writes
// the fence, and nothing deletes it), so rows read meanwhile, before or
// after it, are the table's state at the fence; a row found then is newer
// than the fence, as loadRows reports. When the fence exists, the rows
// read with it may predate it and are read again under it: a partition
// the projector never wrote costs one round trip of reads instead of two,
// one it wrote and no longer caches the reads of its rows twice.
func (s *fenced) open(ctx context.Context, rks []string) (behind bool, err error) {
	if s.v.valid || len(rks) == 0 || s.fromCache() {
		if err := s.begin(ctx); err != nil {
			return false, err
		}
		return s.loadRows(ctx, rks)
	}
	var (
		loaded  map[string]*rowState
		loadErr error
		done    = make(chan struct{})
	)
	go func() {
		defer close(done)
		loaded, loadErr = s.load(ctx, rks)
	}()
	f, err := s.a.readFence(ctx, s.tl.rows, s.part.pk)
	<-done
	if err != nil {
		return false, err
	}
	s.adopt(ctx, f)
	if f.Exists || loadErr != nil {
		return s.loadRows(ctx, rks)
	}
	for rk, st := range loaded {
		s.v.rows[rk] = st
		behind = behind || st.Latest != nil
	}
	s.v.fresh = true
	return behind, nil
}

// adopt starts a new view at fence f, read from the table; cached rows of
// the partition are no longer valid.
func (s *fenced) adopt(ctx context.Context, f fence) {
	if s.v.f.Exists && (!f.Exists || f.Seq < s.v.f.Seq) {
		s.a.disagree(s.part.table, s.part.pk, "the partition's fence went back: the store lost confirmed writes",
			fmt.Errorf("the projector wrote %v, the table holds %v", s.v.f, f))
		s.a.behind(ctx, wire.BehindPartition{Table: s.part.table, PK: s.part.pk, TableSeq: f.Seq, AppliedSeq: s.v.f.Seq, Cmd: s.v.f.Cmd})
	}
	s.v = view{valid: true, f: f, epoch: s.a.epochs.Add(1), rows: make(map[string]*rowState)}
	s.a.cache.setFence(s.part, f, s.v.epoch)
}

// forget drops the view and the cached rows of a partition: the store wins.
func (s *fenced) forget() {
	s.a.cache.dropPartition(s.part)
	s.a.mirrors.dropPartition(s.part)
	// Keep s.v.f: adopt compares the fence read next with it.
	s.v.rows = make(map[string]*rowState)
	s.v.valid, s.v.f.ETag = false, ""
}

// check reads the fence again: true if it has not moved since the view was
// taken (the rows read meanwhile are the table's state at this moment);
// else the view is replaced by the fence read and false returned.
func (s *fenced) check(ctx context.Context) (bool, error) {
	f, err := s.a.readFence(ctx, s.tl.rows, s.part.pk)
	if err != nil {
		return false, err
	}
	if f.Exists == s.v.f.Exists && f.ETag == s.v.f.ETag {
		s.confirm()
		return true, nil
	}
	s.a.stats.FenceConflicts.Add(1)
	s.a.cache.dropPartition(s.part)
	s.adopt(ctx, f)
	return false, nil
}

// loadRows adds the rows rks to the view: from the cache when cached under
// the view's epoch, else read from the table.
//
// It reports whether a row read is newer than the view's fence (its _seq
// is past the fence's, or there is no fence): the view is behind the
// table, which every transaction moves fence and rows together.
func (s *fenced) loadRows(ctx context.Context, rks []string) (behind bool, err error) {
	var need []string
	for _, rk := range rks {
		if _, ok := s.v.rows[rk]; ok {
			continue
		}
		if st, ok := s.a.cache.get(rowKey{s.part.table, s.part.pk, rk}, s.v.epoch); ok {
			s.v.rows[rk] = st
			continue
		}
		need = append(need, rk)
	}
	if len(need) == 0 {
		return false, nil
	}
	loaded, err := s.load(ctx, need)
	if err != nil {
		return false, err
	}
	for rk, st := range loaded {
		s.v.rows[rk] = st
		if l := st.Latest; l != nil && (!s.v.f.Exists || l.Seq > s.v.f.Seq) {
			behind = true
		}
	}
	s.v.fresh = true
	return behind, nil
}

// load reads the state of rows rks from the store, and beside it what the
// layout prefetches of them.
func (s *fenced) load(ctx context.Context, rks []string) (map[string]*rowState, error) {
	done := make(chan struct{})
	go func() {
		defer close(done)
		s.tl.layout.prefetch(ctx, s.a, s.part, rks)
	}()
	loaded, err := s.a.load(ctx, s.tl, s.part.pk, rks)
	<-done
	return loaded, err
}

// confirm records that the view's fence held up to now: the rows read
// under it are the table's state at one moment, so they may be cached
// (rows known not to exist too). Rows read but never confirmed are not
// cached: read just after another writer committed, they could mix with
// cached rows from before it.
func (s *fenced) confirm() {
	if !s.v.fresh {
		return
	}
	for rk, st := range s.v.rows {
		s.a.cache.put(rowKey{s.part.table, s.part.pk, rk}, *st, s.v.epoch)
	}
	s.v.fresh = false
}

// commitRows writes the batch in one transaction with the fence, retrying
// transient errors under the one retry policy. A batch that writes nothing
// commits nothing. On success the view's fence is the one written.
func (s *fenced) commitRows(ctx context.Context, b *txn) error {
	rowOps := s.tl.layout.ops(b)
	if len(rowOps) == 0 {
		return nil
	}
	sort.Slice(rowOps, func(i, j int) bool { return rowOps[i].RK < rowOps[j].RK })
	next := b.Last
	if s.v.f.Exists && s.v.f.Seq > next.Seq {
		next = fence{Exists: true, Seq: s.v.f.Seq, Cmd: s.v.f.Cmd, At: s.v.f.At}
	}
	next.EraseSeq = s.v.f.EraseSeq
	next.Horizon = s.v.f.Horizon // a prune's horizon stays (prune.go)
	// The fence goes first: a stale view fails on it, whatever else differs.
	ops := append([]store.Op{s.v.f.Op(next)}, rowOps...)
	if err := s.write(ctx, b, next, ops); err != nil {
		return err
	}
	s.a.cache.setFence(s.part, s.v.f, s.v.epoch)
	return nil
}

// write commits ops, the write of the fence next first: on success the
// view's fence is next, with the etag the store reported.
func (s *fenced) write(ctx context.Context, b *txn, next fence, ops []store.Op) error {
	etag, err := s.a.transact(ctx, s.rowsPart(), ops)
	if err != nil {
		return s.commitFailed(ctx, b, ops, err)
	}
	b.Wrote = true
	next.ETag = etag
	s.v.f = next
	return nil
}

// commitFailed says why a transaction failed: a conflictError when the
// table was not as the view said (the fence moved, or a row op failed
// while the fence held), an ApplyError when a row op failed otherwise,
// else the store's error.
func (s *fenced) commitFailed(ctx context.Context, b *txn, ops []store.Op, err error) error {
	var te *store.TxError
	rowOp := errors.As(err, &te) && te.Index > 0 && te.Index < len(ops)
	if !errors.Is(err, store.ErrExists) && !errors.Is(err, store.ErrNotFound) && !errors.Is(err, store.ErrPrecondition) {
		if rowOp {
			return (&conflictError{op: b.Source(ops[te.Index].RK), err: err}).applyError(s.part.table, s.part.pk)
		}
		return fmt.Errorf("transaction on %s/%q: %w", s.part.table, s.part.pk, err)
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
		f, ferr := s.a.readFence(ctx, s.tl.rows, s.part.pk)
		if ferr != nil {
			return ferr
		}
		held := f.Exists == s.v.f.Exists && (!f.Exists || f.ETag == s.v.f.ETag)
		ce.fence = !held
	}
	return ce
}

// took takes a committed transaction's rows into the view, and into the
// cache once the view's rows are confirmed.
func (s *fenced) took(b *txn) {
	if b.Wrote {
		s.confirm()
	}
	for rk, st := range b.Cur {
		s.v.rows[rk] = st
		if !s.v.fresh {
			s.a.cache.put(rowKey{s.part.table, s.part.pk, rk}, *st, s.v.epoch)
		}
	}
}
