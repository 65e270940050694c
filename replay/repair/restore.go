package repair

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"strconv"

	"github.com/tablejournal/tablejournal/replay/history"
	"github.com/tablejournal/tablejournal/rows"
	"github.com/tablejournal/tablejournal/store"
)

// PlanRestore plans the commands that make a partition of table, or the
// whole table (store.AllPartitions), equal to its state at journal sequence
// seq:
// for each row that differs, an insert, a replace or a delete, guarded by
// the row's current version. Rows that already equal their state at seq
// are left out, so a plan of no steps means there is nothing to do.
//
// Command IDs are "restore-<table>-<seq>-<hash of the plan>-<n>": applying
// the same plan twice is deduplicated, and a plan made after the table
// changed gets new IDs. Meta restoreTo = seq.
func (r *Planner) PlanRestore(ctx context.Context, table string, part store.Partition, seq uint64) (*Plan, error) {
	type key struct{ pk, rk string }
	target := make(map[key]rows.Row)
	err := history.New(r.Source).AsOf(ctx, table, part, seq, func(row rows.Row) error {
		target[key{row.PK, row.RK}] = row
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("restore: %w", err)
	}
	vt, err := r.VersionTable(ctx, table) // the history's tips, for a plain table (SPEC §4)
	if err != nil {
		return nil, fmt.Errorf("restore: %w", err)
	}
	current := make(map[key]rows.Row)
	err = rows.Reader{Store: r.Store()}.Current(ctx, vt, part, func(row rows.Row) error {
		current[key{row.PK, row.RK}] = row
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("restore: %w", err)
	}
	keys := make([]key, 0, len(target)+len(current))
	for k := range target {
		keys = append(keys, k)
	}
	for k := range current {
		if _, ok := target[k]; !ok {
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool {
		if c := store.CompareKeys(keys[i].pk, keys[j].pk); c != 0 {
			return c < 0
		}
		return store.CompareKeys(keys[i].rk, keys[j].rk) < 0
	})
	p := &Plan{Kind: KindRestore, Table: table, PK: part.PK, AllPartitions: part.All, Seq: seq, planner: r}
	h := sha256.New()
	for _, k := range keys {
		s := Step{Table: table, PK: k.pk, RK: k.rk}
		s.Current, s.Exists = current[k]
		s.Target, s.TargetExists = target[k]
		s.setOp()
		if s.Op == "" {
			continue
		}
		p.Steps = append(p.Steps, s)
		fmt.Fprintf(h, "%q %q %s %v %d %d\n", k.pk, k.rk, s.Op, s.IfVersion != nil && s.Exists, s.Current.Version, s.Target.Version)
	}
	sum := hex.EncodeToString(h.Sum(nil))[:12]
	p.build(r.Config().Issuer, idPrefix(KindRestore, table+"-"+strconv.FormatUint(seq, 10)+"-"+sum),
		map[string]string{MetaRestoreTo: strconv.FormatUint(seq, 10)})
	return p, nil
}
