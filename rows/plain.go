package rows

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/store"
)

// The plain layout (SPEC §4, "The plain layout"): a plain table holds, at
// the service's own keys, exactly the tips of its history table (a table
// of the versioned layout, wire.HistoryTable), each with the system
// columns a tip carries (never _deleted: a deleted row is absent).

// PlainProps is what a plain table holds for the tip of its history: the
// tip's properties and system columns.
func PlainProps(tip Row) edm.Entity { return tip.Encode() }

// PlainMismatch is a row where a plain table differs from the tips of its
// history: Got is the plain table's row and Want the history's tip, as
// the plain table would hold it; nil when absent.
type PlainMismatch struct {
	PK, RK    string
	Got, Want edm.Entity
}

func (m PlainMismatch) String() string {
	switch {
	case m.Got == nil:
		return fmt.Sprintf("%q/%q: missing (the history's tip is %v)", m.PK, m.RK, m.Want)
	case m.Want == nil:
		return fmt.Sprintf("%q/%q: extra (the history has no tip: %v)", m.PK, m.RK, m.Got)
	}
	return fmt.Sprintf("%q/%q: holds %v, the history's tip %v", m.PK, m.RK, m.Got, m.Want)
}

// ComparePlain compares the plain table with the tips of its history
// table (in part: one partition, or store.AllPartitions) and returns the
// rows that differ, in key order: missing, extra, or with other values in
// any column. A missing table holds no rows. It reads both tables whole
// (one partition, or all) into memory.
func ComparePlain(ctx context.Context, s store.Store, table, history string, part store.Partition) ([]PlainMismatch, error) {
	type key struct{ pk, rk string }
	got := make(map[key]edm.Entity)
	q := part.Query(store.Query{})
	err := store.All(ctx, s, table, q, func(e store.Entity) error {
		got[key{e.PK, e.RK}] = e.Props
		return nil
	})
	if err != nil && !errors.Is(err, store.ErrTableNotFound) {
		return nil, fmt.Errorf("read %s: %w", table, err)
	}
	want := make(map[key]edm.Entity)
	q.From, q.To = TipRange()
	err = store.All(ctx, s, history, q, func(e store.Entity) error {
		r, err := DecodeRow(e)
		if err != nil {
			return err
		}
		want[key{r.PK, r.RK}] = PlainProps(r)
		return nil
	})
	if err != nil && !errors.Is(err, store.ErrTableNotFound) {
		return nil, fmt.Errorf("read %s: %w", history, err)
	}
	var out []PlainMismatch
	for k, g := range got {
		if w, ok := want[k]; !ok || !w.Equal(g) {
			out = append(out, PlainMismatch{PK: k.pk, RK: k.rk, Got: g, Want: w})
		}
	}
	for k, w := range want {
		if _, ok := got[k]; !ok {
			out = append(out, PlainMismatch{PK: k.pk, RK: k.rk, Want: w})
		}
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i].PK < out[j].PK || out[i].PK == out[j].PK && out[i].RK < out[j].RK
	})
	return out, nil
}
