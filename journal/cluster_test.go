package journal_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/tablejournal/tablejournal/journal"
	"github.com/tablejournal/tablejournal/journal/journaltest"
	"github.com/tablejournal/tablejournal/journal/outcomes"
	"github.com/tablejournal/tablejournal/wire"
)

// TestClusterReplicas: on a 3-node cluster the journal and outcome streams
// are created at the replica count asked for; opening them with another
// count fails with ErrReplicasMismatch and leaves them as they are; with
// none asked for they open at any count. A node restart loses no
// acknowledged command.
func TestClusterReplicas(t *testing.T) {
	c := journaltest.StartCluster(t, 3)
	_, js := journaltest.Connect(t, c.URL())
	ctx := journaltest.Context(t, time.Minute)

	j, err := journal.Ensure(ctx, js, journal.Config{Replicas: 3})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := outcomes.Ensure(ctx, js, journal.WithReplicas(3)); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{j.Name(), wire.OutcomesStream} {
		s, err := js.Stream(ctx, name)
		if err != nil {
			t.Fatal(err)
		}
		if got := s.CachedInfo().Config.Replicas; got != 3 {
			t.Fatalf("%s has %d replicas, want 3", name, got)
		}
	}
	tests := []struct {
		name     string
		replicas int
		wantErr  error
	}{
		{"same count", 3, nil},
		{"none asked for", 0, nil},
		{"another count", 1, journal.ErrReplicasMismatch},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if _, err := journal.Ensure(ctx, js, journal.Config{Replicas: tt.replicas}); !errors.Is(err, tt.wantErr) {
				t.Fatalf("Ensure journal: %v, want %v", err, tt.wantErr)
			}
			if _, err := outcomes.Ensure(ctx, js, journal.WithReplicas(tt.replicas)); !errors.Is(err, tt.wantErr) {
				t.Fatalf("EnsureOutcomes: %v, want %v", err, tt.wantErr)
			}
		})
	}
	if s, _ := js.Stream(ctx, j.Name()); s.CachedInfo().Config.Replicas != 3 {
		t.Fatal("a refused Ensure changed the replica count")
	}

	w := journal.NewWriter(js, j.Name())
	var seqs []uint64
	for i := 0; i < 20; i++ {
		if i == 10 {
			if err := c.Restart(i % 3); err != nil {
				t.Fatal(err)
			}
		}
		res, err := w.Publish(ctx, command(string(rune('a'+i)), "orders", "p"))
		if err != nil {
			t.Fatalf("publish %d: %v", i, err)
		}
		seqs = append(seqs, res.Seq)
	}
	for _, seq := range seqs {
		if _, err := j.Get(ctx, seq); err != nil {
			t.Fatalf("acknowledged seq %d: %v", seq, err)
		}
	}
}

// TestReadAcrossNodeRestart: a read of a replicated journal goes on to its
// end when the node holding its ordered consumer restarts meanwhile. Found
// by TestChaos: such a read waited until its context ended, its consumer
// gone without a word and the library's heartbeat check never firing
// across the read's 2-second waits (jsapi.ReadOrdered, UpTo).
func TestReadAcrossNodeRestart(t *testing.T) {
	c := journaltest.StartCluster(t, 3)
	ctx := journaltest.Context(t, 2*time.Minute)
	_, js := journaltest.Connect(t, c.URL())
	j, err := journal.Ensure(ctx, js, journal.Config{Replicas: 3})
	if err != nil {
		t.Fatal(err)
	}
	w := journal.NewWriter(js, j.Name())
	const n = 2000 // more than a pull asks for at once
	var fs []*journal.Future
	for i := range n {
		f, err := w.PublishAsync(ctx, command(fmt.Sprintf("c%d", i), "orders", fmt.Sprintf("p%d", i%10)))
		if err != nil {
			t.Fatal(err)
		}
		fs = append(fs, f)
	}
	for _, f := range fs {
		if _, err := f.Result(ctx); err != nil {
			t.Fatal(err)
		}
	}
	stream, err := js.Stream(ctx, j.Name())
	if err != nil {
		t.Fatal(err)
	}
	leader := stream.CachedInfo().Cluster.Leader
	// The reader is connected to another node: the restart does not
	// disconnect it, nothing tells it its consumer is gone.
	other := -1
	for i := range c.Size() {
		if c.Server(i).Name() != leader {
			other = i
		}
	}
	_, rjs := journaltest.Connect(t, c.Server(other).ClientURL())
	rj, err := journal.Open(ctx, rjs, j.Name())
	if err != nil {
		t.Fatal(err)
	}

	got, restarted := 0, false
	err = rj.Read(ctx, 1, 0, "", func(m journal.Msg) error {
		got++
		if restarted {
			return nil
		}
		restarted = true
		holder := consumerNode(t, ctx, rjs, j.Name())
		for i := range c.Size() {
			if c.Server(i).Name() == holder {
				if err := c.Restart(i); err != nil {
					t.Fatal(err)
				}
			}
		}
		return nil
	})
	if err != nil || got != n {
		t.Fatalf("read %d of %d messages: %v", got, n, err)
	}
}

// consumerNode is the server holding stream's only ordered consumer.
func consumerNode(t *testing.T, ctx context.Context, js jetstream.JetStream, stream string) string {
	t.Helper()
	s, err := js.Stream(ctx, stream)
	if err != nil {
		t.Fatal(err)
	}
	l := s.ListConsumers(ctx)
	for info := range l.Info() {
		if info.Cluster != nil && info.Config.Durable == "" {
			return info.Cluster.Leader
		}
	}
	if err := l.Err(); err != nil {
		t.Fatal(err)
	}
	t.Fatal("no ordered consumer on", stream)
	return ""
}
