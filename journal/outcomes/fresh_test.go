package outcomes_test

import (
	"context"
	"fmt"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/tablejournal/tablejournal/journal"
	"github.com/tablejournal/tablejournal/journal/journaltest"
	"github.com/tablejournal/tablejournal/journal/outcomes"
	"github.com/tablejournal/tablejournal/wire"
)

// TestOutcomeLookupsReadTheirWrites: on a 3-node cluster, a node that was
// down while outcomes were published may answer direct gets again before
// it has caught up (nats-server enables them at 90%). Look-ups through that
// node, right after it comes back, must still find every outcome stored
// before them: the projector's at-most-once rule and its crash recovery
// depend on it. (Whether the node is behind when asked depends on timing:
// the chaos test met it, this test asks at the moment it is most likely.)
func TestOutcomeLookupsReadTheirWrites(t *testing.T) {
	c := journaltest.StartCluster(t, 3)
	_, cjs := journaltest.Connect(t, c.URL())
	ctx := journaltest.Context(t, 2*time.Minute)
	s, _, err := outcomes.EnsureConfig(ctx, cjs, outcomes.Config{}, journal.WithReplicas(3))
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// Outcomes are published through the stream's leader, which stays up;
	// a node that is not the leader goes down while more are stored.
	leader, down := -1, -1
	for i := 0; i < c.Size(); i++ {
		if c.Server(i).Name() == info.Cluster.Leader {
			leader = i
		} else if down < 0 {
			down = i
		}
	}
	nodeURL := func(i int) string {
		return "nats://" + net.JoinHostPort("127.0.0.1", strconv.Itoa(c.Server(i).Addr().(*net.TCPAddr).Port))
	}
	_, js := journaltest.Connect(t, nodeURL(leader))
	// publish stores outcomes from..to-1, 500 awaited at a time (a burst
	// of thousands overran a -race client's connection in CI).
	publish := func(from, to int) []string {
		var ids []string
		for lo := from; lo < to; lo += 500 {
			var fs []jetstream.PubAckFuture
			for i := lo; i < min(lo+500, to); i++ {
				id := fmt.Sprintf("cmd-%05d", i)
				ids = append(ids, id)
				msg, err := outcomes.Message(wire.Outcome{ID: id, Seq: uint64(i + 1), Status: wire.StatusApplied})
				if err != nil {
					t.Fatal(err)
				}
				f, err := js.PublishMsgAsync(msg)
				if err != nil {
					t.Fatal(err)
				}
				fs = append(fs, f)
			}
			for _, f := range fs {
				select {
				case <-f.Ok():
				case err := <-f.Err():
					t.Fatal(err)
				case <-ctx.Done():
					t.Fatal(ctx.Err())
				}
			}
		}
		return ids
	}
	publish(0, 5000)
	for round := 0; round < 3; round++ {
		c.Stop(down)
		ids := publish(5000+round*500, 5500+round*500)
		if err := c.Start(down); err != nil {
			t.Fatal(err)
		}
		// Through the node that was down, at once.
		_, njs := journaltest.Connect(t, nodeURL(down))
		deadline := time.Now().Add(2 * time.Second)
		for n := 0; time.Now().Before(deadline); n++ {
			got, err := outcomes.NewReader(njs).LatestAll(ctx, ids)
			if err != nil {
				if ctx.Err() != nil {
					t.Fatal(err)
				}
				continue // the node is not ready for requests yet
			}
			if len(got) != len(ids) {
				t.Fatalf("round %d, look-up %d through the restarted node: %d of %d outcomes found", round, n, len(got), len(ids))
			}
			o, err := outcomes.NewReader(njs).Latest(ctx, ids[len(ids)-1])
			if err != nil || o.ID != ids[len(ids)-1] {
				t.Fatalf("round %d: latest outcome of %s through the restarted node: %+v, %v", round, ids[len(ids)-1], o, err)
			}
			if h, err := outcomes.NewReader(njs).History(ctx, ids[0]); err != nil || len(h) != 1 || h[0].ID != ids[0] {
				t.Fatalf("round %d: outcome history of %s through the restarted node: %+v, %v", round, ids[0], h, err)
			}
		}
		if err := c.WaitStreamCurrent(context.Background(), wire.OutcomesStream); err != nil {
			t.Fatal(err)
		}
	}
}
