package shards

import (
	"slices"
	"sort"
)

// snapshot is what one instance knows when it decides: the live instances
// and the owner of every leased shard.
type snapshot struct {
	shards int
	live   []string       // live instance IDs, sorted, including me
	owners map[int]string // shard → owner ID, for every lease that exists
}

// plan is the balancing rule every instance runs on its own view. With n
// live instances and S shards, let q = S/n: an instance holding fewer than q
// shards claims free ones; one holding more than q+1 releases the excess;
// one holding q+1 releases one when another live instance holds fewer than
// q and nothing is free to take; one holding q takes one more free shard
// when nobody is below q. So counts settle in {q, q+1}, and since they add
// up to S, they differ by at most one. Compare-and-set decides races, and a
// view that was stale only delays the next step.
//
// mine are the shards this instance holds and is not releasing. It returns
// the free shards to try to claim, in the order to try them, and the held
// shards to release.
func plan(me string, s snapshot, mine []int) (claim, release []int) {
	n := len(s.live)
	rank := sort.SearchStrings(s.live, me)
	if n == 0 || rank == n || s.live[rank] != me {
		return nil, nil // not live in my own view yet: decide nothing
	}
	q := s.shards / n
	counts := make(map[string]int, n)
	for _, owner := range s.owners {
		counts[owner]++
	}
	below := false
	for _, id := range s.live {
		if id != me && counts[id] < q {
			below = true
		}
	}
	held := make(map[int]bool, len(mine))
	for _, sh := range mine {
		held[sh] = true
	}
	// Free shards, starting at a point that depends on the rank, so that
	// instances claiming at once mostly try different keys.
	var free []int
	start := rank * s.shards / n
	for i := 0; i < s.shards; i++ {
		sh := (start + i) % s.shards
		if _, leased := s.owners[sh]; !leased && !held[sh] {
			free = append(free, sh)
		}
	}
	k := len(mine)
	sorted := slices.Sorted(slices.Values(mine))
	switch {
	case k > q+1:
		return nil, sorted[q+1:]
	case k == q+1 && below && len(free) == 0:
		return nil, sorted[q:]
	case k < q:
		return free[:min(len(free), q-k)], nil
	case k == q && !below && len(free) > 0:
		return free[:1], nil
	}
	return nil, nil
}
