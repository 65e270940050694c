package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/cenkalti/backoff/v4"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/tablejournal/tablejournal/internal/metrics"
	"github.com/tablejournal/tablejournal/journal"
	"github.com/tablejournal/tablejournal/projection"
	shardsconf "github.com/tablejournal/tablejournal/projection/shards"
	"github.com/tablejournal/tablejournal/store"
	"github.com/tablejournal/tablejournal/store/stores"
)

const projectorUsage = `Usage: projector [flags]
       projector status [--json] [--watch] [flags]   (see projector status --help)

Applies the journal to tables, continuously, until SIGINT or SIGTERM.

With no flags it runs everything locally: an embedded JetStream server (file
storage, fsync before every acknowledgement) listening on --nats-listen so
writers in other processes can publish, and the embedded table store, both
under --data. With --nats it uses that server and starts none; with --tables
it uses that table store (an Azure connection string, or sqlite:PATH).
With --metrics-addr it serves Prometheus /metrics, /healthz and /readyz.

Flags:
`

// EnvReplicas is the environment variable of the projector's --replicas.
const EnvReplicas = "TABLEJOURNAL_REPLICAS"

// intFromEnv sets *v from the environment variable env unless the flag
// name was given.
func intFromEnv(fs *flag.FlagSet, name, env string, v *int) error {
	raw := os.Getenv(env)
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == name })
	if raw == "" || given {
		return nil
	}
	n, err := strconv.Atoi(raw)
	if err != nil {
		return fmt.Errorf("%s=%q: not a number", env, raw)
	}
	*v = n
	return nil
}

// EmbeddedServer is a running embedded JetStream server.
type EmbeddedServer interface {
	ClientURL() string
	Shutdown()
}

// StartEmbedded starts the projector's embedded JetStream server on the
// store folder dir, listening on listen, with fsync unless noSync.
type StartEmbedded func(dir, listen string, noSync bool, log *slog.Logger) (EmbeddedServer, error)

// NewProjector returns the projector command; it starts its embedded
// server, when it needs one, with start. cmd/projector passes one built on
// journal/embedded: this package holds the writer and replay commands too,
// and they must not link nats-server.
func NewProjector(start StartEmbedded) Command {
	return func(ctx context.Context, args []string, stdout, stderr io.Writer) error {
		return projector(ctx, start, args, stdout, stderr)
	}
}

