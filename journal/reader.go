package journal

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/events/rules"
	"github.com/tablejournal/tablejournal/internal/jsapi"
	"github.com/tablejournal/tablejournal/wire"
)

// Msg is one message stored in the journal.
type Msg struct {
	// Seq is the message's journal sequence.
	Seq uint64
	// Subject is the stored subject, journal.<table-token>.<shard>.<pk-token>
	// (wire.ParseJournalSubject).
	Subject string
	// Time is when the stream stored the message: the journal time of the
	// command.
	Time time.Time
	// Header holds the headers the publisher set (Content-Type, Nats-Msg-Id,
	// ...).
	Header nats.Header
	// Data is the encoded command.
	Data []byte
}

// Get returns the message at seq, or an error wrapping ErrNotFound if there
// is none (never written, or deleted).
func (j *Journal) Get(ctx context.Context, seq uint64) (Msg, error) {
	if seq == 0 {
		return Msg{}, fmt.Errorf("get %s seq 0: %w", j.name, ErrNotFound)
	}
	raw, err := j.stream.GetMsg(ctx, seq)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return Msg{}, fmt.Errorf("get %s seq %d: %w", j.name, seq, ErrNotFound)
	}
	if err != nil {
		return Msg{}, fmt.Errorf("get %s seq %d: %w", j.name, seq, err)
	}
	return Msg{
		Seq:     raw.Sequence,
		Subject: raw.Subject,
		Time:    raw.Time,
		Header:  jsapi.StripDirectHeaders(raw.Header),
		Data:    raw.Data,
	}, nil
}

// Head returns the journal's last sequence, or 0 when it is empty.
func (j *Journal) Head(ctx context.Context) (uint64, error) {
	info, err := j.stream.Info(ctx)
	if err != nil {
		return 0, fmt.Errorf("head of %s: %w", j.name, err)
	}
	return info.State.LastSeq, nil
}

// SeqAtTime returns the first sequence stored at or after t. If nothing was
// stored at or after t, the error wraps ErrNotFound (and the whole journal,
// up to Head, lies before t).
func (j *Journal) SeqAtTime(ctx context.Context, t time.Time) (uint64, error) {
	t = t.UTC()
	req := struct {
		StartTime *time.Time `json:"start_time"`
		NextFor   string     `json:"next_by_subj"`
	}{&t, ">"} // next_by_subj steps over deleted messages
	m, err := jsapi.DirectGet(ctx, j.js, j.name, "", req)
	if err != nil {
		return 0, fmt.Errorf("seq at %s in %s: %w", t.Format(time.RFC3339Nano), j.name, err)
	}
	return m.Seq, nil
}

// Read calls fn with every message from sequence from up to and including
// sequence to, in journal order, that matches the subject filter (every
// command, not the layout settings, if filter is empty; see wire.ShardFilter and wire.PartitionFilter). A zero
// to means the head at the time of the call; from 0 means 1. Read returns
// the first error fn returns, unchanged.
func (j *Journal) Read(ctx context.Context, from, to uint64, filter string, fn func(Msg) error) error {
	return j.ReadAny(ctx, from, to, []string{filter}, fn)
}

// ReadAny is Read of the messages that match any of filters (see
// wire.TableFilters), in journal order.
func (j *Journal) ReadAny(ctx context.Context, from, to uint64, filters []string, fn func(Msg) error) error {
	head, err := j.Head(ctx)
	if err != nil {
		return err
	}
	if to == 0 || to > head {
		to = head
	}
	from = max(from, 1)
	if from > to {
		return nil
	}
	if len(filters) == 0 || len(filters) == 1 && filters[0] == "" {
		// Every command; not the table layout settings (tablelayout.Settings).
		filters = []string{wire.JournalPrefix + ".>"}
	}
	// Start at the first match, and know there is one: an ordered consumer
	// has nothing to deliver otherwise, and waiting for it would hang.
	var first uint64
	for _, filter := range filters {
		m, err := jsapi.DirectGet(ctx, j.js, j.name, "", struct {
			Seq     uint64 `json:"seq"`
			NextFor string `json:"next_by_subj"`
		}{from, filter})
		if errors.Is(err, ErrNotFound) {
			continue
		}
		if err != nil {
			return fmt.Errorf("read %s from %d: %w", j.name, from, err)
		}
		if first == 0 || m.Seq < first {
			first = m.Seq
		}
	}
	if first == 0 || first > to {
		return nil
	}

	cfg := jetstream.OrderedConsumerConfig{
		FilterSubjects:    filters,
		DeliverPolicy:     jetstream.DeliverByStartSequencePolicy,
		OptStartSeq:       first,
		InactiveThreshold: time.Minute,
	}
	// fn's error is returned unchanged, even one that is jsapi.ErrStop.
	var fnErr error
	err = jsapi.ReadOrdered(ctx, j.js, j.name, cfg, func(m jetstream.Msg, meta *jetstream.MsgMetadata) error {
		fnErr = fn(Msg{Seq: meta.Sequence.Stream, Subject: m.Subject(), Time: meta.Timestamp, Header: m.Headers(), Data: m.Data()})
		if fnErr != nil {
			return jsapi.ErrStop
		}
		return nil
	}, jsapi.UpTo(to))
	if fnErr != nil {
		return fnErr
	}
	if err != nil {
		return fmt.Errorf("read %s from %d up to %d: %w", j.name, first, to, err)
	}
	return nil
}

// DecodeMsg decodes a stored command by its Content-Type header (none means
// msgpack) and schema header, validates it, and checks that its table and partition key are
// the ones in the subject it is stored under (else ErrSubjectMismatch) and
// that a Nats-Msg-Id header, if present, is its ID (else ErrIDMismatch).
// Every error it returns for a bad message wraps rules.ErrInvalid.
func DecodeMsg(m Msg) (*events.Command, error) {
	ct := m.Header.Get(wire.HeaderContentType)
	if ct == "" {
		ct = wire.ContentTypeMsgpack
	}
	err := wire.CheckSchema(m.Header.Get(wire.HeaderSchema))
	var cmd *events.Command
	if err == nil {
		cmd, err = events.Decode(m.Data, ct)
	}
	if err != nil {
		if !errors.Is(err, rules.ErrInvalid) {
			err = fmt.Errorf("%w: %w", rules.ErrInvalid, err)
		}
		return nil, fmt.Errorf("decode seq %d: %w", m.Seq, err)
	}
	if err := cmd.Validate(); err != nil {
		return cmd, fmt.Errorf("decode seq %d (%s): %w", m.Seq, cmd.ID, err)
	}
	return cmd, checkEnvelope(m, "decode", cmd.ID, cmd.Table, cmd.PK)
}

// checkEnvelope checks that the body of m, the command or erase id of
// table and pk, agrees with the subject and the Nats-Msg-Id header.
func checkEnvelope(m Msg, what, id, table, pk string) error {
	st, _, spk, err := wire.ParseJournalSubject(m.Subject)
	if err != nil {
		return fmt.Errorf("%s seq %d (%s): %w: %w", what, m.Seq, id, ErrSubjectMismatch, err)
	}
	if !wire.SubjectHoldsTable(st, table) || spk != pk {
		return fmt.Errorf("%s seq %d (%s): %w: subject %s is table %q pk %q, body is table %q pk %q",
			what, m.Seq, id, ErrSubjectMismatch, m.Subject, st, spk, table, pk)
	}
	if hid := m.Header.Get(jetstream.MsgIDHeader); hid != "" && hid != id {
		return fmt.Errorf("%s seq %d (%s): %w: header has %q", what, m.Seq, id, ErrIDMismatch, hid)
	}
	return nil
}
