package move

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"fmt"
	"hash"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Digest sums up a stream's messages up to a sequence: how many, the first
// and last sequence, and the SHA-256 of every message's sequence, stored
// subject, headers (the Nats-Msg-Id among them), stored time and body, in
// sequence order.
type Digest struct {
	Messages uint64 `json:"messages"`
	FirstSeq uint64 `json:"firstSeq"`
	LastSeq  uint64 `json:"lastSeq"`
	SHA256   string `json:"sha256"`
}

func (d Digest) String() string {
	return fmt.Sprintf("%d messages, sequences %d to %d, sha256 %s", d.Messages, d.FirstSeq, d.LastSeq, d.SHA256)
}

// digestStream reads stream from its first message to sequence last.
func digestStream(ctx context.Context, js jetstream.JetStream, stream string, last uint64) (Digest, error) {
	h := sha256.New()
	d := Digest{}
	if last == 0 {
		d.SHA256 = hex.EncodeToString(h.Sum(nil))
		return d, nil
	}
	s, err := js.Stream(ctx, stream)
	if err != nil {
		return d, fmt.Errorf("digest %s: %w", stream, err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		return d, fmt.Errorf("digest %s: %w", stream, err)
	}
	if info.State.Msgs > 0 {
		if err := digestMsgs(ctx, js, stream, last, h, &d); err != nil {
			return d, err
		}
	}
	d.SHA256 = hex.EncodeToString(h.Sum(nil))
	return d, nil
}

func digestMsgs(ctx context.Context, js jetstream.JetStream, stream string, last uint64, h hash.Hash, d *Digest) error {
	cons, err := js.OrderedConsumer(ctx, stream, jetstream.OrderedConsumerConfig{InactiveThreshold: time.Minute})
	if err != nil {
		return fmt.Errorf("digest %s: %w", stream, err)
	}
	defer deleteOrdered(ctx, js, stream, cons)
	it, err := cons.Messages()
	if err != nil {
		return fmt.Errorf("digest %s: %w", stream, err)
	}
	defer it.Stop()
	for {
		msg, err := it.Next(jetstream.NextContext(ctx))
		if err != nil {
			return fmt.Errorf("digest %s at sequence %d: %w", stream, d.LastSeq, err)
		}
		meta, err := msg.Metadata()
		if err != nil {
			return fmt.Errorf("digest %s: %w", stream, err)
		}
		seq := meta.Sequence.Stream
		if seq > last {
			return nil
		}
		writeMsg(h, seq, msg.Subject(), msg.Headers(), meta.Timestamp, msg.Data())
		if d.Messages == 0 {
			d.FirstSeq = seq
		}
		d.Messages++
		d.LastSeq = seq
		if seq == last || meta.NumPending == 0 {
			return nil
		}
	}
}

// writeMsg writes one message to h, every field length-prefixed and the
// headers in key order.
func writeMsg(h hash.Hash, seq uint64, subject string, hdr map[string][]string, at time.Time, body []byte) {
	var n [8]byte
	field := func(b []byte) {
		binary.BigEndian.PutUint64(n[:], uint64(len(b)))
		h.Write(n[:])
		h.Write(b)
	}
	binary.BigEndian.PutUint64(n[:], seq)
	h.Write(n[:])
	field([]byte(subject))
	keys := make([]string, 0, len(hdr))
	for k := range hdr {
		if dropped(k) {
			continue
		}
		keys = append(keys, k)
	}
	slices.Sort(keys)
	binary.BigEndian.PutUint64(n[:], uint64(len(keys)))
	h.Write(n[:])
	for _, k := range keys {
		field([]byte(k))
		binary.BigEndian.PutUint64(n[:], uint64(len(hdr[k])))
		h.Write(n[:])
		for _, v := range hdr[k] {
			field([]byte(v))
		}
	}
	binary.BigEndian.PutUint64(n[:], uint64(at.UnixNano()))
	h.Write(n[:])
	field(body)
}

// deleteOrdered removes an ordered consumer once done with, rather than
// leaving it to the server's inactivity threshold.
func deleteOrdered(ctx context.Context, js jetstream.JetStream, stream string, cons jetstream.Consumer) {
	if name := cons.CachedInfo().Name; name != "" {
		_ = js.DeleteConsumer(context.WithoutCancel(ctx), stream, name)
	}
}

// droppedHeaders are the prefixes of the headers a JetStream mirror does
// not copy: the conditions a publish was stored under (Nats-Expected-*)
// and atomic batches (Nats-Batch-*), instructions to the server that were
// checked when the command was stored, not part of it. The digest leaves
// them out on both sides.
var droppedHeaders = []string{"Nats-Expected-", "Nats-Batch-"}

func dropped(key string) bool {
	for _, p := range droppedHeaders {
		if strings.HasPrefix(key, p) {
			return true
		}
	}
	return false
}
