package status

import "testing"

// TestAddPruned: each instance's pruned rows count once, whatever the
// number of shards it reports, at the highest value read.
func TestAddPruned(t *testing.T) {
	for _, tc := range []struct {
		name   string
		shards []ShardStatus
		want   int64
	}{
		{"none", []ShardStatus{{Shard: 0}, {Shard: 1}}, 0},
		{"one instance, two shards", []ShardStatus{{reporter: "a", pruned: 5}, {reporter: "a", pruned: 7}}, 7},
		{"two instances", []ShardStatus{{reporter: "a", pruned: 7}, {reporter: "b", pruned: 3}, {reporter: "a", pruned: 5}}, 10},
		{"a shard without a report", []ShardStatus{{reporter: "", pruned: 4}, {reporter: "b", pruned: 3}}, 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ov Overview
			for _, s := range tc.shards {
				ov.add(s)
			}
			if ov.Totals.PrunedRows != tc.want {
				t.Errorf("pruned rows %d, want %d", ov.Totals.PrunedRows, tc.want)
			}
		})
	}
}
