package projectorcmd

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/tablejournal/tablejournal/cmd/internal/cli"
	"github.com/tablejournal/tablejournal/journal/journaltest"
	"github.com/tablejournal/tablejournal/projection/projectiontest"
	"github.com/tablejournal/tablejournal/projection/status"
)

// runStatus runs `projector status args... --nats url`.
func runStatus(t *testing.T, ctx context.Context, url string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	err := Run(ctx, append(append([]string{"status"}, args...), "--nats", url), cli.IO{Stdout: &out, Stderr: &errb})
	code = cli.Exit(err, &errb)
	return out.String(), errb.String(), code
}

func statusJSON(t *testing.T, stdout string) status.Overview {
	t.Helper()
	var ov status.Overview
	if err := json.Unmarshal([]byte(stdout), &ov); err != nil {
		t.Fatalf("status --json: %v\n%s", err, stdout)
	}
	return ov
}

// TestProjectorStatus runs `projector status --json` against a projector
// that applies half the shards while the other half has pending commands:
// every shard is listed with the applied sequence and pending count its
// consumer reports, the unowned shards make it exit 4, and it exits 0 once
// a projector sharing the shards owns them all.
func TestProjectorStatus(t *testing.T) {
	t.Parallel()
	ctx := journaltest.Context(t, 2*time.Minute)
	e := startMetricsEnv(t)
	url := e.h.Server.ClientURL()

	// Every shard gets a consumer, then commands arrive while nobody runs.
	first := e.projector(t)
	e.h.PublishAll(ctx, workload(21, 400))
	e.h.WaitProjected(ctx)
	if err := first.stop(); err != nil {
		t.Fatal(err)
	}
	e.h.PublishAll(ctx, workload(22, 400))

	half := e.projector(t, "--shards", "0,1")
	stream, err := e.h.JS.Stream(ctx, e.h.Journal.Name())
	if err != nil {
		t.Fatal(err)
	}
	consumer := func(shard int) *jetstream.ConsumerInfo {
		t.Helper()
		c, err := stream.Consumer(ctx, fmt.Sprintf("projector-%d", shard))
		if err != nil {
			t.Fatal(err)
		}
		info, err := c.Info(ctx)
		if err != nil {
			t.Fatal(err)
		}
		return info
	}
	var ov status.Overview
	projectiontest.WaitFor(t, ctx, "shards 0 and 1 are caught up and reported", func() (bool, error) {
		stdout, stderr, code := runStatus(t, ctx, url, "--json")
		if code != cli.ExitUnowned {
			return false, fmt.Errorf("exit %d, want %d: %s", code, cli.ExitUnowned, stderr)
		}
		ov = statusJSON(t, stdout)
		for _, s := range ov.Shards[:2] {
			if s.Owner == "" || s.Pending != 0 {
				return false, fmt.Errorf("shard %d: %+v", s.Shard, s)
			}
		}
		return true, nil
	})
	if len(ov.Shards) != metricsShards {
		t.Fatalf("status lists %d shards, want %d: %+v", len(ov.Shards), metricsShards, ov)
	}
	var pending uint64
	for i, s := range ov.Shards {
		info := consumer(i)
		if s.Shard != i || !s.Consumer || s.Applied != info.AckFloor.Stream ||
			s.Pending != info.NumPending+uint64(info.NumAckPending) {
			t.Errorf("shard %d: status %+v, consumer ack floor %d, pending %d + %d unacknowledged",
				i, s, info.AckFloor.Stream, info.NumPending, info.NumAckPending)
		}
		if i >= 2 && (s.Owner != "" || s.Pending == 0 || s.LagSeconds <= 0) {
			t.Errorf("shard %d: %+v, want pending commands, a lag and no owner", i, s)
		}
		pending += s.Pending
	}
	if ov.Totals.Owned != 2 || ov.Totals.Pending != pending || fmt.Sprint(ov.Totals.Unowned) != "[2 3]" {
		t.Errorf("totals %+v, want 2 owned, %d pending, shards 2 and 3 unowned", ov.Totals, pending)
	}

	stdout, stderr, code := runStatus(t, ctx, url)
	if code != cli.ExitUnowned || !strings.Contains(stderr, "shards [2 3] have pending commands and no owner") {
		t.Errorf("status: exit %d, stderr %q; want %d naming shards 2 and 3", code, stderr, cli.ExitUnowned)
	}
	for _, want := range []string{"SHARD", "OWNER", "APPLIED", "PENDING", "LAG", "RATE/S", "2/4 owned"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("status output lacks %q:\n%s", want, stdout)
		}
	}

	// One store file has one projector at a time: the next one shares the
	// shards (leases in the ownership bucket).
	if err := half.stop(); err != nil {
		t.Fatal(err)
	}
	e.projector(t)
	projectiontest.WaitFor(t, ctx, "every shard is owned and caught up", func() (bool, error) {
		stdout, stderr, code := runStatus(t, ctx, url, "--json")
		if code != cli.ExitOK {
			return false, fmt.Errorf("exit %d: %s", code, stderr)
		}
		ov = statusJSON(t, stdout)
		return ov.Totals.Owned == metricsShards && ov.Totals.Pending == 0, nil
	})
	for _, s := range ov.Shards {
		if s.LagSeconds != 0 || s.OwnerSince == nil {
			t.Errorf("shard %d: %+v, want no lag and a lease", s.Shard, s)
		}
	}

	// --watch --json: one status per line until interrupted.
	wctx, cancel := context.WithCancel(ctx)
	var out projectiontest.SyncBuffer
	done := make(chan error, 1)
	go func() {
		done <- Run(wctx, []string{"status", "--watch", "--json", "--interval", "20ms", "--nats", url}, cli.IO{Stdout: &out, Stderr: &out})
	}()
	projectiontest.WaitFor(t, ctx, "--watch printed three statuses", func() (bool, error) {
		return strings.Count(out.String(), "\n") >= 3, nil
	})
	cancel()
	if err := <-done; err != nil {
		t.Errorf("status --watch: %v", err)
	}
	sc := bufio.NewScanner(strings.NewReader(out.String()))
	for sc.Scan() {
		if ov := statusJSON(t, sc.Text()); len(ov.Shards) != metricsShards {
			t.Errorf("--watch line with %d shards", len(ov.Shards))
		}
	}
}
