package cli_test

import (
	"context"
	"io"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tablejournal/tablejournal/cmd/internal/cli"
	"github.com/tablejournal/tablejournal/cmd/projector/projectorcmd"
	"github.com/tablejournal/tablejournal/journal/journaltest"
	"github.com/tablejournal/tablejournal/wire"
)

// The projector names its journal with --stream or TABLEJOURNAL_STREAM,
// which the writer reads too, creates it refusing purges and deletes, and
// sets the retention of OUTCOMES and CHANGES; a restart with other
// retention updates them and says so in its log.
func TestProjectorStreamFlags(t *testing.T) {
	srv := journaltest.StartServer(t)
	_, js := journaltest.Connect(t, srv.ClientURL())
	ctx := journaltest.Context(t, time.Minute)
	t.Setenv(cli.EnvStream, "ORDERSJOURNAL")
	tables := "sqlite:" + filepath.Join(t.TempDir(), "t.db")

	run := func(args ...string) string {
		t.Helper()
		pctx, cancel := context.WithCancel(ctx)
		var log strings.Builder
		done := make(chan error, 1)
		go func() {
			done <- projectorcmd.Run(pctx, append([]string{"--nats", srv.ClientURL(), "--tables", tables, "--log-level", "warn"}, args...), cli.IO{Stdout: io.Discard, Stderr: &log})
		}()
		// Wait for the projector to run: a command through the writer,
		// which finds the journal by the same variable, gets applied (it
		// fails until the projector has created the streams).
		var (
			errs string
			code int
		)
		for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
			if _, errs, code = runWriter(t, "upsert", "--table", "orders", "--pk", "p", "--rk", "r", "--wait", "--timeout", "5s", "--nats", srv.ClientURL()); code == cli.ExitOK {
				break
			}
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("projector %v: %v\n%s", args, err, log.String())
		}
		if code != cli.ExitOK {
			t.Fatalf("writer: exit %d: %s", code, errs)
		}
		return log.String()
	}
	run("--outcomes-max-age", "1h", "--changes-max-age", "2h")
	check := func(stream string, maxAge time.Duration, deny bool) {
		t.Helper()
		s, err := js.Stream(ctx, stream)
		if err != nil {
			t.Fatal(err)
		}
		cfg := s.CachedInfo().Config
		if cfg.MaxAge != maxAge || cfg.DenyPurge != deny || cfg.DenyDelete != deny || cfg.Description == "" {
			t.Errorf("%s: max age %v, deny %v/%v, description %q; want %v, deny %v", stream, cfg.MaxAge, cfg.DenyPurge, cfg.DenyDelete, cfg.Description, maxAge, deny)
		}
	}
	check("ORDERSJOURNAL", 0, true)
	check(wire.OutcomesStream, time.Hour, false)
	check(wire.ChangesStream, 2*time.Hour, false)

	log := run("--changes-max-age", "30m")
	check(wire.OutcomesStream, time.Hour, false)
	check(wire.ChangesStream, 30*time.Minute, false)
	if !strings.Contains(log, "stream configuration updated") || !strings.Contains(log, "max age 2h0m0s → 30m0s") {
		t.Errorf("the restart's log does not report the change:\n%s", log)
	}
}
