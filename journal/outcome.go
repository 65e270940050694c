package journal

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/internal/wirejson"
)

// OutcomesStream is the name of the stream that holds outcomes.
const OutcomesStream = "OUTCOMES"

// OutcomesPrefix is the first token of every outcome subject.
const OutcomesPrefix = "outcomes"

// Status says what became of a command.
type Status string

// The three statuses of SPEC §5.
const (
	// StatusApplied: the command's transaction committed; Rows holds the
	// versions it produced.
	StatusApplied Status = "applied"
	// StatusRejected: nothing of the command was written; Reason says why.
	StatusRejected Status = "rejected"
	// StatusDuplicate: the command ID had already been applied, so this
	// journal message was not applied again.
	StatusDuplicate Status = "duplicate"
)

// Code is the stable, machine-readable kind of a rejected outcome (SPEC
// §5). Codes are never renamed: clients in any language branch on them.
type Code string

// The rejection codes of SPEC §5.
const (
	// CodeInvalid: the command breaks a rule of SPEC §2 whatever the rows
	// hold (Rule names it), or its message does not decode, or its subject
	// and body disagree.
	CodeInvalid Code = "invalid"
	// CodeVersionMismatch: an ifVersion guard failed: the row is at
	// another version, or does not exist.
	CodeVersionMismatch Code = "version-mismatch"
	// CodeExists: an insert found the row existing.
	CodeExists Code = "exists"
	// CodeNotFound: a replace, merge or delete found no row.
	CodeNotFound Code = "not-found"
	// CodeTooLarge: applied to the rows as they are, the command exceeds a
	// store limit (Rule names it: RuleTooManyProperties after a merge,
	// RuleEntityTooLarge for a version row, RuleTransactionTooLarge).
	CodeTooLarge Code = "too-large"
	// CodeLostWrite: the projector found the rows moved past the command
	// without a version of it: the store lost a write it had confirmed.
	CodeLostWrite Code = "lost-write"
)

// Rules of rejections found beside those of events.Rule.
const (
	// RuleSubjectMismatch: the table or partition key of the body differ
	// from the subject the command is stored under (ErrSubjectMismatch).
	RuleSubjectMismatch = "subject-mismatch"
	// RuleIDMismatch: the Nats-Msg-Id header differs from the command ID
	// (ErrIDMismatch).
	RuleIDMismatch = "id-mismatch"
	// RuleBadSubject: the subject is not a journal subject (ErrBadSubject).
	RuleBadSubject = "bad-subject"
	// RuleTooManyProperties: a merge leaves more properties than an entity
	// may hold (events.MaxProperties).
	RuleTooManyProperties = "too-many-properties"
	// RuleEntityTooLarge: a row with its system columns would be over the
	// store's entity limit.
	RuleEntityTooLarge = "entity-too-large"
	// RuleTransactionTooLarge: the command's rows with their version rows
	// exceed the store's transaction limits.
	RuleTransactionTooLarge = "transaction-too-large"
)

// RowVersion is one row version a command produced: an outcome's Rows, and
// the projector's own record of what it applied (projection.Result). The
// version row it names is keyed by the outcome's Seq (SPEC §4).
type RowVersion struct {
	RK      string `json:"rk"`
	Version int64  `json:"version"`
	// Op is the command's last operation on the row (events.OpDelete for
	// a tombstone).
	Op      events.OpKind `json:"op"`
	Deleted bool          `json:"deleted,omitempty"`
}

// Outcome is the result of one journal message, published by the projector
// and read by writers and replay blame. It travels as JSON.
type Outcome struct {
	// ID is the command ID.
	ID string `json:"id"`
	// Seq is the journal sequence of the command.
	Seq    uint64 `json:"seq"`
	Table  string `json:"table"`
	PK     string `json:"pk"`
	Status Status `json:"status"`
	// Reason explains a rejection (or a duplicate); empty when applied.
	// It is for people: programs branch on Code and Rule.
	Reason string `json:"reason,omitempty"`
	// Code is the stable, machine-readable kind of a rejection (SPEC §5);
	// empty for other statuses, and in outcomes stored before codes
	// existed.
	Code Code `json:"code,omitempty"`
	// Rule names the rule an invalid command broke (an events.Rule, or
	// one of the Rule* constants of this package), or the limit a
	// too-large one exceeds; empty when there is none.
	Rule string `json:"rule,omitempty"`
	// Rows are the row versions an applied command produced.
	Rows []RowVersion `json:"rows,omitempty"`
	// Pruned is the number of rows an applied prune command removed.
	Pruned int64 `json:"pruned,omitempty"`
	// At is the journal time of the command, not the projector's clock.
	At time.Time `json:"at"`
}

