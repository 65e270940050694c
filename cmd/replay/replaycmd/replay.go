package replaycmd

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/tablejournal/tablejournal/cmd/internal/cli"
	"github.com/tablejournal/tablejournal/events/rules"
	"github.com/tablejournal/tablejournal/internal/azauth"
	"github.com/tablejournal/tablejournal/replay"
	"github.com/tablejournal/tablejournal/replay/repair"
	"github.com/tablejournal/tablejournal/replay/retention"
	"github.com/tablejournal/tablejournal/store"
	"github.com/tablejournal/tablejournal/store/stores"
	"github.com/tablejournal/tablejournal/wire"
)

// replayEntry is one replay subcommand of the table: its usage and a
// fresh value of its type.
type replayEntry struct {
	cli.Spec
	new func() replaySub
}

// replaySub is one replay subcommand: a type holding its flags, which it
// binds into the replay package's configs, on top of replayBase.
type replaySub interface {
	base() *replayBase
	// flags registers the subcommand's own flags.
	flags(fs *flag.FlagSet)
	// check reports a command-line mistake before anything is opened.
	check() error
	// nats says whether the subcommand needs the journal.
	nats() natsNeed
	run(ctx context.Context, stdio cli.IO) error
}

// replayCommands is the command table of replay, in the order of --help.
var replayCommands = []replayEntry{
	{cli.NewSpec("asof", "--table T [--pk P [--rk R]] [--seq N | --time T | --cmd ID]", "a row, partition or table as it stood at a point"), func() replaySub { return &asofCmd{} }},
	{cli.NewSpec("history", "--table T --pk P --rk R [--diff]", "every version of a row"), func() replaySub { return &historyCmd{} }},
	{cli.NewSpec("blame", "--cmd ID", "the rows and versions a command produced, its outcome"), func() replaySub { return &blameCmd{} }},
	{cli.NewSpec("rebuild", "--table T (--into NEW [--to POINT | --seq N | --time T] [--from-snapshot FILE] [--workers N] [--resume] | --pk P | --behind)", "re-project the journal into a fresh table, or partitions in place"), func() replaySub { return &rebuildCmd{} }},
	{cli.NewSpec("undo", "--cmd ID [--apply] [--force]", "the commands that revert one command (dry run by default)"), func() replaySub { return &undoCmd{} }},
	{cli.NewSpec("restore", "--table T [--pk P] (--to POINT | --seq N | --time T) [--apply]", "the commands that return a table to a point"), func() replaySub { return &restoreCmd{} }},
	{cli.NewSpec("snapshot", "--table T --out FILE [--at SEQ] [--workers N]", "export tips and versions consistent at a sequence"), func() replaySub { return &snapshotCmd{} }},
	{cli.NewSpec("load", "--in FILE --into NEW [--workers N] [--resume]", "load a snapshot into a fresh table"), func() replaySub { return &loadCmd{} }},
	{cli.NewSpec("verify", "--table T [--to POINT | --seq N | --time T] [--scratch-local] [--max N] [--workers N]", "check a live table against its journal, row for row"), func() replaySub { return &verifyCmd{} }},
	{cli.NewSpec("diff", "--table A --against B [--to POINT | --seq N | --time T] [--max N]", "compare two tables row for row (blue/green rebuilds)"), func() replaySub { return &diffCmd{} }},
	{cli.NewSpec("erase", "--table T --pk P [--rk R] [--apply]", "erase a row or partition everywhere, with a receipt (dry run by default)"), func() replaySub { return &eraseCmd{} }},
	{cli.NewSpec("prune", "--table T (--keep 90d | --keep-versions N | --before SEQ) [--pk P] [--apply] [--pace D] [--max-rows N]", "remove old versions through the journal (dry run by default)"), func() replaySub { return &pruneCmd{} }},
	{cli.NewSpec("console", "[--addr 127.0.0.1:8089] [--auth-file FILE] [--console-tls-cert FILE --console-tls-key FILE] [--hide-values] [--allow-changes] [--grafana-url URL]", "serve the web console: journal, blame, row history, as-of, health"), func() replaySub { return &consoleCmd{} }},
	{cli.NewSpec("compact", "--table T --snapshot FILE [--at SEQ] [--apply]", "trim a table's journal below a stored snapshot (dry run by default)"), func() replaySub { return &compactCmd{} }},
	{cli.NewSpec("adopt", "--table T (--into NEW | --in-place) [--apply [--no-wait]] [--resume | --catch-up] [--skip-invalid] [--workers N]", "journal a table a service wrote directly as its first history; catch up (dry run by default)"), func() replaySub { return &adoptCmd{} }},
	{cli.NewSpec("move", "--new-stream NAME [--allow-msg-delete | --allow-trim] [--apply [--cutover [--delete-old]]]", "move the journal's commands into a new stream, sequences kept (dry run by default)"), func() replaySub { return &moveCmd{} }},
}

