package tablejournal

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/tablejournal/tablejournal/events/rules"
	"github.com/tablejournal/tablejournal/store"
	"github.com/tablejournal/tablejournal/wire"
)

// ChangeOp is the kind of a row change: the op of the change feed's
// events (wire.ChangeOp).
type ChangeOp = wire.ChangeOp

// Row change kinds, as the change feed spells them.
const (
	// Created: the row did not exist; Before is nil.
	Created = wire.ChangeCreate
	// Updated: the row existed and still does.
	Updated = wire.ChangeUpdate
	// Deleted: the row was deleted; After is nil and Version is the
	// tombstone's.
	Deleted = wire.ChangeDelete
	// Erased is the notice of an erase (docs/SPEC.md §10): the values are
	// gone from the journal and the tables, so a service erases its own
	// copies. Before and After are nil. The erase of one row names it in
	// RK, with Partition false; the erase of a whole partition has
	// Partition true and RK "". Tell them apart by Partition: an erase of
	// the row whose key is "" also has RK "".
	Erased = wire.ChangeErase
)

// Change is one applied row change of the change feed, with the row's
// properties before and after it, or the notice of an erase (Op Erased).
type Change struct {
	Table, PK, RK string
	Op            ChangeOp
	// Partition is set on the notice of the erase of the whole partition
	// PK (Op Erased; RK is then ""); false for every other change,
	// including the erase of the row whose key is "".
	Partition bool
	// Version is the row's version after the change (the tombstone's for
	// a delete; 0 for an erase notice).
	Version int64
	// Command, Seq and At are the command that made the change.
	Command string
	Seq     uint64
	At      time.Time
	// Before is nil for Created and Erased, After nil for Deleted and
	// Erased.
	Before, After Entity
}

// FollowOption configures Follow.
type FollowOption func(*followOptions)

type followOptions struct {
	pk      string
	onePK   bool
	from    uint64
	ackWait time.Duration
}

// defaultFollowAckWait is how long the server waits for a follower to
// checkpoint a change before it delivers it again: only a follower that
// lost its connection without dying leaves a change unacknowledged that
// long (a restarted one takes it back at once, see Follow).
const defaultFollowAckWait = 30 * time.Second

// FollowPartition follows one partition of the table instead of all.
func FollowPartition(pk string) FollowOption {
	return func(o *followOptions) { o.pk, o.onePK = pk, true }
}

// FollowAckWait sets how long the server waits for fn to take a change
// before it offers it again (default 30 s): the delay after which a
// change held by a follower that hangs, or whose connection broke while it
// lives on, is delivered again. A follower restarted after a crash does
// not wait for it (see Follow). It applies to a new checkpoint and changes
// an existing one's. Keep it above fn's longest run.
func FollowAckWait(d time.Duration) FollowOption { return func(o *followOptions) { o.ackWait = d } }

// FollowFrom starts a new checkpoint at the changes of the command at
// journal sequence seq (a Position's Seq): earlier changes are not
// delivered. Without it a new checkpoint starts at the oldest change kept.
// A checkpoint that exists resumes where it is, whatever FollowFrom says.
func FollowFrom(seq uint64) FollowOption { return func(o *followOptions) { o.from = seq } }

