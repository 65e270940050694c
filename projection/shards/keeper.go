package shards

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// keeper holds one lease: it renews it, runs the shard's worker while the
// lease is safely held, and ends by releasing or losing it.
type keeper struct {
	g     *Group
	shard int

	wmu    sync.Mutex // serializes writes of the key
	lease  Lease
	rev    uint64
	lastOK time.Time // send time of the last renewal known to be stored

	mu       sync.Mutex
	working  bool   // a worker runs
	fenced   bool   // the worker was stopped because renewals failed
	released string // why the lease is being released, once it is
	lostWhy  string // why the lease is lost, once it is

	wake chan struct{}
}

func (k *keeper) poke() {
	select {
	case k.wake <- struct{}{}:
	default:
	}
}

// release asks the keeper to stop the worker, wait for it, and delete the
// lease. It does not block.
func (k *keeper) release(why string) {
	k.mu.Lock()
	if k.released == "" {
		k.released = why
	}
	k.mu.Unlock()
	k.poke()
}

// lost tells the keeper the lease is no longer this instance's. It does
// not block.
func (k *keeper) lost(why string) {
	k.markLost(why)
	k.poke()
}

func (k *keeper) markLost(why string) {
	k.mu.Lock()
	if k.lostWhy == "" {
		k.lostWhy = why
	}
	k.mu.Unlock()
}

func (k *keeper) releasing() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.released != "" || k.lostWhy != ""
}

func (k *keeper) active() bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.working && !k.fenced && k.released == "" && k.lostWhy == ""
}

func (k *keeper) run() {
	g := k.g
	defer g.keepers.Done()
	defer g.dropped(k)
	log := g.log.With(LogShard, k.shard)

	var (
		cancel context.CancelCauseFunc
		done   chan error
	)
	start := func() {
		var ctx context.Context
		ctx, cancel = context.WithCancelCause(g.runCtx)
		done = make(chan error, 1)
		k.mu.Lock()
		k.working, k.fenced = true, false
		k.mu.Unlock()
		go func() { done <- g.worker(ctx, k.shard) }()
	}
	start()
	tick := time.NewTicker(g.renewEvery)
	defer tick.Stop()
	for {
		k.mu.Lock()
		released, lostWhy, fenced := k.released, k.lostWhy, k.fenced
		k.mu.Unlock()
		switch {
		case lostWhy != "" && cancel != nil:
			cancel(ErrNotOwner) // the worker abandons its batch; done says when
		case released != "" && cancel != nil:
			cancel(nil) // the worker finishes its batch; done says when
		}
		if done == nil {
			switch {
			case lostWhy != "":
				log.Info("shard lost", "reason", lostWhy, "owned", g.count())
				return
			case released != "":
				k.delete(context.WithoutCancel(g.runCtx))
				log.Info("shard released", "reason", released, "owned", g.count())
				return
			}
		}
		var fence <-chan time.Time
		if done != nil && !fenced {
			k.wmu.Lock()
			due := k.lastOK.Add(g.fenceAfter)
			k.wmu.Unlock()
			fence = time.After(time.Until(due))
		}
		select {
		case <-tick.C:
			k.renewLogged(log)
		case <-k.wake:
			if !k.releasing() {
				k.renewLogged(log)
			}
		case <-fence:
			k.mu.Lock()
			k.fenced = true
			k.mu.Unlock()
			cancel(ErrNotOwner)
			log.Warn("shard fenced: its lease was not renewed in time; stopped applying it until renewed", "after", g.fenceAfter)
		case err := <-done:
			cancel(nil)
			cancel, done = nil, nil
			k.workerEnded(err, log)
		}
		if done == nil && k.renewedAfterFence() {
			log.Info("shard resumed: lease renewed")
			start()
		}
	}
}

