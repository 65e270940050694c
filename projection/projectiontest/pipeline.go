package projectiontest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"path/filepath"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/tablejournal/tablejournal/journal"
	"github.com/tablejournal/tablejournal/journal/embedded"
	"github.com/tablejournal/tablejournal/journal/journaltest"
	"github.com/tablejournal/tablejournal/projection"
	"github.com/tablejournal/tablejournal/store"
	"github.com/tablejournal/tablejournal/store/stores"
)

// Pipeline is the one place the module's tests start a pipeline: an
// in-process JetStream server on a loopback port (or servers the caller
// runs), a connection to it, the journal, a table store and, once
// started, a projector in the background. The test harnesses are layers
// over it: Harness here (the projector's and replay's tests), the public
// tablejournaltest.Pipeline (a service's tests) and clitest.Pipeline (the
// commands' tests). It takes no testing.TB, so that a TestMain or an
// example can run one; Close undoes StartPipeline.
type Pipeline struct {
	Server  *embedded.Server // nil when PipelineConfig.URL named the servers
	NC      *nats.Conn
	JS      jetstream.JetStream
	Journal *journal.Journal
	Store   store.Store
	// Tables is the connection string the store was opened from ("" when
	// the caller passed the store in), as the commands' --tables flag.
	Tables string

	url    string
	closer io.Closer // the store's, when StartPipeline opened it
	stop   func() error
	done   chan error
}

// PipelineConfig configures StartPipeline.
type PipelineConfig struct {
	// Dir holds the server's files (in Dir/jetstream) and the embedded
	// table store (stores.EmbeddedFile). Required unless URL is set and a
	// store is given.
	Dir string
	// URL, if set, names servers the caller runs (a journaltest.Cluster,
	// say; it may list several): no server is started.
	URL string
	// Journal configures the stream, ensured at the start.
	Journal journal.Config
	// Tables is the table store to open when StartPipeline is given none,
	// as the projector's --tables flag: "" is the embedded store in Dir.
	Tables string
	// ServerLogger receives the server's logs. If nil, journaltest.Logger().
	ServerLogger *slog.Logger
}

// StartPipeline starts the server (fsync off: these tests are about the
// projection, the journal's own tests crash the server), connects to it as
// journaltest.Dial does and ensures the journal. The store is st, or, if
// st is nil, the one cfg.Tables names, which Close then closes.
func StartPipeline(ctx context.Context, st store.Store, cfg PipelineConfig) (*Pipeline, error) {
	p := &Pipeline{Store: st}
	if err := p.start(ctx, cfg); err != nil {
		p.Close()
		return nil, fmt.Errorf("start pipeline: %w", err)
	}
	return p, nil
}

func (p *Pipeline) start(ctx context.Context, cfg PipelineConfig) error {
	if cfg.Dir == "" && (cfg.URL == "" || p.Store == nil) {
		return errors.New("a Dir is required")
	}
	url := cfg.URL
	if url == "" {
		log := cfg.ServerLogger
		if log == nil {
			log = journaltest.Logger()
		}
		srv, err := embedded.Start(embedded.Config{Dir: filepath.Join(cfg.Dir, "jetstream"), Listen: "127.0.0.1:-1", NoSync: true, Logger: log})
		if err != nil {
			return err
		}
		p.Server, url = srv, srv.ClientURL()
	}
	p.url = url
	var err error
	if p.NC, p.JS, err = journaltest.Dial(url); err != nil {
		return err
	}
	if p.Journal, err = journal.Ensure(ctx, p.JS, cfg.Journal); err != nil {
		return err
	}
	if p.Store == nil {
		p.Tables = cfg.Tables
		if p.Tables == "" {
			p.Tables = "sqlite:" + filepath.Join(cfg.Dir, stores.EmbeddedFile)
		}
		if p.Store, p.closer, err = stores.Open(ctx, p.Tables, cfg.Dir); err != nil {
			return err
		}
	}
	return nil
}

// URL is the NATS URL of the pipeline's servers.
func (p *Pipeline) URL() string { return p.url }

// RunProjector runs a projector with cfg on the pipeline's store in the
// background until StopProjector or Close, and returns it. cfg.Journal is
// the caller's to set: PipelineConfig.Journal configured the stream only.
func (p *Pipeline) RunProjector(cfg projection.Config) (*projection.Projector, error) {
	if p.stop != nil {
		return nil, errors.New("a projector is running: stop it first")
	}
	ctx, cancel := context.WithCancel(context.Background())
	proj, err := projection.New(ctx, p.JS, p.Store, cfg)
	if err != nil {
		cancel()
		return nil, err
	}
	done := make(chan error, 1)
	go func() { done <- proj.Run(ctx) }()
	p.done = done
	p.stop = func() error {
		cancel()
		return <-done
	}
	return proj, nil
}

// ProjectorExited reports whether the projector's Run returned, and what.
func (p *Pipeline) ProjectorExited() (bool, error) {
	select {
	case err := <-p.done:
		p.done <- err
		return true, err
	default:
		return false, nil
	}
}

// StopProjector stops the projector and returns what Run returned (nil
// if none runs).
func (p *Pipeline) StopProjector() error {
	stop := p.stop
	p.stop = nil
	if stop == nil {
		return nil
	}
	return stop()
}

// Close stops the projector, closes the store if StartPipeline opened it,
// the connection and the server. It returns what the projector's Run
// returned, if it failed.
func (p *Pipeline) Close() error {
	err := p.StopProjector()
	if errors.Is(err, context.Canceled) {
		err = nil
	}
	if p.closer != nil {
		p.closer.Close()
		p.closer = nil
	}
	if p.NC != nil {
		p.NC.Close()
	}
	if p.Server != nil {
		p.Server.Shutdown()
	}
	return err
}
