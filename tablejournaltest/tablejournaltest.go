// Package tablejournaltest runs a whole tablejournal pipeline in the test
// process, for the tests of a service that uses package tablejournal: an
// embedded JetStream server on a loopback port, a table store (the
// embedded one by default) and a projector. It links the server and the
// projector, which package tablejournal does not.
package tablejournaltest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/tablejournal/tablejournal/journal"
	"github.com/tablejournal/tablejournal/journal/embedded"
	"github.com/tablejournal/tablejournal/projection"
	"github.com/tablejournal/tablejournal/store"
	"github.com/tablejournal/tablejournal/store/stores"
)

// Config configures Start.
type Config struct {
	// Dir holds the server's store and the embedded table store. Required.
	Dir string
	// Tables is the table store, as the projector's --tables flag: "" is
	// the embedded store in Dir; an Azure Tables connection string (such
	// as Azurite's) works too.
	Tables string
	// Logger receives the server's and the projector's logs; if nil,
	// warnings and errors go to slog.Default()'s handler.
	Logger *slog.Logger
}

// Pipeline is a running pipeline.
type Pipeline struct {
	srv    *embedded.Server
	nc     *nats.Conn
	closer io.Closer
	store  store.Store
	tables string
	cancel context.CancelFunc
	done   chan error
}

// Start starts the server, opens the table store and runs a projector
// until Close.
func Start(ctx context.Context, cfg Config) (*Pipeline, error) {
	if cfg.Dir == "" {
		return nil, errors.New("tablejournaltest: Dir is required")
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	srv, err := embedded.Start(embedded.Config{Dir: filepath.Join(cfg.Dir, "jetstream"), Listen: "127.0.0.1:-1", NoSync: true, Logger: log})
	if err != nil {
		return nil, fmt.Errorf("tablejournaltest: %w", err)
	}
	p := &Pipeline{srv: srv, tables: cfg.Tables, done: make(chan error, 1)}
	if p.tables == "" {
		p.tables = "sqlite:" + filepath.Join(cfg.Dir, stores.EmbeddedFile)
	}
	fail := func(err error) (*Pipeline, error) {
		p.Close()
		return nil, fmt.Errorf("tablejournaltest: %w", err)
	}
	if p.nc, err = nats.Connect(srv.ClientURL()); err != nil {
		return fail(err)
	}
	js, err := jetstream.New(p.nc)
	if err != nil {
		return fail(err)
	}
	if _, err := journal.Ensure(ctx, js, journal.Config{}); err != nil {
		return fail(err)
	}
	st, closer, err := stores.Open(ctx, p.tables, cfg.Dir)
	if err != nil {
		return fail(err)
	}
	p.closer, p.store = closer, st
	runCtx, cancel := context.WithCancel(context.Background())
	proj, err := projection.New(runCtx, js, st, projection.Config{Logger: log})
	if err != nil {
		cancel()
		return fail(err)
	}
	p.cancel = cancel
	go func() { p.done <- proj.Run(runCtx) }()
	return p, nil
}

// URL is the NATS URL a client connects to.
func (p *Pipeline) URL() string { return p.srv.ClientURL() }

// Tables is the table store's connection string, as the projector's
// --tables flag takes it.
func (p *Pipeline) Tables() string { return p.tables }

// Store is the table store the projector writes, for
// tablejournal.WithStore. Close closes it.
func (p *Pipeline) Store() store.Store { return p.store }

// Close stops the projector, closes the store and shuts the server down.
// It returns what the projector's run returned, if it failed.
func (p *Pipeline) Close() error {
	var err error
	if p.cancel != nil {
		p.cancel()
		if e := <-p.done; e != nil && !errors.Is(e, context.Canceled) {
			err = e
		}
		p.cancel = nil
	}
	if p.closer != nil {
		p.closer.Close()
		p.closer = nil
	}
	if p.nc != nil {
		p.nc.Close()
	}
	p.srv.Shutdown()
	return err
}

// New starts a pipeline for test t on the table store tables ("" for the
// embedded one) in a temporary folder, and closes it when the test ends,
// failing the test if the projector failed.
func New(t testing.TB, tables string) *Pipeline {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p, err := Start(ctx, Config{Dir: t.TempDir(), Tables: tables})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Error(err)
		}
	})
	return p
}
