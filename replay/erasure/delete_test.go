package erasure_test

import (
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/tablejournal/tablejournal/journal/journaltest"
	"github.com/tablejournal/tablejournal/replay/erasure"
)

// TestSecureDelete: a message already gone counts as deleted, once; a
// stream that denies deletes is refused with ErrDenyDelete before anything
// is asked of it.
func TestSecureDelete(t *testing.T) {
	_, js := journaltest.Connect(t, journaltest.StartServer(t).ClientURL())
	ctx := journaltest.Context(t, time.Minute)
	for _, tt := range []struct {
		name       string
		denyDelete bool
		wantN      int
		wantErr    error
	}{
		{"ALLOWS", false, 1, nil},
		{"DENIES", true, 0, erasure.ErrDenyDelete},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: tt.name, Subjects: []string{tt.name}, DenyDelete: tt.denyDelete})
			if err != nil {
				t.Fatal(err)
			}
			ack, err := js.Publish(ctx, tt.name, []byte("x"))
			if err != nil {
				t.Fatal(err)
			}
			n, err := erasure.SecureDelete(ctx, s, []uint64{ack.Sequence, ack.Sequence})
			if n != tt.wantN || !errors.Is(err, tt.wantErr) || (tt.wantErr == nil) != (err == nil) {
				t.Fatalf("secure delete: %d, %v; want %d, %v", n, err, tt.wantN, tt.wantErr)
			}
			_, err = s.GetMsg(ctx, ack.Sequence)
			if gone := errors.Is(err, jetstream.ErrMsgNotFound); gone == tt.denyDelete {
				t.Fatalf("the message after the delete: %v", err)
			}
		})
	}
}