func findReplay(name string) (replayEntry, bool) {
	for _, e := range replayCommands {
		if e.Name == name {
			return e, true
		}
	}
	return replayEntry{}, false
}

// replayUsage is the overview of replay --help, generated from the table.
func replayUsage() string {
	var b strings.Builder
	b.WriteString(`Usage: replay <command> [flags]

Time travel over the projected tables (SPEC §6). A point is a journal
sequence (--seq N), a time (--time RFC3339: the state as of that instant) or
a command ID (--cmd ID: just after it); --to POINT takes any of them as
seq:N, time:T, cmd:ID, or a bare number, time or ID.

`)
	cli.WriteCommands(&b, "replay", cli.SpecsOf(replayCommands))
	b.WriteString(`
Every command takes --json, the connection flags (--nats, --creds, --nkey,
--user, --password, --tls-*; env TABLEJOURNAL_NATS...) and the table store
flags (--tables, --data; env TABLEJOURNAL_TABLES, TABLEJOURNAL_DATA).
asof and history at a sequence, and load, need no NATS server.
Run 'replay <command> --help' for its flags.

Exit status: 0 done, 1 error, 2 usage, 3 refused (conflicts, or a command
rejected by the projector) or, for verify and diff, the tables differ.
`)
	return b.String()
}

// Run runs the replay command: cli.Main(replaycmd.Run, ...) is cmd/replay.
func Run(ctx context.Context, args []string, stdio cli.IO) error {
	name, args, err := replaySubcommand(args, stdio.Stdout)
	if name == "" || err != nil {
		return err
	}
	e, _ := findReplay(name)
	sub := e.new()
	b := sub.base()
	b.name = name
	fs := b.flagSet()
	sub.flags(fs)
	if err := cli.ParseArgs(fs, args, stdio.Stdout, cli.SubUsage("replay", e.Spec, "")); err != nil {
		return err
	}
	if *b.version {
		cli.PrintVersion(stdio.Stdout, "replay")
		return nil
	}
	if fs.NArg() > 0 {
		return cli.UsageError(fmt.Errorf("unexpected argument %q; %s takes only flags", fs.Arg(0), name))
	}
	fs.Visit(func(f *flag.Flag) { b.set[f.Name] = true })
	if err := checkValues(fs); err != nil {
		return cli.UsageError(err)
	}
	if b.auth, err = b.az.Config(); err != nil {
		return err
	}
	if err := sub.check(); err != nil {
		return cli.UsageError(err)
	}
	if err := b.open(ctx, sub.nats()); err != nil {
		return err
	}
	defer b.close()
	return refusals(sub.run(ctx, stdio))
}

