package status

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/tablejournal/tablejournal/journal"
	"github.com/tablejournal/tablejournal/projection/lost"
	"github.com/tablejournal/tablejournal/projection/shards"
	"github.com/tablejournal/tablejournal/wire"
)

// ShardStatus is the state of one shard as NATS tells it.
type ShardStatus struct {
	Shard int `json:"shard"`
	// Owner is the instance applying the shard, "" when none does: the
	// holder of its lease when instances share the shards, else the
	// instance that reports it (one started with static shards).
	Owner string `json:"owner"`
	// OwnerSince is when the owner claimed the lease; nil without one.
	OwnerSince *time.Time `json:"ownerSince,omitempty"`
	// Applied is the journal sequence up to which the shard is applied:
	// its consumer's ack floor.
	Applied uint64 `json:"applied"`
	// Pending counts the shard's messages not yet applied (not delivered,
	// or delivered and not acknowledged).
	Pending uint64 `json:"pending"`
	// LagSeconds is the age of the oldest of them; 0 when none.
	LagSeconds float64 `json:"lagSeconds"`
	// Rate is the commands per second applied over the last minute, as
	// the owner reports it; 0 without a report.
	Rate float64 `json:"rate"`
	// Consumer says whether the shard's durable consumer exists (a shard
	// never projected has none).
	Consumer bool `json:"consumer"`

	reporter string // the instance whose report was read
	pruned   int64  // its PrunedRows
}

// Overview is the state of every shard of the journal.
type Overview struct {
	At     time.Time      `json:"at"`
	Shards []ShardStatus  `json:"shards"`
	Totals OverviewTotals `json:"totals"`

	prunedBy map[string]int64 // instance → its PrunedRows (pruned.go)
}

// OverviewTotals sums an Overview up.
type OverviewTotals struct {
	Shards        int     `json:"shards"`
	Owned         int     `json:"owned"`
	Pending       uint64  `json:"pending"`
	MaxLagSeconds float64 `json:"maxLagSeconds"`
	Rate          float64 `json:"rate"`
	// PrunedRows is the rows removed by prune commands by the instances
	// that report now, since each started (each instance counted once).
	PrunedRows int64 `json:"prunedRows"`
	// Behind lists the partitions recorded behind what the projectors
	// applied (the store lost confirmed writes; package lost), by table and
	// key, whether a projector runs or not; BehindCount counts them.
	Behind      []wire.BehindPartition `json:"behind,omitempty"`
	BehindCount int                    `json:"behindCount,omitempty"`
	// Held lists the partitions held by a row the projector did not
	// write (SPEC §5, "A held partition"), as recorded, until they apply
	// again.
	Held []wire.BehindPartition `json:"held,omitempty"`
	// Unowned lists the shards with pending commands and no owner.
	Unowned []int `json:"unowned"`
}

// Config says which journal and consumers Read looks at.
type Config struct {
	// Journal names the journal stream. If zero, the default.
	Journal string
	// Durable is the consumers' name prefix. If zero, wire.DefaultDurable.
	Durable string
}

// Read reads the state of every shard from NATS alone: the durable
// consumers (applied sequence, pending), the oldest pending message (lag),
// the owners' leases and the running instances' reports (owner, rate). It
// needs no table store. A shard whose consumer does not exist yet counts
// every message of the shard as pending (through a short-lived ephemeral
// consumer, the only way to count a subject filter's messages).
func Read(ctx context.Context, js jetstream.JetStream, cfg Config) (Overview, error) {
	if cfg.Durable == "" {
		cfg.Durable = wire.DefaultDurable
	}
	j, err := journal.Open(ctx, js, cfg.Journal)
	if err != nil {
		return Overview{}, err
	}
	stream, err := js.Stream(ctx, j.Name())
	if err != nil {
		return Overview{}, fmt.Errorf("journal stream: %w", err)
	}
	owners, err := openBucket(ctx, js, shards.BucketFor(j.Name(), cfg.Durable))
	if err != nil {
		return Overview{}, err
	}
	reports, err := openBucket(ctx, js, Bucket)
	if err != nil {
		return Overview{}, err
	}
	st := Overview{At: time.Now().UTC()}
	list := make([]ShardStatus, j.Shards())
	errs := make([]error, j.Shards())
	var wg sync.WaitGroup
	sem := make(chan struct{}, 8) // a few requests at once, not one per shard
	for shard := range list {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			list[shard], errs[shard] = readShardStatus(ctx, stream, owners, reports, j.Name(), cfg.Durable, shard, st.At)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return Overview{}, err
	}
	for _, s := range list {
		st.add(s)
	}
	rec, err := lost.Open(ctx, js, j.Name(), cfg.Durable)
	if err != nil {
		return Overview{}, err
	}
	behind, err := rec.List(ctx, "")
	if err != nil {
		return Overview{}, err
	}
	for _, e := range behind {
		if e.Held() {
			st.Totals.Held = append(st.Totals.Held, e.BehindPartition)
			continue
		}
		st.Totals.Behind = append(st.Totals.Behind, e.BehindPartition)
	}
	st.Totals.BehindCount = len(st.Totals.Behind)
	return st, nil
}

