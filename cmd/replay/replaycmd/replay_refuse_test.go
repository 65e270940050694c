package replaycmd

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tablejournal/tablejournal/cmd/internal/cli"
	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/store"
	"github.com/tablejournal/tablejournal/store/sqlite"
)

// snapshot --at beyond the head and rebuild --table of a table the journal
// has never seen exit 1 with the reason, and leave no file or table behind.
func TestReplayRefusesPoints(t *testing.T) {
	e := startReplayEnv(t)
	o := e.Publish(t, "rf1", upsert("r", edm.Entity{}))
	out := filepath.Join(t.TempDir(), "snap")

	_, errs, code := e.replay(t, "snapshot", "--table", "orders", "--out", out, "--at", fmt.Sprint(o.Seq+5))
	if code != cli.ExitFailure || !strings.Contains(errs, fmt.Sprintf("sequence %d is beyond the journal's head %d", o.Seq+5, o.Seq)) {
		t.Fatalf("snapshot --at beyond the head: exit %d: %s", code, errs)
	}
	if _, err := os.Stat(out); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("the refused snapshot left %s: %v", out, err)
	}
	_, errs, code = e.replay(t, "rebuild", "--table", "nosuchtable", "--into", "copyOfNothing")
	if code != cli.ExitFailure || !strings.Contains(errs, "no command of the table in the journal: nosuchtable") {
		t.Fatalf("rebuild of an unknown table: exit %d: %s", code, errs)
	}
	st, err := sqlite.Open(e.Ctx, strings.TrimPrefix(e.Tables, "sqlite:"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.Query(e.Ctx, "copyOfNothing", store.Query{AllPartitions: true}); !errors.Is(err, store.ErrTableNotFound) {
		t.Fatalf("the refused rebuild created its table: %v", err)
	}
}
