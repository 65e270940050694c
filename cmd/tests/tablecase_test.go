package cli_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/tablejournal/tablejournal/cmd/internal/cli"
	"github.com/tablejournal/tablejournal/cmd/internal/cli/clitest"
	"github.com/tablejournal/tablejournal/cmd/replay/replaycmd"
	"github.com/tablejournal/tablejournal/wire"
)

// TestTableNameCaseCLI is the trial of issue 28 item 4: writer insert
// --table caseT, then writer upsert --table CASET, are one table: one
// table in the store, one subject in the journal, and replay verify under
// either spelling finds the table identical to its journal.
func TestTableNameCaseCLI(t *testing.T) {
	e := clitest.StartPipeline(t)
	for i, args := range [][]string{
		{"insert", "--table", "caseT", "--pk", "p", "--rk", "r", "--set", "n:int=1"},
		{"upsert", "--table", "CASET", "--pk", "p", "--rk", "r", "--set", "n:int=2"},
		{"merge", "--table", "CaseT", "--pk", "p", "--rk", "r", "--set", "m:int=3"},
	} {
		out, errs, code := runWriter(t, append(args, "--wait", "--nats", e.URL)...)
		if want := fmt.Sprintf("version %d", i); code != cli.ExitOK || !strings.Contains(out, "applied") || !strings.Contains(out, want) {
			t.Fatalf("writer %v: exit %d: %s%s; want applied, %s", args, code, out, errs, want)
		}
	}
	tables, err := e.Store.ListTables(e.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	var mine []string
	for _, name := range tables {
		if strings.EqualFold(name, "caseT") {
			mine = append(mine, name)
		}
	}
	if len(mine) != 1 {
		t.Fatalf("the store holds %v, want one table", mine)
	}
	s, err := e.JS.Stream(e.Ctx, wire.JournalStream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(e.Ctx, jetstream.WithSubjectFilter(wire.JournalPrefix+".>"))
	if err != nil {
		t.Fatal(err)
	}
	for subject, n := range info.State.Subjects {
		if table, _, pk, err := wire.ParseJournalSubject(subject); err != nil || table != "caset" || pk != "p" || n != 3 || len(info.State.Subjects) != 1 {
			t.Fatalf("journal subjects %v, want the 3 commands on one lower-case subject", info.State.Subjects)
		}
	}
	for _, table := range []string{"caseT", "CASET", "caset"} {
		out, errs, code := e.Replay(t, replaycmd.Run, "verify", "--table", table)
		if code != cli.ExitOK || !strings.Contains(out, "identical to its journal") {
			t.Fatalf("replay verify --table %s: exit %d: %s%s", table, code, out, errs)
		}
	}
	out, errs, code := e.Replay(t, replaycmd.Run, "asof", "--table", "CASET", "--pk", "p", "--json")
	if code != cli.ExitOK || !strings.Contains(out, `"n":2`) || !strings.Contains(out, `"m":3`) {
		t.Fatalf("replay asof --table CASET: exit %d: %s%s", code, out, errs)
	}
}
