package shards

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestPlan(t *testing.T) {
	owners := func(spec map[string][]int) map[int]string {
		m := make(map[int]string)
		for id, shs := range spec {
			for _, sh := range shs {
				m[sh] = id
			}
		}
		return m
	}
	seq := func(from, to int) []int {
		var s []int
		for i := from; i < to; i++ {
			s = append(s, i)
		}
		return s
	}
	tests := []struct {
		name    string
		live    []string
		owned   map[string][]int
		me      string
		claim   int // how many to claim
		release []int
	}{
		{name: "alone takes everything", live: []string{"a"}, me: "a", claim: 16},
		{name: "not live yet decides nothing", live: []string{"b"}, me: "a", claim: 0},
		{name: "second instance: the holder releases down to q+1", live: []string{"a", "b"},
			owned: map[string][]int{"a": seq(0, 16)}, me: "a", release: seq(9, 16)},
		{name: "newcomer takes free up to q", live: []string{"a", "b"},
			owned: map[string][]int{"a": seq(0, 9)}, me: "b", claim: 7},
		{name: "q+1 releases one to a live instance below q", live: []string{"a", "b"},
			owned: map[string][]int{"a": seq(0, 9), "b": seq(9, 16)}, me: "a", release: []int{8}},
		{name: "at q with nobody below takes the last free one", live: []string{"a", "b", "c"},
			owned: map[string][]int{"a": seq(0, 5), "b": seq(5, 10), "c": seq(10, 15)}, me: "b", claim: 1},
		{name: "at q with someone below leaves the free one", live: []string{"a", "b", "c"},
			owned: map[string][]int{"a": seq(0, 5), "b": seq(5, 10), "c": seq(10, 14)}, me: "b", claim: 0},
		{name: "balanced stays", live: []string{"a", "b", "c"},
			owned: map[string][]int{"a": seq(0, 6), "b": seq(6, 11), "c": seq(11, 16)}, me: "a", claim: 0},
		{name: "a dead owner's leases are not counted and not free", live: []string{"a", "b"},
			owned: map[string][]int{"a": seq(0, 8), "dead": seq(8, 16)}, me: "b", claim: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := snapshot{shards: 16, live: tt.live, owners: owners(tt.owned)}
			claim, release := plan(tt.me, s, tt.owned[tt.me])
			if len(claim) != tt.claim || !slices.Equal(release, tt.release) {
				t.Fatalf("plan = claim %v, release %v; want %d claims, release %v", claim, release, tt.claim, tt.release)
			}
			for _, sh := range claim {
				if _, leased := s.owners[sh]; leased {
					t.Fatalf("claims leased shard %d", sh)
				}
			}
		})
	}
}

// TestPlanConverges runs the rule for many instance counts and starting
// states, each instance acting on a view as of the previous round (the
// staleness of a watcher), with compare-and-set deciding races: the counts
// must end balanced, every shard owned, within a few rounds.
func TestPlanConverges(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, shards := range []int{1, 3, 16, 64} {
		for n := 1; n <= 6; n++ {
			for trial := 0; trial < 20; trial++ {
				t.Run(fmt.Sprintf("S%d/n%d/%d", shards, n, trial), func(t *testing.T) {
					var live []string
					for i := 0; i < n; i++ {
						live = append(live, fmt.Sprintf("i%d", i))
					}
					owners := make(map[int]string)
					for sh := 0; sh < shards; sh++ {
						if r := rng.IntN(n + 1); r < n { // some start free
							owners[sh] = live[r]
						}
					}
					for round := 0; ; round++ {
						if balanced(owners, live, shards) {
							return
						}
						if round == 20 {
							t.Fatalf("not balanced after %d rounds: %v", round, counts(owners, live))
						}
						view := snapshot{shards: shards, live: live, owners: clone(owners)}
						for _, i := range rng.Perm(n) {
							me := live[i]
							var mine []int
							for sh, o := range view.owners {
								if o == me {
									mine = append(mine, sh)
								}
							}
							claim, release := plan(me, view, mine)
							for _, sh := range release {
								delete(owners, sh)
							}
							for _, sh := range claim {
								if _, taken := owners[sh]; !taken { // Create
									owners[sh] = me
								}
							}
						}
					}
				})
			}
		}
	}
}

func clone(m map[int]string) map[int]string {
	c := make(map[int]string, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

func counts(owners map[int]string, live []string) map[string]int {
	c := make(map[string]int)
	for _, id := range live {
		c[id] = 0
	}
	for _, o := range owners {
		c[o]++
	}
	return c
}

func balanced(owners map[int]string, live []string, shards int) bool {
	if len(owners) != shards {
		return false
	}
	lo, hi := shards, 0
	for _, c := range counts(owners, live) {
		lo, hi = min(lo, c), max(hi, c)
	}
	return hi-lo <= 1
}
