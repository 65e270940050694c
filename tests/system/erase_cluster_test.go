package system_test

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/journal"
	"github.com/tablejournal/tablejournal/journal/journaltest"
	"github.com/tablejournal/tablejournal/projection"
	"github.com/tablejournal/tablejournal/projection/projectiontest"
	"github.com/tablejournal/tablejournal/replay"
	"github.com/tablejournal/tablejournal/replay/erasure"
	"github.com/tablejournal/tablejournal/replay/rebuild"
)

// TestEraseCluster erases a partition on a 3-node JetStream cluster with
// three replicas of every stream, while the projector applies traffic to
// other partitions: afterwards no message of any stream, read through the
// cluster, holds the erased values, and the receipt is verified. It also
// reports (without failing) which files of the nodes' store directories
// still hold the values' bytes: copies below the streams, such as the
// replicated streams' raft logs until they compact (docs/erasure.md).
func TestEraseCluster(t *testing.T) {
	ctx := journaltest.Context(t, 3*time.Minute)
	cluster := journaltest.StartCluster(t, 3)
	jcfg := journal.Config{Replicas: 3, AllowMsgDelete: true}
	h := projectiontest.Attach(t, cluster.URL(), projectiontest.SQLite(t), projectiontest.Options{Journal: jcfg})
	h.StartProjector(projection.Config{Replicas: 3, Journal: jcfg})
	secret := []byte("SECRET-CLUSTER-4d2a")
	var cmds []*events.Command
	for i := range 20 {
		cmds = append(cmds, &events.Command{ID: fmt.Sprintf("c%d", i), Table: "orders", PK: "cust-1", Ops: []events.RowOp{{
			Op: events.OpUpsert, RK: fmt.Sprintf("r%d", i%4), Entity: edm.Entity{"v": edm.String(fmt.Sprintf("%s-%d", secret, i))}}}})
	}
	h.PublishAll(ctx, cmds)
	traffic := projectiontest.NewWorkload(3, "orders", 8, 5).Take(400)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for _, c := range traffic {
			if _, err := h.Writer.Publish(ctx, c); err != nil {
				t.Errorf("live traffic: %v", err)
				return
			}
		}
	}()
	rp, err := replay.New(ctx, replay.Config{Store: h.Store, JetStream: h.JS, Logger: projectiontest.QuietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	h.AwaitOutcomes(ctx, []string{"c19"})
	rec, err := erasure.New(rp).EraseKey(ctx, erasure.Target{Table: "orders", PK: "cust-1"}, nil)
	if err != nil {
		t.Fatalf("erase: %v", err)
	}
	<-done
	h.WaitProjected(ctx)
	if !rec.Verified || rec.Removed.JournalMsgs != 20 || rec.Removed.ChangeEvents != 20 || rec.Removed.Outcomes != 20 {
		t.Errorf("receipt: %+v", rec)
	}
	// Every stream, read back byte for byte: JOURNAL, OUTCOMES, CHANGES
	// and the buckets.
	for _, at := range journaltest.StreamsHolding(t, ctx, h.JS, secret) {
		t.Errorf("%s still holds the erased values", at)
	}
	// Rebuild equals live on the cluster too.
	stats, err := rebuild.New(rp).Verify(ctx, rebuild.VerifyConfig{Table: "orders"})
	if err != nil || !stats.Identical() {
		t.Errorf("verify: %+v, %v", stats, err)
	}
	var files []string
	for i := range cluster.Size() {
		dir := cluster.Server(i).JetStreamConfig().StoreDir
		_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return nil
			}
			if b, err := os.ReadFile(p); err == nil && bytes.Contains(b, secret) {
				rel, _ := filepath.Rel(dir, p)
				files = append(files, fmt.Sprintf("node %d: %s", i, rel))
			}
			return nil
		})
	}
	t.Logf("store files still holding the erased bytes (below the streams): %d\n%s", len(files), strings.Join(files, "\n"))
}
