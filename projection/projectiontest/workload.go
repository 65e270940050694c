package projectiontest

import (
	"fmt"
	"math/rand/v2"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/events/edm"
)

// Workload generates a seeded random stream of commands over a fixed set of
// rows: every operation kind, re-inserts after deletes, ifVersion guards that
// hold and that do not, multi-row commands (sometimes touching one row
// twice), invalid operations, and re-sent command IDs. It tracks a model
// while it generates, so most commands are meaningful for the state they
// will meet, and some are deliberately wrong.
type Workload struct {
	Table      string
	Partitions int
	RowsPer    int

	rng    *rand.Rand
	n      int
	shadow *Model
	sent   []*events.Command
}

// NewWorkload returns a workload over partitions × rowsPer rows of table.
func NewWorkload(seed uint64, table string, partitions, rowsPer int) *Workload {
	return &Workload{
		Table: table, Partitions: partitions, RowsPer: rowsPer,
		rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), shadow: NewModel(),
	}
}

// Take returns the next n commands.
func (w *Workload) Take(n int) []*events.Command {
	cmds := make([]*events.Command, n)
	for i := range cmds {
		cmds[i] = w.Next()
	}
	return cmds
}

// PK returns the partition key of partition i.
func (w *Workload) PK(i int) string { return fmt.Sprintf("part-%02d", i) }

// RK returns the row key of row j. Some keys are prefixes of others and
// contain ':' to exercise the layout's key escaping.
func (w *Workload) RK(j int) string {
	switch j % 5 {
	case 0:
		return fmt.Sprintf("r%d", j)
	case 1:
		return fmt.Sprintf("r%d:x", j-1) // "r0" is a prefix of "r0:x"
	case 2:
		return fmt.Sprintf("row%%%d é", j)
	default:
		return fmt.Sprintf("r%03d", j)
	}
}

// Next returns the next command. Commands are meant to be published in the
// order Next returns them; the generator's guesses about row state assume
// so (when its guesses are wrong, the command is simply rejected, which the
// real model then predicts).
func (w *Workload) Next() *events.Command {
	w.n++
	// Now and then re-send an earlier command with its ID.
	if len(w.sent) > 50 && w.rng.IntN(100) < 2 {
		c := w.sent[w.rng.IntN(len(w.sent))]
		return c
	}
	pk := w.PK(w.rng.IntN(w.Partitions))
	c := &events.Command{
		ID: fmt.Sprintf("cmd-%06d", w.n), Table: w.Table, PK: pk,
		Issuer: "workload", Meta: map[string]string{"n": fmt.Sprint(w.n)},
	}
	nops := 1
	if w.rng.IntN(100) < 15 {
		nops = 2 + w.rng.IntN(3)
	}
	for i := 0; i < nops; i++ {
		rk := w.RK(w.rng.IntN(w.RowsPer))
		if i > 0 && w.rng.IntN(100) < 20 {
			rk = c.Ops[0].RK // the same row twice in one command
		}
		c.Ops = append(c.Ops, w.op(pk, rk))
	}
	w.shadow.Apply(uint64(w.n), c)
	w.sent = append(w.sent, c)
	return c
}

func (w *Workload) op(pk, rk string) events.RowOp {
	cur := w.shadow.Current(RowID{w.Table, pk, rk})
	r := w.rng.IntN(100)
	var op events.RowOp
	op.RK = rk
	switch {
	case cur == nil && r < 70:
		op.Op = events.OpInsert
	case cur == nil && r < 80:
		op.Op = events.OpUpsertMerge
	case cur == nil && r < 90:
		op.Op = events.OpReplace // rejected: missing row
	case cur == nil:
		op.Op = events.OpDelete // rejected: missing row
	case r < 25:
		op.Op = events.OpReplace
	case r < 45:
		op.Op = events.OpMerge
	case r < 60:
		op.Op = events.OpUpsert
	case r < 70:
		op.Op = events.OpUpsertMerge
	case r < 85:
		op.Op = events.OpDelete
	default:
		op.Op = events.OpInsert // rejected: exists
	}
	if op.Op != events.OpDelete {
		op.Entity = w.entity()
	}
	if cur != nil && op.Op != events.OpInsert && w.rng.IntN(100) < 20 {
		v := cur.Version
		if w.rng.IntN(100) < 30 {
			v += 1 + int64(w.rng.IntN(2)) // a stale or future version: rejected
		}
		op.IfVersion = &v
	}
	return op
}

func (w *Workload) entity() edm.Entity {
	e := edm.Entity{"n": edm.Int32(int32(w.n))}
	switch w.rng.IntN(4) {
	case 0:
		e["status"] = edm.String([]string{"new", "paid", "shipped", "ünïcode ✓"}[w.rng.IntN(4)])
	case 1:
		e["total"] = edm.Double(float64(w.rng.IntN(100000)) / 100)
	case 2:
		e["big"] = edm.Int64(1<<53 + int64(w.rng.IntN(1000)))
	case 3:
		e["blob"] = edm.Binary([]byte(fmt.Sprintf("b%d", w.n)))
	}
	if w.rng.IntN(3) == 0 {
		e["flag"] = edm.Bool(w.rng.IntN(2) == 0)
	}
	return e
}
