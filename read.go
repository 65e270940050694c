package tablejournal

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strings"
	"time"

	"github.com/tablejournal/tablejournal/journal/tablelayout"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/tablejournal/tablejournal/journal"
	"github.com/tablejournal/tablejournal/rows"
	"github.com/tablejournal/tablejournal/store"
	"github.com/tablejournal/tablejournal/wire"
)

// Row is the current version of one row.
type Row struct {
	Table, PK, RK string
	// Entity is the row's properties.
	Entity Entity
	// Version counts the commands applied to the row, from 0; IfVersion
	// takes it.
	Version int64
	// Command and Seq are the ID and journal sequence of the command that
	// wrote this version; At is its journal time.
	Command string
	Seq     uint64
	At      time.Time
	// Op is the operation that wrote it ("insert", "upsert", …).
	Op string
}

// ReadOption configures a read.
type ReadOption func(*readOptions)

type readOptions struct{ after uint64 }

// AfterSeq makes a read wait until the projector has applied the journal
// up to sequence seq (a Position's Seq): read-your-writes. ctx's deadline
// bounds the wait. A seq past the journal's last sequence is refused at
// once with an error matching ErrInvalid (it is no Position of this
// journal), rather than waited for.
func AfterSeq(seq uint64) ReadOption { return func(o *readOptions) { o.after = seq } }

func (c *Client) prepareRead(ctx context.Context, opts []ReadOption) error {
	if c.tables == nil {
		return ErrNoTables
	}
	var o readOptions
	for _, opt := range opts {
		opt(&o)
	}
	if o.after > 0 {
		return c.WaitApplied(ctx, o.after)
	}
	return nil
}

// Get reads the current version of row rk of partition pk of table. A row
// that does not exist (or is deleted) is an error matching ErrNotFound.
func (c *Client) Get(ctx context.Context, table, pk, rk string, opts ...ReadOption) (Row, error) {
	if err := c.prepareRead(ctx, opts); err != nil {
		return Row{}, err
	}
	l, err := c.layoutOf(ctx, table)
	if err != nil {
		return Row{}, err
	}
	key := rows.TipKey(rk)
	if l == wire.LayoutPlain {
		key = rk // the row at the service's own key (SPEC §4, the plain layout)
	}
	e, err := c.tables.Get(ctx, table, pk, key)
	if errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrTableNotFound) {
		return Row{}, fmt.Errorf("tablejournal: %s %q/%q: %w", table, pk, rk, ErrNotFound)
	}
	if err != nil {
		return Row{}, fmt.Errorf("tablejournal: %w", err)
	}
	c.found(table, l)
	return rowOf(table, l, e)
}

// layoutOf is table's layout (SPEC §3, the layout setting), from the
// journal. Get and Query read where it puts the current rows: a plain
// table's rows at their own keys in the table itself (the mirror of its
// history's tips, written before the outcome that read-your-writes waits
// for is published), a versioned table's tip rows. A layout, once the
// table has a command, never changes: the answer is kept when it is plain
// or the read found a row (found), and asked again until then, since a
// setting may still come before the table's first command. A journal
// stream that does not exist reads as versioned, as before layouts.
func (c *Client) layoutOf(ctx context.Context, table string) (wire.Layout, error) {
	if l, ok := c.layouts.Load(table); ok {
		return l.(wire.Layout), nil
	}
	j, err := c.openJournal(ctx)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return wire.LayoutVersioned, nil
	}
	if err != nil {
		return "", err
	}
	tl, err := tablelayout.Of(ctx, j, table)
	if err != nil {
		return "", fmt.Errorf("tablejournal: the layout of %s: %w", table, err)
	}
	if tl.Layout == wire.LayoutPlain {
		c.layouts.Store(table, tl.Layout)
	}
	return tl.Layout, nil
}

