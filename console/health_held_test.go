package console_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/tablejournal/tablejournal/console"
	"github.com/tablejournal/tablejournal/projection/lost"
	"github.com/tablejournal/tablejournal/wire"
)

// TestHealthHeld: the health page lists a partition the projectors hold
// (a row they did not write; SPEC §5) and one behind the journal, as the
// record of partitions (package lost) holds them.
func TestHealthHeld(t *testing.T) {
	f := seed(t, "", console.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rec, err := lost.Ensure(ctx, f.rp.JetStream(), "", "", 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range []wire.BehindPartition{
		{Table: f.table, PK: "customer-7", AppliedSeq: f.seq["d1"], Cmd: "d1", Reason: wire.ReasonForeignRow, Row: "fence", Found: time.Now()},
		{Table: f.table, PK: "customer-9", TableSeq: f.seq["e1"], AppliedSeq: f.seq["e2"], Cmd: "e2", Found: time.Now()},
	} {
		if err := rec.Add(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	code, body := get(t, f, "/health/panel")
	if code != 200 {
		t.Fatalf("/health/panel: %d", code)
	}
	for _, want := range []string{`id="held"`, "customer-7", "held at seq", "by row &#34;fence&#34;", "projector resume",
		`id="behind"`, "customer-9", "replay rebuild --behind"} {
		if !strings.Contains(body, want) {
			t.Errorf("/health/panel lacks %s:\n%s", want, body)
		}
	}
}
