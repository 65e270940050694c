package journal_test

import (
	"errors"
	"testing"
	"time"

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
