package wire

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/tablejournal/tablejournal/events"
)

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
	// CodeBodyDiffers: the command ID applied before, at another journal
	// sequence, with another body (all but its issue time): an ID names
	// one command, so this one is refused, whenever it was published.
	CodeBodyDiffers Code = "body-differs"
)

// Rules of rejections found beside those of rules.Rule, named in an
// outcome's Rule.
const (
	// RuleSubjectMismatch: the table or partition key of the body differ
	// from the subject the command is stored under (journal.ErrSubjectMismatch).
	RuleSubjectMismatch = "subject-mismatch"
	// RuleIDMismatch: the Nats-Msg-Id header differs from the command ID
	// (journal.ErrIDMismatch).
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
	// Rule names the rule an invalid command broke (an rules.Rule, or
	// one of the Rule* constants of this package), or the limit a
	// too-large one exceeds; empty when there is none.
	Rule string `json:"rule,omitempty"`
	// Rows are the row versions an applied command produced.
	Rows []RowVersion `json:"rows,omitempty"`
	// Pruned is the number of rows an applied prune command removed.
	Pruned int64 `json:"pruned,omitempty"`
	// Erased is the number of stored rows an applied erase removed from
	// the table (SPEC §10): the key's tip, version and tombstone rows, and
	// a plain table's own rows of the key. Zero in an outcome recovered
	// after a crash, and in outcomes stored before it existed.
	Erased int64 `json:"erased,omitempty"`
	// Digest is the applied command's events.Command.Digest (all but its
	// issue time), so that a command published again under its ID with
	// another body is refused (CodeBodyDiffers) at any distance in time.
	// Outcomes stored before it existed have none.
	Digest string `json:"digest,omitempty"`
	// At is the journal time of the command, not the projector's clock.
	At time.Time `json:"at"`
}

// OutcomeSubject returns the subject of a command's outcomes:
// outcomes.<base64url(id)>, since a command ID may contain '.'. A journal
// message that carries no usable ID (no Nats-Msg-Id and a body that does
// not decode, or an ID longer than events.MaxIDLen, which no valid command
// has) has its outcomes on outcomes.= ("=" is never base64url output):
// a subject must not be empty, nor as long as such an ID could be.
func OutcomeSubject(id string) string { return idSubject(OutcomesPrefix, id) }

// ReplySubject returns the core NATS subject on which the projector tells
// a waiting client the outcome of an applied command the moment its
// transaction commits, before the stored outcome (SPEC §5, "The reply
// before the durable record"): tablejournal.reply.<base64url(id)>. No
// stream holds it; a client that was not listening reads the stored
// outcome instead.
func ReplySubject(id string) string { return idSubject(ReplyPrefix, id) }

// idSubject is prefix.<base64url(id)>, or prefix.= for an ID no valid
// command has (see OutcomeSubject).
func idSubject(prefix, id string) string {
	if id == "" || len(id) > events.MaxIDLen {
		return prefix + ".="
	}
	// One allocation for the subject: it is made per outcome published.
	var buf [160]byte
	b := append(append(buf[:0], prefix...), '.')
	return string(base64.RawURLEncoding.AppendEncode(b, []byte(id)))
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

// OutcomeMsgID is the Nats-Msg-Id of the outcome of journal sequence seq,
// "outcome-<seq>": publishing the outcome of one journal message twice
// stores it once.
func OutcomeMsgID(seq uint64) string {
	return "outcome-" + strconv.FormatUint(seq, 10)
}

// Encode returns the body of o's outcome message: o as JSON, with its ID
// and Reason cut to their bounds.
func (o Outcome) Encode() ([]byte, error) {
	data, err := o.bounded().marshal()
	if err != nil {
		return nil, fmt.Errorf("outcome %s: %w", o.ID, err)
	}
	return data, nil
}

// marshal is json.Marshal(o), byte for byte (TestOutcomeMarshal), without
// reflection: the projector publishes one per command.
func (o Outcome) marshal() ([]byte, error) {
	b := make([]byte, 0, 128+len(o.ID)+len(o.Table)+len(o.PK)+len(o.Reason)+len(o.Rule)+len(o.Rows)*48)
	b = appendKey(append(b, '{'), "id")
	b = appendString(b, o.ID)
	b = appendKey(append(b, ','), "seq")
	b = appendUint(b, o.Seq)
	b = appendKey(append(b, ','), "table")
	b = appendString(b, o.Table)
	b = appendKey(append(b, ','), "pk")
	b = appendString(b, o.PK)
	b = appendKey(append(b, ','), "status")
	b = appendString(b, string(o.Status))
	if o.Reason != "" {
		b = appendString(appendKey(append(b, ','), "reason"), o.Reason)
	}
	if o.Code != "" {
		b = appendString(appendKey(append(b, ','), "code"), string(o.Code))
	}
	if o.Rule != "" {
		b = appendString(appendKey(append(b, ','), "rule"), o.Rule)
	}
	if len(o.Rows) > 0 {
		b = append(appendKey(append(b, ','), "rows"), '[')
		for i, r := range o.Rows {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendKey(append(b, '{'), "rk")
			b = appendString(b, r.RK)
			b = appendKey(append(b, ','), "version")
			b = appendInt(b, r.Version)
			b = appendKey(append(b, ','), "op")
			b = appendString(b, string(r.Op))
			if r.Deleted {
				b = append(appendKey(append(b, ','), "deleted"), "true"...)
			}
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	if o.Pruned != 0 {
		b = appendInt(appendKey(append(b, ','), "pruned"), o.Pruned)
	}
	if o.Erased != 0 {
		b = appendInt(appendKey(append(b, ','), "erased"), o.Erased)
	}
	if o.Digest != "" {
		b = appendString(appendKey(append(b, ','), "digest"), o.Digest)
	}
	b = appendKey(append(b, ','), "at")
	b, err := appendTime(b, o.At)
	if err != nil {
		return nil, fmt.Errorf("json: error calling MarshalJSON for type time.Time: %w", err)
	}
	return append(b, '}'), nil
}

// DecodeOutcome decodes the body of an outcome message: the one place that
// reads the encoding Encode writes.
func DecodeOutcome(data []byte) (Outcome, error) {
	var o Outcome
	if err := json.Unmarshal(data, &o); err != nil {
		return Outcome{}, err
	}
	return o, nil
}