func projector(ctx context.Context, start StartEmbedded, args []string, stdout, stderr io.Writer) error {
	if len(args) > 0 && args[0] == "status" {
		return ProjectorStatus(ctx, args[1:], stdout, stderr)
	}
	fs := quietFlagSet("projector")
	var (
		nf         natsFlags
		data       = fs.String("data", envOr(EnvData, "./data"), "data folder for the embedded server and store (env "+EnvData+")")
		listen     = fs.String("nats-listen", "127.0.0.1:4222", "address of the embedded JetStream server (when --nats is not set)")
		noSync     = fs.Bool("no-fsync", false, "embedded server: do not fsync before acknowledging (faster, can lose acknowledged commands on power loss)")
		tables     = fs.String("tables", "", "table store: Azure connection string or sqlite:PATH; default the embedded store in --data (env "+EnvTables+")")
		shards     = fs.String("shards", "", "comma-separated shards this instance applies, a static assignment; default: share the shards with the other projectors of the journal")
		instanceID = fs.String("instance-id", "", "this instance's name in the ownership bucket and logs (letters, digits, - and _); default hostname-pid-random")
		leaseTTL   = fs.Duration("lease-ttl", 0, "how long a shard's lease outlives a dead owner, whole seconds >= 2s (default 5s)")
		replicas   = fs.Int("replicas", 0, "replica count of every stream and bucket the projector creates, and that existing ones must have; 0: 1 when created, any when they exist (env "+EnvReplicas+")")
		jshards    = fs.Int("journal-shards", 0, "shard count when creating the journal stream (default 16); must match an existing stream")
		dupWindow  = fs.Duration("dup-window", 0, "journal duplicate window when creating the stream (default 2m)")
		noChanges  = fs.Bool("no-change-feed", false, "do not publish the change feed")
		logLevel   = fs.String("log-level", "info", "log level: debug, info, warn, error")
		logJSON    = fs.Bool("log-json", false, "log as JSON lines")
		cacheRows  = fs.Int("cache-rows", 0, "rows whose state the projector keeps in memory (default 100000; -1 off)")
		fetchBatch = fs.Int("fetch-batch", 0, "most journal messages taken at once per shard (default 1024, at most 16 MiB after the first)")
		stream     = fs.String("stream", envOr(EnvStream, journal.DefaultStream), "journal stream name (env "+EnvStream+")")
		allowTrim  = fs.Bool("journal-allow-trim", false, "create the journal without deny-purge and deny-delete, so an operator may trim it (default: the journal refuses both; JetStream cannot lift that later)")
		outMaxAge  = fs.Duration("outcomes-max-age", 0, "how long the OUTCOMES stream keeps outcomes (default forever, or as the stream is; negative removes a limit)")
		chgMaxAge  = fs.Duration("changes-max-age", 0, "how long the CHANGES stream keeps change events (default forever, or as the stream is; negative removes a limit)")
		metricsAt  = fs.String("metrics-addr", os.Getenv(EnvMetricsAddr), "serve Prometheus /metrics, /healthz and /readyz on this address, e.g. 127.0.0.1:9464; off when empty (env "+EnvMetricsAddr+")")
	)
	nf.register(fs, "")
	version := versionFlag(fs)
	if err := parseArgs(fs, args, stdout, projectorUsage); err != nil {
		return err
	}
	if *version {
		printVersion(stdout, "projector")
		return nil
	}
	if fs.NArg() > 0 {
		return usageError(fmt.Errorf("unexpected argument %q; the projector takes only flags", fs.Arg(0)))
	}
	if *tables == "" {
		*tables = envOr(EnvTables, "")
	}
	if err := intFromEnv(fs, "replicas", EnvReplicas, replicas); err != nil {
		return usageError(err)
	}
	log, err := newLogger(stderr, *logLevel, *logJSON)
	if err != nil {
		return usageError(err)
	}
	cfg := projection.Config{
		Journal:        journal.Config{Stream: *stream, Shards: *jshards, Duplicates: *dupWindow, AllowTrim: *allowTrim},
		InstanceID:     *instanceID,
		LeaseTTL:       *leaseTTL,
		Replicas:       *replicas,
		NoChangeFeed:   *noChanges,
		OutcomesMaxAge: *outMaxAge,
		ChangesMaxAge:  *chgMaxAge,
		FetchBatch:     *fetchBatch,
		Applier:        projection.ApplierConfig{CacheRows: *cacheRows},
		Logger:         log,
	}
	if err := (shardsconf.Config{Shards: 1, InstanceID: *instanceID, LeaseTTL: *leaseTTL, Replicas: *replicas}).Validate(); err != nil {
		return usageError(err)
	}
	if *shards != "" && (*instanceID != "" || *leaseTTL != 0) {
		return usageError(errors.New("--instance-id and --lease-ttl apply to shared shards; with --shards the assignment is static"))
	}
	if nf.url == "" && *replicas > 1 {
		return usageError(fmt.Errorf("--replicas %d needs a JetStream cluster (--nats with every node's URL); the embedded server is a single node", *replicas))
	}
	if *shards != "" {
		for _, s := range strings.Split(*shards, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(s))
			if err != nil {
				return usageError(fmt.Errorf("--shards: %q is not a shard number", s))
			}
			cfg.Shards = append(cfg.Shards, n)
		}
	}

	url := nf.url
	if url == "" || *tables == "" {
		// The embedded server or the embedded store lives in --data.
		l, err := lockData(*data)
		if err != nil {
			return err
		}
		defer l.Release()
	}
	if url == "" {
		srv, err := start(filepath.Join(*data, "jetstream"), *listen, *noSync, log)
		if err != nil {
			return fmt.Errorf("embedded JetStream server: %w", err)
		}
		defer srv.Shutdown()
		url = srv.ClientURL()
	}
	nc, js, err := connectURL(&nf, url, "tablejournal-projector")
	if err != nil {
		return err
	}
	defer nc.Close()

	// With its own embedded server this projector's journal is private:
	// a second projector with a server of its own on the same store file
	// would project another journal into the same tables, so the store is
	// held exclusively. Instances that share a NATS server may share a
	// store file; they split the shards between them.
	var storeOpts []stores.Option
	if nf.url == "" {
		storeOpts = append(storeOpts, stores.Exclusive())
	}
	st, closeStore, err := stores.Open(ctx, *tables, *data, storeOpts...)
	if err != nil {
		return fmt.Errorf("table store: %w", err)
	}
	defer closeStore.Close()
	// The instance's name in the ownership bucket is also its name in the
	// status reports, static shards or not.
	instance := *instanceID
	if instance == "" {
		instance = shardsconf.DefaultInstanceID()
	}
	if cfg.Shards == nil {
		cfg.InstanceID = instance
	}
	ops, st, err := metrics.Start(ctx, metrics.OpsConfig{Addr: *metricsAt, Instance: instance, Journal: *stream, NATS: nc, JS: js, Store: st, Logger: log, Replicas: *replicas})
	if err != nil {
		return fmt.Errorf("--metrics-addr: %w", err)
	}
	defer ops.Close()
	cfg.Observer = ops

	p, err := newProjector(ctx, js, st, cfg, log)
	if err != nil {
		return err
	}
	ops.SetJournalShards(p.JournalShards())
	ops.SetStats(p.Stats())
	ops.Running()
	log.Info("projector running", startupAttrs(instance, nf.url, url, *data, !*noSync, *tables, cfg, ops)...)
	err = p.Run(ctx)
	ops.Stopped(err)
	if err != nil {
		return err
	}
	log.Info("projector stopped")
	return nil
}

