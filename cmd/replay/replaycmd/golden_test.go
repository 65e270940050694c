package replaycmd

import (
	"path/filepath"
	"testing"

	"github.com/tablejournal/tablejournal/cmd/internal/cli/clitest"
	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/events/edm"
)

// TestReplayGolden runs every replay subcommand, as text and as JSON,
// over a journal of three commands, against testdata/replay.txt.
func TestReplayGolden(t *testing.T) {
	e := startReplayEnv(t)
	e.Publish(t, "c1", upsert("order-7", edm.Entity{"status": edm.String("new"), "qty": edm.Int64(9007199254740993)}))
	e.Publish(t, "c2", upsert("order-7", edm.Entity{"status": edm.String("shipped"), "qty": edm.Int64(9007199254740993)}),
		upsert("order-8", edm.Entity{"total": edm.Double(12.5)}))
	e.Publish(t, "c3", events.RowOp{Op: events.OpDelete, RK: "order-8"})
	norm := &clitest.Normalizer{Tmp: t.TempDir()}
	clitest.RunGolden(t, filepath.Join("testdata", "replay.txt"), norm, func(args []string) (string, string, int) {
		if args[0] != "replay" {
			t.Fatalf("not a replay command: %v", args)
		}
		return e.replay(t, args[1:]...)
	})
}
