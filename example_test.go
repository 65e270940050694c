package tablejournal_test

import (
	"context"
	"errors"
	"fmt"
	"log"
	"path/filepath"
	"strings"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"go.opentelemetry.io/otel/propagation"

	tj "github.com/tablejournal/tablejournal"
	"github.com/tablejournal/tablejournal/store/stores"
)

// The examples run against the pipeline TestMain starts: natsURL is its
// NATS server, tables its embedded table store ("sqlite:/…/tables.db").

var pkSeq atomic.Int64

// newPK returns a partition key no other example or run uses.
func newPK(prefix string) string {
	return fmt.Sprintf("%s-%d-%d", prefix, time.Now().UnixNano(), pkSeq.Add(1))
}

// connectWith connects an example's Client to the test pipeline with
// opts, and returns a context for the example and what ends both.
func connectWith(opts ...tj.Option) (*tj.Client, context.Context, func()) {
	ctx, cancel := exampleContext()
	c, err := tj.Connect(ctx, natsURL, opts...)
	if err != nil {
		log.Fatal(err)
	}
	return c, ctx, func() { cancel(); c.Close() }
}

// setup returns an example's Client on the pipeline's tables, a context,
// and what ends both.
func setup() (*tj.Client, context.Context, func()) {
	return connectWith(tj.WithStore(tableStore), tj.WithIssuer("example"))
}

func exampleContext() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 2*time.Minute)
}

// A service creates an order, updates it under optimistic concurrency,
// reads its own write and reacts to a lost race by its code.
func Example() {
	ctx, cancel := exampleContext()
	defer cancel()
	c, err := tj.Connect(ctx, natsURL, tj.WithStore(tableStore))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	customer := newPK("customer")

	created, err := c.Publish(ctx, tj.NewCommand("orders", customer).
		Insert("order-7", tj.Entity{"status": tj.String("new"), "total": tj.Double(12.5)}))
	if err != nil {
		log.Fatal(err)
	}
	order, err := c.Get(ctx, "orders", customer, "order-7", tj.AfterSeq(created.Seq))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(order.Entity["status"].Str, "version", order.Version)

	_, err = c.Apply(ctx, tj.NewCommand("orders", customer).
		Merge("order-7", tj.Entity{"status": tj.String("shipped")}).IfVersion(order.Version))
	fmt.Println("ship:", err)
	_, err = c.Apply(ctx, tj.NewCommand("orders", customer).
		Merge("order-7", tj.Entity{"status": tj.String("cancelled")}).IfVersion(order.Version))
	fmt.Println("cancel lost the race:", errors.Is(err, tj.ErrVersionMismatch))
	// Output:
	// new version 0
	// ship: <nil>
	// cancel lost the race: true
}

func ExampleConnect() {
	ctx, cancel := exampleContext()
	defer cancel()
	// tables is the store the projector writes, as its --tables flag
	// names it; stores.Open opens any of its forms (a service on Azure
	// alone opens it with store/azure and links no embedded store).
	s, closer, err := stores.Open(ctx, tables, "")
	if err != nil {
		log.Fatal(err)
	}
	defer closer.Close()
	// natsURL is the journal's NATS server.
	c, err := tj.Connect(ctx, natsURL, tj.WithStore(s))
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	fmt.Println("connected")
	// Output: connected
}

func ExampleWithStore() {
	ctx, cancel := exampleContext()
	defer cancel()
	// Without a table store a Client publishes and follows, but cannot read.
	c, err := tj.Connect(ctx, natsURL)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	_, err = c.Get(ctx, "orders", "customer-42", "order-7")
	fmt.Println(errors.Is(err, tj.ErrNoTables))

	// The projector's data folder (--data-dir): its embedded store is
	// tables.db there. stores.Open also takes an Azure Tables connection
	// string, an endpoint URL or sqlite:PATH.
	dataDir := filepath.Dir(strings.TrimPrefix(tables, "sqlite:"))
	s, closer, err := stores.Open(ctx, "", dataDir)
	if err != nil {
		log.Fatal(err)
	}
	defer closer.Close()
	c2, err := tj.Connect(ctx, natsURL, tj.WithStore(s))
	if err != nil {
		log.Fatal(err)
	}
	defer c2.Close()
	_, err = c2.Get(ctx, "orders", "customer-42", "no-such-order")
	fmt.Println(errors.Is(err, tj.ErrNotFound))
	pk := newPK("c")
	pos, _ := c2.Publish(ctx, tj.NewCommand("orders", pk).Upsert("o", tj.Entity{}))
	r, err := c2.Get(ctx, "orders", pk, "o", tj.AfterSeq(pos.Seq))
	fmt.Println(r.RK, err)
	// Output:
	// true
	// true
	// o <nil>
}

