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

// RowVersion is one row version a command produced.
type RowVersion struct {
	RK      string `json:"rk"`
	Version int64  `json:"version"`
	Op      string `json:"op"`
	Deleted bool   `json:"deleted,omitempty"`
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
	Reason string `json:"reason,omitempty"`
	// Rows are the row versions an applied command produced.
	Rows []RowVersion `json:"rows,omitempty"`
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
// overwrite. Readers that want the latest use LookupOutcome and Await, which
// read the last message on the subject. Republishing the same outcome is
// deduplicated by Nats-Msg-Id "outcome-<seq>".
//
// WithReplicas sets the stream's replica count (see CheckReplicas).
func EnsureOutcomes(ctx context.Context, js jetstream.JetStream, opts ...EnsureOption) (jetstream.Stream, error) {
	replicas := ensureOpts(opts).replicas
	cfg := jetstream.StreamConfig{
		Name:        OutcomesStream,
		Description: "tablejournal command outcomes",
		Subjects:    []string{OutcomesPrefix + ".>"},
		Storage:     jetstream.FileStorage,
		Retention:   jetstream.LimitsPolicy,
		Duplicates:  DefaultDuplicates,
		AllowDirect: true,
		Replicas:    max(replicas, 1),
	}
	s, err := js.CreateStream(ctx, cfg)
	if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
		s, err = js.Stream(ctx, OutcomesStream)
		if err == nil {
			err = CheckReplicas(s.CachedInfo().Config, replicas)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("ensure stream %s: %w", OutcomesStream, err)
	}
	return s, nil
}

// OutcomeMsg renders o as the message PublishOutcome stores, for callers
// that publish asynchronously. Its Nats-Msg-Id is "outcome-<seq>", so
// publishing the outcome of one journal sequence twice stores it once.
func OutcomeMsg(o Outcome) (*nats.Msg, error) {
	subject := OutcomeSubject(o.ID)
	o = o.bounded()
	data, err := json.Marshal(o)
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

// LookupOutcome returns the latest outcome of command id, or an error
// wrapping ErrNotFound if there is none yet.
func LookupOutcome(ctx context.Context, js jetstream.JetStream, id string) (Outcome, error) {
	m, err := directGet(ctx, js, OutcomesStream, OutcomeSubject(id), nil)
	if err != nil {
		return Outcome{}, fmt.Errorf("outcome of %s: %w", id, err)
	}
	return decodeOutcome(id, m.data)
}

// AwaitOutcome waits until command id has an outcome and returns the latest
// one. It subscribes before it looks, so an outcome stored at any moment is
// seen, and it does not poll.
func AwaitOutcome(ctx context.Context, js jetstream.JetStream, id string) (Outcome, error) {
	cons, err := js.OrderedConsumer(ctx, OutcomesStream, jetstream.OrderedConsumerConfig{
		FilterSubjects:    []string{OutcomeSubject(id)},
		DeliverPolicy:     jetstream.DeliverLastPerSubjectPolicy,
		InactiveThreshold: time.Minute,
	})
	if err != nil {
		return Outcome{}, fmt.Errorf("await outcome of %s: %w", id, err)
	}
	defer deleteOrdered(ctx, js, OutcomesStream, cons)
	it, err := cons.Messages()
	if err != nil {
		return Outcome{}, fmt.Errorf("await outcome of %s: %w", id, err)
	}
	defer it.Stop()
	m, err := it.Next(jetstream.NextContext(ctx))
	if err != nil {
		return Outcome{}, fmt.Errorf("await outcome of %s: %w", id, err)
	}
	return decodeOutcome(id, m.Data())
}

func decodeOutcome(id string, data []byte) (Outcome, error) {
	var o Outcome
	if err := json.Unmarshal(data, &o); err != nil {
		return Outcome{}, fmt.Errorf("outcome of %s: %w", id, err)
	}
	return o, nil
}
