package journal

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"github.com/nats-io/nats.go"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/internal/jsapi"
	"github.com/tablejournal/tablejournal/wire"
)

func bodyHash(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// checkDuplicate is called when JetStream acknowledged msg, command id, as
// a duplicate of the message stored at seq. It fails with ErrBodyDiffers
// when that message holds another command: the same hash header says it is
// the same at once; otherwise (stored by a client that sent none, in
// another encoding, issued at another time) both are decoded and compared,
// all but issuedAt.
func (w *Writer) checkDuplicate(ctx context.Context, id string, msg *nats.Msg, seq uint64) error {
	stored, err := jsapi.DirectGet(ctx, w.js, w.stream, "", struct {
		Seq uint64 `json:"seq"`
	}{seq})
	if err != nil {
		return fmt.Errorf("read the stored message at seq %d to compare bodies: %w", seq, err)
	}
	same := stored.Header.Get(wire.HeaderBodySHA256) == msg.Header.Get(wire.HeaderBodySHA256)
	if !same {
		// Stored by a client that sent no hash, in another encoding, or
		// issued at another time (the writer command stamps issuedAt):
		// the same command decodes equal but for issuedAt.
		have, herr := DecodeMsg(Msg{Seq: seq, Subject: stored.Subject, Header: stored.Header, Data: stored.Data})
		want, werr := events.Decode(msg.Data, msg.Header.Get(wire.HeaderContentType))
		if herr == nil && werr == nil {
			want.IssuedAt = have.IssuedAt
			same = have.Equal(want)
		}
	}
	if !same {
		return &bodyDiffersError{ID: id, Seq: seq}
	}
	return nil
}

// bodyDiffersError is ErrBodyDiffers with the ID and the sequence that
// holds the other body.
type bodyDiffersError struct {
	ID  string
	Seq uint64
}

func (e *bodyDiffersError) Error() string {
	return fmt.Sprintf("command ID %s is already in the journal with a different body (seq %d); publish a new command under a new ID", e.ID, e.Seq)
}

// Unwrap returns ErrBodyDiffers.
func (e *bodyDiffersError) Unwrap() error { return ErrBodyDiffers }
