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
	"testing"
	"time"

	"github.com/tablejournal/tablejournal/projection"
	"github.com/tablejournal/tablejournal/projection/projectiontest"
	"github.com/tablejournal/tablejournal/store"
)

// Config configures Start.
type Config struct {
	// Dir holds the server's store and the embedded table store. Required.
	Dir string
	// Tables is the table store, as the projector's --tables flag: "" is
	// the embedded store in Dir; an Azure Tables connection string (such
	// as Azurite's) works too.
	Tables string
	// Logger receives the server's and the projector's logs; if nil, they
	// are discarded.
	Logger *slog.Logger
}

// Pipeline is a running pipeline: a layer over projectiontest.Pipeline,
// which the module's own tests start too.
type Pipeline struct {
	p *projectiontest.Pipeline
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
	p, err := projectiontest.StartPipeline(ctx, nil, projectiontest.PipelineConfig{Dir: cfg.Dir, Tables: cfg.Tables, ServerLogger: log})
	if err != nil {
		return nil, fmt.Errorf("tablejournaltest: %w", err)
	}
	if _, err := p.RunProjector(projection.Config{Logger: log}); err != nil {
		p.Close()
		return nil, fmt.Errorf("tablejournaltest: %w", err)
	}
	return &Pipeline{p}, nil
}

// URL is the NATS URL a client connects to.
func (p *Pipeline) URL() string { return p.p.URL() }

// Tables is the table store's connection string, as the projector's
// --tables flag takes it.
func (p *Pipeline) Tables() string { return p.p.Tables }

// Store is the table store the projector writes, for
// tablejournal.WithStore. Close closes it.
func (p *Pipeline) Store() store.Store { return p.p.Store }

// Close stops the projector, closes the store and shuts the server down.
// It returns what the projector's run returned, if it failed.
func (p *Pipeline) Close() error { return p.p.Close() }

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
