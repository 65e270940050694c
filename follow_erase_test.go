package tablejournal_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	tj "github.com/tablejournal/tablejournal"
	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/journal"
)

// TestFollowEraseNotice: Follow delivers the notice of an erase with Op
// Erased and no values, and tells the erase of a whole partition
// (Partition true, RK "") from the erase of the row whose key is ""
// (Partition false, RK ""), which the change event's RK alone cannot.
func TestFollowEraseNotice(t *testing.T) {
	c := connect(t)
	ctx := testContext(t)
	const table = "followerase"
	rowPK := fmt.Sprintf("row-%d", time.Now().UnixNano())
	partPK := rowPK + "-part"
	first, err := c.Apply(ctx, tj.NewCommand(table, rowPK).Upsert("", tj.Entity{"secret": tj.String("s1")}).Upsert("x", tj.Entity{}))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Apply(ctx, tj.NewCommand(table, partPK).Upsert("", tj.Entity{"secret": tj.String("s2")})); err != nil {
		t.Fatal(err)
	}

	nc, err := nats.Connect(natsURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	w := journal.NewWriter(js, "")
	empty := ""
	erases := []*events.Erase{
		{ID: "erase-row-" + rowPK, Table: table, PK: rowPK, RK: &empty},
		{ID: "erase-part-" + partPK, Table: table, PK: partPK},
	}
	for _, e := range erases {
		r, err := w.PublishErase(ctx, e)
		if err != nil {
			t.Fatal(err)
		}
		if o, err := c.Wait(ctx, tj.Position{ID: r.ID, Seq: r.Seq}); err != nil || o.Status != tj.Applied {
			t.Fatalf("erase %s: %+v, %v", e.ID, o, err)
		}
	}

	fctx, stop := context.WithCancel(ctx)
	defer stop()
	notices := make(map[string]tj.Change) // by PK
	err = c.Follow(fctx, "follow-erase-"+rowPK, table, func(_ context.Context, ch tj.Change) error {
		if ch.Op == tj.Erased {
			notices[ch.PK] = ch
		}
		if len(notices) == len(erases) {
			stop()
		}
		return nil
	}, tj.FollowFrom(first.Seq))
	if err != nil {
		t.Fatal(err)
	}
	if ctx.Err() != nil {
		t.Fatalf("%d of %d erase notices before the deadline: %v", len(notices), len(erases), notices)
	}
	for _, tc := range []struct {
		pk        string
		partition bool
	}{{rowPK, false}, {partPK, true}} {
		ch := notices[tc.pk]
		if ch.RK != "" || ch.Partition != tc.partition || ch.Before != nil || ch.After != nil {
			t.Errorf("erase notice of %s: RK %q Partition %v Before %v After %v, want RK \"\" Partition %v and no values",
				tc.pk, ch.RK, ch.Partition, ch.Before, ch.After, tc.partition)
		}
	}
}
