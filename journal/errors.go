package journal

import (
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"
	"github.com/tablejournal/tablejournal/events/rules"
	"github.com/tablejournal/tablejournal/internal/jsapi"
)

// Errors of the journal, checked with errors.Is. Errors returned by this
// package wrap them with context (stream name, sequence, command ID).

// Opening or creating the stream.
var (
	// ErrShardMismatch means an existing journal stream was created with a
	// different shard count than the one configured. The journal is never
	// re-sharded silently: a partition's commands must stay in one shard.
	ErrShardMismatch = errors.New("journal shard count mismatch")

	// ErrNotJournal means a stream exists under the journal's name but was
	// not created as a journal (no shard metadata, or another subject
	// transform).
	ErrNotJournal = errors.New("stream is not a tablejournal journal")

	// ErrStreamConfig means an existing stream's configuration differs from
	// the configured one in a way JetStream cannot change in place (such as
	// lifting deny-purge). What can change in place is updated instead.
	ErrStreamConfig = jsapi.ErrStreamConfig

	// ErrMaxPayload means the NATS server's max_payload is too small for
	// the largest valid command or what the projector publishes for it
	// (MinMaxPayload), or one message is larger than the server allows.
	ErrMaxPayload = errors.New("NATS max_payload too small")

	// ErrBodyDiffers means a command was published under an ID the journal
	// already holds with another body: JetStream deduplicated it by ID, so
	// the new body was dropped. Use a new ID for a new command.
	ErrBodyDiffers = errors.New("command ID already in the journal with a different body")

	// ErrReplicasMismatch means an existing stream or bucket has another
	// replica count than the one asked for. The count is never changed
	// silently; the error says how to change it.
	ErrReplicasMismatch = errors.New("replica count mismatch")
)

// Publishing.
var (
	// ErrAckTimeout means one attempt of a publish got no acknowledgement
	// within the ack timeout (10 seconds). It wraps nats.ErrTimeout.
	// The attempt may still have been stored: a retry carries the same
	// Nats-Msg-Id, so it is deduplicated rather than stored twice.
	ErrAckTimeout = fmt.Errorf("no acknowledgement within the ack timeout: %w", nats.ErrTimeout)

	// ErrRetryBudget means a publish failed for good because its retry
	// budget (WithRetryBudget), counted from its first send, was spent
	// while attempts kept failing. The error also wraps the last attempt's
	// error. No attempt is sent after the budget; the command may still
	// have been stored by an attempt whose acknowledgement was lost.
	ErrRetryBudget = errors.New("retry budget spent")
)

// Reading.
var (
	// ErrNotFound means there is no such message: a sequence that was never
	// written or was deleted, no message at or after a time, or no outcome
	// for a command ID yet.
	ErrNotFound = jsapi.ErrNotFound
)

// Decoding a stored command. Both wrap rules.ErrInvalid: a command whose
// subject and body disagree is invalid and is rejected, never applied.
var (
	// ErrSubjectMismatch means the table or partition key in a command's body
	// differs from the one in the subject it is stored under.
	ErrSubjectMismatch = fmt.Errorf("%w: subject and body disagree", rules.ErrInvalid)

	// ErrIDMismatch means a message's Nats-Msg-Id header differs from the
	// command ID in its body, so the stream deduplicated it under another ID.
	ErrIDMismatch = fmt.Errorf("%w: Nats-Msg-Id and command id disagree", rules.ErrInvalid)
)