// found keeps table's layout l once a read found a row in it: the table
// has a command, so its layout is settled.
func (c *Client) found(table string, l wire.Layout) { c.layouts.Store(table, l) }

// Partition reads the current rows of partition pk of table, in RowKey
// order.
func (c *Client) Partition(ctx context.Context, table, pk string, opts ...ReadOption) ([]Row, error) {
	var rows []Row
	for r, err := range c.Query(ctx, table, Query{PK: pk}, opts...) {
		if err != nil {
			return nil, err
		}
		rows = append(rows, r)
	}
	return rows, nil
}

// Query selects current rows of a table.
type Query struct {
	// PK is the partition read, unless AllPartitions is set.
	PK            string
	AllPartitions bool
	// Where keeps the rows whose properties match every condition; the
	// store evaluates it where it can.
	Where []Cond
}

// Cond compares one property with a value. A row without the property,
// or with a value of another type, does not match.
type Cond struct {
	Prop  string
	Op    CompareOp
	Value Value
}

// CompareOp is a comparison of a Cond.
type CompareOp uint8

// Comparisons, as in OData.
const (
	Eq CompareOp = CompareOp(store.Eq)
	Ne CompareOp = CompareOp(store.Ne)
	Lt CompareOp = CompareOp(store.Lt)
	Le CompareOp = CompareOp(store.Le)
	Gt CompareOp = CompareOp(store.Gt)
	Ge CompareOp = CompareOp(store.Ge)
)

// Query returns the current rows q selects, in (PartitionKey, RowKey)
// order, following the store's continuation pages. Iteration stops at the
// first error, which it yields.
func (c *Client) Query(ctx context.Context, table string, q Query, opts ...ReadOption) iter.Seq2[Row, error] {
	return func(yield func(Row, error) bool) {
		if err := c.prepareRead(ctx, opts); err != nil {
			yield(Row{}, err)
			return
		}
		l, err := c.layoutOf(ctx, table)
		if err != nil {
			yield(Row{}, err)
			return
		}
		sq := store.Query{PK: q.PK, AllPartitions: q.AllPartitions}
		if l != wire.LayoutPlain {
			// A plain table holds only the current rows; a versioned one
			// its tips in this range among the version rows.
			sq.From, sq.To = rows.TipRange()
		}
		for _, w := range q.Where {
			if strings.HasPrefix(w.Prop, "_") {
				yield(Row{}, fmt.Errorf("tablejournal: query %s: property %q: %w: names beginning with _ are system columns", table, w.Prop, ErrInvalid))
				return
			}
			sq.Filter = append(sq.Filter, store.Cond{Prop: w.Prop, Cmp: store.Cmp(w.Op), Value: w.Value})
		}
		for {
			page, err := c.tables.Query(ctx, table, sq)
			if errors.Is(err, store.ErrTableNotFound) {
				return
			}
			if err != nil {
				yield(Row{}, fmt.Errorf("tablejournal: query %s: %w", table, err))
				return
			}
			if len(page.Entities) > 0 {
				c.found(table, l)
			}
			for _, e := range page.Entities {
				r, err := rowOf(table, l, e)
				if !yield(r, err) || err != nil {
					return
				}
			}
			if page.Continuation == "" {
				return
			}
			sq.Continuation = page.Continuation
		}
	}
}

// rowOf reads a stored current row of a table of layout l (docs/SPEC.md
// §4, package rows): a tip row, or a plain table's row, which holds what
// its history's tip does at the row's own key.
func rowOf(table string, l wire.Layout, e store.Entity) (Row, error) {
	if l == wire.LayoutPlain {
		e.RK = rows.TipKey(e.RK)
	}
	r, err := rows.DecodeRow(e)
	if err == nil && !r.Tip {
		err = fmt.Errorf("%w: not a tip row", rows.ErrLayout)
	}
	if err != nil {
		rk := e.RK
		if l == wire.LayoutPlain {
			rk = strings.TrimPrefix(rk, rows.TipPrefix)
		}
		return Row{}, fmt.Errorf("tablejournal: %s %q/%q: %w", table, e.PK, rk, err)
	}
	return Row{Table: table, PK: r.PK, RK: r.RK, Entity: r.Props, Version: r.Version,
		Command: r.Cmd, Seq: r.Seq, At: r.At, Op: string(r.Op)}, nil
}

