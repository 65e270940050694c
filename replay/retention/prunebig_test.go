package retention_test

import (
	"context"
	"fmt"
	"os"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/replay/rebuild"
	"github.com/tablejournal/tablejournal/replay/replaytest"
	"github.com/tablejournal/tablejournal/replay/retention"
	"github.com/tablejournal/tablejournal/store"
	"github.com/tablejournal/tablejournal/wire"
)

// pruneBigVersions is the size of TestPruneLive's partition: small enough
// for make test; TABLEJOURNAL_PRUNE_VERSIONS=100000 measures a big one.
func pruneBigVersions(b replaytest.Backend) int {
	if s := os.Getenv("TABLEJOURNAL_PRUNE_VERSIONS"); s != "" {
		if n, err := strconv.Atoi(s); err == nil && n > 0 {
			return n
		}
	}
	if b.Small {
		return 200
	}
	return 800
}

// TestPruneLive prunes a partition of many versions down to its last
// hundredth while the projector applies live commands, in that partition
// and others; then the table equals its rebuild, and the rates are logged.
func TestPruneLive(t *testing.T) {
	for _, b := range replaytest.Stores() {
		t.Run(b.Name, func(t *testing.T) {
			e := replaytest.NewEnv(t, b.Open(t), replaytest.With(replaytest.Rebuild|replaytest.Retention))
			table := replaytest.UniqueTable("Big")
			n := pruneBigVersions(b)
			// The env's deadline is for the usual sizes; a measurement of a
			// big partition takes longer.
			ctx, cancel := context.WithTimeout(context.Background(), time.Duration(max(5, n/2000))*time.Minute)
			t.Cleanup(cancel)
			e.Ctx = ctx
			cmds := make([]*events.Command, n)
			ids := make([]string, n)
			for i := range cmds {
				cmds[i] = &events.Command{ID: fmt.Sprintf("%s-%d", table, i), Table: table, PK: "big",
					Ops: []events.RowOp{{Op: events.OpUpsert, RK: fmt.Sprintf("r%d", i%10), Entity: edm.Entity{"n": edm.Int64(int64(i))}}}}
				ids[i] = cmds[i].ID
			}
			start := time.Now()
			seqs := e.Publish(cmds)
			for i := 0; i < n; i += 20_000 { // each wait is bounded to 2 minutes
				e.Await(ids[i:min(i+20_000, n)])
			}
			t.Logf("%d versions projected in %v", n, time.Since(start).Round(time.Millisecond))
			horizon := seqs[n-n/100]
			cfg := retention.PruneConfig{Table: table, Partition: store.InPartition("big"), Before: horizon}
			dry, err := e.Pruner.PlanPrune(e.Ctx, cfg)
			if err != nil || dry.Rows < int64(n-n/100-10) {
				t.Fatalf("dry run: %+v %v", dry, err)
			}

			// Live traffic meanwhile: commands to the pruned partition and
			// to others, one at a time, until the prune is done.
			stop := make(chan struct{})
			var (
				wg   sync.WaitGroup
				live []string
			)
			wg.Add(1)
			go func() {
				defer wg.Done()
				// Paced like a steady service, below what the projector
				// applies even under -race (a flood would queue the prune
				// behind a backlog): the check is that live commands keep
				// applying beside the prune.
				tick := time.NewTicker(25 * time.Millisecond)
				defer tick.Stop()
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					case <-tick.C:
					}
					c := &events.Command{ID: fmt.Sprintf("%s-live-%d", table, i), Table: table, PK: []string{"big", "p1", "p2"}[i%3],
						Ops: []events.RowOp{{Op: events.OpUpsert, RK: fmt.Sprintf("r%d", i%10), Entity: edm.Entity{"live": edm.Int64(int64(i))}}}}
					if _, err := e.Writer.Publish(e.Ctx, c); err != nil {
						t.Error(err)
						return
					}
					live = append(live, c.ID)
				}
			}()
			start = time.Now()
			res, err := dry.Apply(e.Ctx)
			took := time.Since(start)
			close(stop)
			wg.Wait()
			removed := int64(0)
			for _, c := range res.Counts {
				removed += c.N
			}
			if err != nil || removed != dry.Rows {
				t.Fatalf("prune: %+v %v, the dry run counted %d", res, err, dry.Rows)
			}
			outs := e.Await(live)
			for _, id := range live {
				if outs[id].Status != wire.StatusApplied {
					t.Fatalf("live command %s: %+v", id, outs[id])
				}
			}
			t.Logf("pruned %d of %d versions in %v (%.0f rows/s) while %d live commands applied (%.0f/s)",
				removed, n, took.Round(time.Millisecond), float64(removed)/took.Seconds(), len(live), float64(len(live))/took.Seconds())
			vs, err := e.Rebuild.Verify(e.Ctx, rebuild.VerifyConfig{Table: table})
			if err != nil || vs.Missing+vs.Extra+vs.Changed != 0 {
				t.Fatalf("verify: %+v %v", vs, err)
			}
		})
	}
}
