package cli_test

import (
	"strings"
	"testing"

	"github.com/tablejournal/tablejournal/cmd/internal/cli"
	"github.com/tablejournal/tablejournal/cmd/internal/cli/clitest"
	"github.com/tablejournal/tablejournal/cmd/replay/replaycmd"
)

// The empty PartitionKey from the command line: the writer publishes it
// with --pk ”, the projector applies it, and replay asof --pk ” reads that
// partition alone while asof without --pk reads the whole table.
func TestEmptyPartitionKeyCLI(t *testing.T) {
	e := clitest.StartPipeline(t)
	for _, pk := range []string{"", "customer-42"} {
		out, errs, code := runWriter(t, "upsert", "--table", "orders", "--pk", pk, "--rk", "r", "--set", "who="+pk+"x", "--wait", "--nats", e.URL)
		if code != cli.ExitOK || !strings.Contains(out, "applied") {
			t.Fatalf("writer --pk %q: exit %d: %s%s", pk, code, out, errs)
		}
	}
	out, errs, code := e.Replay(t, replaycmd.Run, "asof", "--table", "orders", "--pk", "")
	if code != cli.ExitOK || !strings.Contains(out, `orders "" at`) || !strings.Contains(out, "1 row") || strings.Contains(out, "customer-42") {
		t.Fatalf("asof --pk '': exit %d: %s%s", code, out, errs)
	}
	out, errs, code = e.Replay(t, replaycmd.Run, "asof", "--table", "orders", "--json")
	if code != cli.ExitOK || !strings.Contains(out, `"pk":null`) || !strings.Contains(out, `"who":"x"`) || !strings.Contains(out, `"who":"customer-42x"`) {
		t.Fatalf("asof of the table: exit %d: %s%s", code, out, errs)
	}
	out, errs, code = e.Replay(t, replaycmd.Run, "asof", "--table", "orders", "--pk", "", "--json")
	if code != cli.ExitOK || !strings.Contains(out, `"pk":""`) || strings.Contains(out, "customer-42x") {
		t.Fatalf("asof --pk '' --json: exit %d: %s%s", code, out, errs)
	}
}
