package metrics

import (
	"context"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tablejournal/tablejournal/journal/journaltest"
	"github.com/tablejournal/tablejournal/projection/projectiontest"
	"github.com/tablejournal/tablejournal/store/sqlite"
)

// TestStatusReportsWarning: the "status reports are off" warning is for
// reports that fail while the projector runs (here: a bucket with more
// replicas than the server has nodes), not for Start followed at once by
// Close, as when a projector fails to start: it logged
// `status bucket: context canceled` above the start-up error.
func TestStatusReportsWarning(t *testing.T) {
	const warning = "projector status reports are off"
	nc, js := journaltest.Connect(t, journaltest.StartServer(t).ClientURL())
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "tables.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	tests := []struct {
		name     string
		replicas int
		stopped  bool // ctx ended before Start: the start failed
		warn     bool
	}{
		{"closed at once", 1, true, false},
		{"closed at once, reports failing", 3, true, false},
		{"reports failing while running", 3, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out lockedBuffer
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tt.stopped {
				cancel()
			}
			ops, _, err := Start(ctx, OpsConfig{Instance: "t", NATS: nc, JS: js, Store: st, Replicas: tt.replicas,
				Logger: slog.New(slog.NewTextHandler(&out, nil))})
			if err != nil {
				t.Fatal(err)
			}
			if tt.warn {
				wctx, wcancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer wcancel()
				projectiontest.WaitFor(t, wctx, "the warning", func() (bool, error) {
					return strings.Contains(out.String(), warning), nil
				})
			}
			ops.Close() // waits for the reports to end
			if got := strings.Contains(out.String(), warning); got != tt.warn {
				t.Fatalf("warned %v, want %v; log:\n%s", got, tt.warn, out.String())
			}
		})
	}
}