func ExampleWithStream() {
	c, ctx, done := connectWith(tj.WithStream("JOURNAL"))
	defer done()
	pos, err := c.Publish(ctx, tj.NewCommand("orders", newPK("c")).Upsert("o", tj.Entity{}))
	fmt.Println(err, pos.Seq > 0)
	// A stream that does not exist is named as such.
	other, _, done2 := connectWith(tj.WithStream("NOPE"))
	defer done2()
	_, err = other.Publish(ctx, tj.NewCommand("orders", newPK("c")).Upsert("o", tj.Entity{}))
	fmt.Println(errors.Is(err, tj.ErrNoJournal))
	// Output:
	// <nil> true
	// true
}

func ExampleWithDurable() {
	// The projector command's consumers are "projector-<shard>", the
	// default; a program running its own projection may name others.
	c, ctx, done := connectWith(tj.WithStore(tableStore), tj.WithDurable("projector"))
	defer done()
	pk := newPK("c")
	c.Apply(ctx, tj.NewCommand("orders", pk).Upsert("o", tj.Entity{}))
	pos, _ := c.Publish(ctx, tj.NewCommand("orders", pk).Insert("o", tj.Entity{})) // rejected
	fmt.Println(c.WaitApplied(ctx, pos.Seq))
	// Output: <nil>
}

func ExampleWithPropagator() {
	c, ctx, done := connectWith(tj.WithPropagator(propagation.NewCompositeTextMapPropagator(
		propagation.TraceContext{}, propagation.Baggage{})))
	defer done()
	_, err := c.Publish(ctx, tj.NewCommand("orders", newPK("c")).Upsert("o", tj.Entity{}))
	fmt.Println(err)
	// Output: <nil>
}

func ExampleWithIssuer() {
	c, ctx, done := connectWith(tj.WithIssuer("billing-svc"))
	defer done()
	_, err := c.Publish(ctx, tj.NewCommand("orders", newPK("c")).Upsert("o", tj.Entity{}))
	fmt.Println(err)
	// Output: <nil>
}

func ExampleWithNATSOptions() {
	c, ctx, done := connectWith(tj.WithNATSOptions(nats.Name("orders-svc"), nats.MaxReconnects(-1)))
	defer done()
	_, err := c.Publish(ctx, tj.NewCommand("orders", newPK("c")).Upsert("o", tj.Entity{}))
	fmt.Println(err)
	// Output: <nil>
}

func ExampleClient() {
	c, ctx, done := setup()
	defer done()
	o, err := c.Apply(ctx, tj.NewCommand("orders", newPK("c")).Upsert("order-1", tj.Entity{"n": tj.Int32(1)}))
	fmt.Println(o.Status, err)
	// Output: applied <nil>
}

func ExampleClient_Close() {
	c, _, done := setup()
	defer done()
	fmt.Println(c.Close())
	// Output: <nil>
}

func ExampleClient_Publish() {
	c, ctx, done := setup()
	defer done()
	cmd := tj.NewCommand("orders", newPK("c")).Upsert("order-1", tj.Entity{"status": tj.String("new")})
	pos, err := c.Publish(ctx, cmd)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(pos.ID == cmd.ID(), pos.Seq > 0)
	// The same command ID again is the same command.
	again, _ := c.Publish(ctx, cmd)
	fmt.Println(again.Duplicate, again.Seq == pos.Seq)
	// The same ID with another body is refused: the journal keeps the first.
	other := tj.NewCommand("orders", newPK("c")).WithID(cmd.ID()).Upsert("order-1", tj.Entity{})
	_, err = c.Publish(ctx, other)
	fmt.Println(errors.Is(err, tj.ErrBodyDiffers))
	// Output:
	// true true
	// true true
	// true
}

