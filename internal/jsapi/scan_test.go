package jsapi_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/tablejournal/tablejournal/internal/jsapi"
	"github.com/tablejournal/tablejournal/journal/journaltest"
)

// TestScanSubject reads one subject's messages from a point in time, in
// order, skipping the other subjects, and stops when asked to.
func TestScanSubject(t *testing.T) {
	srv := journaltest.StartServer(t)
	_, js := journaltest.Connect(t, srv.ClientURL())
	ctx := journaltest.Context(t, time.Minute)
	if _, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "SCAN", Subjects: []string{"scan.>"}}); err != nil {
		t.Fatal(err)
	}
	publish := func(subj string, n int) {
		for i := range n {
			if _, err := js.Publish(ctx, subj, fmt.Appendf(nil, "%s-%d", subj, i)); err != nil {
				t.Fatal(err)
			}
		}
	}
	publish("scan.a", 3)
	// The stored time of the first message published from now on.
	mid := time.Now()
	publish("scan.b", 2)
	publish("scan.a", 2)

	tests := []struct {
		name string
		from time.Time
		stop int // answer false after this many; 0: never
		want []string
	}{
		{"all of a", time.Time{}, 0, []string{"scan.a-0", "scan.a-1", "scan.a-2", "scan.a-0", "scan.a-1"}},
		{"a from mid", mid, 0, []string{"scan.a-0", "scan.a-1"}},
		{"stop after two", time.Time{}, 2, []string{"scan.a-0", "scan.a-1"}},
		{"after the end", time.Now().Add(time.Hour), 0, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var got []string
			var last uint64
			err := jsapi.ScanSubject(ctx, js, "SCAN", "scan.a", tc.from, func(seq uint64, data []byte) (bool, error) {
				if seq <= last {
					t.Errorf("sequence %d after %d", seq, last)
				}
				last = seq
				got = append(got, string(data))
				return tc.stop == 0 || len(got) < tc.stop, nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(got) != fmt.Sprint(tc.want) {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}
