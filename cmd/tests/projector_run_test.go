package cli_test

import (
	"bytes"
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tablejournal/tablejournal/cmd/internal/cli"
	"github.com/tablejournal/tablejournal/cmd/projector/projectorcmd"
	"github.com/tablejournal/tablejournal/cmd/replay/replaycmd"
	"github.com/tablejournal/tablejournal/journal/journaltest"
	"github.com/tablejournal/tablejournal/projection/projectiontest"
)

var embeddedURL = regexp.MustCompile(`url=(nats://127\.0\.0\.1:\d+)`)

// TestProjectorInProcess runs the projector command as cmd/projector does,
// with its defaults (embedded JetStream server and embedded store) in a
// temporary --data folder: a command published with the writer is
// applied, cancelling the context stops the projector cleanly, and the
// row is then in the store it leaves behind.
func TestProjectorInProcess(t *testing.T) {
	t.Parallel()
	data := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stderr := &projectiontest.SyncBuffer{}
	exited := make(chan error, 1)
	go func() {
		exited <- projectorcmd.Run(ctx, []string{"--data", data, "--nats-listen", "127.0.0.1:-1", "--no-fsync"}, cli.IO{Stdout: &bytes.Buffer{}, Stderr: stderr})
	}()

	var url string
	wctx := journaltest.Context(t, 30*time.Second)
	projectiontest.WaitFor(t, wctx, "the projector's startup line", func() (bool, error) {
		select {
		case err := <-exited:
			return false, fmt.Errorf("projector exited: %v\n%s", err, stderr)
		default:
		}
		m := embeddedURL.FindStringSubmatch(stderr.String())
		if m != nil {
			url = m[1]
		}
		return m != nil, nil
	})

	out, errs, code := runWriter(t, "upsert", "--table", "orders", "--pk", "p", "--rk", "r", "--id", "in-process",
		"--set", "n:int64=7", "--wait", "--nats", url)
	if code != cli.ExitOK || out != "published in-process seq 1\napplied: row \"r\" version 0 (upsert)\n" {
		t.Fatalf("writer: exit %d, stdout %q, stderr %q", code, out, errs)
	}

	cancel()
	select {
	case err := <-exited:
		if err != nil {
			t.Fatalf("projector returned %v\n%s", err, stderr)
		}
	case <-time.After(30 * time.Second):
		t.Fatalf("the projector did not return within 30s of its context's end\n%s", stderr)
	}
	if !strings.Contains(stderr.String(), "projector stopped") {
		t.Errorf("no shutdown line in the log:\n%s", stderr)
	}

	// The data folder is free again, and holds the row.
	var rout, rerr bytes.Buffer
	err := replaycmd.Run(context.Background(), []string{"asof", "--data", data, "--table", "orders", "--pk", "p", "--rk", "r", "--seq", "1"},
		cli.IO{Stdout: &rout, Stderr: &rerr})
	if cli.Exit(err, &rerr) != cli.ExitOK || !strings.Contains(rout.String(), `orders "p"/"r" at seq 1: version 0, upsert by in-process at seq 1`) {
		t.Fatalf("replay asof after the projector stopped: %v\n%s%s", err, rout.String(), rerr.String())
	}
}