func ExampleClient_Wait() {
	c, ctx, done := setup()
	defer done()
	pos, err := c.Publish(ctx, tj.NewCommand("orders", newPK("c")).
		Insert("order-1", tj.Entity{}).Insert("order-2", tj.Entity{}))
	if err != nil {
		log.Fatal(err)
	}
	o, err := c.Wait(ctx, pos)
	fmt.Println(o.Status, len(o.Rows), o.Rows[0].RK, o.Rows[0].Version, err)
	// Output: applied 2 order-1 0 <nil>
}

func ExampleClient_Apply() {
	c, ctx, done := setup()
	defer done()
	_, err := c.Apply(ctx, tj.NewCommand("orders", newPK("c")).Delete("order-1"))
	fmt.Println(errors.Is(err, tj.ErrNotFound))
	// Output: true
}

func ExampleClient_Get() {
	c, ctx, done := setup()
	defer done()
	pk := newPK("c")
	pos, _ := c.Publish(ctx, tj.NewCommand("orders", pk).Upsert("order-1", tj.Entity{"qty": tj.Int64(9007199254740993)}))
	r, err := c.Get(ctx, "orders", pk, "order-1", tj.AfterSeq(pos.Seq))
	fmt.Println(r.Entity["qty"].Int, r.Version, r.Command == pos.ID, r.Seq == pos.Seq, r.Op, err)
	// Output: 9007199254740993 0 true true upsert <nil>
}

func ExampleClient_Partition() {
	c, ctx, done := setup()
	defer done()
	pk := newPK("c")
	pos, _ := c.Publish(ctx, tj.NewCommand("orders", pk).Upsert("b", tj.Entity{}).Upsert("a", tj.Entity{}))
	rows, err := c.Partition(ctx, "orders", pk, tj.AfterSeq(pos.Seq))
	for _, r := range rows {
		fmt.Println(r.RK)
	}
	fmt.Println(err)
	// Output:
	// a
	// b
	// <nil>
}

func ExampleClient_Query() {
	c, ctx, done := setup()
	defer done()
	pk := newPK("c")
	pos, _ := c.Publish(ctx, tj.NewCommand("orders", pk).
		Upsert("o1", tj.Entity{"total": tj.Double(5)}).
		Upsert("o2", tj.Entity{"total": tj.Double(50)}))
	q := tj.Query{PK: pk, Where: []tj.Cond{{Prop: "total", Op: tj.Gt, Value: tj.Double(10)}}}
	for r, err := range c.Query(ctx, "orders", q, tj.AfterSeq(pos.Seq)) {
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(r.RK, r.Entity["total"].Float)
	}
	// Output: o2 50
}

func ExampleClient_WaitApplied() {
	c, ctx, done := setup()
	defer done()
	pk := newPK("c")
	pos, _ := c.Publish(ctx, tj.NewCommand("orders", pk).Upsert("o1", tj.Entity{}))
	if err := c.WaitApplied(ctx, pos.Seq); err != nil {
		log.Fatal(err)
	}
	r, err := c.Get(ctx, "orders", pk, "o1")
	fmt.Println(r.Seq == pos.Seq, err)
	// Output: true <nil>
}

func ExampleClient_Follow() {
	c, ctx, done := setup()
	defer done()
	pk := newPK("c")
	first, _ := c.Publish(ctx, tj.NewCommand("orders", pk).Insert("o1", tj.Entity{"status": tj.String("new")}))
	c.Publish(ctx, tj.NewCommand("orders", pk).Merge("o1", tj.Entity{"status": tj.String("paid")}))
	c.Publish(ctx, tj.NewCommand("orders", pk).Delete("o1"))

	n := 0
	fctx, stop := context.WithCancel(ctx)
	err := c.Follow(fctx, newPK("mailer"), "orders", func(ctx context.Context, ch tj.Change) error {
		fmt.Printf("%s %s v%d %q -> %q\n", ch.Op, ch.RK, ch.Version, ch.Before["status"].Str, ch.After["status"].Str)
		if n++; n == 3 {
			stop()
		}
		return nil
	}, tj.FollowPartition(pk), tj.FollowFrom(first.Seq))
	fmt.Println(err)
	// Output:
	// c o1 v0 "" -> "new"
	// u o1 v1 "new" -> "paid"
	// d o1 v2 "paid" -> ""
	// <nil>
}

