package retry

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestSleep(t *testing.T) {
	tests := []struct {
		name    string
		cancel  bool
		d       time.Duration
		wantErr error
	}{
		{"waits", false, 10 * time.Millisecond, nil},
		{"context ends first", true, time.Hour, context.Canceled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tt.cancel {
				cancel()
			}
			start := time.Now()
			err := Sleep(ctx, tt.d)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("Sleep: %v, want %v", err, tt.wantErr)
			}
			if tt.wantErr == nil && time.Since(start) < tt.d {
				t.Fatalf("returned after %v, before %v", time.Since(start), tt.d)
			}
		})
	}
}
