package projection

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/bits-and-blooms/bloom/v3"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/tablejournal/tablejournal/internal/jsapi"
	"github.com/tablejournal/tablejournal/internal/retry"
	"github.com/tablejournal/tablejournal/journal"
	"github.com/tablejournal/tablejournal/wire"
)

// The first-seen filter of command IDs (SPEC §5, "A command ID seen for
// the first time"): what lets a batch of commands whose IDs the journal
// never carried before skip the look-up of earlier outcomes (stage 2,
// batch.go), the round trip on a command's path when its partition's rows
// are cached.
//
// A duplicate is a journal message whose ID an earlier journal message
// carried. idFilter reads the whole journal in journal order, headers
// only, and asks a Bloom filter, before adding each message's ID, whether
// the ID was added before: a Bloom filter has false positives but no false
// negatives, so "not before" is certain, and the message's sequence is
// then first-seen. Such a command can have no earlier outcome (an outcome
// is of a journal message that carried the ID), so its batch need not look
// one up. Every other sequence (a repeat, or one of the filter's false
// positives, about 1% up to its capacity) is looked up as before. The
// answer depends on journal order only, not on which shard or instance
// got to which message first.

// DefaultIDFilter is the number of command IDs the first-seen filter is
// sized for (Config.IDFilter): about 12 MB at a 1% false-positive rate.
const DefaultIDFilter = 10_000_000

// idFilterWindow is how far behind the filter's position a sequence may
// be and still be answered: the repeats below it are forgotten.
const idFilterWindow = 1 << 20

// idFilterWait bounds how long a batch waits for the filter to reach its
// last message before it looks its IDs up instead; only when the filter is
// at most idFilterNear messages behind. A variable for tests.
var idFilterWait = 5 * time.Millisecond

const idFilterNear = 4096

// idFilterPull is how many messages the filter's reads ask for at once.
const idFilterPull = 8192

// idFilter knows, for each journal sequence it has read, whether the
// message's command ID was carried by an earlier message.
type idFilter struct {
	j   *journal.Journal
	log *slog.Logger

	mu    sync.Mutex
	bloom *bloom.BloomFilter
	// pos is the sequence of the last journal message read (0: none);
	// repeats the sequences after pos-idFilterWindow whose ID may have
	// been carried before; moved is closed and replaced when pos moves.
	pos     uint64
	repeats map[uint64]struct{}
	prune   uint64 // the position at which repeats are next pruned
	moved   chan struct{}
	// off says why the filter answers nothing (a journal that can be
	// trimmed), once known.
	off string
}

func newIDFilter(j *journal.Journal, capacity int, log *slog.Logger) *idFilter {
	return &idFilter{j: j, log: log, bloom: bloom.NewWithEstimates(uint(capacity), 0.01),
		repeats: make(map[uint64]struct{}), moved: make(chan struct{})}
}

// reach waits at most idFilterWait for the filter to have read the
// journal up to seq, when it is near; false when it has not.
func (f *idFilter) reach(ctx context.Context, seq uint64) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.off != "" || f.pos+idFilterNear < seq {
		return false
	}
	if f.pos >= seq {
		return true
	}
	t := time.NewTimer(idFilterWait)
	defer t.Stop()
	for f.pos < seq {
		moved := f.moved
		f.mu.Unlock()
		expired := false
		select {
		case <-moved:
		case <-t.C:
			expired = true
		case <-ctx.Done():
			expired = true
		}
		f.mu.Lock()
		if expired && f.pos < seq {
			return false
		}
	}
	return true
}

// firstSeen reports whether the message at seq is the first of the
// journal to carry its ID. False means "not known": look it up.
func (f *idFilter) firstSeen(seq uint64) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.off != "" || f.pos < seq || seq+idFilterWindow <= f.pos {
		return false
	}
	_, repeat := f.repeats[seq]
	return !repeat
}

