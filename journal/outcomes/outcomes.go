package outcomes

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/tablejournal/tablejournal/internal/jsapi"
	"github.com/tablejournal/tablejournal/journal"
	"github.com/tablejournal/tablejournal/wire"
)

// Ensure creates the OUTCOMES stream, or opens it if it exists.
//
// The stream keeps every outcome (no MaxMsgsPerSubject): one command ID can
// have several outcomes, one per journal message that carried it (applied at
// one sequence, then duplicate when re-published after the dedup window), and
// replay blame needs the applied one, which a per-subject limit of one would
// overwrite. Reader reads it. Republishing the same outcome is
// deduplicated by Nats-Msg-Id "outcome-<seq>".
//
// journal.WithReplicas sets the stream's replica count (see journal.CheckReplicas).
func Ensure(ctx context.Context, js jetstream.JetStream, opts ...journal.EnsureOption) (jetstream.Stream, error) {
	s, _, err := EnsureConfig(ctx, js, Config{}, opts...)
	return s, err
}

// Config configures the OUTCOMES stream.
type Config struct {
	// MaxAge is how long outcomes are kept (writers waiting for one and
	// replay blame read them). If zero, a new stream keeps them forever and
	// an existing stream's limit is left as it is; a negative MaxAge
	// removes a limit set before.
	MaxAge time.Duration
}

// EnsureConfig is Ensure with cfg applied, to a new stream
// or an existing one (jsapi.EnsureStream); it also returns what it changed in an
// existing stream's configuration.
func EnsureConfig(ctx context.Context, js jetstream.JetStream, cfg Config, opts ...journal.EnsureOption) (jetstream.Stream, []string, error) {
	replicas := jsapi.Options(opts).Replicas
	want := jetstream.StreamConfig{
		Name:        wire.OutcomesStream,
		Description: "tablejournal outcomes: applied, rejected or duplicate, per journal message (outcomes.<base64url(id)>)",
		Subjects:    []string{wire.OutcomesPrefix + ".>"},
		Storage:     jetstream.FileStorage,
		Retention:   jetstream.LimitsPolicy,
		Duplicates:  jsapi.DefaultDuplicates,
		MaxAge:      max(cfg.MaxAge, 0),
		AllowDirect: true,
		Replicas:    max(replicas, 1),
	}
	s, changes, err := jsapi.EnsureStream(ctx, js, want, jsapi.Managed{MaxAge: cfg.MaxAge != 0,
		Check: func(have jetstream.StreamConfig) error { return journal.CheckReplicas(have, replicas) }})
	if err != nil {
		return nil, nil, fmt.Errorf("ensure stream %s: %w", wire.OutcomesStream, err)
	}
	return s, changes, nil
}

// Message renders o as the message the OUTCOMES stream stores, for callers
// that publish asynchronously. Its Nats-Msg-Id is "outcome-<seq>", so
// publishing the outcome of one journal sequence twice stores it once.
func Message(o wire.Outcome) (*nats.Msg, error) {
	data, err := o.Encode()
	if err != nil {
		return nil, err
	}
	return &nats.Msg{
		Subject: wire.OutcomeSubject(o.ID),
		Header: nats.Header{
			jetstream.MsgIDHeader:  []string{wire.OutcomeMsgID(o.Seq)},
			wire.HeaderContentType: []string{wire.ContentTypeJSON},
		},
		Data: data,
	}, nil
}

// publishOutcome stores o and waits for the acknowledgement. Publishing the
// outcome of the same journal sequence twice stores it once.
func publishOutcome(ctx context.Context, js jetstream.JetStream, o wire.Outcome) error {
	msg, err := Message(o)
	if err != nil {
		return fmt.Errorf("publish %w", err)
	}
	if _, err := js.PublishMsg(ctx, msg); err != nil {
		return fmt.Errorf("publish outcome %s seq %d: %w", o.ID, o.Seq, err)
	}
	return nil
}

// Reader reads the OUTCOMES stream: the one place that knows its name,
// its subjects and how an outcome is encoded. A command ID has one outcome
// per journal message that carried it (applied at one sequence, duplicate
// at a later one when it was published again), so it can be looked up
// (the latest), read whole (its history), awaited for one journal
// sequence, or followed. It is safe for concurrent use.
type Reader struct {
	js      jetstream.JetStream
	stream  string
	hint    jsapi.SentinelHint // of LatestAll's fresh batches
	replies *jsapi.ReplyMux    // LatestAll's answers
}

