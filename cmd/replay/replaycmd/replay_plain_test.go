package replaycmd

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tablejournal/tablejournal/journal/tablelayout"

	"github.com/tablejournal/tablejournal/cmd/internal/cli"
	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/journal"
	"github.com/tablejournal/tablejournal/projection/projectiontest"
	"github.com/tablejournal/tablejournal/store"
	"github.com/tablejournal/tablejournal/wire"
)

// setPlain sets table's layout to plain, as writer layout --plain does.
func setPlain(t *testing.T, e *replayEnv, table string) {
	t.Helper()
	j, err := journal.Open(e.Ctx, e.JS, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tablelayout.Set(e.Ctx, j, table, wire.LayoutPlain); err != nil {
		t.Fatal(err)
	}
}

// TestReplayPlainCLI runs the replay commands on a plain table (SPEC §4)
// as a user would after writer layout --plain: as-of, history, blame,
// undo, snapshot and load into a copy that diff and verify find
// identical, restore, prune and erase; after each write the table itself
// holds exactly its history's tips.
func TestReplayPlainCLI(t *testing.T) {
	e := startReplayEnv(t, journal.Config{AllowMsgDelete: true})
	setPlain(t, e, "orders")
	e.Publish(t, "c1", upsert("order-7", edm.Entity{"status": edm.String("new")}))
	e.Publish(t, "c2", upsert("order-7", edm.Entity{"status": edm.String("shipped")}), upsert("order-8", edm.Entity{"total": edm.Double(12.5)}))
	e.Publish(t, "c3", events.RowOp{Op: events.OpDelete, RK: "order-8"})
	run := func(t *testing.T, want []string, args ...string) string {
		t.Helper()
		out, errs, code := e.replay(t, args...)
		if code != cli.ExitOK {
			t.Fatalf("%v: exit %d: %s%s", args, code, out, errs)
		}
		for _, w := range want {
			if !strings.Contains(out, w) {
				t.Fatalf("%v: no %q in\n%s%s", args, w, out, errs)
			}
		}
		projectiontest.CheckPlain(t, e.Store, "orders")
		return out
	}
	run(t, []string{`status=Edm.String("shipped")`, "1 row\n"}, "asof", "--table", "orders")
	run(t, []string{`status=Edm.String("new")`}, "asof", "--table", "orders", "--cmd", "c1")
	run(t, []string{"deleted (version 1, by c3"}, "asof", "--table", "orders", "--pk", "customer-42", "--rk", "order-8")
	run(t, []string{"+total=Edm.Double(12.5)", "tombstone"}, "history", "--table", "orders", "--pk", "customer-42", "--rk", "order-8", "--diff")
	run(t, []string{"applied", "order-8", "superseded"}, "blame", "--cmd", "c2")
	run(t, []string{"insert → values of version 0"}, "undo", "--cmd", "c3")
	run(t, []string{`"status":"applied"`}, "undo", "--cmd", "c3", "--apply", "--json")
	if _, err := e.Store.Get(e.Ctx, "orders", "customer-42", "order-8"); err != nil {
		t.Fatalf("the undone delete: order-8 is not back in the plain table: %v", err)
	}

	file := filepath.Join(t.TempDir(), "orders.snap")
	run(t, []string{"snapshot of orders"}, "snapshot", "--table", "orders", "--out", file)
	run(t, []string{"loaded"}, "load", "--in", file, "--into", "ordersCopy")
	projectiontest.CheckPlain(t, e.Store, "ordersCopy")
	run(t, nil, "diff", "--table", "orders", "--against", "ordersCopy")
	run(t, nil, "verify", "--table", "orders")

	run(t, []string{"applied"}, "restore", "--table", "orders", "--to", "cmd:c1", "--apply")
	run(t, []string{`status=Edm.String("new")`, "1 row\n"}, "asof", "--table", "orders")
	run(t, nil, "prune", "--table", "orders", "--keep-versions", "1", "--apply")
	run(t, []string{"2 earlier versions pruned"}, "history", "--table", "orders", "--pk", "customer-42", "--rk", "order-7")
	run(t, nil, "erase", "--table", "orders", "--pk", "customer-42", "--apply")
	for _, table := range []string{"orders", "ordersHistory"} {
		n := 0
		err := store.All(e.Ctx, e.Store, table, store.Query{PK: "customer-42"}, func(e store.Entity) error {
			if !strings.HasPrefix(e.RK, "erased") && e.RK != "fence" {
				n++
			}
			return nil
		})
		if err != nil || n != 0 {
			t.Fatalf("after the erase, %s holds %d rows of the partition (%v)", table, n, err)
		}
	}
	run(t, nil, "verify", "--table", "orders")
}

// TestReplayPlainCompactCLI: a plain table's journal compacted below a
// snapshot (which carries the layout) still rebuilds: the rebuild loads
// the recorded snapshot as a plain copy and applies the journal after it,
// and diff and verify find the rebuild and the live table identical.
func TestReplayPlainCompactCLI(t *testing.T) {
	e := startReplayEnv(t, journal.Config{AllowTrim: true})
	setPlain(t, e, "orders")
	var seqs []uint64
	for i := range 6 {
		seqs = append(seqs, e.Publish(t, fmt.Sprintf("cc%d", i), upsert(fmt.Sprintf("order-%d", i%2), edm.Entity{"n": edm.Int64(int64(i))})).Seq)
	}
	snap := filepath.Join(t.TempDir(), "orders.snap")
	out, errs, code := e.replay(t, "compact", "--table", "orders", "--snapshot", snap, "--at", fmt.Sprint(seqs[3]), "--apply")
	if code != cli.ExitOK || !strings.Contains(out, "trimmed 3 commands") {
		t.Fatalf("compact: exit %d: %s %s", code, out, errs)
	}
	e.Publish(t, "cc-late", upsert("order-0", edm.Entity{"n": edm.Int64(99)}))
	out, errs, code = e.replay(t, "rebuild", "--table", "orders", "--into", "Rebuilt")
	if code != cli.ExitOK || !strings.Contains(errs, "loading its recorded snapshot") {
		t.Fatalf("rebuild: exit %d: %s %s", code, out, errs)
	}
	projectiontest.CheckPlain(t, e.Store, "Rebuilt")
	if out, errs, code = e.replay(t, "diff", "--table", "orders", "--against", "Rebuilt"); code != cli.ExitOK || !strings.Contains(out, "identical") {
		t.Fatalf("diff of the live table and its rebuild: exit %d: %s %s", code, out, errs)
	}
	if out, errs, code = e.replay(t, "verify", "--table", "orders"); code != cli.ExitOK || !strings.Contains(out, "identical") {
		t.Fatalf("verify of the compacted table: exit %d: %s %s", code, out, errs)
	}
}