// refusals gives the answers replay refuses (an erased key, a point
// before a prune horizon) the word that leads their message; they exit
// with status 3.
func refusals(err error) error {
	switch {
	case errors.Is(err, replay.ErrErased):
		return cli.Refused("erased", err)
	case errors.Is(err, replay.ErrPruned):
		return cli.Refused("pruned", err)
	case errors.Is(err, retention.ErrBeforeHorizon):
		return cli.Refused("trimmed", err)
	case errors.Is(err, retention.ErrTrimDenied), errors.Is(err, retention.ErrNoSnapshotAtHorizon):
		return cli.Refused("refused", err)
	}
	return err
}

// replaySubcommand finds the subcommand in args, which may follow the
// flags every subcommand takes (replay --nats URL asof ...), and returns
// it with its arguments, those flags included. It returns "" when it
// handled args itself: --help, --version, or a mistake (err).
func replaySubcommand(args []string, stdout io.Writer) (string, []string, error) {
	g := &replayBase{}
	global := g.flagSet()
	if err := global.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, replayUsage())
		}
		return "", nil, cli.FlagError(err)
	}
	if *g.version {
		cli.PrintVersion(stdout, "replay")
		return "", nil, nil
	}
	if global.NArg() == 0 {
		return "", nil, cli.UsageError(fmt.Errorf("no command given: want %s", cli.NameList(cli.SpecsOf(replayCommands))))
	}
	name := global.Arg(0)
	flags := args[:len(args)-global.NArg()]
	if n := len(flags); n > 0 && flags[n-1] == "--" {
		flags = flags[:n-1]
	}
	switch _, ok := findReplay(name); {
	case name == "help":
		fmt.Fprint(stdout, replayUsage())
		return "", nil, flag.ErrHelp
	case !ok:
		return "", nil, cli.UsageError(fmt.Errorf("unknown command %q: want %s", name, cli.NameList(cli.SpecsOf(replayCommands))))
	}
	return name, append(append([]string(nil), flags...), global.Args()[1:]...), nil
}

type natsNeed int

const (
	natsNo natsNeed = iota
	natsIfUp
	natsYes
	// natsOnly: the journal and no table store.
	natsOnly
)

// replayBase is what every replay subcommand shares: the connection and
// table store flags, --json, the replayer's config, and the connections
// once open.
type replayBase struct {
	name string
	set  map[string]bool // the flags given

	version      *bool
	nf           cli.NATSFlags
	az           cli.AzureFlags
	auth         azauth.Config // from az, for the store and snapshot blobs
	tables, data string
	cfg          replay.Config // --stream, and the subcommands' --durable and --workers
	asJSON       bool

	nc      *nats.Conn
	closeSt io.Closer
	rp      *replay.Source
}

func (b *replayBase) base() *replayBase { return b }

// flagSet returns a flag set with the flags every subcommand takes.
func (b *replayBase) flagSet() *flag.FlagSet {
	fs := cli.QuietFlagSet(strings.TrimSpace("replay " + b.name))
	b.set = make(map[string]bool)
	b.version = cli.VersionFlag(fs)
	b.nf.Register(fs, cli.DefaultNATSURL)
	fs.StringVar(&b.tables, "tables", "", "table store: an Azure connection string, an https:// table endpoint (signs in with Microsoft Entra ID, see --auth) or sqlite:PATH; default the embedded store in --data (env "+cli.EnvTables+")")
	b.az.Register(fs)
	fs.StringVar(&b.data, "data", cli.EnvOr(cli.EnvData, "./data"), "data folder of the embedded store (env "+cli.EnvData+")")
	fs.StringVar(&b.cfg.Journal, "stream", cli.EnvOr(cli.EnvStream, wire.JournalStream), "journal stream name (env "+cli.EnvStream+")")
	fs.BoolVar(&b.asJSON, "json", false, "print JSON instead of text")
	return fs
}

// workersFlag binds --workers into the replayer's config: the operations
// take their Workers from it.
func (b *replayBase) workersFlag(fs *flag.FlagSet, usage string) {
	fs.IntVar(&b.cfg.Workers, "workers", 0, usage)
}

