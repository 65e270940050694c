package metrics

import (
	"sort"
	"time"

	"github.com/tablejournal/tablejournal/wire"
)

// Snapshot is the state of the projector's shards and its counters at one
// moment, for logs and the status bucket.
type Snapshot struct {
	At time.Time
	// Shards are the running shards, in order.
	Shards []ShardSnapshot
	// Commands counts the commands handled, by status.
	Commands map[wire.Status]uint64
	// ShardFailures counts the shards stopped by a persistent failure.
	ShardFailures uint64
	// Store is what the store answered.
	Store StoreSnapshot
}

// ShardSnapshot is one running shard.
type ShardSnapshot struct {
	Shard      int
	Applied    uint64  // the last journal sequence applied
	Pending    uint64  // messages not yet applied
	LagSeconds float64 // age of the oldest of them; 0 when caught up
	Handled    uint64  // messages applied since the shard started here
}

// Snapshot returns the current state.
func (m *Metrics) Snapshot() Snapshot {
	now := m.now()
	snap := Snapshot{At: now, Commands: make(map[wire.Status]uint64, len(statuses)),
		ShardFailures: m.failures.Load(), Store: m.st.snapshot(m.now())}
	for _, s := range statuses {
		snap.Commands[s] = m.counts[s].Load()
	}
	m.mu.Lock()
	for n, s := range m.shards {
		ss := ShardSnapshot{Shard: n, Applied: s.applied, Pending: s.pending, Handled: s.handled}
		if s.pending > 0 && !s.oldest.IsZero() {
			ss.LagSeconds = max(now.Sub(s.oldest).Seconds(), 0)
		}
		snap.Shards = append(snap.Shards, ss)
	}
	m.mu.Unlock()
	sort.Slice(snap.Shards, func(i, j int) bool { return snap.Shards[i].Shard < snap.Shards[j].Shard })
	return snap
}

// Pending is the sum of the shards' messages not yet applied.
func (s Snapshot) Pending() uint64 {
	var n uint64
	for _, sh := range s.Shards {
		n += sh.Pending
	}
	return n
}

// MaxLagSeconds is the greatest lag of the shards.
func (s Snapshot) MaxLagSeconds() float64 {
	var l float64
	for _, sh := range s.Shards {
		l = max(l, sh.LagSeconds)
	}
	return l
}
