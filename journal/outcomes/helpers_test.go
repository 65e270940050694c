package outcomes_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/tablejournal/tablejournal/journal/journaltest"
)

// env is one test's server and connection.
type env struct {
	nc  *nats.Conn
	js  jetstream.JetStream
	ctx context.Context
}

// newEnv starts a server and connects to it.
func newEnv(t *testing.T) *env {
	t.Helper()
	nc, js := journaltest.Connect(t, journaltest.StartServer(t).ClientURL())
	return &env{nc: nc, js: js, ctx: journaltest.Context(t, time.Minute)}
}
