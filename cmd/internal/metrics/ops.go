package metrics

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/tablejournal/tablejournal/store"
)

// OpsConfig configures Start.
type OpsConfig struct {
	// Addr is where /metrics, /healthz and /readyz are served
	// ("127.0.0.1:9464"; port 0 picks one). If zero, they are not.
	Addr string
	// Instance names this process in the status reports.
	Instance string
	// Journal is the journal stream's name. If zero, the default.
	Journal string
	// NATS is the projector's connection, for readiness and the status
	// reports.
	NATS *nats.Conn
	JS   jetstream.JetStream
	// Store is the projector's table store.
	Store store.Store
	// Logger receives the summary and throttling logs. If nil,
	// slog.Default().
	Logger *slog.Logger
	// Replicas of the status bucket when it is created. If zero, 1.
	Replicas int
}

// For /readyz: how long the store may leave a request unanswered
// (storeStall), how recently it must have answered at all (storeAnswer),
// and how often an idle store is asked (probeEvery, so that a store that
// went away while idle is noticed within probeEvery+storeStall).
const (
	storeStall  = 5 * time.Second
	storeAnswer = 30 * time.Second
	probeEvery  = 2 * time.Second
)

// Run states of the projector, for the probes.
const (
	stateStarting int32 = iota
	stateRunning
	stateStopped
	stateFailed
)

// Ops is everything a projector process runs for its operators: Metrics
// (pass it as projection.Config.Observer), the probes' server, the summary
// and throttling logs, the store probe and the status reports.
type Ops struct {
	*Metrics
	srv    *Server // nil without an address
	state  atomic.Int32
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// Start starts the operator side of a projector and returns the store to
// give the projector: cfg.Store, measured. Call Running once the projector
// runs, Stopped when it returned, and Close at the end.
//
// /healthz holds until the projector stopped on a failure. /readyz holds
// while NATS is connected, the store answers (no request of the projector
// unanswered for 5 seconds, and an answer within 30 seconds: it is asked
// every 2 seconds when the projector does not), and the projector runs.
func Start(ctx context.Context, cfg OpsConfig) (*Ops, store.Store, error) {
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	o := &Ops{Metrics: New()}
	st := o.Store(cfg.Store)
	if cfg.Addr != "" {
		live := []Check{{Name: "projector", Check: func() error {
			if o.state.Load() == stateFailed {
				return errors.New("a shard stopped on a persistent failure")
			}
			return nil
		}}}
		ready := []Check{NATSCheck(cfg.NATS), o.StoreCheck(storeStall, storeAnswer), {Name: "projector", Check: func() error {
			switch o.state.Load() {
			case stateStarting:
				return errors.New("starting")
			case stateRunning:
				return nil
			}
			return errors.New("stopped")
		}}}
		srv, err := o.Listen(cfg.Addr, live, ready)
		if err != nil {
			return nil, nil, err
		}
		o.srv = srv
	}
	ctx, o.cancel = context.WithCancel(ctx)
	o.wg.Add(3)
	go func() { defer o.wg.Done(); o.Report(ctx, cfg.Logger, ReportConfig{}) }()
	go func() { defer o.wg.Done(); o.ProbeStore(ctx, st, probeEvery) }()
	go func() {
		defer o.wg.Done()
		err := o.PublishStatus(ctx, cfg.JS, StatusConfig{Instance: cfg.Instance, Journal: cfg.Journal, Replicas: cfg.Replicas})
		// Once ctx ended (Close, as a projector that failed to start
		// exits), its error is that end, not reports failing: a warning
		// then would precede the start-up error as if it were the cause.
		if err != nil && ctx.Err() == nil {
			cfg.Logger.Warn("projector status reports are off", "err", err)
		}
	}()
	return o, st, nil
}

// URL is the address of /metrics, or "off".
func (o *Ops) URL() string {
	if o.srv == nil {
		return "off"
	}
	return fmt.Sprintf("http://%s/metrics", o.srv.Addr())
}

// Running marks the projector as running: ready.
func (o *Ops) Running() { o.state.Store(stateRunning) }

// Stopped marks the projector as stopped, failed when err is not nil.
func (o *Ops) Stopped(err error) {
	if err != nil {
		o.state.Store(stateFailed)
		return
	}
	o.state.Store(stateStopped)
}

// Close stops everything Start started: the status reports are deleted,
// the server answers the requests in flight.
func (o *Ops) Close() {
	o.cancel()
	o.wg.Wait()
	if o.srv != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = o.srv.Close(ctx)
	}
}
