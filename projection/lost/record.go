package lost

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/tablejournal/tablejournal/wire"
)

// Record is the bucket of one journal and consumer prefix. A Record
// opened where no bucket exists yet is empty and read-only.
type Record struct {
	name string
	kv   jetstream.KeyValue // nil: no bucket, nothing recorded
	// js and stream are the journal, where an entry's partition key is
	// found (resolve).
	js     jetstream.JetStream
	stream string
}

// Entry is a recorded partition with the revision of its key, for a
// removal that does not lose a newer entry.
type Entry struct {
	wire.BehindPartition
	Revision uint64
	// Key is the partition's wire.BehindKey (for an entry of the legacy
	// form too), which names it when its partition key is unknown.
	Key string
}

// Ensure opens the record of the consumers named durable on journal
// stream, creating its bucket (file storage, replicas copies) if needed.
func Ensure(ctx context.Context, js jetstream.JetStream, stream, durable string, replicas int) (*Record, error) {
	name := wire.BehindBucket(stream, durable)
	kv, err := js.KeyValue(ctx, name)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		kv, err = js.CreateKeyValue(ctx, jetstream.KeyValueConfig{
			Bucket: name, Description: "tablejournal partitions behind the journal (the store lost confirmed writes)",
			History: 1, Storage: jetstream.FileStorage, Replicas: max(replicas, 1),
		})
		if errors.Is(err, jetstream.ErrBucketExists) {
			kv, err = js.KeyValue(ctx, name)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("record of partitions behind %s: %w", name, err)
	}
	return &Record{name: name, kv: kv, js: js, stream: journalName(stream)}, nil
}

// Open opens the record of the consumers named durable on journal stream
// for reading and removing entries; without a bucket (no projector has
// run) it is empty.
func Open(ctx context.Context, js jetstream.JetStream, stream, durable string) (*Record, error) {
	name := wire.BehindBucket(stream, durable)
	kv, err := js.KeyValue(ctx, name)
	if err != nil && !errors.Is(err, jetstream.ErrBucketNotFound) {
		return nil, fmt.Errorf("record of partitions behind %s: %w", name, err)
	}
	return &Record{name: name, kv: kv, js: js, stream: journalName(stream)}, nil
}

// Name is the bucket's name.
func (r *Record) Name() string { return r.name }

func journalName(stream string) string {
	if stream == "" {
		return wire.JournalStream
	}
	return stream
}

// Add records b unless its partition is recorded already (the first
// finding is kept). The entry holds the partition key only hashed
// (wire.BehindKey); readers find it again in the journal.
func (r *Record) Add(ctx context.Context, b wire.BehindPartition) error {
	if r.kv == nil {
		return fmt.Errorf("record %s: no bucket", r.name)
	}
	stored := b
	stored.PK, stored.PKErased = "", false
	data, err := json.Marshal(stored)
	if err != nil {
		return err
	}
	_, err = r.kv.Create(ctx, wire.BehindKey(b.Table, b.PK), data)
	if err != nil && !errors.Is(err, jetstream.ErrKeyExists) {
		return fmt.Errorf("record %s/%q in %s: %w", b.Table, b.PK, r.name, err)
	}
	return nil
}

// List returns every recorded partition, by table and key when table is
// "", else those of table.
func (r *Record) List(ctx context.Context, table string) ([]Entry, error) {
	var out []Entry
	err := r.each(ctx, func(e Entry, deleted bool) {
		if !deleted && (table == "" || e.Table == table) {
			out = append(out, e)
		}
	}, nil)
	sortEntries(out)
	return out, err
}

// Remove deletes the entry of a partition if its key is still at
// revision rev (0: whatever it holds). It reports whether it removed one.
func (r *Record) Remove(ctx context.Context, table, pk string, rev uint64) (bool, error) {
	if r.kv == nil {
		return false, nil
	}
	var opts []jetstream.KVDeleteOpt
	if rev != 0 {
		opts = append(opts, jetstream.LastRevision(rev))
	}
	err := r.kv.Delete(ctx, wire.BehindKey(table, pk), opts...)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, jetstream.ErrKeyNotFound):
		return false, nil
	default:
		return false, fmt.Errorf("remove %s/%q from %s: %w", table, pk, r.name, err)
	}
}

