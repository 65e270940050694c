package move

import "github.com/nats-io/nats.go/jetstream"

// States of a move, as Report.State names them.
const (
	// StateDryRun: nothing was changed.
	StateDryRun = "dry-run"
	// StateCopying: the copy was left copying (ctx ended while waiting).
	StateCopying = "copying"
	// StateCopied: the copy holds what the journal held when Run began,
	// verified; the journal still takes commands and the copy follows it.
	StateCopied = "copied"
	// StateMoved: the copy is the journal.
	StateMoved = "moved"
)

// Report is what Run found and did.
type Report struct {
	From, To string `json:"-"`
	// State is one of the State constants.
	State string `json:"state"`
	// Shards is the journal's recorded shard count.
	Shards string `json:"shards"`
	// Source and Target are the two streams' figures, as last read.
	Source Figures `json:"source"`
	Target Figures `json:"target"`
	// Created: this run created the copy.
	Created bool `json:"created,omitempty"`
	// Retired: the old journal no longer takes commands.
	Retired bool `json:"retired,omitempty"`
	// Verified compares both streams' messages; nil when not compared.
	Verified *Verification `json:"verified,omitempty"`
	// Consumers are the durable consumers the new journal has from the
	// old one, and where each resumes.
	Consumers []ConsumerMove `json:"consumers,omitempty"`
	// SourceDeleted: the old stream is gone.
	SourceDeleted bool `json:"sourceDeleted,omitempty"`
}

// Figures are a stream's message count and sequences; Gaps counts the
// sequences between FirstSeq and LastSeq that hold no message (deleted or
// trimmed).
type Figures struct {
	Messages uint64 `json:"messages"`
	FirstSeq uint64 `json:"firstSeq"`
	LastSeq  uint64 `json:"lastSeq"`
	Gaps     uint64 `json:"gaps"`
}

func figuresOf(s jetstream.StreamState) Figures {
	f := Figures{Messages: s.Msgs, FirstSeq: s.FirstSeq, LastSeq: s.LastSeq}
	if s.LastSeq >= s.FirstSeq && s.Msgs > 0 {
		f.Gaps = s.LastSeq - s.FirstSeq + 1 - s.Msgs
	}
	return f
}

// Verification is the comparison of both streams up to a sequence.
type Verification struct {
	UpTo   uint64 `json:"upTo"`
	Source Digest `json:"source"`
	Target Digest `json:"target"`
	Equal  bool   `json:"equal"`
}

// ConsumerMove is one durable consumer carried over: it delivers from
// sequence From.
type ConsumerMove struct {
	Name string `json:"name"`
	From uint64 `json:"from"`
}
