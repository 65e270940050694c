package journal_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/journal"
	"github.com/tablejournal/tablejournal/journal/journaltest"
	"github.com/tablejournal/tablejournal/wire"
)

// A nats-server with its default max_payload (1 MiB) is refused with the
// fix in the message; the embedded server's 8 MiB is enough.
func TestCheckMaxPayload(t *testing.T) {
	nc, _ := journaltest.Connect(t, journaltest.StartDefaultServer(t))
	err := journal.CheckMaxPayload(nc)
	if !errors.Is(err, journal.ErrMaxPayload) {
		t.Fatalf("default server: %v, want ErrMaxPayload", err)
	}
	for _, want := range []string{"max_payload is 1 MiB", "max_payload >= 6.5 MiB", "set max_payload: 8MB in nats-server.conf"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("%q does not say %q", err, want)
		}
	}
	e := newEnv(t, journal.Config{})
	if err := journal.CheckMaxPayload(e.nc); err != nil {
		t.Errorf("embedded server: %v", err)
	}
}

// A command too large for the server in the Writer's encoding fails at
// once with ErrMaxPayload and advice, instead of the server's bare refusal;
// the same command as msgpack is stored.
func TestWriterMessageTooLarge(t *testing.T) {
	e := newEnv(t, journal.Config{})
	var ops []events.RowOp
	for i := range 3 {
		ent := edm.Entity{}
		for p := range 15 {
			ent[fmt.Sprintf("p%02d", p)] = edm.String(strings.Repeat("\x01", events.MaxBinaryBytes/2))
		}
		ops = append(ops, events.RowOp{Op: events.OpUpsert, RK: fmt.Sprint(i), Entity: ent})
	}
	c := &events.Command{ID: "big", Table: "orders", PK: "p", Ops: ops}
	start := time.Now()
	_, err := journal.NewWriter(e.js, "", journal.WithContentType(wire.ContentTypeJSON)).Publish(e.ctx, c)
	if !errors.Is(err, journal.ErrMaxPayload) || !strings.Contains(err.Error(), "publish it as msgpack") {
		t.Fatalf("JSON of %d ops: %v, want ErrMaxPayload with advice", len(ops), err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("refused after %v: retried", d)
	}
	if _, err := journal.NewWriter(e.js, "").Publish(e.ctx, c); err != nil {
		t.Fatalf("as msgpack: %v", err)
	}
}
