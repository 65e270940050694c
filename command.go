package tablejournal

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/events/rules"
)

// Value is one typed property value: one of the eight EDM types of Azure
// Tables. Build it with String, Bool, Int32, Int64, Double, DateTime,
// Guid or Binary; read it through its Type and the field that type uses
// (Str, Bool, Int, Float, Time, Bytes).
type Value = edm.Value

// Entity is a row's user properties by name.
type Entity = edm.Entity

// String is an Edm.String value.
func String(s string) Value { return edm.String(s) }

// Bool is an Edm.Boolean value.
func Bool(b bool) Value { return edm.Bool(b) }

// Int32 is an Edm.Int32 value.
func Int32(i int32) Value { return edm.Int32(i) }

// Int64 is an Edm.Int64 value; it round-trips exactly above 2^53.
func Int64(i int64) Value { return edm.Int64(i) }

// Double is an Edm.Double value.
func Double(f float64) Value { return edm.Double(f) }

// DateTime is an Edm.DateTime value, kept to 100 ns, in UTC.
func DateTime(t time.Time) Value { return edm.DateTime(t) }

// Binary is an Edm.Binary value of at most 64 KiB.
func Binary(b []byte) Value { return edm.Binary(b) }

// Guid is an Edm.Guid value; it fails on a string that is not a GUID
// with an error matching ErrInvalid (rule bad-guid).
func Guid(s string) (Value, error) { return edm.Guid(s) }

// Command is one command: row operations on one partition of one table,
// applied atomically, or not at all. Build it with NewCommand and its
// methods, which return the Command so that calls chain.
type Command struct {
	cmd events.Command
	// err is the first misuse of the builder (an IfVersion that guards
	// nothing), which Publish returns.
	err error
}

// NewCommand starts a command on partition pk of table, with a fresh
// command ID (a UUID); WithID sets another.
func NewCommand(table, pk string) *Command {
	return &Command{cmd: events.Command{ID: uuid.NewString(), Table: table, PK: pk}}
}

// WithID sets the command ID: publishing the same ID twice is one
// command. 1–128 characters of [A-Za-z0-9._:-].
func (c *Command) WithID(id string) *Command { c.cmd.ID = id; return c }

// ID returns the command ID.
func (c *Command) ID() string { return c.cmd.ID }

// WithMeta adds a meta entry (such as a correlation ID) to the command.
func (c *Command) WithMeta(key, value string) *Command {
	if c.cmd.Meta == nil {
		c.cmd.Meta = map[string]string{}
	}
	c.cmd.Meta[key] = value
	return c
}

func (c *Command) add(op events.OpKind, rk string, e Entity) *Command {
	c.cmd.Ops = append(c.cmd.Ops, events.RowOp{Op: op, RK: rk, Entity: e})
	return c
}

// Insert adds an insert of row rk: rejected with ErrExists if the row
// exists.
func (c *Command) Insert(rk string, e Entity) *Command { return c.add(events.OpInsert, rk, e) }

// Upsert adds an insert-or-replace of row rk.
func (c *Command) Upsert(rk string, e Entity) *Command { return c.add(events.OpUpsert, rk, e) }

// Replace adds a replace of row rk's properties by e: rejected with
// ErrNotFound if the row does not exist.
func (c *Command) Replace(rk string, e Entity) *Command { return c.add(events.OpReplace, rk, e) }

// Merge adds a merge of e into row rk's properties: rejected with
// ErrNotFound if the row does not exist.
func (c *Command) Merge(rk string, e Entity) *Command { return c.add(events.OpMerge, rk, e) }

// UpsertMerge adds an insert-or-merge of row rk.
func (c *Command) UpsertMerge(rk string, e Entity) *Command {
	return c.add(events.OpUpsertMerge, rk, e)
}

// Delete adds a delete of row rk: rejected with ErrNotFound if the row
// does not exist.
func (c *Command) Delete(rk string) *Command { return c.add(events.OpDelete, rk, nil) }

