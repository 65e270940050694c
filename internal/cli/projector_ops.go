package cli

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/tablejournal/tablejournal/internal/metrics"
	"github.com/tablejournal/tablejournal/projection"
	"github.com/tablejournal/tablejournal/store"
	"github.com/tablejournal/tablejournal/store/stores"
)

// EnvMetricsAddr is the environment variable of --metrics-addr.
const EnvMetricsAddr = "TABLEJOURNAL_METRICS_ADDR"

// Projector run states, for the health probes.
const (
	opsStarting int32 = iota
	opsRunning
	opsStopped
	opsFailed
)

// opsStoreAnswer is how recently the store must have answered for
// /readyz; opsProbeEvery is how often an idle store is asked.
const (
	opsStoreAnswer = 30 * time.Second
	opsProbeEvery  = 10 * time.Second
)

// projectorOps is what the projector command runs beside the projector
// for its operators: metrics (always collected; served when addr is set),
// health probes, the summary and throttling logs, and the status reports
// `projector status` reads.
type projectorOps struct {
	m      *metrics.Metrics
	srv    *metrics.Server // nil when --metrics-addr is empty
	state  atomic.Int32
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// startOps starts the operator side of a projector and returns the store
// to give the projector: st, measured.
func startOps(ctx context.Context, log *slog.Logger, addr, instance string, nc *nats.Conn, js jetstream.JetStream, st store.Store) (*projectorOps, store.Store, error) {
	o := &projectorOps{m: metrics.New()}
	st = o.m.Store(st)
	if addr != "" {
		live := []metrics.Check{{Name: "projector", Check: func() error {
			if o.state.Load() == opsFailed {
				return errors.New("a shard stopped on a persistent failure")
			}
			return nil
		}}}
		ready := []metrics.Check{metrics.NATSCheck(nc), o.m.StoreCheck(opsStoreAnswer), {Name: "projector", Check: func() error {
			switch o.state.Load() {
			case opsStarting:
				return errors.New("starting")
			case opsRunning:
				return nil
			}
			return errors.New("stopped")
		}}}
		srv, err := o.m.Listen(addr, live, ready)
		if err != nil {
			return nil, nil, usageError(fmt.Errorf("--metrics-addr: %w", err))
		}
		o.srv = srv
	}
	ctx, o.cancel = context.WithCancel(ctx)
	o.wg.Add(3)
	go func() { defer o.wg.Done(); o.m.Report(ctx, log, metrics.ReportConfig{}) }()
	go func() { defer o.wg.Done(); o.m.ProbeStore(ctx, st, opsProbeEvery) }()
	go func() {
		defer o.wg.Done()
		if err := o.m.PublishStatus(ctx, js, metrics.StatusConfig{Instance: instance}); err != nil {
			log.Warn("projector status reports are off", "err", err)
		}
	}()
	return o, st, nil
}

// metricsAddr is what the startup line says of the metrics server.
func (o *projectorOps) metricsAddr() string {
	if o.srv == nil {
		return "off"
	}
	return "http://" + o.srv.Addr() + "/metrics"
}

// running marks the projector as running (ready).
func (o *projectorOps) running() { o.state.Store(opsRunning) }

// stopped marks the projector as stopped, failed when err is not nil.
func (o *projectorOps) stopped(err error) {
	if err != nil {
		o.state.Store(opsFailed)
		return
	}
	o.state.Store(opsStopped)
}

// close stops everything startOps started.
func (o *projectorOps) close() {
	o.cancel()
	o.wg.Wait()
	if o.srv != nil {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		_ = o.srv.Close(ctx)
	}
}

// instanceID names this projector process in status reports: host and
// process ID.
func instanceID() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "projector"
	}
	return host + "-" + strconv.Itoa(os.Getpid())
}

// startupAttrs is the startup line: what runs where, without secrets.
func startupAttrs(instance, natsFlag, url, data string, fsync bool, tables string, cfg projection.Config, o *projectorOps) []any {
	attrs := []any{"instance", instance}
	if natsFlag == "" {
		attrs = append(attrs, "nats", "embedded at "+url, "jetstream_dir", filepath.Join(data, "jetstream"), "fsync", fsync)
	} else {
		attrs = append(attrs, "nats", redactURL(url))
	}
	shards := "all"
	if cfg.Shards != nil {
		shards = fmt.Sprint(cfg.Shards)
	}
	return append(attrs, "tables", stores.Describe(tables), "shards", shards,
		"change_feed", !cfg.NoChangeFeed, "metrics", o.metricsAddr())
}
