package cli_test

import (
	"bytes"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tablejournal/tablejournal/cmd/internal/cli"
	"github.com/tablejournal/tablejournal/cmd/internal/cli/clitest"
	"github.com/tablejournal/tablejournal/cmd/projector/projectorcmd"
	"github.com/tablejournal/tablejournal/journal"
	"github.com/tablejournal/tablejournal/journal/journaltest"
)

// Against a nats-server run with its defaults (max_payload 1 MiB) the
// projector and the writer refuse to start and say what to configure.
func TestSmallMaxPayload(t *testing.T) {
	url := journaltest.StartDefaultServer(t)
	ctx := journaltest.Context(t, time.Minute)
	var stderr bytes.Buffer
	err := projectorcmd.Run(ctx, []string{"--nats", url, "--tables", "sqlite:" + filepath.Join(t.TempDir(), "t.db"), "--log-level", "error"}, cli.IO{Stdout: io.Discard, Stderr: &stderr})
	if !errors.Is(err, journal.ErrMaxPayload) || cli.Exit(err, &stderr) != cli.ExitFailure || !strings.Contains(stderr.String(), "set max_payload: 8MB in nats-server.conf") {
		t.Fatalf("projector: %v\n%s", err, stderr.String())
	}
	_, errs, code := runWriter(t, "upsert", "--table", "orders", "--pk", "p", "--rk", "r", "--nats", url)
	if code != cli.ExitFailure || !strings.Contains(errs, "max_payload is 1 MiB") {
		t.Fatalf("writer: exit %d: %s", code, errs)
	}
	_, errs, code = runWriter(t, "apply", clitest.CommandsFile(t, `{"id":"a","table":"orders","pk":"p","ops":[{"op":"delete","rk":""}]}`), "--nats", url)
	if code != cli.ExitFailure || !strings.Contains(errs, "max_payload is 1 MiB") {
		t.Fatalf("writer apply: exit %d: %s", code, errs)
	}
}
