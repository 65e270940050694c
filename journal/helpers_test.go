package journal_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/journal"
	"github.com/tablejournal/tablejournal/journal/embedded"
	"github.com/tablejournal/tablejournal/journal/journaltest"
)

// env is one test's server, connection and journal.
type env struct {
	srv *embedded.Server
	nc  *nats.Conn
	js  jetstream.JetStream
	j   *journal.Journal
	ctx context.Context
}

// newEnv starts a server and ensures a journal of cfg on it.
func newEnv(t *testing.T, cfg journal.Config) *env {
	t.Helper()
	srv := journaltest.StartServer(t)
	nc, js := journaltest.Connect(t, srv.ClientURL())
	ctx := journaltest.Context(t, time.Minute)
	j, err := journal.Ensure(ctx, js, cfg)
	if err != nil {
		t.Fatalf("Ensure: %v", err)
	}
	return &env{srv: srv, nc: nc, js: js, j: j, ctx: ctx}
}

// command returns a valid command upserting one row.
func command(id, table, pk string) *events.Command {
	return &events.Command{
		ID:    id,
		Table: table,
		PK:    pk,
		Ops: []events.RowOp{{
			Op:     events.OpUpsert,
			RK:     "row-1",
			Entity: edm.Entity{"status": edm.String("shipped"), "qty": edm.Int64(9007199254740993)},
		}},
		Issuer: "journal-test",
	}
}

// rawJSON is a command as any NATS client would write it by hand.
func rawJSON(id, table, pk string) []byte {
	return fmt.Appendf(nil, `{"id":%q,"table":%q,"pk":%q,"ops":[{"op":"upsert","rk":"order-7","entity":{"status":"shipped","total":12.5,"total@odata.type":"Edm.Double"}}]}`, id, table, pk)
}

// head returns the journal's head or fails the test.
func (e *env) head(t *testing.T) uint64 {
	t.Helper()
	h, err := e.j.Head(e.ctx)
	if err != nil {
		t.Fatalf("Head: %v", err)
	}
	return h
}

// streamConfig is a plain stream that is no journal.
func streamConfig(name, subject string) jetstream.StreamConfig {
	return jetstream.StreamConfig{Name: name, Subjects: []string{subject}, Storage: jetstream.MemoryStorage}
}
