// Package journaltest starts real, in-process JetStream servers for tests of
// the journal and of the packages built on it.
package journaltest

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/tablejournal/tablejournal/journal/embedded"
)

// Logger is the server log used by StartServer: warnings and errors on
// stderr, or everything with TABLEJOURNAL_NATS_LOG=debug, nothing with
// TABLEJOURNAL_NATS_LOG=off.
func Logger() *slog.Logger {
	switch os.Getenv("TABLEJOURNAL_NATS_LOG") {
	case "off":
		return slog.New(slog.NewTextHandler(io.Discard, nil))
	case "debug":
		return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
}

// StartServer starts an embedded server on a random loopback port with its
// store in a temporary folder, and shuts it down when the test ends.
func StartServer(t testing.TB) *embedded.Server {
	t.Helper()
	return StartServerConfig(t, embedded.Config{Dir: t.TempDir(), Listen: "127.0.0.1:-1"})
}

// StartServerConfig starts an embedded server with cfg (its Logger defaulting
// to Logger()) and shuts it down when the test ends.
func StartServerConfig(t testing.TB, cfg embedded.Config) *embedded.Server {
	t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = Logger()
	}
	s, err := embedded.Start(cfg)
	if err != nil {
		t.Fatalf("start nats-server: %v", err)
	}
	t.Cleanup(s.Shutdown)
	return s
}

// Restart shuts s down and starts a new server on the same store folder and
// address; clients connected with Connect reconnect to it.
func Restart(t testing.TB, s *embedded.Server) *embedded.Server {
	t.Helper()
	s.Shutdown()
	return StartServerConfig(t, s.Config())
}

// Connect connects to url, reconnecting forever (Dial), and closes the
// connection when the test ends.
func Connect(t testing.TB, url string) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	nc, js, err := Dial(url)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(nc.Close)
	return nc, js
}

// Dial connects to url as the tests' clients do: reconnecting forever,
// every 50ms, so that a test may restart the servers under it. The caller
// closes the connection.
func Dial(url string) (*nats.Conn, jetstream.JetStream, error) {
	nc, err := nats.Connect(url,
		nats.MaxReconnects(-1),
		nats.ReconnectWait(50*time.Millisecond),
		nats.ReconnectJitter(0, 0),
	)
	if err != nil {
		return nil, nil, fmt.Errorf("connect %s: %w", url, err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, nil, fmt.Errorf("jetstream: %w", err)
	}
	return nc, js, nil
}

// Context returns a context that ends with the test or after d, whichever
// comes first.
func Context(t testing.TB, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// WaitFor polls cond until it holds, and fails the test, naming what it
// waited for, if d passes first.
func WaitFor(t testing.TB, d time.Duration, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(d)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %s waiting for %s", d, what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// StartDefaultServer starts nats-server in this process with its defaults,
// as an operator who installed it would run it (max_payload 1 MiB, fsync
// every two minutes), plus JetStream on a random loopback port with its
// store in a temporary folder; it shuts it down when the test ends. It
// returns the client URL.
func StartDefaultServer(t testing.TB) string {
	t.Helper()
	ns, err := server.NewServer(&server.Options{
		Host: "127.0.0.1", Port: server.RANDOM_PORT, JetStream: true, StoreDir: t.TempDir(),
		NoSigs: true, NoLog: true,
	})
	if err != nil {
		t.Fatalf("nats-server: %v", err)
	}
	ns.Start()
	t.Cleanup(func() { ns.Shutdown(); ns.WaitForShutdown() })
	if !ns.ReadyForConnections(30 * time.Second) {
		t.Fatal("nats-server: not ready after 30s")
	}
	return ns.ClientURL()
}
