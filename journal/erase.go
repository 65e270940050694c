package journal

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/events/rules"
	"github.com/tablejournal/tablejournal/wire"
)

// Erase commands in the journal (SPEC §10): published on the partition's
// subject like any command, marked by the header wire.HeaderCommand.

// IsEraseMsg reports whether a message's headers mark it as an erase
// (wire.HeaderCommand). A message with an unknown command kind is not an
// erase: it is decoded as a command, and rejected.
func IsEraseMsg(h nats.Header) bool {
	erase, _ := wire.IsErase(h.Get(wire.HeaderCommand))
	return erase
}

// DecodeEraseMsg turns a journal message marked as an erase back into a
// checked erase, as DecodeMsg does for commands: the body decodes and
// validates, and agrees with the subject (table, partition) and the
// Nats-Msg-Id header. Errors wrap rules.ErrInvalid; the erase is returned
// beside a check's error when it decoded.
func DecodeEraseMsg(m Msg) (*events.Erase, error) {
	err := wire.CheckSchema(m.Header.Get(wire.HeaderSchema))
	var e *events.Erase
	if err == nil {
		e, err = events.DecodeErase(m.Data, m.Header.Get(wire.HeaderContentType))
	}
	if err != nil {
		return nil, fmt.Errorf("decode erase seq %d: %w", m.Seq, err)
	}
	if err := e.Validate(); err != nil {
		return e, fmt.Errorf("decode erase seq %d (%s): %w", m.Seq, e.ID, err)
	}
	return e, checkEnvelope(m, "decode erase", e.ID, e.Table, e.PK)
}

// EraseMessage validates and encodes e as the journal message that carries
// it, in the wire form contentType names ("" is msgpack).
func EraseMessage(e *events.Erase, contentType string) (*nats.Msg, error) {
	if e == nil {
		return nil, fmt.Errorf("publish: %w: nil erase", rules.ErrInvalid)
	}
	if err := e.Validate(); err != nil {
		return nil, fmt.Errorf("publish erase %s: %w", e.ID, err)
	}
	if contentType == "" {
		contentType = wire.ContentTypeMsgpack
	}
	data, err := events.EncodeErase(e, contentType)
	if err != nil {
		return nil, fmt.Errorf("publish erase %s: %w", e.ID, err)
	}
	h := nats.Header{}
	h.Set(wire.HeaderContentType, contentType)
	h.Set(wire.HeaderSchema, wire.SchemaVersion)
	h.Set(wire.HeaderCommand, wire.CommandErase)
	h.Set(jetstream.MsgIDHeader, e.ID)
	h.Set(wire.HeaderBodySHA256, bodyHash(data))
	return &nats.Msg{Subject: wire.JournalSubject(e.Table, e.PK), Header: h, Data: data}, nil
}

// PublishErase validates e, publishes it and waits until the journal
// stored it, retrying transient failures with the same Nats-Msg-Id as
// Publish does. An invalid erase is refused with an error wrapping
// rules.ErrInvalid and nothing is published.
func (w *Writer) PublishErase(ctx context.Context, e *events.Erase) (PublishResult, error) {
	msg, err := EraseMessage(e, w.contentType)
	if err != nil {
		return PublishResult{}, err
	}
	msg.Header.Set(jetstream.ExpectedStreamHeader, w.stream)
	w.addHeaders(ctx, msg)
	return w.publish(ctx, e.ID, msg, time.Now(), nil)
}

// checkAllowMsgDelete refuses to turn deny-delete on for an existing
// journal created with AllowMsgDelete when cfg does not ask for it: that
// could never be undone, and erasure would be impossible for good.
func checkAllowMsgDelete(existing *Journal, cfg Config) error {
	if existing == nil || cfg.AllowMsgDelete || cfg.AllowTrim {
		return nil
	}
	have := existing.stream.CachedInfo().Config
	if !have.DenyDelete && have.Metadata[wire.MetadataAllowMsgDelete] == "true" {
		return fmt.Errorf("%w: stream %s was created to allow deleting single messages for erasure (--journal-allow-msg-delete): start with that again, or turn on deny_delete in its configuration to refuse erasure for good",
			ErrStreamConfig, cfg.Stream)
	}
	return nil
}