// Watch calls fn with every entry recorded now, then loaded, then fn with
// every change (deleted: the partition's entry was removed) until ctx
// ends or the watch fails.
func (r *Record) Watch(ctx context.Context, fn func(e Entry, deleted bool), loaded func()) error {
	if r.kv == nil {
		return fmt.Errorf("record %s: no bucket", r.name)
	}
	return r.each(ctx, fn, loaded)
}

// each reads the bucket's entries through one watcher: up to now when
// follow is nil, else on until ctx ends, calling follow once the entries
// of now were read.
func (r *Record) each(ctx context.Context, fn func(e Entry, deleted bool), follow func()) error {
	if r.kv == nil {
		return nil
	}
	var opts []jetstream.WatchOpt
	if follow == nil {
		opts = append(opts, jetstream.IgnoreDeletes())
	}
	w, err := r.kv.WatchAll(ctx, opts...)
	if err != nil {
		return fmt.Errorf("read %s: %w", r.name, err)
	}
	defer func() { _ = w.Stop() }()
	for {
		var kve jetstream.KeyValueEntry
		var ok bool
		select {
		case <-ctx.Done():
			if follow == nil {
				return fmt.Errorf("read %s: %w", r.name, ctx.Err())
			}
			return nil
		case kve, ok = <-w.Updates():
		}
		switch {
		case !ok:
			return fmt.Errorf("read %s: the watch ended", r.name)
		case kve == nil: // the entries of now are read
			if follow == nil {
				return nil
			}
			follow()
			continue
		}
		e, err := r.decode(ctx, kve)
		if err != nil {
			return fmt.Errorf("read %s: %w", r.name, err)
		}
		fn(e, kve.Operation() != jetstream.KeyValuePut)
	}
}

// decode reads an entry: the key names the table and the partition key's
// hash, the value says the rest (nothing, for a deletion); the partition
// key is found in the journal (resolve).
func (r *Record) decode(ctx context.Context, kve jetstream.KeyValueEntry) (Entry, error) {
	table, hash, pk, legacy, err := wire.ParseBehindKey(kve.Key())
	if err != nil {
		return Entry{}, err
	}
	e := Entry{Revision: kve.Revision(), Key: kve.Key()}
	if legacy {
		e.Key = wire.BehindKey(table, pk)
	}
	if kve.Operation() != jetstream.KeyValuePut {
		e.Table, e.PK = table, pk // a deletion: the key is all it names
		return e, nil
	}
	if err := json.Unmarshal(kve.Value(), &e.BehindPartition); err != nil {
		return Entry{}, fmt.Errorf("key %s: %w", kve.Key(), err)
	}
	if e.Table == "" || legacy {
		e.Table = table
	}
	e.PK, e.PKErased = pk, false
	if !legacy {
		if err := r.resolve(ctx, &e.BehindPartition, hash); err != nil {
			return Entry{}, fmt.Errorf("key %s: %w", kve.Key(), err)
		}
	}
	return e, nil
}

// resolve finds the partition key of b, whose SHA-256 is hash, in the
// journal: the subject of the message at b.AppliedSeq, else at
// b.TableSeq, else of any message of b's table; PKErased when none is
// left (the partition was erased).
func (r *Record) resolve(ctx context.Context, b *wire.BehindPartition, hash string) error {
	s, err := r.js.Stream(ctx, r.stream)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		b.PKErased = true
		return nil
	}
	if err != nil {
		return fmt.Errorf("find the partition key in %s: %w", r.stream, err)
	}
	match := func(subject string) bool {
		table, _, pk, err := wire.ParseJournalSubject(subject)
		if err != nil || !wire.SubjectHoldsTable(table, b.Table) || wire.BehindPKHash(pk) != hash {
			return false
		}
		b.PK = pk
		return true
	}
	for _, seq := range []uint64{b.AppliedSeq, b.TableSeq} {
		if seq == 0 {
			continue
		}
		m, err := s.GetMsg(ctx, seq)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			continue
		}
		if err != nil {
			return fmt.Errorf("find the partition key at %s seq %d: %w", r.stream, seq, err)
		}
		if match(m.Subject) {
			return nil
		}
	}
	for _, f := range wire.TableFilters(b.Table) {
		info, err := s.Info(ctx, jetstream.WithSubjectFilter(f))
		if err != nil {
			return fmt.Errorf("find the partition key in %s: %w", r.stream, err)
		}
		for subject := range info.State.Subjects {
			if match(subject) {
				return nil
			}
		}
	}
	b.PKErased = true
	return nil
}