// OutcomeSubject returns the subject of a command's outcomes:
// outcomes.<base64url(id)>, since a command ID may contain '.'. A journal
// message that carries no usable ID (no Nats-Msg-Id and a body that does
// not decode, or an ID longer than events.MaxIDLen, which no valid command
// has) has its outcomes on outcomes.= ("=" is never base64url output):
// a subject must not be empty, nor as long as such an ID could be.
func OutcomeSubject(id string) string {
	if id == "" || len(id) > events.MaxIDLen {
		return OutcomesPrefix + ".="
	}
	return OutcomesPrefix + "." + base64.RawURLEncoding.EncodeToString([]byte(id))
}

// Bounds of an outcome message, so that every command has one whatever it
// holds.
const (
	// MaxReasonBytes is the longest Reason stored; a longer one (quoting a
	// huge field of a malformed message) is cut at a character boundary
	// and ends in "…".
	MaxReasonBytes = 4 << 10
	// MaxOutcomeBytes bounds an outcome message: an ID and a Reason of
	// bounded length, and the rows of at most events.MaxOpsPerCommand
	// operations with their keys, all JSON-escaped.
	MaxOutcomeBytes = 256 << 10
)

// bounded returns o with its ID and Reason cut to their bounds.
func (o Outcome) bounded() Outcome {
	o.ID = truncate(o.ID, events.MaxIDLen)
	o.Reason = truncate(o.Reason, MaxReasonBytes)
	return o
}

// truncate cuts s to at most n bytes at a character boundary, marking the
// cut with "…".
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const mark = "…"
	cut := n - len(mark)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + mark
}

// EnsureOutcomes creates the OUTCOMES stream, or opens it if it exists.
//
// The stream keeps every outcome (no MaxMsgsPerSubject): one command ID can
// have several outcomes, one per journal message that carried it (applied at
// one sequence, then duplicate when re-published after the dedup window), and
// replay blame needs the applied one, which a per-subject limit of one would
// overwrite. Outcomes reads it. Republishing the same outcome is
// deduplicated by Nats-Msg-Id "outcome-<seq>".
//
// WithReplicas sets the stream's replica count (see CheckReplicas).
func EnsureOutcomes(ctx context.Context, js jetstream.JetStream, opts ...EnsureOption) (jetstream.Stream, error) {
	s, _, err := EnsureOutcomesConfig(ctx, js, OutcomesConfig{}, opts...)
	return s, err
}

// OutcomesConfig configures the OUTCOMES stream.
type OutcomesConfig struct {
	// MaxAge is how long outcomes are kept (writers waiting for one and
	// replay blame read them). If zero, a new stream keeps them forever and
	// an existing stream's limit is left as it is; a negative MaxAge
	// removes a limit set before.
	MaxAge time.Duration
}

// EnsureOutcomesConfig is EnsureOutcomes with cfg applied, to a new stream
// or an existing one (EnsureStream); it also returns what it changed in an
// existing stream's configuration.
func EnsureOutcomesConfig(ctx context.Context, js jetstream.JetStream, cfg OutcomesConfig, opts ...EnsureOption) (jetstream.Stream, []string, error) {
	replicas := ensureOpts(opts).replicas
	want := jetstream.StreamConfig{
		Name:        OutcomesStream,
		Description: "tablejournal outcomes: applied, rejected or duplicate, per journal message (outcomes.<base64url(id)>)",
		Subjects:    []string{OutcomesPrefix + ".>"},
		Storage:     jetstream.FileStorage,
		Retention:   jetstream.LimitsPolicy,
		Duplicates:  DefaultDuplicates,
		MaxAge:      max(cfg.MaxAge, 0),
		AllowDirect: true,
		Replicas:    max(replicas, 1),
	}
	s, changes, err := EnsureStream(ctx, js, want, Managed{MaxAge: cfg.MaxAge != 0,
		Check: func(have jetstream.StreamConfig) error { return CheckReplicas(have, replicas) }})
	if err != nil {
		return nil, nil, fmt.Errorf("ensure stream %s: %w", OutcomesStream, err)
	}
	return s, changes, nil
}

// OutcomeMsg renders o as the message PublishOutcome stores, for callers
// that publish asynchronously. Its Nats-Msg-Id is "outcome-<seq>", so
// publishing the outcome of one journal sequence twice stores it once.
func OutcomeMsg(o Outcome) (*nats.Msg, error) {
	subject := OutcomeSubject(o.ID)
	o = o.bounded()
	data, err := o.marshal()
	if err != nil {
		return nil, fmt.Errorf("outcome %s: %w", o.ID, err)
	}
	return &nats.Msg{
		Subject: subject,
		Header: nats.Header{
			jetstream.MsgIDHeader: []string{"outcome-" + strconv.FormatUint(o.Seq, 10)},
			"Content-Type":        []string{"application/json"},
		},
		Data: data,
	}, nil
}

