package erasure

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/tablejournal/tablejournal/wire"
)

// behindMsgs are the messages of one key of a partition in the stream of
// a record of partitions behind (package projection/lost: a bucket
// wire.BehindBucketPrefix* per journal and consumer prefix).
type behindMsgs struct {
	stream, bucket, key string
	n                   int
	legacy              bool // the key holds the partition key in clear
}

// keyBehind finds the entries of t's partition in every record of
// partitions behind: its wire.BehindKey (a hash of the partition key) and
// its wire.LegacyBehindKey (the key in clear), under every spelling of the
// table, values and delete and purge markers alike. A row erase finds
// none: the partition stays, and so does its entry, which holds no key.
func (r *Eraser) keyBehind(ctx context.Context, t Target) ([]behindMsgs, error) {
	if t.RK != nil {
		return nil, nil
	}
	var found []behindMsgs
	names := r.JetStream().StreamNames(ctx)
	var streams []string
	for name := range names.Name() {
		if strings.HasPrefix(name, "KV_"+wire.BehindBucketPrefix) {
			streams = append(streams, name)
		}
	}
	if err := names.Err(); err != nil {
		return nil, fmt.Errorf("plan erase: list the records of partitions behind: %w", err)
	}
	for _, name := range streams {
		s, err := r.JetStream().Stream(ctx, name)
		if err != nil {
			return nil, fmt.Errorf("plan erase: %s: %w", name, err)
		}
		bucket := strings.TrimPrefix(name, "KV_")
		prefix := "$KV." + bucket + "."
		for _, legacy := range []bool{false, true} {
			filter := prefix + wire.BehindKey("*", t.PK)
			if legacy {
				filter = prefix + wire.LegacyBehindKey("*", t.PK)
			}
			info, err := s.Info(ctx, jetstream.WithSubjectFilter(filter))
			if err != nil {
				return nil, fmt.Errorf("plan erase: read %s: %w", name, err)
			}
			for subject, n := range info.State.Subjects {
				key := strings.TrimPrefix(subject, prefix)
				if table, _, _ := strings.Cut(key, "."); strings.EqualFold(table, t.Table) {
					found = append(found, behindMsgs{stream: name, bucket: bucket, key: key, n: int(n), legacy: legacy})
				}
			}
		}
	}
	return found, nil
}

// deleteBehind removes the messages found by keyBehind and returns how
// many. The buckets' streams deny message deletes, so each key's subject
// is purged; a key that holds only the hash is first purged through the
// bucket, so that a projector following the record sees the entry go.
// Its purge marker goes with the subject's purge, once every follower of
// the record was sent it (awaitFollowers): a marker purged before a
// follower's consumer sent it is never delivered, and that projector
// would go on counting the partition behind.
func (r *Eraser) deleteBehind(ctx context.Context, found []behindMsgs) (int, error) {
	n := 0
	for _, b := range found {
		s, err := r.JetStream().Stream(ctx, b.stream)
		if err != nil {
			return n, fmt.Errorf("erase from %s: %w", b.bucket, err)
		}
		subject := "$KV." + b.bucket + "." + b.key
		if !b.legacy {
			kv, err := r.JetStream().KeyValue(ctx, b.bucket)
			if err != nil {
				return n, fmt.Errorf("erase from %s: %w", b.bucket, err)
			}
			if err := kv.Purge(ctx, b.key); err != nil {
				return n, fmt.Errorf("erase from %s: %w", b.bucket, err)
			}
			if err := awaitFollowers(ctx, s, subject, followersWait); err != nil {
				return n, fmt.Errorf("erase from %s: %w", b.bucket, err)
			}
		}
		if err := s.Purge(ctx, jetstream.WithPurgeSubject(subject)); err != nil {
			return n, fmt.Errorf("erase from %s: %w", b.bucket, err)
		}
		n += b.n
	}
	return n, nil
}

// followersWait bounds awaitFollowers: a follower that has not been sent
// the marker by then (a projector stopped with its consumer not yet
// cleaned up) loses it, and learns the entry is gone when it next loads
// the record.
const followersWait = 5 * time.Second

// awaitFollowers waits until every consumer of stream s whose filter
// takes subject was sent its last message, or wait has passed. (A
// consumer's NumPending is no guide: it lags the purge that wrote the
// marker.)
func awaitFollowers(ctx context.Context, s jetstream.Stream, subject string, wait time.Duration) error {
	last, err := s.GetLastMsgForSubject(ctx, subject)
	if err != nil {
		return fmt.Errorf("the marker of %s: %w", subject, err)
	}
	deadline := time.Now().Add(wait)
	for {
		sent := true
		consumers := s.ListConsumers(ctx)
		for ci := range consumers.Info() {
			if ci.Delivered.Stream < last.Sequence && takes(ci.Config, subject) {
				sent = false
			}
		}
		if err := consumers.Err(); err != nil {
			return fmt.Errorf("the followers of %s: %w", subject, err)
		}
		if sent || time.Now().After(deadline) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(20 * time.Millisecond): // a condition polled with a deadline
		}
	}
}

// takes says whether a consumer with configuration c is sent messages of
// subject: it has no filter, or a filter subject matches it.
func takes(c jetstream.ConsumerConfig, subject string) bool {
	filters := c.FilterSubjects
	if c.FilterSubject != "" {
		filters = append(filters, c.FilterSubject)
	}
	if len(filters) == 0 {
		return true
	}
	for _, f := range filters {
		if subjectMatches(f, subject) {
			return true
		}
	}
	return false
}

// subjectMatches says whether the NATS subject filter f (tokens, "*" for
// any one, ">" for the rest) matches subject.
func subjectMatches(f, subject string) bool {
	ft, st := strings.Split(f, "."), strings.Split(subject, ".")
	for i, t := range ft {
		switch {
		case t == ">":
			return len(st) > i
		case i >= len(st):
			return false
		case t != "*" && t != st[i]:
			return false
		}
	}
	return len(ft) == len(st)
}
