package replaycmd

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/tablejournal/tablejournal/cmd/internal/cli"
	"github.com/tablejournal/tablejournal/events/edm"
)

// replay prune: a policy is required; a dry run counts; --apply prunes and
// then asof before the horizon exits 3 naming the prune.
func TestReplayPruneCLI(t *testing.T) {
	e := startReplayEnv(t)
	var last uint64
	for i := range 6 {
		last = e.Publish(t, fmt.Sprintf("pc%d", i), upsert("order-7", edm.Entity{"n": edm.Int64(int64(i))})).Seq
	}
	if _, errs, code := e.replay(t, "prune", "--table", "orders"); code != cli.ExitUsage || !strings.Contains(errs, "needs a policy") {
		t.Fatalf("no policy: exit %d: %s", code, errs)
	}
	if _, errs, code := e.replay(t, "prune", "--table", "orders", "--keep", "9x"); code != cli.ExitUsage {
		t.Fatalf("--keep 9x: exit %d: %s", code, errs)
	}
	var res pruneResult
	out, errs, code := e.replay(t, "prune", "--table", "orders", "--keep-versions", "2", "--json")
	if code != cli.ExitOK || json.Unmarshal([]byte(out), &res) != nil || res.Applied || res.Rows != 4 || len(res.Partitions) != 1 {
		t.Fatalf("dry run: exit %d: %s %s", code, out, errs)
	}
	out, errs, code = e.replay(t, "prune", "--table", "orders", "--keep-versions", "2", "--apply")
	if code != cli.ExitOK || !strings.Contains(out, "removed 4 rows in 1 partitions") {
		t.Fatalf("apply: exit %d: %s %s", code, out, errs)
	}
	_, errs, code = e.replay(t, "asof", "--table", "orders", "--pk", "customer-42", "--seq", fmt.Sprint(last-5))
	if code != cli.ExitRejected || !strings.Contains(errs, "pruned:") || !strings.Contains(errs, "prune-orders-") {
		t.Fatalf("asof before the horizon: exit %d: %s", code, errs)
	}
}
