package cli_test

import (
	"bytes"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tablejournal/tablejournal/cmd/internal/cli"
	"github.com/tablejournal/tablejournal/cmd/internal/cli/clitest"
	"github.com/tablejournal/tablejournal/cmd/projector/projectorcmd"
	"github.com/tablejournal/tablejournal/cmd/replay/replaycmd"
	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/journal"
	"github.com/tablejournal/tablejournal/journal/journaltest"
	"github.com/tablejournal/tablejournal/journal/outcomes"
	"github.com/tablejournal/tablejournal/projection"
	"github.com/tablejournal/tablejournal/projection/projectiontest"
	"github.com/tablejournal/tablejournal/replay/erasure"
	"github.com/tablejournal/tablejournal/wire"
)

// TestStoreBehindCommands is the operator's way through a store that lost
// confirmed writes, with the commands: the projector loses c2 of
// orders/"p" and writes c3 on top of the loss. With no projector running,
// projector status lists the partition (STORE BEHIND) and replay verify
// finds differences; a restarted projector still reports it; replay
// rebuild --behind rebuilds it, says nothing is left, and then verify is
// clean and status lists nothing.
func TestStoreBehindCommands(t *testing.T) {
	t.Parallel()
	ctx := journaltest.Context(t, 2*time.Minute)
	p, err := projectiontest.StartPipeline(ctx, nil, projectiontest.PipelineConfig{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	real := p.Store
	p.Store = &projectiontest.LosingStore{Store: real, Lose: "c2"}
	if _, err := p.RunProjector(projection.Config{Logger: projectiontest.QuietLogger()}); err != nil {
		t.Fatal(err)
	}
	w, reader := journal.NewWriter(p.JS, ""), outcomes.NewReader(p.JS)
	for i, kind := range []events.OpKind{events.OpInsert, events.OpMerge, events.OpMerge} {
		id := []string{"c1", "c2", "c3"}[i]
		res, err := w.Publish(ctx, &events.Command{ID: id, Table: "orders", PK: "p",
			Ops: []events.RowOp{{Op: kind, RK: "x", Entity: edm.Entity{"n": edm.Int32(int32(i))}}}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := reader.Await(ctx, id, res.Seq); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.StopProjector(); err != nil {
		t.Fatal(err)
	}
	p.Store = real

	status := func() string {
		t.Helper()
		out, errs, code := clitest.Run(ctx, projectorcmd.Run, []string{"status", "--nats", p.URL()}, cli.IO{})
		if code != cli.ExitOK {
			t.Fatalf("projector status: exit %d: %s", code, errs)
		}
		return out
	}
	replay := func(args ...string) (string, string, int) {
		t.Helper()
		full := append([]string{args[0], "--nats", p.URL(), "--tables", p.Tables}, args[1:]...)
		return clitest.Run(ctx, replaycmd.Run, full, cli.IO{})
	}
	out := status()
	for _, want := range []string{"STORE BEHIND: 1 partition lack writes", `orders/"p": the table holds up to seq 1, seq 2 (command c2) applied`,
		"replay rebuild --table T --behind"} {
		if !strings.Contains(out, want) {
			t.Errorf("projector status with no projector running lacks %q:\n%s", want, out)
		}
	}
	if out, errs, code := replay("verify", "--table", "orders"); code != cli.ExitRejected || !strings.Contains(errs, "drift:") {
		t.Errorf("replay verify before the repair: exit %d, want %d (drift: the table lost c2):\n%s%s", code, cli.ExitRejected, out, errs)
	}

	proj, err := p.RunProjector(projection.Config{Logger: projectiontest.QuietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	projectiontest.WaitFor(t, ctx, "the restarted projector reports orders/p behind", func() (bool, error) { return proj.Stats().Behind.Len() == 1, nil })
	if err := p.StopProjector(); err != nil {
		t.Fatal(err)
	}

	out, errs, code := replay("rebuild", "--table", "orders", "--behind")
	if code != cli.ExitOK {
		t.Fatalf("replay rebuild --behind: exit %d: %s%s", code, out, errs)
	}
	for _, want := range []string{`rebuilt partition "p" of orders in place up to seq 3`, "3 commands (3 applied", "no longer recorded behind",
		"rebuilt 1 partition recorded behind the journal in", "none of orders is left behind"} {
		if !strings.Contains(out, want) {
			t.Errorf("replay rebuild --behind lacks %q:\n%s", want, out)
		}
	}
	if out, errs, code := replay("verify", "--table", "orders"); code != cli.ExitOK {
		t.Errorf("replay verify after the repair: exit %d: %s%s", code, out, errs)
	}
	if out := status(); strings.Contains(out, "STORE BEHIND") {
		t.Errorf("projector status after the repair:\n%s", out)
	}
	if out, _, code := replay("rebuild", "--behind"); code != cli.ExitOK || !strings.Contains(out, "no partition of any table is recorded behind") {
		t.Errorf("a second replay rebuild --behind: exit %d:\n%s", code, out)
	}
}

// TestRebuildBehindUsage: --behind rebuilds in place up to the head, so
// the flags of a rebuild into another table, and --pk, are refused before
// anything is read.
func TestRebuildBehindUsage(t *testing.T) {
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--behind", "--pk", "p"}, "--pk needs --table"},
		{[]string{"--behind", "--table", "orders", "--pk", "p"}, "drop --behind"},
		{[]string{"--behind", "--into", "copy"}, "drop --into"},
		{[]string{"--behind", "--table", "orders", "--seq", "5"}, "drop --seq"},
		{[]string{"--behind", "--resume"}, "drop --resume"},
	}
	for _, tt := range tests {
		args := append([]string{"rebuild", "--nats", clitest.UnreachableNATS}, tt.args...)
		out, errs, code := clitest.Run(t.Context(), replaycmd.Run, args, cli.IO{})
		if code != cli.ExitUsage || out != "" || !strings.Contains(errs, tt.want) {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want exit %d saying %q", tt.args, code, out, errs, cli.ExitUsage, tt.want)
		}
	}
}

// TestEraseBehindCommands: a partition the store lost a write of is
// recorded behind; replay erase of the partition (its table spelled
// otherwise) removes the entry too: the dry run and the receipt count it,
// the receipt is verified, projector status lists nothing behind, and no
// file of the record's stream holds the partition key, in clear or as a
// subject token.
func TestEraseBehindCommands(t *testing.T) {
	t.Parallel()
	ctx := journaltest.Context(t, 2*time.Minute)
	dir := t.TempDir()
	p, err := projectiontest.StartPipeline(ctx, nil, projectiontest.PipelineConfig{Dir: dir, Journal: journal.Config{AllowMsgDelete: true}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.Close() })
	real := p.Store
	p.Store = &projectiontest.LosingStore{Store: real, Lose: "c2"}
	if _, err := p.RunProjector(projection.Config{Journal: journal.Config{AllowMsgDelete: true}, Logger: projectiontest.QuietLogger()}); err != nil {
		t.Fatal(err)
	}
	const pk = "customer-SECRET-5d21"
	w, reader := journal.NewWriter(p.JS, ""), outcomes.NewReader(p.JS)
	for i, kind := range []events.OpKind{events.OpInsert, events.OpMerge, events.OpMerge} {
		id := []string{"c1", "c2", "c3"}[i]
		res, err := w.Publish(ctx, &events.Command{ID: id, Table: "orders", PK: pk,
			Ops: []events.RowOp{{Op: kind, RK: "x", Entity: edm.Entity{"n": edm.Int32(int32(i))}}}})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := reader.Await(ctx, id, res.Seq); err != nil {
			t.Fatal(err)
		}
	}
	status := func() string {
		t.Helper()
		out, errs, code := clitest.Run(ctx, projectorcmd.Run, []string{"status", "--nats", p.URL()}, cli.IO{})
		if code != cli.ExitOK {
			t.Fatalf("projector status: exit %d: %s", code, errs)
		}
		return out
	}
	if out := status(); !strings.Contains(out, `orders/"`+pk+`": the table holds up to seq 1, seq 2 (command c2) applied`) {
		t.Fatalf("projector status before the erase:\n%s", out)
	}
	replay := func(args ...string) (string, string, int) {
		t.Helper()
		full := append([]string{args[0], "--nats", p.URL(), "--tables", p.Tables}, args[1:]...)
		return clitest.Run(ctx, replaycmd.Run, full, cli.IO{})
	}
	if out, errs, code := replay("erase", "--table", "Orders", "--pk", pk); code != cli.ExitOK || !strings.Contains(out, "messages of the partition recorded behind the journal: 1") {
		t.Errorf("replay erase dry run: exit %d:\n%s%s", code, out, errs)
	}
	out, errs, code := replay("erase", "--table", "Orders", "--pk", pk, "--apply", "--json")
	var rec erasure.Receipt
	if code != cli.ExitOK || json.Unmarshal([]byte(out), &rec) != nil || !rec.Verified || rec.Removed.BehindEntries != 1 {
		t.Fatalf("replay erase --apply: exit %d:\n%s%s", code, out, errs)
	}
	if out := status(); strings.Contains(out, "STORE BEHIND") {
		t.Errorf("projector status after the erase:\n%s", out)
	}
	for _, b := range []string{pk, wire.PKToken(pk)} {
		var held []string
		err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() || !strings.Contains(filepath.ToSlash(path), "/streams/KV_"+wire.BehindBucketPrefix+"/") {
				return err
			}
			data, err := os.ReadFile(path)
			if err == nil && bytes.Contains(data, []byte(b)) {
				held = append(held, path)
			}
			return err
		})
		if err != nil || len(held) != 0 {
			t.Errorf("the record's files holding %s: %v, %v", b, held, err)
		}
	}
}