// marshal is json.Marshal(o), byte for byte (TestOutcomeMarshal), without
// reflection: the projector publishes one per command.
func (o Outcome) marshal() ([]byte, error) {
	b := make([]byte, 0, 128+len(o.ID)+len(o.Table)+len(o.PK)+len(o.Reason)+len(o.Rule)+len(o.Rows)*48)
	b = wirejson.Key(append(b, '{'), "id")
	b = wirejson.String(b, o.ID)
	b = wirejson.Key(append(b, ','), "seq")
	b = wirejson.Uint(b, o.Seq)
	b = wirejson.Key(append(b, ','), "table")
	b = wirejson.String(b, o.Table)
	b = wirejson.Key(append(b, ','), "pk")
	b = wirejson.String(b, o.PK)
	b = wirejson.Key(append(b, ','), "status")
	b = wirejson.String(b, string(o.Status))
	if o.Reason != "" {
		b = wirejson.String(wirejson.Key(append(b, ','), "reason"), o.Reason)
	}
	if o.Code != "" {
		b = wirejson.String(wirejson.Key(append(b, ','), "code"), string(o.Code))
	}
	if o.Rule != "" {
		b = wirejson.String(wirejson.Key(append(b, ','), "rule"), o.Rule)
	}
	if len(o.Rows) > 0 {
		b = append(wirejson.Key(append(b, ','), "rows"), '[')
		for i, r := range o.Rows {
			if i > 0 {
				b = append(b, ',')
			}
			b = wirejson.Key(append(b, '{'), "rk")
			b = wirejson.String(b, r.RK)
			b = wirejson.Key(append(b, ','), "version")
			b = wirejson.Int(b, r.Version)
			b = wirejson.Key(append(b, ','), "op")
			b = wirejson.String(b, string(r.Op))
			if r.Deleted {
				b = append(wirejson.Key(append(b, ','), "deleted"), "true"...)
			}
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	if o.Pruned != 0 {
		b = wirejson.Int(wirejson.Key(append(b, ','), "pruned"), o.Pruned)
	}
	b = wirejson.Key(append(b, ','), "at")
	b, err := wirejson.Time(b, o.At)
	if err != nil {
		return nil, fmt.Errorf("json: error calling MarshalJSON for type time.Time: %w", err)
	}
	return append(b, '}'), nil
}

// PublishOutcome stores o and waits for the acknowledgement. Publishing the
// outcome of the same journal sequence twice stores it once.
func PublishOutcome(ctx context.Context, js jetstream.JetStream, o Outcome) error {
	msg, err := OutcomeMsg(o)
	if err != nil {
		return fmt.Errorf("publish %w", err)
	}
	if _, err := js.PublishMsg(ctx, msg); err != nil {
		return fmt.Errorf("publish outcome %s seq %d: %w", o.ID, o.Seq, err)
	}
	return nil
}

// Outcomes reads the OUTCOMES stream: the one place that knows its name,
// its subjects and how an outcome is encoded. A command ID has one outcome
// per journal message that carried it (applied at one sequence, duplicate
// at a later one when it was published again), so it can be looked up
// (the latest), read whole (its history), awaited for one journal
// sequence, or followed. It is safe for concurrent use.
type Outcomes struct {
	js     jetstream.JetStream
	stream string
}

// NewOutcomes returns the reader of the OUTCOMES stream through js.
func NewOutcomes(js jetstream.JetStream) *Outcomes {
	return &Outcomes{js: js, stream: OutcomesStream}
}

// Latest returns the latest outcome of command id, or an error wrapping
// ErrNotFound if it has none yet. It is one request to the stream's
// leader, so it sees every outcome stored before the call (a direct get
// may be answered by a replica that is behind).
func (o *Outcomes) Latest(ctx context.Context, id string) (Outcome, error) {
	m, err := leaderGet(ctx, o.js, o.stream, msgGetReq{LastFor: OutcomeSubject(id)})
	if err != nil {
		return Outcome{}, fmt.Errorf("outcome of %s: %w", id, err)
	}
	x, err := decodeOutcome(m.seq, m.data)
	if err != nil {
		return Outcome{}, fmt.Errorf("outcome of %s: %w", id, err)
	}
	return x, nil
}

// History returns every outcome of command id, oldest first (one per
// journal message that carried the ID); none if it has no outcome yet. It
// reads them from the stream's leader, one request per outcome (an ID has
// one or two), so it sees every outcome stored before the call.
func (o *Outcomes) History(ctx context.Context, id string) ([]Outcome, error) {
	var out []Outcome
	for seq := uint64(1); ; {
		m, err := leaderGet(ctx, o.js, o.stream, msgGetReq{Seq: seq, NextFor: OutcomeSubject(id)})
		if errors.Is(err, ErrNotFound) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("outcomes of %s: %w", id, err)
		}
		x, err := decodeOutcome(m.seq, m.data)
		if err != nil {
			return nil, fmt.Errorf("outcomes of %s: %w", id, err)
		}
		out = append(out, x)
		seq = m.seq + 1
	}
}

// LatestAll returns the latest outcome of each of ids that has one, by
// command ID, with one batched direct get per thousand IDs (JetStream's
// multi_last) instead of one request per command, and one request to the
// leader that makes the answer include every outcome stored before the
// call (freshDirectBatch). IDs without an outcome are absent from the map.
func (o *Outcomes) LatestAll(ctx context.Context, ids []string) (map[string]Outcome, error) {
	out := make(map[string]Outcome, len(ids))
	seen := make(map[string]bool, len(ids))
	var subjects []string
	flush := func() error {
		if len(subjects) == 0 {
			return nil
		}
		err := freshDirectBatch(ctx, o.js, o.stream, subjects, func(m rawMsg) error {
			x, err := decodeOutcome(m.seq, m.data)
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
		subjects = append(subjects, OutcomeSubject(id))
		if len(subjects) == multiLastMax-1 { // and the sentinel
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
// subscribes before it reads, so an outcome stored at any moment is seen,
// and it does not poll.
func (o *Outcomes) Await(ctx context.Context, id string, seq uint64) (Outcome, error) {
	var found Outcome
	err := o.read(ctx, OutcomeSubject(id), 0, func(_ uint64, x Outcome, _ uint64) bool {
		found = x
		return x.ID == id && x.Seq == seq
	})
	if err != nil {
		return Outcome{}, fmt.Errorf("await the outcome of %s seq %d: %w", id, seq, err)
	}
	return found, nil
}

// Last returns the OUTCOMES sequence of the newest outcome stored (0 when
// there is none): follow from Last()+1 to see only the outcomes stored
// after this call. It fails wrapping jetstream.ErrStreamNotFound when the
// projector has not created the stream.
func (o *Outcomes) Last(ctx context.Context) (uint64, error) {
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
func (o *Outcomes) Follow(ctx context.Context, from uint64, fn func(seq uint64, x Outcome) bool) error {
	return o.read(ctx, OutcomesPrefix+".>", from, func(seq uint64, x Outcome, _ uint64) bool { return fn(seq, x) })
}

// AwaitAll waits for the outcome of every publish of rs and returns them
// in the order of rs. It reads the outcomes stored from OUTCOMES sequence
// from on once, in one pass; the caller takes from as Last()+1 before it
// publishes the first command. A publish the journal had stored already
// (Duplicate) may have its outcome from before from, so it is awaited
// alone. On error the outcomes not found are zero and the error says how
// many.
func (o *Outcomes) AwaitAll(ctx context.Context, from uint64, rs []PublishResult) ([]Outcome, error) {
	out := make([]Outcome, len(rs))
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
		err := o.Follow(ctx, from, func(_ uint64, x Outcome) bool {
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
func (o *Outcomes) read(ctx context.Context, filter string, from uint64, fn func(seq uint64, x Outcome, pending uint64) bool) error {
	cfg := jetstream.OrderedConsumerConfig{
		FilterSubjects:    []string{filter},
		DeliverPolicy:     jetstream.DeliverAllPolicy,
		InactiveThreshold: time.Minute,
	}
	if from > 1 {
		cfg.DeliverPolicy, cfg.OptStartSeq = jetstream.DeliverByStartSequencePolicy, from
	}
	cons, err := o.js.OrderedConsumer(ctx, o.stream, cfg)
	if err != nil {
		return err
	}
	defer deleteOrdered(ctx, o.js, o.stream, cons)
	it, err := cons.Messages()
	if err != nil {
		return err
	}
	defer it.Stop()
	for {
		m, err := it.Next(jetstream.NextContext(ctx))
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return err
		}
		md, err := m.Metadata()
		if err != nil {
			return err
		}
		x, err := decodeOutcome(md.Sequence.Stream, m.Data())
		if err != nil {
			return err
		}
		if fn(md.Sequence.Stream, x, md.NumPending) {
			return nil
		}
	}
}

// decodeOutcome decodes the outcome stored at OUTCOMES sequence seq: the
// one place that reads the encoding OutcomeMsg writes.
func decodeOutcome(seq uint64, data []byte) (Outcome, error) {
	var o Outcome
	if err := json.Unmarshal(data, &o); err != nil {
		return Outcome{}, fmt.Errorf("outcome at %s sequence %d: %w", OutcomesStream, seq, err)
	}
	return o, nil
}
