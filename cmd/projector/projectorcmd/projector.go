package projectorcmd

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

	"github.com/tablejournal/tablejournal/cmd/internal/cli"
	"github.com/tablejournal/tablejournal/cmd/internal/consoleserve"
	"github.com/tablejournal/tablejournal/cmd/internal/metrics"
	"github.com/tablejournal/tablejournal/internal/azauth"
	"github.com/tablejournal/tablejournal/internal/retry"
	"github.com/tablejournal/tablejournal/journal/embedded"
	"github.com/tablejournal/tablejournal/projection"
	shardsconf "github.com/tablejournal/tablejournal/projection/shards"
	"github.com/tablejournal/tablejournal/store"
	"github.com/tablejournal/tablejournal/store/stores"
	"github.com/tablejournal/tablejournal/wire"
)

// projectorCommands is the command table of the projector: the
// projector itself, and status.
var projectorCommands = []cli.Spec{
	cli.NewSpec("", "[flags]", "apply the journal to tables, continuously, until SIGINT or SIGTERM"),
	cli.NewSpec("status", "[--json] [--watch] [flags]", "show each shard of the journal: its owner, how far it is applied, what is pending"),
	cli.NewSpec("resume", "--table T [--pk P] [flags]", "try a held partition again now, once the row that holds it is dealt with"),
}

// projectorUsage is the projector's --help, generated from the table.
func projectorUsage() string {
	run, status, resume := projectorCommands[0], projectorCommands[1], projectorCommands[2]
	return "Usage: " + run.Line("projector") + "\n       " + status.Line("projector") + "   (see projector status --help)\n" +
		"       " + resume.Line("projector") + "   (see projector resume --help)\n" + `
Applies the journal to tables, continuously, until SIGINT or SIGTERM.

With no flags it runs everything locally: an embedded JetStream server (file
storage, fsync before every acknowledgement) listening on --nats-listen so
writers in other processes can publish, and the embedded table store, both
under --data. With --nats it uses that server and starts none; with --tables
it uses that table store (an Azure connection string, an https:// endpoint to
sign in to with Microsoft Entra ID, or sqlite:PATH).
With --metrics-addr it serves Prometheus /metrics, /healthz and /readyz, and
with --console-addr the web console (docs/console.md) on a listener of its own.

Flags:
`
}

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

// Run runs the projector command: cmd/projector is
// cli.Main(projectorcmd.Run, ...). It starts its embedded JetStream server
// (journal/embedded) when --nats is not set: this package is the only one
// of the commands that links nats-server.
func Run(ctx context.Context, args []string, stdio cli.IO) error {
	if len(args) > 0 && args[0] == projectorCommands[1].Name {
		return projectorStatus(ctx, args[1:], stdio)
	}
	if len(args) > 0 && args[0] == projectorCommands[2].Name {
		return projectorResume(ctx, args[1:], stdio)
	}
	return (&projectCmd{}).run(ctx, args, stdio)
}

// projectCmd is the projector itself. Its flags are written into the
// projection package's config, but for where things live and how to log.
type projectCmd struct {
	cfg  projection.Config
	nf   cli.NATSFlags
	az   cli.AzureFlags
	auth azauth.Config

	data, listen, tables, shards string
	noSync, logJSON              bool
	logLevel, metricsAt          string
	console                      consoleserve.Flags
	natsFromEnv                  bool // --nats is $TABLEJOURNAL_NATS, not a flag
}

