// Package projectiontest holds what the pipeline's end-to-end tests share: an
// independent model of the versioned table (SPEC §4, §5), a seeded random
// workload, a harness that runs a real projector over a real in-process
// JetStream server and a real table store, and a comparison of the table
// with the model.
package projectiontest

import (
	"fmt"
	"sort"

	"github.com/tablejournal/tablejournal/events"
)

// Version is one version of a logical row in the model.
type Version struct {
	Version int64
	Cmd     string
	Seq     uint64
	Op      events.OpKind
	Deleted bool
	Props   events.Entity
}

// RowID names a logical row.
type RowID struct{ Table, PK, RK string }

// Model is an independent, deliberately simple implementation of the
// projection's semantics: every command applied in journal order to a map of
// row histories. Tests compare the real table with it.
type Model struct {
	// History of every row that ever existed, oldest version first.
	Rows map[RowID][]Version
	// Status of every journal sequence applied to the model.
	Status map[uint64]string
	// Applied holds every command ID applied, with its journal sequence.
	Applied map[string]uint64
}

// NewModel returns an empty model.
func NewModel() *Model {
	return &Model{Rows: make(map[RowID][]Version), Status: make(map[uint64]string), Applied: make(map[string]uint64)}
}

// Current returns the current version of a row, or nil if the row does not
// exist now.
func (m *Model) Current(id RowID) *Version {
	h := m.Rows[id]
	if len(h) == 0 || h[len(h)-1].Deleted {
		return nil
	}
	return &h[len(h)-1]
}

// AsOf returns the version of a row current at journal sequence seq, or nil.
func (m *Model) AsOf(id RowID, seq uint64) *Version {
	h := m.Rows[id]
	for i := len(h) - 1; i >= 0; i-- {
		if h[i].Seq <= seq {
			if h[i].Deleted {
				return nil
			}
			return &h[i]
		}
	}
	return nil
}

// Apply applies the command at journal sequence seq and returns its status
// ("applied", "rejected", "duplicate").
func (m *Model) Apply(seq uint64, c *events.Command) string {
	st := m.apply(seq, c)
	m.Status[seq] = st
	if st == "applied" {
		m.Applied[c.ID] = seq
	}
	return st
}

// Reject records a journal message that cannot apply (undecodable, invalid).
func (m *Model) Reject(seq uint64) { m.Status[seq] = "rejected" }

func (m *Model) apply(seq uint64, c *events.Command) string {
	// A command ID applies at most once, ever (SPEC §3).
	if _, ok := m.Applied[c.ID]; ok {
		return "duplicate"
	}
	// Work on copies of the histories the command touches.
	work := make(map[string][]Version)
	for _, op := range c.Ops {
		if _, ok := work[op.RK]; !ok {
			work[op.RK] = append([]Version(nil), m.Rows[RowID{c.Table, c.PK, op.RK}]...)
		}
	}
	for _, op := range c.Ops {
		h := work[op.RK]
		var cur *Version
		if len(h) > 0 && !h[len(h)-1].Deleted {
			cur = &h[len(h)-1]
		}
		if op.IfVersion != nil && (cur == nil || cur.Version != *op.IfVersion) {
			return "rejected"
		}
		next := Version{Cmd: c.ID, Seq: seq, Op: op.Op}
		if len(h) > 0 {
			next.Version = h[len(h)-1].Version + 1
		}
		switch op.Op {
		case events.OpInsert:
			if cur != nil {
				return "rejected"
			}
			next.Props = op.Entity.Clone()
		case events.OpReplace:
			if cur == nil {
				return "rejected"
			}
			next.Props = op.Entity.Clone()
		case events.OpUpsert:
			next.Props = op.Entity.Clone()
		case events.OpMerge, events.OpUpsertMerge:
			if cur == nil && op.Op == events.OpMerge {
				return "rejected"
			}
			next.Props = events.Entity{}
			if cur != nil {
				next.Props = cur.Props.Clone()
			}
			for k, v := range op.Entity {
				next.Props[k] = v
			}
		case events.OpDelete:
			if cur == nil {
				return "rejected"
			}
			next.Deleted = true
			next.Props = cur.Props.Clone()
		default:
			return "rejected"
		}
		work[op.RK] = append(h, next)
	}
	for rk, h := range work {
		m.Rows[RowID{c.Table, c.PK, rk}] = h
	}
	return "applied"
}

// IDs returns the model's rows in a stable order.
func (m *Model) IDs() []RowID {
	ids := make([]RowID, 0, len(m.Rows))
	for id := range m.Rows {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool {
		a, b := ids[i], ids[j]
		if a.Table != b.Table {
			return a.Table < b.Table
		}
		if a.PK != b.PK {
			return a.PK < b.PK
		}
		return a.RK < b.RK
	})
	return ids
}

func (v Version) String() string {
	return fmt.Sprintf("v%d %s seq=%d cmd=%s deleted=%v %v", v.Version, v.Op, v.Seq, v.Cmd, v.Deleted, v.Props)
}