func ExampleNewCommand() {
	cmd := tj.NewCommand("orders", "customer-42")
	fmt.Println(len(cmd.ID()))
	// Output: 36
}

func ExampleCommand() {
	// One command, several operations on one partition: all apply or none.
	cmd := tj.NewCommand("orders", "customer-42").
		Upsert("order-7", tj.Entity{"status": tj.String("shipped")}).
		Delete("order-6").IfVersion(3)
	fmt.Println(cmd.ID() != "")
	// Output: true
}

func ExampleCommand_Insert() {
	c, ctx, done := setup()
	defer done()
	pk := newPK("c")
	c.Apply(ctx, tj.NewCommand("orders", pk).Insert("o1", tj.Entity{}))
	_, err := c.Apply(ctx, tj.NewCommand("orders", pk).Insert("o1", tj.Entity{}))
	fmt.Println(errors.Is(err, tj.ErrExists))
	// Output: true
}

func ExampleCommand_Upsert() {
	c, ctx, done := setup()
	defer done()
	pk := newPK("c")
	c.Apply(ctx, tj.NewCommand("orders", pk).Upsert("o1", tj.Entity{"a": tj.Int32(1)}))
	o, err := c.Apply(ctx, tj.NewCommand("orders", pk).Upsert("o1", tj.Entity{"b": tj.Int32(2)}))
	r, _ := c.Get(ctx, "orders", pk, "o1")
	fmt.Println(o.Rows[0].Version, len(r.Entity), err)
	// Output: 1 1 <nil>
}

func ExampleCommand_Replace() {
	c, ctx, done := setup()
	defer done()
	_, err := c.Apply(ctx, tj.NewCommand("orders", newPK("c")).Replace("o1", tj.Entity{}))
	fmt.Println(errors.Is(err, tj.ErrNotFound))
	// Output: true
}

func ExampleCommand_Merge() {
	c, ctx, done := setup()
	defer done()
	pk := newPK("c")
	c.Apply(ctx, tj.NewCommand("orders", pk).Upsert("o1", tj.Entity{"a": tj.Int32(1)}))
	c.Apply(ctx, tj.NewCommand("orders", pk).Merge("o1", tj.Entity{"b": tj.Int32(2)}))
	r, _ := c.Get(ctx, "orders", pk, "o1")
	fmt.Println(r.Entity["a"].Int, r.Entity["b"].Int, r.Op)
	// Output: 1 2 merge
}

func ExampleCommand_UpsertMerge() {
	c, ctx, done := setup()
	defer done()
	pk := newPK("c")
	o, err := c.Apply(ctx, tj.NewCommand("orders", pk).UpsertMerge("o1", tj.Entity{"a": tj.Int32(1)}))
	fmt.Println(o.Status, err)
	// Output: applied <nil>
}

func ExampleCommand_Delete() {
	c, ctx, done := setup()
	defer done()
	pk := newPK("c")
	c.Apply(ctx, tj.NewCommand("orders", pk).Upsert("o1", tj.Entity{}))
	o, _ := c.Apply(ctx, tj.NewCommand("orders", pk).Delete("o1"))
	_, err := c.Get(ctx, "orders", pk, "o1")
	fmt.Println(o.Rows[0].Deleted, errors.Is(err, tj.ErrNotFound))
	// Output: true true
}

func ExampleCommand_IfVersion() {
	c, ctx, done := setup()
	defer done()
	pk := newPK("c")
	c.Apply(ctx, tj.NewCommand("orders", pk).Upsert("o1", tj.Entity{}))
	_, err := c.Apply(ctx, tj.NewCommand("orders", pk).Replace("o1", tj.Entity{}).IfVersion(4))
	var rej *tj.Rejection
	fmt.Println(errors.As(err, &rej), rej.Code)
	// Output: true version-mismatch
}

func ExampleCommand_WithID() {
	cmd := tj.NewCommand("orders", "customer-42").WithID("order-7-created").Insert("order-7", tj.Entity{})
	fmt.Println(cmd.ID())
	// Output: order-7-created
}