func (c *projectCmd) flags(fs *flag.FlagSet) {
	cfg := &c.cfg
	fs.StringVar(&c.data, "data", cli.EnvOr(cli.EnvData, "./data"), "data folder for the embedded server and store (env "+cli.EnvData+")")
	fs.StringVar(&c.listen, "nats-listen", "127.0.0.1:4222", "address of the embedded JetStream server (when --nats is not set)")
	fs.BoolVar(&c.noSync, "no-fsync", false, "embedded server: do not fsync before acknowledging (faster, can lose acknowledged commands on power loss)")
	fs.StringVar(&c.tables, "tables", "", "table store: an Azure connection string, an https:// table endpoint (signs in with Microsoft Entra ID, see --auth) or sqlite:PATH; default the embedded store in --data (env "+cli.EnvTables+")")
	fs.StringVar(&c.shards, "shards", "", "comma-separated shards this instance applies, a static assignment; default: share the shards with the other projectors of the journal")
	fs.StringVar(&cfg.InstanceID, "instance-id", "", "this instance's name in the ownership bucket and logs (letters, digits, - and _); default hostname-pid-random")
	fs.DurationVar(&cfg.LeaseTTL, "lease-ttl", 0, "how long a shard's lease outlives a dead owner, whole seconds >= 2s (default 5s)")
	fs.DurationVar(&cfg.DrainTimeout, "drain-timeout", 0, "on SIGTERM, how long a shard may finish its batch in flight before leaving it to the next owner unacknowledged (default 15s; negative: no bound)")
	fs.IntVar(&cfg.Replicas, "replicas", 0, "replica count of every stream and bucket the projector creates, and that existing ones must have; 0: 1 when created, any when they exist (env "+EnvReplicas+")")
	fs.IntVar(&cfg.Journal.Shards, "journal-shards", 0, "shard count when creating the journal stream (default 16); must match an existing stream")
	fs.DurationVar(&cfg.Journal.Duplicates, "dup-window", 0, "journal duplicate window when creating the stream (default 2m)")
	fs.BoolVar(&cfg.NoChangeFeed, "no-change-feed", false, "do not publish the change feed")
	fs.BoolVar(&cfg.NoReply, "no-reply", false, "do not reply to waiting clients before an outcome is stored (clients then wait for the stored outcome)")
	fs.StringVar(&c.logLevel, "log-level", "info", "log level: debug, info, warn, error")
	fs.BoolVar(&c.logJSON, "log-json", false, "log as JSON lines")
	fs.IntVar(&cfg.Applier.CacheRows, "cache-rows", 0, "rows whose state the projector keeps in memory (default 100000; -1 off)")
	fs.DurationVar(&cfg.SweepInterval, "sweep-interval", projection.DefaultSweepInterval, "time for one complete pass of the sweep that checks every partition of a shard against the journal for writes the store lost, spread over it (at most 20 store reads a second per shard); 0 turns it off")
	fs.IntVar(&cfg.IDFilter, "id-filter", projection.DefaultIDFilter, "command IDs the first-seen filter is sized for (about 1.2 bytes each): a batch of IDs the journal never carried before decides without looking up earlier outcomes; past it more batches look theirs up; 0 turns it off")
	fs.IntVar(&cfg.FetchBatch, "fetch-batch", 0, "most journal messages taken at once per shard (default 1024, at most 16 MiB after the first)")
	fs.StringVar(&cfg.Journal.Stream, "stream", cli.EnvOr(cli.EnvStream, wire.JournalStream), "journal stream name (env "+cli.EnvStream+")")
	fs.BoolVar(&cfg.Journal.AllowTrim, "journal-allow-trim", false, "create the journal without deny-purge and deny-delete, so an operator may trim it (default: the journal refuses both; JetStream cannot lift that later)")
	fs.BoolVar(&cfg.Journal.AllowMsgDelete, "journal-allow-msg-delete", false, "create the journal without deny-delete but with deny-purge, so that replay erase can securely delete an erased key's commands (docs/erasure.md)")
	fs.DurationVar(&cfg.OutcomesMaxAge, "outcomes-max-age", 0, "how long the OUTCOMES stream keeps outcomes (default forever, or as the stream is; negative removes a limit)")
	fs.DurationVar(&cfg.ChangesMaxAge, "changes-max-age", 0, "how long the CHANGES stream keeps change events (default forever, or as the stream is; negative removes a limit)")
	fs.StringVar(&c.metricsAt, "metrics-addr", os.Getenv(EnvMetricsAddr), "serve Prometheus /metrics, /healthz and /readyz on this address, e.g. 127.0.0.1:9464; off when empty (env "+EnvMetricsAddr+")")
	c.console.Register(fs, "console-", "", "serve the web console on this address, apart from --metrics-addr, e.g. 127.0.0.1:8089; off when empty")
	c.nf.Register(fs, "")
	c.az.Register(fs)
}

// parse parses args into the config and checks it; a nil logger with a
// nil error means --help or --version was handled.
func (c *projectCmd) parse(args []string, stdio cli.IO) (*slog.Logger, error) {
	fs := cli.QuietFlagSet("projector")
	c.flags(fs)
	version := cli.VersionFlag(fs)
	if err := cli.ParseArgs(fs, args, stdio.Stdout, projectorUsage()); err != nil {
		return nil, err
	}
	if *version {
		cli.PrintVersion(stdio.Stdout, "projector")
		return nil, nil
	}
	if fs.NArg() > 0 {
		return nil, cli.UsageError(fmt.Errorf("unexpected argument %q; the projector takes only flags", fs.Arg(0)))
	}
	c.natsFromEnv = c.nf.URL() != ""
	fs.Visit(func(f *flag.Flag) { c.natsFromEnv = c.natsFromEnv && f.Name != "nats" })
	if c.tables == "" {
		c.tables = cli.EnvOr(cli.EnvTables, "")
	}
	var err error
	if c.auth, err = c.az.Config(); err != nil {
		return nil, err
	}
	cfg := &c.cfg
	if err := intFromEnv(fs, "replicas", EnvReplicas, &cfg.Replicas); err != nil {
		return nil, cli.UsageError(err)
	}
	log, err := newLogger(stdio.Stderr, c.logLevel, c.logJSON)
	if err != nil {
		return nil, cli.UsageError(err)
	}
	cfg.Logger = log
	switch {
	case cfg.SweepInterval < 0:
		return nil, cli.UsageError(fmt.Errorf("--sweep-interval %v: negative; 0 turns the sweep off", cfg.SweepInterval))
	case cfg.SweepInterval == 0:
		cfg.SweepInterval = -1 // projection.Config: negative is off
	}
	switch {
	case cfg.IDFilter < 0:
		return nil, cli.UsageError(fmt.Errorf("--id-filter %d: negative; 0 turns the filter off", cfg.IDFilter))
	case cfg.IDFilter == 0:
		cfg.IDFilter = -1 // projection.Config: negative is off
	}
	if err := (shardsconf.Config{Shards: 1, InstanceID: cfg.InstanceID, LeaseTTL: cfg.LeaseTTL, Replicas: cfg.Replicas}).Validate(); err != nil {
		return nil, cli.UsageError(err)
	}
	if c.shards != "" && (cfg.InstanceID != "" || cfg.LeaseTTL != 0) {
		return nil, cli.UsageError(errors.New("--instance-id and --lease-ttl apply to shared shards; with --shards the assignment is static"))
	}
	if c.nf.URL() == "" && cfg.Replicas > 1 {
		return nil, cli.UsageError(fmt.Errorf("--replicas %d needs a JetStream cluster (--nats with every node's URL); the embedded server is a single node", cfg.Replicas))
	}
	if c.shards != "" {
		for _, s := range strings.Split(c.shards, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(s))
			if err != nil {
				return nil, cli.UsageError(fmt.Errorf("--shards: %q is not a shard number", s))
			}
			cfg.Shards = append(cfg.Shards, n)
		}
	}
	return log, nil
}

