// Package run runs the parallel parts of replay: a bounded group of
// goroutines, and a progress callback on a ticker.
package run

import (
	"context"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"
)

// Parallel runs fn for every item on at most n goroutines and returns the
// first error, cancelling the others.
func Parallel[T any](ctx context.Context, n int, items []T, fn func(context.Context, T) error) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(max(1, n))
	for _, it := range items {
		if gctx.Err() != nil {
			break
		}
		g.Go(func() error { return fn(gctx, it) })
	}
	return Wait(ctx, g)
}

// Wait waits for g and returns the first error of its goroutines, or the
// cause of ctx (the context g was derived from) when ctx ended.
func Wait(ctx context.Context, g *errgroup.Group) error {
	err := g.Wait()
	if cause := context.Cause(ctx); cause != nil {
		return cause
	}
	return err
}

// Progress calls fn about ten times a second until the returned stop
// function is called, and once more then.
func Progress(fn func(done, total int64), done *atomic.Int64, total int64) (stop func()) {
	if fn == nil {
		return func() {}
	}
	quit := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-quit:
				return
			case <-t.C:
				fn(done.Load(), total)
			}
		}
	}()
	return func() {
		close(quit)
		<-finished
		fn(done.Load(), max(total, done.Load()))
	}
}