func ExampleCommand_WithMeta() {
	c, ctx, done := setup()
	defer done()
	_, err := c.Apply(ctx, tj.NewCommand("orders", newPK("c")).WithMeta("correlationId", "c-991").Upsert("o1", tj.Entity{}))
	fmt.Println(err)
	// Output: <nil>
}

func ExampleCommand_ID() {
	cmd := tj.NewCommand("orders", "customer-42").WithID("x-1")
	fmt.Println(cmd.ID())
	// Output: x-1
}

func ExampleValue() {
	v := tj.Int64(42)
	fmt.Println(v.Type, v.Int)
	// Output: Edm.Int64 42
}

func ExampleEntity() {
	e := tj.Entity{"status": tj.String("new"), "paid": tj.Bool(false)}
	fmt.Println(len(e), e["status"].Str)
	// Output: 2 new
}

func ExampleString() {
	fmt.Println(tj.String("new").Type)
	// Output: Edm.String
}

func ExampleBool() {
	fmt.Println(tj.Bool(true).Bool)
	// Output: true
}

func ExampleInt32() {
	fmt.Println(tj.Int32(7).Type)
	// Output: Edm.Int32
}

func ExampleInt64() {
	fmt.Println(tj.Int64(1 << 60).Int)
	// Output: 1152921504606846976
}

func ExampleDouble() {
	fmt.Println(tj.Double(12.5).Float)
	// Output: 12.5
}

func ExampleDateTime() {
	v := tj.DateTime(time.Date(2026, 11, 21, 10, 0, 0, 123456700, time.UTC))
	fmt.Println(v.Type, v.Time.Format(time.RFC3339Nano))
	// Output: Edm.DateTime 2026-11-21T10:00:00.1234567Z
}

func ExampleBinary() {
	fmt.Println(len(tj.Binary([]byte{1, 2, 3}).Bytes))
	// Output: 3
}

func ExampleGuid() {
	v, err := tj.Guid("4bf92f35-77b3-4da6-a3ce-929d0e0e4736")
	fmt.Println(v.Type, err)
	_, err = tj.Guid("nope")
	fmt.Println(errors.Is(err, tj.ErrInvalid))
	// Output:
	// Edm.Guid <nil>
	// true
}

func ExamplePosition() {
	c, ctx, done := setup()
	defer done()
	pos, _ := c.Publish(ctx, tj.NewCommand("orders", newPK("c")).Upsert("o1", tj.Entity{}))
	// A position is what Wait and AfterSeq take.
	o, err := c.Wait(ctx, pos)
	fmt.Println(o.Seq == pos.Seq, err)
	// Output: true <nil>
}

func ExampleStatus() {
	c, ctx, done := setup()
	defer done()
	o, _ := c.Apply(ctx, tj.NewCommand("orders", newPK("c")).Upsert("o1", tj.Entity{}))
	switch o.Status {
	case tj.Applied:
		fmt.Println("applied")
	case tj.Rejected, tj.Duplicate:
		fmt.Println("not applied")
	}
	// Output: applied
}

func ExampleOutcome() {
	c, ctx, done := setup()
	defer done()
	pk := newPK("c")
	o, _ := c.Apply(ctx, tj.NewCommand("orders", pk).Upsert("o1", tj.Entity{}))
	fmt.Println(o.Table, o.PK == pk, o.Status, o.Reason == "", !o.At.IsZero())
	// Output: orders true applied true true
}

func ExampleRowVersion() {
	c, ctx, done := setup()
	defer done()
	o, _ := c.Apply(ctx, tj.NewCommand("orders", newPK("c")).Upsert("o1", tj.Entity{}).Merge("o1", tj.Entity{}))
	// One version per row and command, whatever its number of operations.
	for _, rv := range o.Rows {
		fmt.Println(rv.RK, rv.Version, rv.Op, rv.Deleted)
	}
	// Output: o1 0 merge false
}

