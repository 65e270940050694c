package journal_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/journal"
	"github.com/tablejournal/tablejournal/journal/embedded"
)

// The whole round trip: an embedded server, the journal, a command published
// twice (one command), and reading it back.
func ExampleWriter() {
	dir, err := os.MkdirTemp("", "journal-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	srv, err := embedded.Start(embedded.Config{Dir: dir, Listen: "127.0.0.1:0", Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		panic(err)
	}
	defer srv.Shutdown()
	nc, err := nats.Connect(srv.ClientURL())
	if err != nil {
		panic(err)
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		panic(err)
	}
	ctx := context.Background()
	j, err := journal.Ensure(ctx, js, journal.Config{})
	if err != nil {
		panic(err)
	}

	w := journal.NewWriter(js, j.Name())
	cmd := &events.Command{
		ID: "01JD3X9Q7ZBGN0V0W4Q6T8Y2KE", Table: "orders", PK: "customer-42",
		Ops: []events.RowOp{{Op: events.OpUpsert, RK: "order-7", Entity: edm.Entity{"status": edm.String("shipped")}}},
	}
	for range 2 {
		res, err := w.Publish(ctx, cmd)
		fmt.Println(res.Seq, res.Duplicate, err)
	}

	m, err := j.Get(ctx, 1)
	if err != nil {
		panic(err)
	}
	got, err := journal.DecodeMsg(m)
	fmt.Println(got.ID, got.Table, got.PK, err)
	// Output:
	// 1 false <nil>
	// 1 true <nil>
	// 01JD3X9Q7ZBGN0V0W4Q6T8Y2KE orders customer-42 <nil>
}
