package erasure_test

import (
	"errors"
	"testing"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/journal"
	"github.com/tablejournal/tablejournal/replay"
	"github.com/tablejournal/tablejournal/replay/erasure"
	"github.com/tablejournal/tablejournal/replay/replaytest"
)

// TestErasePlanApply: an erase is a replay.Plan. Its preview counts what
// goes, by place, and names no value; a command on the key after the
// preview makes the plan stale, so Apply erases nothing; the plan made
// again applies and returns its receipt.
func TestErasePlanApply(t *testing.T) {
	e := replaytest.NewEnv(t, replaytest.Stores()[0].Open(t), replaytest.With(replaytest.Erasure),
		replaytest.WithJournal(journal.Config{AllowMsgDelete: true}))
	table := replaytest.UniqueTable("planerase")
	cmds := []*events.Command{upsert("p1", table, "alice", "mail", "alice@example.org"), upsert("p2", table, "bob", "mail", "bob@example.org")}
	e.Publish(cmds)
	e.Await(ids(cmds))
	target := erasure.Target{Table: table, PK: "alice"}
	p, err := e.Eraser.PlanErase(e.Ctx, target)
	if err != nil {
		t.Fatal(err)
	}
	v := p.Preview()
	if v.Kind != "erase" || v.Blocked != "" || len(v.Steps) < 5 || v.Steps[0].What != "table rows" || v.Steps[0].N != 1 {
		t.Fatalf("preview %+v", v)
	}
	for _, s := range v.Steps {
		if s.Before != nil || s.After != nil {
			t.Fatalf("an erase's preview shows values: %+v", s)
		}
	}
	more := []*events.Command{upsert("p3", table, "alice", "mail", "alice@example.net")}
	e.Publish(more)
	e.Await(ids(more))
	if _, err := p.Apply(e.Ctx); !errors.Is(err, replay.ErrStale) {
		t.Fatalf("apply of a plan the key changed under: %v, want ErrStale", err)
	}
	if again, err := e.Eraser.PlanErase(e.Ctx, target); err != nil || again.EraseSeq != 0 || again.TableRows != 2 {
		t.Fatalf("a stale erase published or removed something: %+v %v", again, err)
	}
	p, err = e.Eraser.PlanErase(e.Ctx, target)
	if err != nil {
		t.Fatal(err)
	}
	res, err := p.Apply(e.Ctx)
	rec, _ := res.Receipt.(*erasure.Receipt)
	if err != nil || rec == nil || !rec.Verified || len(res.Published) != 1 || res.Published[0].ID != rec.EraseID {
		t.Fatalf("apply: %+v %v", res, err)
	}
	if left, err := e.Eraser.PlanErase(e.Ctx, target); err != nil || left.Preview().Blocked == "" {
		t.Fatalf("after the erase: %+v %v, want nothing left", left, err)
	}
}
