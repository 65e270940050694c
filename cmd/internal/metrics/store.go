package metrics

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tablejournal/tablejournal/store"
)

// Store wraps s so that its round trips are measured
// (tablejournal_store_request_seconds by op and result) and its answers
// feed readiness. Both backends are measured alike, above the store seam.
func (m *Metrics) Store(s store.Store) store.Store {
	return &measured{Store: s, m: m}
}

type measured struct {
	store.Store
	m *Metrics
}

var _ store.Store = (*measured)(nil)

func (s *measured) Get(ctx context.Context, table, pk, rk string) (store.Entity, error) {
	start := s.m.now()
	s.m.st.ask(start)
	e, err := s.Store.Get(ctx, table, pk, rk)
	s.m.request(OpGet, start, err)
	return e, err
}

func (s *measured) Query(ctx context.Context, table string, q store.Query) (store.Page, error) {
	start := s.m.now()
	s.m.st.ask(start)
	p, err := s.Store.Query(ctx, table, q)
	s.m.request(OpQuery, start, err)
	return p, err
}

// Transact is measured as a transaction; it passes on the etags s reports.
func (s *measured) Transact(ctx context.Context, table, pk string, ops []store.Op) ([]string, error) {
	start := s.m.now()
	s.m.st.ask(start)
	etags, err := s.Store.Transact(ctx, table, pk, ops)
	s.m.request(OpTransact, start, err)
	return etags, err
}

func (s *measured) ListTables(ctx context.Context) ([]string, error) {
	s.m.st.ask(s.m.now())
	ts, err := s.Store.ListTables(ctx)
	s.m.st.answer(s.m.now(), "", err)
	return ts, err
}

func (s *measured) CreateTable(ctx context.Context, table string) error {
	s.m.st.ask(s.m.now())
	err := s.Store.CreateTable(ctx, table)
	s.m.st.answer(s.m.now(), "", err)
	return err
}

// request records one round trip.
func (m *Metrics) request(op string, start time.Time, err error) {
	now := m.now()
	r := classify(op, err)
	m.storeSeconds[[2]string{op, r}].Observe(now.Sub(start).Seconds())
	m.st.answer(now, op, err)
}

// classify maps a store error to a result label. A read that finds no row
// or no table is an ordinary answer; a transaction whose condition failed
// is a conflict.
func classify(op string, err error) string {
	switch {
	case err == nil:
		return ResultOK
	case errors.Is(err, store.ErrBusy):
		return ResultBusy
	case op != OpTransact && (errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrTableNotFound)):
		return ResultOK
	case op == OpTransact && (errors.Is(err, store.ErrExists) || errors.Is(err, store.ErrNotFound) ||
		errors.Is(err, store.ErrPrecondition)):
		return ResultConflict
	}
	return ResultError
}

// answered reports whether err is an answer from the store (success or a
// refusal it made) rather than no answer: a network failure, a timeout, or
// busy (which may be either).
func answered(err error) bool {
	if err == nil {
		return true
	}
	for _, s := range []error{store.ErrNotFound, store.ErrExists, store.ErrPrecondition, store.ErrTableNotFound,
		store.ErrTableExists, store.ErrTooLarge, store.ErrInvalid} {
		if errors.Is(err, s) {
			return true
		}
	}
	return false
}

// storeState is what the store answered lately. Every round trip
// updates it, from many goroutines: the common path is two atomic
// operations; only busy answers take the lock.
type storeState struct {
	lastAnswer atomic.Int64 // unix nanoseconds of the last answer (see answered); 0 if none
	// askedSince is when the store was first asked since its last
	// answer (unix nanoseconds): a request in flight or failed without an
	// answer; 0 when every request since has been answered.
	askedSince atomic.Int64
	busySince  atomic.Int64 // unix nanoseconds of the first busy answer since another; 0 when not busy
	busy       atomic.Uint64

	mu         sync.Mutex
	lastBusy   string // the last busy error
	lastBusyOp string
}

// ask records that a request to the store starts at now.
func (s *storeState) ask(now time.Time) {
	if s.askedSince.Load() == 0 {
		s.askedSince.CompareAndSwap(0, now.UnixNano())
	}
}

func (s *storeState) answer(now time.Time, op string, err error) {
	if errors.Is(err, store.ErrBusy) {
		s.busy.Add(1)
		s.busySince.CompareAndSwap(0, now.UnixNano())
		s.mu.Lock()
		// Store errors carry no secret (the backends redact them).
		s.lastBusy, s.lastBusyOp = err.Error(), op
		s.mu.Unlock()
		return
	}
	if answered(err) {
		s.lastAnswer.Store(now.UnixNano())
		if s.askedSince.Load() != 0 {
			s.askedSince.Store(0)
		}
		if s.busySince.Load() != 0 {
			s.busySince.Store(0)
		}
	}
}

// StoreSnapshot is what the store answered lately.
type StoreSnapshot struct {
	LastAnswer time.Time // the last answer other than busy; zero if none yet
	// Waiting is how long the store has been asked without answering:
	// since the oldest request after LastAnswer that is in flight or
	// failed unanswered (busy, refused, timed out); zero when none.
	Waiting    time.Duration
	Busy       uint64    // busy answers, ever
	BusySince  time.Time // start of the current run of busy answers; zero when none
	LastBusy   string    // the last busy error and the operation it answered
	LastBusyOp string
}

func (s *storeState) snapshot(now time.Time) StoreSnapshot {
	unix := func(ns int64) time.Time {
		if ns == 0 {
			return time.Time{}
		}
		return time.Unix(0, ns)
	}
	snap := StoreSnapshot{LastAnswer: unix(s.lastAnswer.Load()), Busy: s.busy.Load(), BusySince: unix(s.busySince.Load())}
	if asked := unix(s.askedSince.Load()); !asked.IsZero() {
		// An answer to a request sent later may have come meanwhile.
		if snap.LastAnswer.After(asked) {
			asked = snap.LastAnswer
		}
		snap.Waiting = max(0, now.Sub(asked))
	}
	s.mu.Lock()
	snap.LastBusy, snap.LastBusyOp = s.lastBusy, s.lastBusyOp
	s.mu.Unlock()
	return snap
}

// ProbeStore keeps readiness honest while the projector is idle: every
// interval, if the store has not answered for that long, it lists the
// tables through s (the wrapped store, so that the answer is recorded),
// starting at once. It returns when ctx ends.
func (m *Metrics) ProbeStore(ctx context.Context, s store.Store, every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		if now := m.now(); now.Sub(m.st.snapshot(now).LastAnswer) >= every {
			pctx, cancel := context.WithTimeout(ctx, every)
			_, _ = s.ListTables(pctx)
			cancel()
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}
