package replaycmd

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/tablejournal/tablejournal/cmd/internal/cli"
	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/journal"
	"github.com/tablejournal/tablejournal/journal/outcomes"
)

// TestReplayAsOfErasedCLI: asof of a partition or table at a point before
// an erase says what was erased (SPEC §10): a row erased later is listed
// and left out; a partition erased later answers exit 3 when asked alone,
// and is listed, not failing the read, over the whole table.
func TestReplayAsOfErasedCLI(t *testing.T) {
	e := startReplayEnv(t, journal.Config{AllowMsgDelete: true})
	e.Publish(t, "c1", upsert("order-7", edm.Entity{"name": edm.String("Ada")}))
	e.Publish(t, "c2", upsert("order-8", edm.Entity{"name": edm.String("Ada")}))
	other := &events.Command{ID: "c3", Table: "orders", PK: "customer-7", Ops: []events.RowOp{upsert("order-1", edm.Entity{"n": edm.Int64(1)})}}
	res, err := e.W.Publish(e.Ctx, other)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := outcomes.NewReader(e.JS).Await(e.Ctx, "c3", res.Seq); err != nil {
		t.Fatal(err)
	}
	erase := func(args ...string) (id string, seq uint64) {
		t.Helper()
		out, errs, code := e.replay(t, append([]string{"erase", "--table", "orders", "--apply", "--json"}, args...)...)
		var rec struct {
			EraseID  string `json:"eraseId"`
			EraseSeq uint64 `json:"eraseSeq"`
		}
		if code != 0 || json.Unmarshal([]byte(out), &rec) != nil {
			t.Fatalf("erase %v: exit %d, %s %s", args, code, out, errs)
		}
		return rec.EraseID, rec.EraseSeq
	}
	type view struct {
		Erased []erasedOut `json:"erased"`
		Rows   []struct {
			PK string `json:"pk"`
			RK string `json:"rk"`
		} `json:"rows"`
	}
	asof := func(args ...string) (v view) {
		t.Helper()
		out, errs, code := e.replay(t, append([]string{"asof", "--table", "orders", "--seq", "3", "--json"}, args...)...)
		if code != 0 || json.Unmarshal([]byte(out), &v) != nil {
			t.Fatalf("asof %v: exit %d, %s %s", args, code, out, errs)
		}
		return v
	}

	rowID, rowSeq := erase("--pk", "customer-42", "--rk", "order-8")
	v := asof("--pk", "customer-42")
	if len(v.Rows) != 1 || v.Rows[0].RK != "order-7" || len(v.Erased) != 1 || v.Erased[0].RK == nil ||
		*v.Erased[0].RK != "order-8" || v.Erased[0].Cmd != rowID || v.Erased[0].Seq != rowSeq {
		t.Errorf("asof of the partition before the row erase: %+v", v)
	}
	if v := asof("--pk", "customer-42", "--seq", fmt.Sprint(rowSeq)); len(v.Erased) != 0 {
		t.Errorf("asof at the row erase lists erasures: %+v", v)
	}

	partID, partSeq := erase("--pk", "customer-42")
	_, errs, code := e.replay(t, "asof", "--table", "orders", "--pk", "customer-42", "--seq", "3")
	if code != cli.ExitRejected || !strings.Contains(errs, fmt.Sprintf("erased by command %s at seq %d", partID, partSeq)) {
		t.Errorf("asof of the erased partition: exit %d, %s", code, errs)
	}
	v = asof()
	if len(v.Rows) != 1 || v.Rows[0].PK != "customer-7" || len(v.Erased) == 0 || v.Erased[0].PK != "customer-42" ||
		v.Erased[0].RK != nil || v.Erased[0].Cmd != partID {
		t.Errorf("asof of the table before the partition erase: %+v", v)
	}
	out, errs, code := e.replay(t, "asof", "--table", "orders", "--seq", "3")
	want := fmt.Sprintf("erased after this point: partition %q, by command %s at seq %d\n", "customer-42", partID, partSeq)
	if code != 0 || !strings.Contains(out, want) || !strings.Contains(out, "order-1") {
		t.Errorf("asof of the table, text: exit %d, %s %s", code, out, errs)
	}
}
