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
	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/store"
)

// Version is one version of a logical row in the model.
type Version struct {
	Version int64
	Cmd     string
	Seq     uint64
	Op      events.OpKind
	Deleted bool
	Props   edm.Entity
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
	if v, ok := m.At(id, seq); ok {
		return &v
	}
	return nil
}

// At returns the newest version of a row written at or before journal
// sequence seq, a tombstone included (the zero Version when there is
// none), and whether the row exists at seq.
func (m *Model) At(id RowID, seq uint64) (Version, bool) {
	h := m.Rows[id]
	for i := len(h) - 1; i >= 0; i-- {
		if h[i].Seq <= seq {
			return h[i], !h[i].Deleted
		}
	}
	return Version{}, false
}

// StateAt returns the rows of table, in part, that exist at journal
// sequence seq, with their versions then: what an as-of read of the table
// at seq returns, and what a rebuild up to seq holds.
func (m *Model) StateAt(table string, part store.Partition, seq uint64) map[RowID]Version {
	out := make(map[RowID]Version)
	for id := range m.Rows {
		if id.Table != table || !part.All && id.PK != part.PK {
			continue
		}
		if v, ok := m.At(id, seq); ok {
			out[id] = v
		}
	}
	return out
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
	// A command makes at most one version of each row it names: its ops
	// on a row apply in order to the row's state, and the state after the
	// last one is the version (SPEC §4). A row inserted and deleted by one
	// command gets none.
	work := make(map[string]*modelRow)
	var order []string
	for _, op := range c.Ops {
		s, ok := work[op.RK]
		if !ok {
			s = &modelRow{}
			if h := m.Rows[RowID{c.Table, c.PK, op.RK}]; len(h) > 0 {
				s.before = &h[len(h)-1]
				s.exists, s.props, s.v, s.next = !s.before.Deleted, s.before.Props, s.before.Version, s.before.Version+1
			}
			work[op.RK] = s
			order = append(order, op.RK)
		}
		if !s.do(op) {
			return "rejected"
		}
	}
	for _, rk := range order {
		s := work[rk]
		id := RowID{c.Table, c.PK, rk}
		switch {
		case s.exists:
			m.Rows[id] = append(m.Rows[id], Version{Version: s.next, Cmd: c.ID, Seq: seq, Op: s.op, Props: s.props})
		case s.before != nil && !s.before.Deleted:
			m.Rows[id] = append(m.Rows[id], Version{Version: s.next, Cmd: c.ID, Seq: seq, Op: events.OpDelete, Deleted: true, Props: s.before.Props.Clone()})
		}
	}
	return "applied"
}

// modelRow is a row's working state while the model applies a command.
type modelRow struct {
	before *Version // the newest version before the command
	exists bool
	props  edm.Entity
	v      int64 // the row's version now
	next   int64 // the version the command makes
	op     events.OpKind
}

// do applies op to the row; false when op is rejected.
func (s *modelRow) do(op events.RowOp) bool {
	if op.IfVersion != nil && (!s.exists || s.v != *op.IfVersion) {
		return false
	}
	switch op.Op {
	case events.OpInsert:
		if s.exists {
			return false
		}
		s.props = op.Entity.Clone()
	case events.OpReplace:
		if !s.exists {
			return false
		}
		s.props = op.Entity.Clone()
	case events.OpUpsert:
		s.props = op.Entity.Clone()
	case events.OpMerge, events.OpUpsertMerge:
		if !s.exists && op.Op == events.OpMerge {
			return false
		}
		merged := edm.Entity{}
		if s.exists {
			merged = s.props.Clone()
		}
		for k, v := range op.Entity {
			merged[k] = v
		}
		s.props = merged
	case events.OpDelete:
		if !s.exists {
			return false
		}
		s.exists, s.props = false, nil
		s.v, s.op = s.next, op.Op
		return true
	default:
		return false
	}
	s.exists, s.v, s.op = true, s.next, op.Op
	return true
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
