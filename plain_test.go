package tablejournal_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/tablejournal/tablejournal/journal/tablelayout"

	tj "github.com/tablejournal/tablejournal"
	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/internal/azurite"
	"github.com/tablejournal/tablejournal/journal"
	"github.com/tablejournal/tablejournal/journal/journaltest"
	"github.com/tablejournal/tablejournal/store"
	"github.com/tablejournal/tablejournal/tablejournaltest"
	"github.com/tablejournal/tablejournal/wire"
)

// TestPlainTable: on a plain table (SPEC §4) the client's reads are what
// they are on a versioned one — Get, a filtered Query, Partition,
// read-your-writes from another client, the change feed — and they read
// the table itself at the service's own keys (a row changed there outside
// the journal is what Get returns), not the history beside it.
func TestPlainTable(t *testing.T) {
	t.Run("embedded", func(t *testing.T) { testPlainTable(t, natsURL, tableStore) })
	t.Run("azurite", func(t *testing.T) {
		az, err := azurite.Start(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { az.Stop() })
		p := tablejournaltest.New(t, az.ConnectionString())
		testPlainTable(t, p.URL(), p.Store())
	})
}

func testPlainTable(t *testing.T, url string, st store.Store) {
	ctx := testContext(t)
	table := fmt.Sprintf("plain%d", time.Now().UnixNano())
	_, js := journaltest.Connect(t, url)
	j, err := journal.Open(ctx, js, "")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tablelayout.Set(ctx, j, table, wire.LayoutPlain); err != nil {
		t.Fatal(err)
	}
	var cs []*tj.Client
	for range 2 {
		c, err := tj.Connect(ctx, url, tj.WithStore(st))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		cs = append(cs, c)
	}
	c, other := cs[0], cs[1]

	// Read-your-writes, by the writer and by another client.
	for i := range 6 {
		pos, err := c.Publish(ctx, tj.NewCommand(table, "p").Upsert("row", tj.Entity{"i": tj.Int64(int64(i))}))
		if err != nil {
			t.Fatal(err)
		}
		r, err := cs[i%2].Get(ctx, table, "p", "row", tj.AfterSeq(pos.Seq))
		if err != nil {
			t.Fatal(err)
		}
		if r.Entity["i"].Int != int64(i) || r.Version != int64(i) || r.Seq != pos.Seq || r.Command != pos.ID || r.RK != "row" {
			t.Fatalf("after seq %d read %+v", pos.Seq, r)
		}
	}
	cmd := tj.NewCommand(table, "q")
	for i := range 5 {
		cmd.Upsert(fmt.Sprintf("r%d", i), tj.Entity{"n": tj.Int64(int64(i))})
	}
	if _, err := c.Publish(ctx, cmd); err != nil {
		t.Fatal(err)
	}
	del, err := c.Publish(ctx, tj.NewCommand(table, "q").Delete("r4"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for r, err := range other.Query(ctx, table, tj.Query{AllPartitions: true, Where: []tj.Cond{{Prop: "n", Op: tj.Ge, Value: tj.Int64(2)}}}, tj.AfterSeq(del.Seq)) {
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := r.Entity["_v"]; ok || len(r.Entity) != 1 {
			t.Fatalf("row %s has %v", r.RK, r.Entity)
		}
		got = append(got, r.PK+"/"+r.RK)
	}
	if !slices.Equal(got, []string{"q/r2", "q/r3"}) {
		t.Fatalf("query of a plain table: %v", got)
	}
	part, err := c.Partition(ctx, table, "q")
	if err != nil || len(part) != 4 || part[0].RK != "r0" || part[3].RK != "r3" {
		t.Fatalf("partition of a plain table: %+v, %v", part, err)
	}
	if _, err := c.Get(ctx, table, "q", "r4"); !errors.Is(err, tj.ErrNotFound) {
		t.Fatalf("a deleted row of a plain table: %v, want ErrNotFound", err)
	}

	// The change feed is the same: every change of the row, in order.
	fctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var versions []int64
	err = c.Follow(fctx, "plain-"+table, table, func(_ context.Context, ch tj.Change) error {
		if ch.PK == "p" {
			versions = append(versions, ch.Version)
		}
		if len(versions) == 6 {
			cancel()
		}
		return nil
	}, tj.FollowPartition("p"))
	if err != nil || !slices.Equal(versions, []int64{0, 1, 2, 3, 4, 5}) {
		t.Fatalf("follow a plain table: %v, versions %v", err, versions)
	}

	// Get reads the table itself: its row, changed outside the journal.
	e, err := st.Get(ctx, table, "q", "r0")
	if err != nil {
		t.Fatalf("the plain table has no row at the service's own key: %v", err)
	}
	e.Props["n"] = edm.Int64(70)
	if _, err := st.Transact(ctx, table, "q", []store.Op{{Kind: store.Replace, RK: "r0", Props: e.Props}}); err != nil {
		t.Fatal(err)
	}
	if r, err := c.Get(ctx, table, "q", "r0"); err != nil || r.Entity["n"].Int != 70 {
		t.Fatalf("Get of a row changed in the plain table: %+v, %v", r, err)
	}
}