func readShardStatus(ctx context.Context, stream jetstream.Stream, owners, reports jetstream.KeyValue, journalName, durable string, shard int, now time.Time) (ShardStatus, error) {
	s, err := readShard(ctx, stream, durable, shard, now)
	if err != nil {
		return s, fmt.Errorf("shard %d: %w", shard, err)
	}
	rep, err := readReport(ctx, reports, Key(journalName, durable, shard))
	if err != nil {
		return s, fmt.Errorf("shard %d: %w", shard, err)
	}
	s.Owner, s.Rate, s.reporter, s.pruned = rep.Instance, rep.Rate, rep.Instance, rep.PrunedRows
	if owners != nil {
		lease, err := readLease(ctx, owners, shard)
		if err != nil {
			return s, fmt.Errorf("shard %d: %w", shard, err)
		}
		if lease.Owner != "" { // else an instance with static shards may report it
			s.Owner, s.OwnerSince = lease.Owner, &lease.Since
		}
	}
	return s, nil
}

func (st *Overview) add(s ShardStatus) {
	st.Shards = append(st.Shards, s)
	t := &st.Totals
	t.Shards++
	if s.Owner != "" {
		t.Owned++
	} else if s.Pending > 0 {
		t.Unowned = append(t.Unowned, s.Shard)
	}
	t.Pending += s.Pending
	t.MaxLagSeconds = max(t.MaxLagSeconds, s.LagSeconds)
	t.Rate += s.Rate
	st.addPruned(s)
}

// readShard reads a shard's position from its consumer and, when it has
// pending messages, the journal time of the first.
func readShard(ctx context.Context, stream jetstream.Stream, durable string, shard int, now time.Time) (ShardStatus, error) {
	s := ShardStatus{Shard: shard}
	filter := wire.ShardFilter(shard)
	a, err := journal.AppliedThrough(ctx, stream, durable, shard)
	if err != nil {
		return s, err
	}
	s.Consumer, s.Applied, s.Pending = a.Consumer, a.Through, a.Pending
	if !a.Consumer {
		if s.Pending, err = countFilter(ctx, stream, filter); err != nil {
			return s, err
		}
	}
	if s.Pending == 0 {
		return s, nil
	}
	m, err := stream.GetMsg(ctx, s.Applied+1, jetstream.WithGetMsgSubject(filter))
	switch {
	case errors.Is(err, jetstream.ErrMsgNotFound):
		return s, nil // trimmed or acknowledged meanwhile
	case err != nil:
		return s, fmt.Errorf("oldest pending message: %w", err)
	}
	s.LagSeconds = max(now.Sub(m.Time).Seconds(), 0)
	return s, nil
}

// countFilter counts the stream's messages on filter with an ephemeral
// consumer that is deleted at once (and expires by itself if not).
func countFilter(ctx context.Context, stream jetstream.Stream, filter string) (uint64, error) {
	c, err := stream.CreateConsumer(ctx, jetstream.ConsumerConfig{
		FilterSubject: filter, AckPolicy: jetstream.AckNonePolicy,
		InactiveThreshold: 10 * time.Second, MemoryStorage: true,
	})
	if err != nil {
		return 0, fmt.Errorf("count messages: %w", err)
	}
	defer func() { _ = stream.DeleteConsumer(context.WithoutCancel(ctx), c.CachedInfo().Name) }()
	return c.CachedInfo().NumPending, nil
}

func openBucket(ctx context.Context, js jetstream.JetStream, name string) (jetstream.KeyValue, error) {
	kv, err := js.KeyValue(ctx, name)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("bucket %s: %w", name, err)
	}
	return kv, nil
}

// readReport reads a shard's report; the zero report when there is none
// or it is older than TTL.
func readReport(ctx context.Context, kv jetstream.KeyValue, key string) (ShardReport, error) {
	var r ShardReport
	if kv == nil {
		return r, nil
	}
	e, err := kv.Get(ctx, key)
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound):
		return r, nil
	case err != nil:
		return r, fmt.Errorf("status report: %w", err)
	}
	if err := json.Unmarshal(e.Value(), &r); err != nil {
		return ShardReport{}, fmt.Errorf("status report %s: %w", key, err)
	}
	if time.Since(e.Created()) > TTL {
		return ShardReport{}, nil
	}
	return r, nil
}

// readLease reads a shard's lease; the zero lease when none holds it.
func readLease(ctx context.Context, kv jetstream.KeyValue, shard int) (shards.Lease, error) {
	var lease shards.Lease
	e, err := kv.Get(ctx, shards.ShardKeyPrefix+strconv.Itoa(shard))
	switch {
	case errors.Is(err, jetstream.ErrKeyNotFound):
		return lease, nil
	case err != nil:
		return lease, fmt.Errorf("lease: %w", err)
	}
	if err := json.Unmarshal(e.Value(), &lease); err != nil {
		return shards.Lease{}, fmt.Errorf("lease of shard %d: %w", shard, err)
	}
	return lease, nil
}