// newProjector is projection.New, retried for up to two minutes while
// JetStream is only temporarily unavailable (a cluster electing a leader, a
// node restarting), so that a projector started at that moment does not
// exit.
func newProjector(ctx context.Context, js jetstream.JetStream, st store.Store, cfg projection.Config, log *slog.Logger) (*projection.Projector, error) {
	b := backoff.NewExponentialBackOff()
	b.MaxElapsedTime = 2 * time.Minute
	var p *projection.Projector
	err := backoff.RetryNotify(func() error {
		var err error
		if p, err = projection.New(ctx, js, st, cfg); err != nil && !transientJetStream(err) {
			return backoff.Permanent(err)
		}
		return err
	}, backoff.WithContext(b, ctx), func(err error, wait time.Duration) {
		log.Warn("JetStream unavailable; retrying", "in", wait, "err", err)
	})
	return p, err
}

// transientJetStream reports whether err is JetStream being briefly
// unavailable rather than refusing.
func transientJetStream(err error) bool {
	var apiErr *jetstream.APIError
	if errors.As(err, &apiErr) {
		return apiErr.Code == 503
	}
	return errors.Is(err, context.DeadlineExceeded) || errors.Is(err, nats.ErrTimeout) || errors.Is(err, nats.ErrNoResponders)
}

func newLogger(w io.Writer, level string, asJSON bool) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("--log-level: %w", err)
	}
	opts := &slog.HandlerOptions{Level: l}
	if asJSON {
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	}
	return slog.New(slog.NewTextHandler(w, opts)), nil
}

// ErrUsage marks a command-line mistake; mains exit with status 2 on it.
var ErrUsage = errors.New("usage")

func usageError(err error) error {
	if errors.Is(err, flag.ErrHelp) {
		return err
	}
	return fmt.Errorf("%w: %w", ErrUsage, err)
}

// waitTimeout is how long a command waits for a server to answer when the
// caller set no deadline.
const waitTimeout = 30 * time.Second