func ExampleRejection() {
	c, ctx, done := setup()
	defer done()
	pk := newPK("c")
	c.Apply(ctx, tj.NewCommand("orders", pk).Insert("o1", tj.Entity{}))
	_, err := c.Apply(ctx, tj.NewCommand("orders", pk).Insert("o1", tj.Entity{}))
	switch {
	case errors.Is(err, tj.ErrExists):
		fmt.Println("exists")
	case errors.Is(err, tj.ErrVersionMismatch), errors.Is(err, tj.ErrNotFound),
		errors.Is(err, tj.ErrInvalid), errors.Is(err, tj.ErrTooLarge):
		fmt.Println("other")
	}
	var rej *tj.Rejection
	if errors.As(err, &rej) {
		fmt.Println(rej.Code, rej.Reason, rej.Table, errors.Is(err, tj.ErrRejected))
	}
	// Output:
	// exists
	// exists ops[0] insert "o1": row exists at version 0 orders true
}

func ExampleRejection_Error() {
	err := &tj.Rejection{Code: "not-found", Reason: `ops[0] delete "o1": row does not exist`, ID: "cmd-1", Seq: 12}
	fmt.Println(err)
	// Output: command cmd-1 (seq 12) rejected: not-found: ops[0] delete "o1": row does not exist
}

func ExampleRejection_Is() {
	err := &tj.Rejection{Code: "version-mismatch"}
	fmt.Println(errors.Is(err, tj.ErrVersionMismatch), errors.Is(err, tj.ErrNotFound), errors.Is(err, tj.ErrRejected))
	// Output: true false true
}

func ExampleRow() {
	c, ctx, done := setup()
	defer done()
	pk := newPK("c")
	pos, _ := c.Publish(ctx, tj.NewCommand("orders", pk).Upsert("o1", tj.Entity{"status": tj.String("new")}))
	r, _ := c.Get(ctx, "orders", pk, "o1", tj.AfterSeq(pos.Seq))
	// Entity holds the properties only: no system columns.
	fmt.Println(r.Table, r.RK, len(r.Entity), r.Entity["status"].Str, r.Version)
	// Output: orders o1 1 new 0
}

func ExampleReadOption() {
	c, ctx, done := setup()
	defer done()
	pk := newPK("c")
	pos, _ := c.Publish(ctx, tj.NewCommand("orders", pk).Upsert("o1", tj.Entity{}))
	opts := []tj.ReadOption{tj.AfterSeq(pos.Seq)}
	rows, err := c.Partition(ctx, "orders", pk, opts...)
	fmt.Println(len(rows), err)
	// Output: 1 <nil>
}

func ExampleAfterSeq() {
	c, ctx, done := setup()
	defer done()
	pk := newPK("c")
	pos, _ := c.Publish(ctx, tj.NewCommand("orders", pk).Upsert("o1", tj.Entity{}))
	// The deadline of ctx bounds the wait for the projector.
	rctx, rcancel := context.WithTimeout(ctx, 10*time.Second)
	defer rcancel()
	r, err := c.Get(rctx, "orders", pk, "o1", tj.AfterSeq(pos.Seq))
	fmt.Println(r.Seq == pos.Seq, err)
	// Output: true <nil>
}

func ExampleQuery() {
	c, ctx, done := setup()
	defer done()
	table := fmt.Sprintf("q%d", time.Now().UnixNano())
	a, _ := c.Publish(ctx, tj.NewCommand(table, "a").Upsert("1", tj.Entity{}))
	b, _ := c.Publish(ctx, tj.NewCommand(table, "b").Upsert("2", tj.Entity{}))
	// AfterSeq waits for the shard of its command: a read across
	// partitions waits for each write it must see.
	c.WaitApplied(ctx, a.Seq)
	for r, err := range c.Query(ctx, table, tj.Query{AllPartitions: true}, tj.AfterSeq(b.Seq)) {
		fmt.Println(r.PK, r.RK, err)
	}
	// Output:
	// a 1 <nil>
	// b 2 <nil>
}

func ExampleCond() {
	q := tj.Query{PK: "customer-42", Where: []tj.Cond{
		{Prop: "status", Op: tj.Eq, Value: tj.String("shipped")},
		{Prop: "total", Op: tj.Ge, Value: tj.Double(100)},
	}}
	fmt.Println(len(q.Where))
	// Output: 2
}

func ExampleCompareOp() {
	for _, op := range []tj.CompareOp{tj.Eq, tj.Ne, tj.Lt, tj.Le, tj.Gt, tj.Ge} {
		fmt.Print(op != 0, " ")
	}
	fmt.Println()
	// Output: true true true true true true
}

