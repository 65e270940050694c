package node

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/journal"
	"github.com/tablejournal/tablejournal/journal/journaltest"
	"github.com/tablejournal/tablejournal/replay"
	"github.com/tablejournal/tablejournal/replay/adopt"
	"github.com/tablejournal/tablejournal/replay/rebuild"
	"github.com/tablejournal/tablejournal/tablejournaltest"
	"github.com/tablejournal/tablejournal/wire"
)

// nodeRead is what legacy.cjs read printed: the table as the service's own
// reader sees it with @azure/data-tables.
type nodeRead struct {
	All        map[string]string            `json:"all"`
	Partitions map[string]map[string]string `json:"partitions"`
	Gets       map[string]*string           `json:"gets"`
	System     int                          `json:"systemColumns"`
}

// TestNodePlainReader: a table legacy.cjs wrote with @azure/data-tables is
// adopted in place into the plain layout, and the service's reader, which
// no one here wrote and which does not change, reads it as before: the
// whole table, each partition and each row by its keys give the same rows
// and values, no version row, no fence; after commands through the
// journal (an update, a delete) it reads the new current rows.
func TestNodePlainReader(t *testing.T) {
	mods := nodeModules(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	p := tablejournaltest.New(t, az.ConnectionString())
	// Lower case: in place, Azurite must find the table by its token.
	table := fmt.Sprintf("legacyplain%d", time.Now().UnixNano()%1_000_000_000)
	read := func(keys ...string) nodeRead {
		t.Helper()
		out := runNode(ctx, t, mods, append([]string{"legacy.cjs", "read", az.ConnectionString(), table}, keys...)...)
		var r nodeRead
		if err := json.Unmarshal(out, &r); err != nil {
			t.Fatalf("node read printed %q: %v", out, err)
		}
		return r
	}
	runNode(ctx, t, mods, "legacy.cjs", "write", az.ConnectionString(), table, "24")
	before := read()
	if len(before.All) != 24 || len(before.Partitions) != 4 || before.System != 0 {
		t.Fatalf("before adoption: %d rows, %d partitions, %d system columns", len(before.All), len(before.Partitions), before.System)
	}
	same := func(when string, got nodeRead, want map[string]string) {
		t.Helper()
		for k, v := range got.All {
			if w, ok := want[k]; !ok || v != w {
				t.Errorf("%s: listEntities over the table gave %s = %q, want %q", when, k, v, w)
			}
		}
		if len(got.All) != len(want) {
			t.Errorf("%s: listEntities over the table gave %d rows, want %d", when, len(got.All), len(want))
		}
		for pk, rows := range got.Partitions {
			for k, v := range rows {
				if want[k] != v || k[:len(pk)+1] != pk+"/" {
					t.Errorf("%s: listEntities over partition %s gave %s = %q", when, pk, k, v)
				}
			}
		}
		n := 0
		for _, rows := range got.Partitions {
			n += len(rows)
		}
		if n != len(want) {
			t.Errorf("%s: the partitions list %d rows, want %d", when, n, len(want))
		}
		for k, v := range got.Gets {
			if w, ok := want[k]; (v == nil) == ok || v != nil && *v != w {
				t.Errorf("%s: getEntity(%s) = %s, want %q (present %t)", when, k, deref(v), w, ok)
			}
		}
	}

	same("before adoption", before, before.All)

	_, js := journaltest.Connect(t, p.URL())
	src, err := replay.New(ctx, replay.Config{Store: p.Store(), JetStream: js})
	if err != nil {
		t.Fatal(err)
	}
	a := adopt.New(src)
	plan, err := a.Plan(ctx, adopt.Config{Table: table, InPlace: true, Layout: wire.LayoutPlain})
	if err != nil {
		t.Fatal(err)
	}
	if err := plan.Apply(ctx); err != nil {
		t.Fatal(err)
	}
	if r := plan.Result.InPlace; plan.Upserts != 24 || r.Moved != 24 {
		t.Fatalf("%s; %+v", plan.Summary(), *r)
	}
	after := read()
	same("after adoption", after, before.All)
	if want := 24 * 5 * 3; after.System != want { // _v _seq _cmd _at _op, read three ways
		t.Errorf("after adoption: %d system columns read, want %d", after.System, want)
	}

	// The service now writes through the journal.
	w := journal.NewWriter(src.JetStream(), src.Journal().Name())
	var last uint64
	for _, c := range []*events.Command{
		{ID: table + "-paid", Table: table, PK: "customer-1", Ops: []events.RowOp{{Op: events.OpMerge, RK: "order-5", Entity: edm.Entity{"status": edm.String("refunded")}}}},
		{ID: table + "-gone", Table: table, PK: "customer-2", Ops: []events.RowOp{{Op: events.OpDelete, RK: "order-6"}}},
	} {
		r, err := w.Publish(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		last = r.Seq
	}
	if err := a.WaitApplied(ctx, last); err != nil {
		t.Fatal(err)
	}
	want := maps.Clone(before.All)
	delete(want, "customer-2/order-6")
	want["customer-1/order-5"] = replaceProp(want["customer-1/order-5"], "status", `{"value":"refunded","type":"String"}`)
	same("after an update and a delete through the journal", read("customer-2/order-6"), want)

	d, err := rebuild.New(src).Verify(ctx, rebuild.VerifyConfig{Table: table})
	if err != nil || !d.Identical() {
		t.Fatalf("verify %s: %+v, %v", table, d, err)
	}
}

// replaceProp sets property k to the JSON value v in a row as read prints
// it ("k=v" pairs, sorted by name).
func replaceProp(row, k, v string) string {
	fs := strings.Fields(row)
	for i, f := range fs {
		if strings.HasPrefix(f, k+"=") {
			fs[i] = k + "=" + v
		}
	}
	return strings.Join(fs, " ")
}

func deref(s *string) string {
	if s == nil {
		return "absent"
	}
	return *s
}
