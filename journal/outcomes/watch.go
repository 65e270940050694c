package outcomes

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/tablejournal/tablejournal/journal"
	"github.com/tablejournal/tablejournal/wire"
)

// How long a Watch waits on its subscription before it looks the
// outcome up in the stream again, the first time and at most. Core NATS
// delivers at most once: a client that reconnected, or a cluster route
// that learned of the subscription after the outcome passed, misses it;
// the look-up finds it stored.
const (
	recheckFirst = 500 * time.Millisecond
	recheckMax   = 4 * time.Second
)

// A Watch receives the outcomes of one command ID as the projector
// stores them, through a core NATS subscription on the ID's outcome
// subject (JetStream delivers a stored message to the subscribers of its
// subject too), and the projector's reply sent the moment an applied
// command's transaction commits, before its outcome is stored, through a
// second on wire.ReplySubject: no JetStream consumer, no request per
// outcome. Start it
// before publishing the command, so that no outcome of the publish can
// precede it; Stop it when done. It is not safe for concurrent use.
type Watch struct {
	o    *Reader
	id   string
	subs [2]*nats.Subscription
	ch   chan *nats.Msg
}

// Watch subscribes to the outcomes of command id. The subscription is in
// place at the server before anything this connection sends after Watch
// returns (the connection keeps the order of what it sends).
func (o *Reader) Watch(id string) (*Watch, error) {
	w := &Watch{o: o, id: id, ch: make(chan *nats.Msg, 16)}
	// The stored outcomes, and the projector's reply to a waiting client,
	// sent before the outcome is stored (SPEC §5): whichever comes first.
	for i, subject := range []string{wire.OutcomeSubject(id), wire.ReplySubject(id)} {
		sub, err := o.js.Conn().ChanSubscribe(subject, w.ch)
		if err != nil {
			w.Stop()
			return nil, fmt.Errorf("watch the outcomes of %s: %w", id, err)
		}
		w.subs[i] = sub
	}
	return w, nil
}

// Stop ends the subscriptions.
func (w *Watch) Stop() {
	for _, sub := range w.subs {
		if sub != nil {
			_ = sub.Unsubscribe()
		}
	}
}

// Await returns the outcome of the command published at journal sequence
// seq. With stored false the command was published after Watch and stored
// anew (not a Duplicate), so its outcome is published after the watch
// began: Await takes it from the subscription. With stored true the
// outcome may be stored already (a Duplicate publish, or a command
// published before Watch), and Await looks it up on the stream's leader
// while it listens. Either way it looks again after a pause that doubles
// from half a second to 4 s while none came, for an outcome the
// subscription missed (core NATS delivers at most once). A failed look-up
// (OUTCOMES not created yet, the server restarting) is not an error: the
// wait goes on until ctx ends, whose error then names the last failure.
func (w *Watch) Await(ctx context.Context, seq uint64, stored bool) (wire.Outcome, error) {
	type found struct {
		x   wire.Outcome
		ok  bool
		err error
	}
	looked := make(chan found, 1) // one look-up in flight at most
	pending := false
	lookup := func() {
		pending = true
		go func() {
			x, ok, err := w.o.stored(ctx, w.id, seq)
			looked <- found{x, ok, err}
		}()
	}
	if stored {
		lookup()
	}
	pause := recheckFirst
	timer := time.NewTimer(pause)
	defer timer.Stop()
	var lastErr error
	for {
		select {
		case m := <-w.ch:
			x, err := decodeOutcome(0, m.Data)
			if err != nil {
				return wire.Outcome{}, fmt.Errorf("await the outcome of %s seq %d: %w", w.id, seq, err)
			}
			if x.ID == w.id && x.Seq == seq {
				return x, nil
			}
		case f := <-looked:
			pending = false
			if f.ok {
				return f.x, nil
			}
			lastErr = f.err
		case <-timer.C:
			if !pending {
				lookup()
			}
			pause = min(2*pause, recheckMax)
			timer.Reset(pause)
		case <-ctx.Done():
			if lastErr != nil && ctx.Err() != nil {
				return wire.Outcome{}, fmt.Errorf("await the outcome of %s seq %d: %w (last look-up: %v)", w.id, seq, ctx.Err(), lastErr)
			}
			return wire.Outcome{}, fmt.Errorf("await the outcome of %s seq %d: %w", w.id, seq, ctx.Err())
		}
	}
}

// stored looks up the outcome of command id at journal sequence seq on
// the stream's leader: its latest outcome, and when that is of a later
// journal message (a duplicate publish), its history. ok is false when it
// has none yet, or OUTCOMES does not exist yet.
func (o *Reader) stored(ctx context.Context, id string, seq uint64) (x wire.Outcome, ok bool, err error) {
	x, err = o.Latest(ctx, id)
	switch {
	case errors.Is(err, journal.ErrNotFound) || errors.Is(err, jetstream.ErrStreamNotFound):
		return wire.Outcome{}, false, nil
	case err != nil:
		return wire.Outcome{}, false, err
	case x.Seq == seq:
		return x, x.ID == id, nil
	case x.Seq < seq:
		return wire.Outcome{}, false, nil
	}
	all, err := o.History(ctx, id)
	if err != nil {
		return wire.Outcome{}, false, err
	}
	for _, x := range all {
		if x.Seq == seq && x.ID == id {
			return x, true, nil
		}
	}
	return wire.Outcome{}, false, nil
}