// durableFlag binds --durable into the replayer's config.
func (b *replayBase) durableFlag(fs *flag.FlagSet, usage string) {
	fs.StringVar(&b.cfg.Durable, "durable", "", usage)
}

// tableFlags are the flags that name a table the store must accept.
var tableFlags = map[string]bool{"table": true, "into": true}

// valueFlags are the flags that name something: an empty value is a
// mistake (--cmd ” would look up no command).
var valueFlags = map[string]bool{"cmd": true, "table": true, "into": true, "to": true, "time": true, "in": true, "out": true, "from-snapshot": true, "snapshot": true}

// checkValues refuses, before anything is read, a flag given an empty
// value where it names something, and a table name the store would refuse.
func checkValues(fs *flag.FlagSet) error {
	var err error
	fs.Visit(func(f *flag.Flag) {
		v := f.Value.String()
		switch {
		case err != nil:
		case valueFlags[f.Name] && v == "":
			err = fmt.Errorf("--%s needs a value", f.Name)
		case tableFlags[f.Name] && !store.ValidTableName(v):
			err = fmt.Errorf("--%s %q: rule %s: a table name is 3 to 63 letters and digits, starting with a letter (^[A-Za-z][A-Za-z0-9]{2,62}$), and not \"tables\"", f.Name, v, rules.TableName)
		}
	})
	return err
}