// read records the message at seq carrying id (empty: none).
func (f *idFilter) read(seq uint64, id string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if seq <= f.pos {
		return
	}
	if id != "" && f.bloom.TestOrAddString(id) {
		f.repeats[seq] = struct{}{}
	}
	f.pos = seq
	if seq >= f.prune {
		for s := range f.repeats {
			if s+idFilterWindow <= seq {
				delete(f.repeats, s)
			}
		}
		f.prune = seq + idFilterWindow
	}
	close(f.moved)
	f.moved = make(chan struct{})
}

// stop makes the filter answer nothing from now on, saying why.
func (f *idFilter) stop(why string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.off = why
}

// run reads the journal from its first message until ctx ends, resuming
// after its last position when reading fails.
func (f *idFilter) run(ctx context.Context) {
	info, err := f.j.JetStream().Stream(ctx, f.j.Name())
	if err != nil {
		f.stop("journal unreadable")
		if ctx.Err() == nil {
			f.log.Warn("the first-seen filter of command IDs is off; every batch looks its IDs up", "err", err)
		}
		return
	}
	if !info.CachedInfo().Config.DenyPurge {
		// A purge (a journal horizon) removes commands whose outcomes
		// stay: the filter, reading what is left, would miss their IDs.
		f.stop("the journal allows purges")
		f.log.Info("the first-seen filter of command IDs is off: the journal allows trimming; every batch looks its IDs up")
		return
	}
	b := journalBackoff()
	for ctx.Err() == nil {
		err := f.follow(ctx)
		if ctx.Err() != nil {
			return
		}
		wait := b.NextBackOff()
		f.log.Warn("reading the journal for the first-seen filter failed; batches look their IDs up meanwhile", "in", wait, "err", err)
		if retry.Sleep(ctx, wait) != nil {
			return
		}
	}
}

// follow reads the journal's messages, headers only, from after
// the filter's position, until ctx ends or reading fails.
func (f *idFilter) follow(ctx context.Context) error {
	f.mu.Lock()
	from := f.pos + 1
	f.mu.Unlock()
	// Unfiltered: a subject filter makes the server match every message's
	// subject against it, a third of the read's cost; the few layout
	// settings are skipped here instead.
	cfg := jetstream.OrderedConsumerConfig{
		HeadersOnly:       true,
		DeliverPolicy:     jetstream.DeliverByStartSequencePolicy,
		OptStartSeq:       from,
		InactiveThreshold: time.Minute, // a projector killed leaves it a minute at most
	}
	return jsapi.ReadOrdered(ctx, f.j.JetStream(), f.j.Name(), cfg, func(m jetstream.Msg, md *jetstream.MsgMetadata) error {
		id := m.Headers().Get(jetstream.MsgIDHeader)
		switch {
		case !strings.HasPrefix(m.Subject(), wire.JournalPrefix+"."):
			id = "" // a layout setting: no command
		case id == "":
			// The ID is in the body only (a publisher that set no
			// Nats-Msg-Id): read the message whole.
			var err error
			if id, err = f.bodyID(ctx, md.Sequence.Stream); err != nil {
				return err
			}
		}
		f.read(md.Sequence.Stream, id)
		return nil
	}, jsapi.Pull(jetstream.PullMaxMessages(idFilterPull)))
}

// bodyID is the command ID the projector takes for the message at seq
// when it carries no Nats-Msg-Id (EntryFromMsg); empty when it has none.
// It asks the stream's leader, never a replica: a replica behind would
// answer "no such message", and an ID taken for absent would let a later
// message carrying it pass for the first. Not found on the leader, the
// message was deleted since (an erase, which removes its outcomes too).
func (f *idFilter) bodyID(ctx context.Context, seq uint64) (string, error) {
	m, err := jsapi.LeaderGet(ctx, f.j.JetStream(), f.j.Name(), jsapi.MsgGetReq{Seq: seq})
	if errors.Is(err, jsapi.ErrNotFound) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("read journal seq %d: %w", seq, err)
	}
	_, _, e := EntryFromMsg(journal.Msg{Seq: m.Seq, Subject: m.Subject, Header: m.Header, Data: m.Data})
	return e.ID, nil
}