// IfVersion guards the operation added last: it applies only if its row
// exists at exactly version v (Row.Version), else the command is rejected
// with ErrVersionMismatch. An insert cannot carry it. Called before any
// operation, or twice on one, it guards nothing certain: Publish then
// refuses the command with ErrInvalid (rules if-version-without-op and
// if-version-twice) rather than apply it unguarded.
func (c *Command) IfVersion(v int64) *Command {
	n := len(c.cmd.Ops)
	switch {
	case n == 0:
		c.fail(&rules.ValidationError{Field: "ops", Rule: rules.IfVersionWithoutOp,
			Detail: fmt.Sprintf("IfVersion(%d) before any operation guards nothing: call it after the operation it guards", v)})
	case c.cmd.Ops[n-1].IfVersion != nil:
		c.fail(&rules.ValidationError{Field: fmt.Sprintf("ops[%d].ifVersion", n-1), Rule: rules.IfVersionTwice,
			Detail: fmt.Sprintf("IfVersion(%d) after IfVersion(%d) on one operation: give it one guard", v, *c.cmd.Ops[n-1].IfVersion)})
	default:
		c.cmd.Ops[n-1].IfVersion = &v
	}
	return c
}

// fail records the first misuse of the builder.
func (c *Command) fail(err error) {
	if c.err == nil {
		c.err = err
	}
}

// Position is where a published command is in the journal: its command ID
// and journal sequence. Wait takes it; AfterSeq(pos.Seq) reads after it.
type Position struct {
	ID  string
	Seq uint64
	// Duplicate says the journal already held this command ID, so nothing
	// new was stored: Seq is the stored command's.
	Duplicate bool
}

// Publish validates cmd and publishes it into the journal, returning once
// the journal stored it. An invalid command is refused with an error that
// errors.Is matches against ErrInvalid, and nothing is published. A
// command ID the journal holds with another body is ErrBodyDiffers; no
// journal stream, ErrNoJournal. The trace context of ctx travels with the
// command. It listens for the command's outcome before publishing, and
// keeps listening for a read after the write (AfterSeq, Wait) among its
// 256 latest publishes.
func (c *Client) Publish(ctx context.Context, cmd *Command) (Position, error) {
	if cmd.err != nil {
		return Position{}, fmt.Errorf("tablejournal: publish %s: %w", cmd.cmd.ID, cmd.err)
	}
	// Listening before the publish, for a read after this write
	// (recentPublishes); without it the read waits as before.
	w, werr := c.outcomes.Watch(cmd.cmd.ID)
	pos, err := c.publish(ctx, cmd)
	switch {
	case werr != nil:
	case err != nil || pos.Duplicate:
		w.Stop()
	default:
		c.recent.keep(pos.Seq, pos.ID, w)
	}
	return pos, err
}

// publish is Publish without the watch kept for a read after the write.
func (c *Client) publish(ctx context.Context, cmd *Command) (Position, error) {
	if cmd.err != nil {
		return Position{}, fmt.Errorf("tablejournal: publish %s: %w", cmd.cmd.ID, cmd.err)
	}
	if err := c.checkStream(ctx); err != nil {
		return Position{}, fmt.Errorf("tablejournal: publish %s: %w", cmd.cmd.ID, err)
	}
	x := cmd.cmd
	if x.Issuer == "" {
		x.Issuer = c.o.issuer
	}
	r, err := c.w.Publish(ctx, &x)
	if err != nil {
		return Position{}, fmt.Errorf("tablejournal: %w", err)
	}
	c.recent.add(r.Seq, r.ID)
	return Position{ID: r.ID, Seq: r.Seq, Duplicate: r.Duplicate}, nil
}

// Apply publishes cmd and waits for its outcome, as Publish then Wait
// would, but it listens for the outcome before it publishes, so that a
// command stored anew needs no look-up of outcomes stored before.
func (c *Client) Apply(ctx context.Context, cmd *Command) (Outcome, error) {
	w, err := c.outcomes.Watch(cmd.cmd.ID)
	if err != nil {
		return Outcome{}, fmt.Errorf("tablejournal: %w", err)
	}
	defer w.Stop()
	pos, err := c.publish(ctx, cmd)
	if err != nil {
		return Outcome{}, err
	}
	// A Duplicate's outcome may be stored already.
	o, err := w.Await(ctx, pos.Seq, pos.Duplicate)
	if err != nil {
		return Outcome{}, fmt.Errorf("tablejournal: %w", err)
	}
	return result(o)
}
