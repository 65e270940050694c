package erasure

import (
	"context"
	"fmt"
	"strings"

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
// Its purge marker goes with the subject's purge.
func (r *Eraser) deleteBehind(ctx context.Context, found []behindMsgs) (int, error) {
	n := 0
	for _, b := range found {
		if !b.legacy {
			kv, err := r.JetStream().KeyValue(ctx, b.bucket)
			if err != nil {
				return n, fmt.Errorf("erase from %s: %w", b.bucket, err)
			}
			if err := kv.Purge(ctx, b.key); err != nil {
				return n, fmt.Errorf("erase from %s: %w", b.bucket, err)
			}
		}
		s, err := r.JetStream().Stream(ctx, b.stream)
		if err != nil {
			return n, fmt.Errorf("erase from %s: %w", b.bucket, err)
		}
		if err := s.Purge(ctx, jetstream.WithPurgeSubject("$KV."+b.bucket+"."+b.key)); err != nil {
			return n, fmt.Errorf("erase from %s: %w", b.bucket, err)
		}
		n += b.n
	}
	return n, nil
}