func ExampleChange() {
	c, ctx, done := setup()
	defer done()
	pk := newPK("c")
	pos, _ := c.Publish(ctx, tj.NewCommand("orders", pk).Upsert("o1", tj.Entity{"n": tj.Int32(1)}))
	fctx, stop := context.WithCancel(ctx)
	c.Follow(fctx, newPK("audit"), "orders", func(_ context.Context, ch tj.Change) error {
		fmt.Println(ch.Table, ch.PK == pk, ch.RK, ch.Op, ch.Version, ch.Command == pos.ID, ch.Seq == pos.Seq, !ch.At.IsZero(), ch.Before == nil, ch.After["n"].Int)
		stop()
		return nil
	}, tj.FollowPartition(pk))
	// Output: orders true o1 c 0 true true true true 1
}

func ExampleChangeOp() {
	for _, op := range []tj.ChangeOp{tj.Created, tj.Updated, tj.Deleted, tj.Erased} {
		fmt.Print(op, " ")
	}
	fmt.Println()
	// Output: c u d erase
}

func ExampleFollowOption() {
	c, ctx, done := setup()
	defer done()
	pk := newPK("c")
	pos, _ := c.Publish(ctx, tj.NewCommand("orders", pk).Upsert("o1", tj.Entity{}))
	opts := []tj.FollowOption{tj.FollowPartition(pk), tj.FollowFrom(pos.Seq)}
	fctx, stop := context.WithCancel(ctx)
	c.Follow(fctx, newPK("f"), "orders", func(_ context.Context, ch tj.Change) error {
		fmt.Println(ch.RK)
		stop()
		return nil
	}, opts...)
	// Output: o1
}

func ExampleFollowPartition() {
	c, ctx, done := setup()
	defer done()
	a, b := newPK("a"), newPK("b")
	c.Publish(ctx, tj.NewCommand("orders", a).Upsert("in-a", tj.Entity{}))
	c.Publish(ctx, tj.NewCommand("orders", b).Upsert("in-b", tj.Entity{}))
	fctx, stop := context.WithCancel(ctx)
	c.Follow(fctx, newPK("f"), "orders", func(_ context.Context, ch tj.Change) error {
		fmt.Println(ch.RK)
		stop()
		return nil
	}, tj.FollowPartition(b))
	// Output: in-b
}

func ExampleFollowFrom() {
	c, ctx, done := setup()
	defer done()
	pk := newPK("c")
	c.Publish(ctx, tj.NewCommand("orders", pk).Upsert("old", tj.Entity{}))
	from, _ := c.Publish(ctx, tj.NewCommand("orders", pk).Upsert("new", tj.Entity{}))
	fctx, stop := context.WithCancel(ctx)
	c.Follow(fctx, newPK("f"), "orders", func(_ context.Context, ch tj.Change) error {
		fmt.Println(ch.RK)
		stop()
		return nil
	}, tj.FollowPartition(pk), tj.FollowFrom(from.Seq))
	// Output: new
}

func ExampleFollowAckWait() {
	c, ctx, done := setup()
	defer done()
	pk := newPK("c")
	c.Publish(ctx, tj.NewCommand("orders", pk).Upsert("slow", tj.Entity{}))
	fctx, stop := context.WithCancel(ctx)
	// A handler that may run for minutes: a change it holds is not
	// offered again before 10 minutes.
	c.Follow(fctx, newPK("f"), "orders", func(_ context.Context, ch tj.Change) error {
		fmt.Println(ch.RK)
		stop()
		return nil
	}, tj.FollowPartition(pk), tj.FollowAckWait(10*time.Minute))
	// Output: slow
}

func ExampleOption() {
	ctx, cancel := exampleContext()
	defer cancel()
	// Options from a service's configuration.
	opts := []tj.Option{tj.WithStore(tableStore), tj.WithIssuer("orders-svc")}
	c, err := tj.Connect(ctx, natsURL, opts...)
	if err != nil {
		log.Fatal(err)
	}
	defer c.Close()
	_, err = c.Partition(ctx, "orders", newPK("c"))
	fmt.Println(err)
	// Output: <nil>
}
