package tablejournal_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	tj "github.com/tablejournal/tablejournal"
	"github.com/tablejournal/tablejournal/wire"
)

// TestFollowOldSpelling: change events of a table are on its lower-case
// token; a checkpoint made before, on the table as spelled, follows both
// subjects from where it was: the event stored under the old spelling,
// then the new ones.
func TestFollowOldSpelling(t *testing.T) {
	c := connect(t)
	ctx := testContext(t)
	table := fmt.Sprintf("FollowCase%d", time.Now().UnixNano())
	name := "test-" + table
	nc, err := nats.Connect(natsURL)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	if err != nil {
		t.Fatal(err)
	}
	// A checkpoint and an event as they were before.
	old := wire.ChangesPrefix + "." + table + ".>"
	if _, err := js.CreateConsumer(ctx, wire.ChangesStream, jetstream.ConsumerConfig{
		Durable: name, FilterSubject: old, AckPolicy: jetstream.AckExplicitPolicy, MaxAckPending: 1,
	}); err != nil {
		t.Fatal(err)
	}
	ev, err := wire.ChangeEvent{Table: table, PK: "p", RK: "r", Op: wire.ChangeCreate, Cmd: "old", Seq: 1, At: time.Now().UTC(),
		After: []byte(`{"i":0}`)}.Encode()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.Publish(ctx, wire.ChangesPrefix+"."+table+"."+wire.PKToken("p"), ev); err != nil {
		t.Fatal(err)
	}
	var got []string
	// Each run publishes a command and follows up to its change: the
	// second finds the checkpoint moved already, and goes on from it.
	want := []string{table + "/old/1"}
	for i := 1; i <= 2; i++ {
		pos, err := c.Publish(ctx, tj.NewCommand(table, "p").Upsert("r", tj.Entity{"i": tj.Int64(int64(i))}))
		if err != nil {
			t.Fatal(err)
		}
		want = append(want, fmt.Sprintf("%s/%s/%d", table, pos.ID, pos.Seq))
		fctx, cancel := context.WithCancel(ctx)
		err = c.Follow(fctx, name, table, func(_ context.Context, ch tj.Change) error {
			got = append(got, fmt.Sprintf("%s/%s/%d", ch.Table, ch.Command, ch.Seq))
			if ch.Seq == pos.Seq {
				cancel()
			}
			return nil
		})
		cancel()
		if err != nil {
			t.Fatal(err)
		}
	}
	if !slices.Equal(got, want) {
		t.Fatalf("followed %v, want %v", got, want)
	}
	info, err := js.Consumer(ctx, wire.ChangesStream, name)
	if err != nil {
		t.Fatal(err)
	}
	if cfg := info.CachedInfo().Config; !slices.Equal(cfg.FilterSubjects, []string{wire.ChangeFilter(table), old}) {
		t.Fatalf("checkpoint filters %q %q", cfg.FilterSubject, cfg.FilterSubjects)
	}
}

// TestTableSpellings: table names are case-insensitive. Commands on one
// table spelled otherwise apply to one row in order (a guard on the
// version the other spelling made), reads find it under any spelling, and
// a Follow of one spelling gets the changes of all, each naming the table
// as its command spelled it.
func TestTableSpellings(t *testing.T) {
	c := connect(t)
	ctx := testContext(t)
	table := fmt.Sprintf("ClientCase%d", time.Now().UnixNano())
	spellings := []string{table, strings.ToUpper(table), strings.ToLower(table)}
	var want []string
	for i, spelled := range spellings {
		cmd := tj.NewCommand(spelled, "p").Upsert("r", tj.Entity{"i": tj.Int64(int64(i))})
		if i > 0 {
			cmd = cmd.IfVersion(int64(i - 1))
		}
		o, err := c.Apply(ctx, cmd)
		if err != nil {
			t.Fatalf("apply on %s: %v", spelled, err)
		}
		want = append(want, fmt.Sprintf("%s/%s/%d", spelled, o.ID, o.Seq))
	}
	for _, spelled := range spellings {
		r, err := c.Get(ctx, spelled, "p", "r")
		if err != nil || r.Version != 2 || r.Entity["i"].Int != 2 {
			t.Fatalf("get on %s: %+v, %v; want version 2", spelled, r, err)
		}
	}
	var got []string
	// Follow returns when its context ends: a deadline, so that a change
	// missing fails the comparison below rather than the test's time.
	fctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	err := c.Follow(fctx, "test-"+table, spellings[1], func(_ context.Context, ch tj.Change) error {
		got = append(got, fmt.Sprintf("%s/%s/%d", ch.Table, ch.Command, ch.Seq))
		if len(got) == len(want) {
			cancel()
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("followed %v, want %v", got, want)
	}
}