// NewReader returns the reader of the OUTCOMES stream through js. From
// its first LatestAll on, it holds one subscription on js's connection
// for the answers, until it is garbage collected or the connection
// closes.
func NewReader(js jetstream.JetStream) *Reader {
	o := &Reader{js: js, stream: wire.OutcomesStream, replies: jsapi.NewReplyMux()}
	runtime.AddCleanup(o, (*jsapi.ReplyMux).Close, o.replies)
	return o
}

// Latest returns the latest outcome of command id, or an error wrapping
// journal.ErrNotFound if it has none yet. It is one request to the stream's
// leader, so it sees every outcome stored before the call (a direct get
// may be answered by a replica that is behind).
func (o *Reader) Latest(ctx context.Context, id string) (wire.Outcome, error) {
	m, err := jsapi.LeaderGet(ctx, o.js, o.stream, jsapi.MsgGetReq{LastFor: wire.OutcomeSubject(id)})
	if err != nil {
		return wire.Outcome{}, fmt.Errorf("outcome of %s: %w", id, err)
	}
	x, err := decodeOutcome(m.Seq, m.Data)
	if err != nil {
		return wire.Outcome{}, fmt.Errorf("outcome of %s: %w", id, err)
	}
	return x, nil
}

// History returns every outcome of command id, oldest first (one per
// journal message that carried the ID); none if it has no outcome yet. It
// reads them from the stream's leader, one request per outcome (an ID has
// one or two), so it sees every outcome stored before the call.
func (o *Reader) History(ctx context.Context, id string) ([]wire.Outcome, error) {
	var out []wire.Outcome
	for seq := uint64(1); ; {
		m, err := jsapi.LeaderGet(ctx, o.js, o.stream, jsapi.MsgGetReq{Seq: seq, NextFor: wire.OutcomeSubject(id)})
		if errors.Is(err, journal.ErrNotFound) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("outcomes of %s: %w", id, err)
		}
		x, err := decodeOutcome(m.Seq, m.Data)
		if err != nil {
			return nil, fmt.Errorf("outcomes of %s: %w", id, err)
		}
		out = append(out, x)
		seq = m.Seq + 1
	}
}

// LatestAll returns the latest outcome of each of ids that has one, by
// command ID, with one batched direct get per thousand IDs (JetStream's
// multi_last) instead of one request per command, and one request to the
// leader that makes the answer include every outcome stored before the
// call (jsapi.FreshDirectBatch); from the second call of a Reader on, the
// two go at once. IDs without an outcome are absent from the map.
func (o *Reader) LatestAll(ctx context.Context, ids []string) (map[string]wire.Outcome, error) {
	out := make(map[string]wire.Outcome, len(ids))
	seen := make(map[string]bool, len(ids))
	var subjects []string
	flush := func() error {
		if len(subjects) == 0 {
			return nil
		}
		err := jsapi.FreshDirectBatch(ctx, o.js, o.replies, o.stream, subjects, &o.hint, func(m jsapi.Msg) error {
			x, err := decodeOutcome(m.Seq, m.Data)
			if err != nil {
				return err
			}
			out[x.ID] = x
			return nil
		})
		subjects = subjects[:0]
		return err
	}
	for _, id := range ids {
		if id == "" || seen[id] {
			continue
		}
		seen[id] = true
		subjects = append(subjects, wire.OutcomeSubject(id))
		if len(subjects) == jsapi.MultiLastMax-1 { // and the sentinel
			if err := flush(); err != nil {
				return nil, fmt.Errorf("latest outcomes: %w", err)
			}
		}
	}
	if err := flush(); err != nil {
		return nil, fmt.Errorf("latest outcomes: %w", err)
	}
	return out, nil
}

// Await waits for the outcome of command id published at journal sequence
// seq, and returns it rather than a later outcome of the same ID. It
// subscribes to the ID's outcomes before it looks up those stored, so an
// outcome stored at any moment is seen, and it creates no consumer (see
// Watch).
func (o *Reader) Await(ctx context.Context, id string, seq uint64) (wire.Outcome, error) {
	w, err := o.Watch(id)
	if err != nil {
		return wire.Outcome{}, err
	}
	defer w.Stop()
	return w.Await(ctx, seq, true)
}