// Follow delivers the changes of table to fn, in order (the changes of a
// row in the order of its versions), each once, and waits for new ones
// until ctx ends (it then returns nil) or fn fails (it returns fn's error,
// and that change is delivered first when Follow runs again).
//
// name is a durable checkpoint (a JetStream durable consumer on the
// change feed): a change is checkpointed once fn returned nil for it, so
// Follow with the same name resumes after the last change fn took, in
// this process or another. Only one Follow should run per name at a time:
// Follow takes a change a previous run held unacknowledged (it crashed
// with fn running) back at once, resetting the checkpoint's deliveries to
// its last checkpointed change (on nats-server 2.14 or later; an older
// server delivers it again after FollowAckWait).
// A checkpoint follows one table (or, with FollowPartition, one partition)
// for good: its name with another fails with an error matching
// ErrInvalid, as does a table name that no table can have (rule
// table-name). ctx passed to fn carries the trace context of the command
// that made the change.
func (c *Client) Follow(ctx context.Context, name, table string, fn func(context.Context, Change) error, opts ...FollowOption) error {
	o := followOptions{ackWait: defaultFollowAckWait}
	for _, opt := range opts {
		opt(&o)
	}
	if o.ackWait <= 0 {
		return fmt.Errorf("tablejournal: follow %s: %w: FollowAckWait %s is not positive", name, ErrInvalid, o.ackWait)
	}
	if !store.ValidTableName(table) {
		// A name with '.', '*' or '>' would even follow other tables.
		return fmt.Errorf("tablejournal: follow %s: %w", name, &rules.ValidationError{Field: "table", Rule: rules.TableName,
			Detail: fmt.Sprintf("%q is not a table name: want ^[A-Za-z][A-Za-z0-9]{2,62}$", table)})
	}
	filter := wire.ChangeFilter(table)
	if o.onePK {
		filter = wire.ChangeSubject(table, o.pk)
	}
	cons, err := c.js.Consumer(ctx, wire.ChangesStream, name)
	switch {
	case errors.Is(err, jetstream.ErrConsumerNotFound):
		cfg := jetstream.ConsumerConfig{
			Durable: name, FilterSubject: filter, AckPolicy: jetstream.AckExplicitPolicy,
			MaxAckPending: 1, AckWait: o.ackWait, DeliverPolicy: jetstream.DeliverAllPolicy,
			Description: "tablejournal client checkpoint of " + filter,
		}
		if o.from > 0 {
			j, err := c.openJournal(ctx)
			if err != nil {
				return err
			}
			m, err := j.Get(ctx, o.from)
			if err != nil {
				return fmt.Errorf("tablejournal: follow from seq %d: %w", o.from, err)
			}
			// A change event is stored after its command: start at the
			// command's journal time, less a margin for the clocks of
			// two stream leaders, and skip the older changes by Seq.
			start := m.Time.Add(-time.Minute)
			cfg.DeliverPolicy, cfg.OptStartTime = jetstream.DeliverByStartTimePolicy, &start
		}
		cons, err = c.js.CreateConsumer(ctx, wire.ChangesStream, cfg)
		if err != nil {
			return fmt.Errorf("tablejournal: follow %s: %w", name, err)
		}
	case err != nil:
		return fmt.Errorf("tablejournal: follow %s: %w", name, err)
	default:
		info := cons.CachedInfo()
		cfg := info.Config
		switch f := cfg.FilterSubject; {
		case f == filter, f == "" && len(cfg.FilterSubjects) == 2 && cfg.FilterSubjects[0] == filter:
		case sameTableSpelledOtherwise(f, filter):
			// A checkpoint made before the change feed's subjects carried
			// the table's lower-case token: it follows both, keeping its
			// place among the events stored under its own spelling.
			cfg.FilterSubject, cfg.FilterSubjects = "", []string{filter, f}
			if cons, err = c.js.UpdateConsumer(ctx, wire.ChangesStream, cfg); err != nil {
				return fmt.Errorf("tablejournal: follow %s: move the checkpoint to %s: %w", name, filter, err)
			}
			info = cons.CachedInfo()
		default:
			return &checkpointMismatch{name: name, has: followed(f), want: followed(filter)}
		}
		if cons, err = c.resume(ctx, name, info, o.ackWait); err != nil {
			return err
		}
	}
	return c.deliver(ctx, name, cons, o.from, fn)
}

// deliver passes the changes of cons to fn, those of commands at journal
// sequence from or later, and checkpoints each that fn took; it returns
// when ctx ends, or with fn's error or the feed's.
func (c *Client) deliver(ctx context.Context, name string, cons jetstream.Consumer, from uint64, fn func(context.Context, Change) error) error {
	for {
		msg, err := cons.Next(jetstream.FetchContext(ctx))
		if ctx.Err() != nil {
			return nil
		}
		if errors.Is(err, nats.ErrTimeout) || errors.Is(err, jetstream.ErrNoMessages) {
			continue // the pull request expired before ctx's deadline
		}
		if err != nil {
			return fmt.Errorf("tablejournal: follow %s: %w", name, err)
		}
		ch, err := decodeChange(msg.Data())
		if err != nil {
			_ = msg.Term() // never decodes: redelivering it would stop the feed for good
			return fmt.Errorf("tablejournal: follow %s: %w", name, err)
		}
		if ch.Seq >= from {
			hctx := c.o.prop.Extract(ctx, headerCarrier(msg.Headers()))
			if err := fn(hctx, ch); err != nil {
				_ = msg.Nak()
				return err
			}
		}
		// The change is taken: checkpoint it even if ctx ended meanwhile
		// (fn may have ended it), else it would be delivered again.
		actx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		err = msg.DoubleAck(actx)
		cancel()
		if err != nil {
			return fmt.Errorf("tablejournal: follow %s: checkpoint: %w", name, err)
		}
	}
}