// workerEnded handles the end of the shard's worker with err: the lease
// was not held, or the worker failed (the group fails) unless it was
// stopped.
func (k *keeper) workerEnded(err error, log interface{ Warn(string, ...any) }) {
	g := k.g
	k.mu.Lock()
	k.working = false
	stopped := k.fenced || k.released != "" || k.lostWhy != "" || g.runCtx.Err() != nil
	k.mu.Unlock()
	switch {
	case errors.Is(err, ErrNotOwner):
		k.markLost("lease not held")
	case !stopped:
		if err == nil {
			err = errors.New("worker returned")
		}
		g.fail(fmt.Errorf("shard %d: %w", k.shard, err))
	case err != nil:
		log.Warn("shard worker ended with an error after it was stopped", "err", err)
	}
}

// renewedAfterFence reports whether a fenced lease was renewed again (and
// the shard is neither released nor lost): its worker starts again.
func (k *keeper) renewedAfterFence() bool {
	g := k.g
	k.mu.Lock()
	resume := k.fenced && k.released == "" && k.lostWhy == "" && g.runCtx.Err() == nil
	k.mu.Unlock()
	if !resume {
		return false
	}
	k.wmu.Lock()
	defer k.wmu.Unlock()
	return time.Since(k.lastOK) < g.fenceAfter
}

func (k *keeper) renewLogged(log interface{ Debug(string, ...any) }) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(k.g.runCtx), k.g.renewEvery)
	defer cancel()
	if err := k.renew(ctx); err != nil && !errors.Is(err, ErrNotOwner) {
		log.Debug("renewing a lease failed", "err", err)
	}
}

// confirm renews the lease now and returns its epoch.
func (k *keeper) confirm(ctx context.Context) (uint64, error) {
	ctx, cancel := context.WithTimeout(ctx, k.g.renewEvery)
	defer cancel()
	if err := k.renew(ctx); err != nil {
		return 0, fmt.Errorf("shard %d: confirm lease: %w", k.shard, err)
	}
	k.wmu.Lock()
	defer k.wmu.Unlock()
	return k.lease.Epoch, nil
}

// renew rewrites the lease with a fresh TTL if its revision is still the
// one this keeper wrote. On a mismatch it reads the key: its own write that
// landed unacknowledged is adopted; anything else means the lease is lost.
func (k *keeper) renew(ctx context.Context) error {
	k.wmu.Lock()
	defer k.wmu.Unlock()
	k.mu.Lock()
	lostWhy := k.lostWhy
	k.mu.Unlock()
	if lostWhy != "" {
		return ErrNotOwner
	}
	key := ShardKey(k.shard)
	var err error
	for attempt := 0; attempt < 2; attempt++ {
		sent := time.Now()
		var rev uint64
		rev, err = k.g.write(ctx, key, k.lease, k.rev, true)
		if err == nil {
			k.rev, k.lastOK = rev, sent
			return nil
		}
		if !errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
			return err
		}
		e, gerr := k.g.kv.Get(ctx, key)
		switch {
		case errors.Is(gerr, jetstream.ErrKeyNotFound) || errors.Is(gerr, jetstream.ErrKeyDeleted):
			k.markLost("lease expired")
			return ErrNotOwner
		case gerr != nil:
			return gerr
		}
		var cur Lease
		_ = json.Unmarshal(e.Value(), &cur)
		mine := cur.Owner == k.lease.Owner && cur.Token == k.lease.Token
		switch {
		case mine && e.Revision() > k.rev:
			k.rev = e.Revision() // a write of ours whose ack was lost
		case mine:
			return err // a replica behind: try again later
		default:
			k.markLost("owned by " + cur.Owner)
			return ErrNotOwner
		}
	}
	return err
}

// delete releases the lease (see giveBack).
func (k *keeper) delete(ctx context.Context) {
	k.wmu.Lock()
	defer k.wmu.Unlock()
	k.g.giveBack(ctx, k.shard, k.rev)
}

func (g *Group) count() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.countLocked()
}