// Last returns the OUTCOMES sequence of the newest outcome stored (0 when
// there is none): follow from Last()+1 to see only the outcomes stored
// after this call. It fails wrapping jetstream.ErrStreamNotFound when the
// projector has not created the stream.
func (o *Reader) Last(ctx context.Context) (uint64, error) {
	s, err := o.js.Stream(ctx, o.stream)
	if err != nil {
		return 0, fmt.Errorf("stream %s: %w", o.stream, err)
	}
	return s.CachedInfo().State.LastSeq, nil
}

// Follow passes fn every outcome stored from OUTCOMES sequence from on (0
// or 1: from the first), with its OUTCOMES sequence, in order, waiting for
// new ones, until fn returns true or ctx ends (then it returns ctx's
// error).
func (o *Reader) Follow(ctx context.Context, from uint64, fn func(seq uint64, x wire.Outcome) bool) error {
	return o.read(ctx, wire.OutcomesPrefix+".>", from, func(seq uint64, x wire.Outcome, _ uint64) bool { return fn(seq, x) })
}

// AwaitAll waits for the outcome of every publish of rs and returns them
// in the order of rs. It reads the outcomes stored from OUTCOMES sequence
// from on once, in one pass; the caller takes from as Last()+1 before it
// publishes the first command. A publish the journal had stored already
// (Duplicate) may have its outcome from before from, so it is awaited
// alone. On error the outcomes not found are zero and the error says how
// many.
func (o *Reader) AwaitAll(ctx context.Context, from uint64, rs []journal.PublishResult) ([]wire.Outcome, error) {
	out := make([]wire.Outcome, len(rs))
	want := make(map[uint64]int) // journal sequence → index in rs
	var held []int
	for i, r := range rs {
		if r.Duplicate {
			held = append(held, i)
		} else {
			want[r.Seq] = i
		}
	}
	if len(want) > 0 {
		err := o.Follow(ctx, from, func(_ uint64, x wire.Outcome) bool {
			if i, ok := want[x.Seq]; ok && rs[i].ID == x.ID {
				out[i] = x
				delete(want, x.Seq)
			}
			return len(want) == 0
		})
		if err != nil {
			return out, fmt.Errorf("%d of %d outcomes missing: %w", len(want)+len(held), len(rs), err)
		}
	}
	for n, i := range held {
		x, err := o.Await(ctx, rs[i].ID, rs[i].Seq)
		if err != nil {
			return out, fmt.Errorf("%d of %d outcomes missing: %w", len(held)-n, len(rs), err)
		}
		out[i] = x
	}
	return out, nil
}

// read passes the outcomes on subjects filter, from OUTCOMES sequence from
// on, to fn with their sequence and how many matching ones are stored
// after them, until fn returns true or ctx ends. Its consumer is deleted
// when it returns.
func (o *Reader) read(ctx context.Context, filter string, from uint64, fn func(seq uint64, x wire.Outcome, pending uint64) bool) error {
	cfg := jetstream.OrderedConsumerConfig{
		FilterSubjects:    []string{filter},
		DeliverPolicy:     jetstream.DeliverAllPolicy,
		InactiveThreshold: time.Minute,
	}
	if from > 1 {
		cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, from
	}
	return jsapi.ReadOrdered(ctx, o.js, o.stream, cfg, func(m jetstream.Msg, md *jetstream.MsgMetadata) error {
		x, err := decodeOutcome(md.Sequence.Stream, m.Data())
		if err != nil {
			return err
		}
		if fn(md.Sequence.Stream, x, md.NumPending) {
			return jsapi.ErrStop
		}
		return nil
	})
}

// decodeOutcome decodes the outcome stored at OUTCOMES sequence seq: the
// one place that reads the encoding Message writes.
func decodeOutcome(seq uint64, data []byte) (wire.Outcome, error) {
	o, err := wire.DecodeOutcome(data)
	if err != nil {
		return wire.Outcome{}, fmt.Errorf("outcome at %s sequence %d: %w", wire.OutcomesStream, seq, err)
	}
	return o, nil
}