// need reports the required flags that were not given.
func (b *replayBase) need(flags ...string) error {
	var missing []string
	for _, f := range flags {
		if !b.set[f] {
			missing = append(missing, "--"+f)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("replay %s needs %s", b.name, strings.Join(missing, " and "))
	}
	return nil
}

// needPoint checks a command that takes a point: the required flags, then
// the command's own rule (broken, with the message why), then the point.
func (b *replayBase) needPoint(pf *pointFlags, broken bool, why string, flags ...string) error {
	if err := b.need(flags...); err != nil {
		return err
	}
	if broken {
		return errors.New(why)
	}
	_, _, err := pf.point(b.set)
	return err
}

// natsIf is natsYes when any of flags was given (a point that only the
// journal resolves), else otherwise.
func (b *replayBase) natsIf(otherwise natsNeed, flags ...string) natsNeed {
	for _, f := range flags {
		if b.set[f] {
			return natsYes
		}
	}
	return otherwise
}

// createsStore are the subcommands that may create the embedded store:
// those that write tables (rebuild, load) and the console, which may be
// started before the projector made it. Every other one only reads the
// store, or writes through the journal, and refuses a store that does not
// exist rather than create an empty one and answer "table not found".
var createsStore = map[string]bool{"rebuild": true, "load": true, "console": true}

// open connects to the table store and, as needed, to NATS.
func (b *replayBase) open(ctx context.Context, nn natsNeed) error {
	if b.tables == "" {
		b.tables = cli.EnvOr(cli.EnvTables, "")
	}
	if nn != natsNo {
		nc, js, err := cli.ConnectURL(&b.nf, b.nf.URL(), "tablejournal-replay")
		switch {
		case err == nil:
			b.nc, b.cfg.JetStream = nc, js
		case nn == natsYes, nn == natsOnly:
			return err
		}
	}
	if nn == natsOnly {
		return nil
	}
	opts := []stores.Option{stores.Auth(b.auth)}
	if !createsStore[b.name] {
		opts = append(opts, stores.Existing()) // a missing embedded store is an error, not created empty
	}
	st, closer, err := stores.Open(ctx, b.tables, b.data, opts...)
	if err != nil {
		return fmt.Errorf("table store: %w", err)
	}
	b.cfg.Store, b.closeSt = st, closer
	b.rp, err = replay.New(ctx, b.cfg)
	if err != nil && nn == natsIfUp && b.cfg.JetStream != nil {
		// NATS is up but holds no journal: read the tables alone.
		cfg := b.cfg
		cfg.JetStream = nil
		b.rp, err = replay.New(ctx, cfg)
	}
	return err
}

func (b *replayBase) close() {
	if b.nc != nil {
		b.nc.Close()
	}
	if b.closeSt != nil {
		b.closeSt.Close()
	}
}

// pointFlags are --seq, --time, --cmd and --to: the point a subcommand
// reads, writes or checks at. Each subcommand registers those it takes.
type pointFlags struct {
	seq         uint64
	at, cmd, to string
}

// point returns the point the flags name, and whether one was named; set
// holds the flags given (replayBase.set).
func (p *pointFlags) point(set map[string]bool) (replay.Point, bool, error) {
	var ps []replay.Point
	if set["seq"] {
		ps = append(ps, replay.Seq(p.seq))
	}
	if set["time"] {
		t, err := time.Parse(time.RFC3339Nano, p.at)
		if err != nil {
			return replay.Point{}, false, fmt.Errorf("--time %q: want RFC 3339, as in 2026-11-21T10:00:00Z", p.at)
		}
		ps = append(ps, replay.Time(t))
	}
	if set["cmd"] {
		ps = append(ps, replay.Cmd(p.cmd))
	}
	if set["to"] {
		pt, err := replay.ParsePoint(p.to)
		if err != nil {
			return replay.Point{}, false, fmt.Errorf("--to: %w", err)
		}
		ps = append(ps, pt)
	}
	switch len(ps) {
	case 0:
		return replay.Head(), false, nil
	case 1:
		return ps[0], true, nil
	}
	return replay.Point{}, false, errors.New("name one point: --seq, --time, --cmd or --to")
}

// rangeFlags registers --to, --seq and --time with usages that end the
// given phrases.
func (p *pointFlags) rangeFlags(fs *flag.FlagSet, to, seq, at string) {
	fs.StringVar(&p.to, "to", "", to)
	fs.Uint64Var(&p.seq, "seq", 0, seq)
	fs.StringVar(&p.at, "time", "", at)
}

// resolve turns the point flags into a sequence; without a point and
// without NATS it is "now": every version there is.
func (b *replayBase) resolve(ctx context.Context, pf *pointFlags) (uint64, replay.Point, error) {
	p, named, err := pf.point(b.set)
	if err != nil {
		return 0, p, err
	}
	if !named && b.rp.Journal() == nil {
		return math.MaxInt64, p, nil
	}
	seq, err := b.rp.Resolve(ctx, p)
	return seq, p, err
}

// namedSeq resolves the point the flags name; 0 and false when they name
// none.
func (b *replayBase) namedSeq(ctx context.Context, pf *pointFlags) (uint64, bool, error) {
	if _, named, _ := pf.point(b.set); !named {
		return 0, false, nil
	}
	seq, _, err := b.resolve(ctx, pf)
	return seq, true, err
}

// progress returns a progress callback that draws a bar on stderr when it
// is a terminal (and not with --json), and the function that ends it.
func (b *replayBase) progress(stdio cli.IO, what, unit string) (func(done, total int64), func()) {
	if b.asJSON || !stdio.Terminal(stdio.Stderr) {
		return nil, func() {}
	}
	var bar *cli.Progress
	return func(done, total int64) {
		if bar == nil {
			bar = cli.NewProgress(stdio, stdio.Stderr, max(total, 1), what, unit)
		}
		bar.Set(done, total)
	}, func() { bar.Finish() }
}

// refused marks a refusal (conflicts, rejected commands, a plan changed
// since it was made): exit status 3.
func refused(err error) error {
	if errors.Is(err, repair.ErrConflicts) || errors.Is(err, replay.ErrRejected) || errors.Is(err, replay.ErrStale) {
		return replayRefusal{err}
	}
	return err
}

// replayRefusal is ErrRejected without repeating it in the message.
type replayRefusal struct{ err error }

func (r replayRefusal) Error() string   { return r.err.Error() }
func (r replayRefusal) Unwrap() []error { return []error{cli.ErrRejected, r.err} }
