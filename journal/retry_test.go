package journal

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"syscall"
	"testing"

	"github.com/cenkalti/backoff/v4"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/tablejournal/tablejournal/events/rules"
)

func TestRetryable(t *testing.T) {
	tests := []struct {
		name  string
		err   error
		retry bool
	}{
		{"ack timeout", context.DeadlineExceeded, true},
		{"nats timeout", nats.ErrTimeout, true},
		{"no responders", nats.ErrNoResponders, true},
		{"reconnecting", nats.ErrConnectionReconnecting, true},
		{"JetStream unavailable", &jetstream.APIError{Code: 503}, true},
		{"its own earlier attempt in process", &jetstream.APIError{Code: 409, ErrorCode: 10158,
			Description: "duplicate message id is in process"}, true},
		{"wrong last sequence", &jetstream.APIError{Code: 400, ErrorCode: jetstream.JSErrCodeStreamWrongLastSequence}, false},
		{"broken pipe", &net.OpError{Op: "write", Net: "tcp", Err: syscall.EPIPE}, true},
		{"connection reset", fmt.Errorf("send: %w", syscall.ECONNRESET), true},
		{"EOF", io.EOF, true},
		{"connection closed by the caller", nats.ErrConnectionClosed, false},
		{"invalid command", rules.ErrInvalid, false},
		{"stream refuses", &jetstream.APIError{Code: 400}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := retryable(context.Background(), tt.err)
			var perm *backoff.PermanentError
			if permanent := errors.As(got, &perm); permanent == tt.retry {
				t.Errorf("retryable(%v) = %v, want retry %v", tt.err, got, tt.retry)
			}
			if !errors.Is(got, tt.err) {
				t.Errorf("retryable(%v) = %v, lost the error", tt.err, got)
			}
		})
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := retryable(ctx, nats.ErrTimeout); !errors.Is(err, context.Canceled) {
		t.Errorf("after ctx ends: %v, want its error", err)
	}
}