// resume readies an existing checkpoint for a new Follow: its ack wait
// set to ackWait, and a change its previous run held unacknowledged
// offered again at once rather than after the ack wait (a reset to the
// checkpoint's ack floor, which a server before 2.14 does not know: that
// change then comes after the ack wait).
func (c *Client) resume(ctx context.Context, name string, info *jetstream.ConsumerInfo, ackWait time.Duration) (jetstream.Consumer, error) {
	if info.Config.AckWait != ackWait {
		cfg := info.Config
		cfg.AckWait = ackWait
		cons, err := c.js.UpdateConsumer(ctx, wire.ChangesStream, cfg)
		if err != nil {
			return nil, fmt.Errorf("tablejournal: follow %s: ack wait: %w", name, err)
		}
		info = cons.CachedInfo()
	}
	if info.NumAckPending > 0 {
		rctx, cancel := context.WithTimeout(ctx, time.Second)
		_, _ = c.js.ResetConsumer(rctx, wire.ChangesStream, name)
		cancel()
	}
	cons, err := c.js.Consumer(ctx, wire.ChangesStream, name)
	if err != nil {
		return nil, fmt.Errorf("tablejournal: follow %s: %w", name, err)
	}
	return cons, nil
}

// checkpointMismatch is Follow's error for a checkpoint name that follows
// other changes than asked: a checkpoint follows one table, or one
// partition, for good. It matches ErrInvalid.
type checkpointMismatch struct{ name, has, want string }

func (e *checkpointMismatch) Error() string {
	return fmt.Sprintf("tablejournal: follow %s: the checkpoint %q follows %s, not %s: a checkpoint keeps what it follows; give this one another name, or delete it (consumer %s of stream %s)",
		e.name, e.name, e.has, e.want, e.name, wire.ChangesStream)
}

func (e *checkpointMismatch) Unwrap() error { return ErrInvalid }

// sameTableSpelledOtherwise reports whether change-feed filters a and b
// differ only in the case of their table token.
func sameTableSpelledOtherwise(a, b string) bool {
	ta, ra, ok1 := strings.Cut(strings.TrimPrefix(a, wire.ChangesPrefix+"."), ".")
	tb, rb, ok2 := strings.Cut(strings.TrimPrefix(b, wire.ChangesPrefix+"."), ".")
	return ok1 && ok2 && a != b && strings.HasPrefix(a, wire.ChangesPrefix+".") && strings.HasPrefix(b, wire.ChangesPrefix+".") &&
		strings.EqualFold(ta, tb) && ra == rb
}

// followed says in a user's words what a change-feed filter follows:
// "table orders", "partition \"c-1\" of table orders", or the filter
// itself if it is not one Follow makes.
func followed(filter string) string {
	rest, ok := strings.CutPrefix(filter, wire.ChangesPrefix+".")
	table, tok, ok2 := strings.Cut(rest, ".")
	if !ok || !ok2 || strings.Contains(tok, ".") {
		return filter
	}
	if tok == ">" {
		return "table " + table
	}
	pk, err := wire.ParsePKToken(tok)
	if err != nil {
		return filter
	}
	return fmt.Sprintf("partition %q of table %s", pk, table)
}

// decodeChange decodes a change event of the feed into a Change.
func decodeChange(data []byte) (Change, error) {
	ev, err := wire.DecodeChangeEvent(data)
	if err != nil {
		return Change{}, err
	}
	ch := Change{Table: ev.Table, PK: ev.PK, RK: ev.RK, Op: ev.Op, Partition: ev.Partition,
		Version: ev.Version, Command: ev.Cmd, Seq: ev.Seq, At: ev.At}
	if ch.Before, ch.After, err = ev.Images(); err != nil {
		return Change{}, err
	}
	return ch, nil
}
