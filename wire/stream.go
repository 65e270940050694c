package wire

import "strconv"

// Stream names.
const (
	// JournalStream is the default name of the journal stream, the source
	// of truth: the commands, on journal.<table-token>.<shard>.<pk-token>
	// (JournalSubject, TableToken).
	JournalStream = "JOURNAL"
	// OutcomesStream holds the outcome of every journal message, on
	// outcomes.<base64url(id)> (OutcomeSubject).
	OutcomesStream = "OUTCOMES"
	// ChangesStream is the change feed: one ChangeEvent per applied row
	// change, on changes.<table-token>.<pk-token> (ChangeSubject).
	ChangesStream = "CHANGES"
)

// The first token of the subjects of each stream.
const (
	JournalPrefix  = "journal"
	OutcomesPrefix = "outcomes"
	ChangesPrefix  = "changes"
	// ReplyPrefix is the first tokens of the core NATS subjects of the
	// replies to waiting clients (ReplySubject); outside every stream.
	ReplyPrefix = "tablejournal.reply"
)

// Stream metadata keys a journal stream records.
const (
	// MetadataShards records the journal's shard count.
	MetadataShards = "tablejournal.shards"
	// MetadataAllowTrim is "true" on a journal created to allow purges and
	// deletes (retention).
	MetadataAllowTrim = "tablejournal.allow-trim"
	// MetadataAllowMsgDelete is "true" on a journal created to allow
	// deleting single messages (erasure) while it refuses purges.
	MetadataAllowMsgDelete = "tablejournal.allow-msg-delete"
	// MetadataMovedFrom names, on a journal made by moving another
	// (replay move), the stream its commands were moved from; while the
	// move copies, the new stream is a mirror of that one.
	MetadataMovedFrom = "tablejournal.moved-from"
	// MetadataMovedTo names, on a journal whose commands were moved, the
	// stream that took them over; the old stream no longer takes commands.
	MetadataMovedTo = "tablejournal.moved-to"
)

// DefaultDurable is the prefix of the projector's durable consumers
// (ConsumerName) unless configured otherwise: the projector command always
// uses it, and replay, the status page and the client read it by default.
const DefaultDurable = "projector"

// ConsumerName is the name of the durable consumer of one journal shard:
// <durable>-<shard>. The projector creates it; replay and the status page
// read its acknowledged floor; the client waits on it.
func ConsumerName(durable string, shard int) string {
	return durable + "-" + strconv.Itoa(shard)
}