// openStore opens the table store. With its own embedded server this
// projector's journal is private: a second projector with a server of its
// own on the same store file would project another journal into the same
// tables, so the store is held exclusively. Instances that share a NATS
// server may share a store file; they split the shards between them.
func (c *projectCmd) openStore(ctx context.Context) (store.Store, io.Closer, error) {
	storeOpts := []stores.Option{stores.Auth(c.auth)}
	if c.nf.URL() == "" {
		storeOpts = append(storeOpts, stores.Exclusive())
	}
	st, closeStore, err := stores.Open(ctx, c.tables, c.data, storeOpts...)
	if err != nil {
		return nil, nil, fmt.Errorf("table store: %w", err)
	}
	return st, closeStore, nil
}

// nameInstance returns the instance's name, defaulting it in cfg when the
// shards are claimed dynamically. The name in the ownership bucket is also
// its name in the status reports, static shards or not.
func nameInstance(cfg *projection.Config) string {
	instance := cfg.InstanceID
	if instance == "" {
		instance = shardsconf.DefaultInstanceID()
	}
	if cfg.Shards == nil {
		cfg.InstanceID = instance
	}
	return instance
}

func (c *projectCmd) run(ctx context.Context, args []string, stdio cli.IO) error {
	log, err := c.parse(args, stdio)
	if log == nil || err != nil {
		return err
	}
	cfg := c.cfg
	url := c.nf.URL()
	if url == "" || c.tables == "" {
		// The embedded server or the embedded store lives in --data.
		l, err := LockData(c.data)
		if err != nil {
			return err
		}
		defer l.Release()
	}
	if url == "" {
		srv, err := embedded.Start(embedded.Config{Dir: filepath.Join(c.data, "jetstream"), Listen: c.listen, NoSync: c.noSync, Logger: log})
		if err != nil {
			return fmt.Errorf("embedded JetStream server: %w", err)
		}
		defer srv.Shutdown()
		url = srv.ClientURL()
	}
	nc, js, err := cli.ConnectURL(&c.nf, url, "tablejournal-projector", cli.LogAsyncErrors(log))
	if err != nil {
		if c.natsFromEnv {
			// The variable, perhaps exported for the writer, is easy to
			// forget: say that it chose this server over the embedded one.
			return fmt.Errorf("%w; the URL is %s's, and with a NATS URL the projector starts no embedded server: unset %s to run the embedded one", err, cli.EnvNATS, cli.EnvNATS)
		}
		return err
	}
	defer nc.Close()

	st, closeStore, err := c.openStore(ctx)
	if err != nil {
		return err
	}
	defer closeStore.Close()
	instance := nameInstance(&cfg)
	ops, st, err := metrics.Start(ctx, metrics.OpsConfig{Addr: c.metricsAt, Instance: instance, Journal: cfg.Journal.Stream, NATS: nc, JS: js, Store: st, Logger: log, Replicas: cfg.Replicas})
	if err != nil {
		return fmt.Errorf("--metrics-addr: %w", err)
	}
	defer ops.Close()
	cfg.Observer = ops

	p, err := newProjector(ctx, js, st, cfg, log)
	if err != nil {
		return err
	}
	if c.console.Addr != "" {
		s, err := startConsole(ctx, &c.console, js, st, cfg.Journal.Stream, log)
		if err != nil {
			return fmt.Errorf("--console-addr: %w", err)
		}
		defer s.Close()
		log.Info("console serving", "url", s.URL)
	}
	ops.SetJournalShards(p.JournalShards())
	ops.SetStats(p.Stats())
	ops.Running()
	log.Info("projector running", startupAttrs(instance, c.nf.URL(), url, c.data, !c.noSync, c.tables, closeStore, cfg, ops)...)
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
	b := retry.Backoff(500*time.Millisecond, time.Minute, 2*time.Minute)
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