// WaitApplied waits until the projector has applied the journal up to
// sequence seq in the shard that holds it, so that a read started after it
// returns sees the effect of the command at seq and of every command of
// its partition before it. ctx bounds the wait.
func (c *Client) WaitApplied(ctx context.Context, seq uint64) error {
	id, subject, err := c.commandAt(ctx, seq)
	if err != nil {
		return fmt.Errorf("tablejournal: wait for seq %d: %w", seq, err)
	}
	o, err := c.await(ctx, id, seq)
	if err != nil {
		return fmt.Errorf("tablejournal: wait for seq %d: %w", seq, err)
	}
	if o.Status == wire.StatusApplied {
		// Published once its transaction committed.
		return nil
	}
	// An outcome that wrote nothing is stored before the transaction of
	// the commands batched with it commits: the shard's consumer has
	// acknowledged seq once it has.
	if subject == "" {
		m, err := c.journalMsg(ctx, seq)
		if err != nil {
			return fmt.Errorf("tablejournal: wait for seq %d: %w", seq, err)
		}
		subject = m.Subject
	}
	_, shard, _, err := wire.ParseJournalSubject(subject)
	if err != nil {
		return nil // never applied to any row
	}
	stream, err := c.js.Stream(ctx, c.o.stream)
	if err != nil {
		return fmt.Errorf("tablejournal: wait for seq %d: %w", seq, err)
	}
	pause := 2 * time.Millisecond
	for {
		a, err := journal.AppliedThrough(ctx, stream, c.o.durable, shard)
		switch {
		case err != nil:
			return fmt.Errorf("tablejournal: wait for seq %d: %w", seq, err)
		case !a.Consumer:
			return fmt.Errorf("tablejournal: wait for seq %d: shard %d: %w", seq, shard, jetstream.ErrConsumerNotFound)
		case a.Through >= seq:
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("tablejournal: wait for seq %d: %w", seq, ctx.Err())
		case <-time.After(pause):
		}
		pause = min(2*pause, 100*time.Millisecond)
	}
}

// commandAt returns the command ID of the journal message at seq, and its
// subject when it read the message: from the Client's own recent publishes
// without a request, else from the journal. A sequence past the journal's
// last is refused with an error matching ErrInvalid: it is no position of
// this journal (yet), and waiting for it would wait for another command.
func (c *Client) commandAt(ctx context.Context, seq uint64) (id, subject string, err error) {
	if id, ok := c.recent.get(seq); ok {
		return id, "", nil
	}
	m, err := c.journalMsg(ctx, seq)
	if err != nil {
		return "", "", err
	}
	id = m.Header.Get(jetstream.MsgIDHeader)
	if id == "" {
		if cmd, err := journal.DecodeMsg(m); cmd != nil && err == nil {
			id = cmd.ID
		}
	}
	return id, m.Subject, nil
}

// journalMsg reads the journal message at seq; see commandAt.
func (c *Client) journalMsg(ctx context.Context, seq uint64) (journal.Msg, error) {
	j, err := c.openJournal(ctx)
	if err != nil {
		return journal.Msg{}, err
	}
	m, err := j.Get(ctx, seq)
	if errors.Is(err, journal.ErrNotFound) {
		if last, lerr := j.Head(ctx); lerr == nil && seq > last {
			return journal.Msg{}, fmt.Errorf("%w: seq %d is past the journal's last sequence %d: a Position's Seq is one Publish returned", ErrInvalid, seq, last)
		}
	}
	return m, err
}
