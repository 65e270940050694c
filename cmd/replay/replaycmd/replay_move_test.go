package replaycmd

import (
	"fmt"
	"strings"
	"testing"

	"github.com/tablejournal/tablejournal/cmd/internal/cli"
	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/journal"
	"github.com/tablejournal/tablejournal/journal/outcomes"
	"github.com/tablejournal/tablejournal/projection"
	"github.com/tablejournal/tablejournal/wire"
)

// replay move, as docs/erasure.md tells an operator with a deny-delete
// journal: a dry run changes nothing; --apply copies while the projector
// runs; --cutover refuses under the running projector (exit 3), and moves
// once it is stopped, carrying its consumers over at their acknowledged
// floors. A projector pointed at the new journal goes on from there; its
// table equals a rebuild (replay verify), and erase, refused on the old
// journal, works on the new one.
func TestReplayMoveCLI(t *testing.T) {
	e := startReplayEnv(t)
	for i := range 8 {
		e.Publish(t, fmt.Sprintf("mv%d", i), upsert(fmt.Sprintf("order-%d", i%3), edm.Entity{"n": edm.Int64(int64(i))}))
	}
	if _, errs, code := e.replay(t, "erase", "--table", "orders", "--pk", "customer-42", "--apply"); code == cli.ExitOK || !strings.Contains(errs, "move") {
		t.Fatalf("erase on the deny-delete journal: exit %d: %s", code, errs)
	}
	out, errs, code := e.replay(t, "move", "--new-stream", "J2", "--allow-msg-delete")
	if code != cli.ExitOK || !strings.Contains(out, "dry run") || !strings.Contains(out, "journal JOURNAL: 8 commands, sequences 1 to 8") {
		t.Fatalf("dry run: exit %d: %s %s", code, out, errs)
	}
	out, errs, code = e.replay(t, "move", "--new-stream", "J2", "--allow-msg-delete", "--apply")
	if code != cli.ExitOK || !strings.Contains(out, "copied:") || !strings.Contains(out, "verified up to sequence 8") {
		t.Fatalf("apply: exit %d: %s %s", code, out, errs)
	}
	_, errs, code = e.replay(t, "move", "--new-stream", "J2", "--allow-msg-delete", "--apply", "--cutover")
	if code != cli.ExitRejected || !strings.Contains(errs, "refused:") || !strings.Contains(errs, "stop the projectors") {
		t.Fatalf("cutover under the projector: exit %d: %s", code, errs)
	}
	e.Stop()
	floor := ackFloors(t, e, wire.JournalStream)
	out, errs, code = e.replay(t, "move", "--new-stream", "J2", "--allow-msg-delete", "--apply", "--cutover", "--json")
	if code != cli.ExitOK || !strings.Contains(out, `"state":"moved"`) {
		t.Fatalf("cutover: exit %d: %s %s", code, out, errs)
	}
	if got := ackFloors(t, e, "J2"); fmt.Sprint(got) != fmt.Sprint(floor) {
		t.Errorf("ack floors on J2 %v, on JOURNAL %v", got, floor)
	}

	e.RunProjector(t, projection.Config{Journal: journal.Config{Stream: "J2", AllowMsgDelete: true}})
	w := journal.NewWriter(e.JS, "J2")
	res, err := w.Publish(e.Ctx, &events.Command{ID: "after-move", Table: "orders", PK: "customer-42", Ops: []events.RowOp{upsert("order-9", edm.Entity{"n": edm.Int64(9)})}})
	if err != nil || res.Seq != 9 {
		t.Fatalf("publish to J2: %+v, %v", res, err)
	}
	if o, err := outcomes.NewReader(e.JS).Await(e.Ctx, "after-move", res.Seq); err != nil || o.Status != wire.StatusApplied {
		t.Fatalf("outcome on J2: %+v, %v", o, err)
	}
	if out, errs, code := e.replay(t, "verify", "--stream", "J2", "--table", "orders"); code != cli.ExitOK {
		t.Fatalf("verify on J2: exit %d: %s %s", code, out, errs)
	}
	if out, errs, code := e.replay(t, "erase", "--stream", "J2", "--table", "orders", "--pk", "customer-42", "--rk", "order-9", "--apply"); code != cli.ExitOK {
		t.Fatalf("erase on J2: exit %d: %s %s", code, out, errs)
	}
	if out, errs, code := e.replay(t, "verify", "--stream", "J2", "--table", "orders"); code != cli.ExitOK {
		t.Fatalf("verify on J2 after the erase: exit %d: %s %s", code, out, errs)
	}
}

// ackFloors are the acknowledged floors of stream's durable consumers, by
// name.
func ackFloors(t *testing.T, e *replayEnv, stream string) map[string]uint64 {
	t.Helper()
	s, err := e.JS.Stream(e.Ctx, stream)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]uint64{}
	l := s.ListConsumers(e.Ctx)
	for ci := range l.Info() {
		if ci.Config.Durable != "" {
			got[ci.Name] = ci.AckFloor.Stream
		}
	}
	if err := l.Err(); err != nil {
		t.Fatal(err)
	}
	return got
}
