package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/replay"
	"github.com/tablejournal/tablejournal/store"
	"github.com/tablejournal/tablejournal/store/stores"
)

const replayUsage = `Usage: replay <command> [flags]

Time travel over the projected tables (SPEC §6). A point is a journal
sequence (--seq N), a time (--time RFC3339: the state as of that instant) or
a command ID (--cmd ID: just after it); --to POINT takes any of them as
seq:N, time:T, cmd:ID, or a bare number, time or ID.

Commands:
  asof      --table T [--pk P [--rk R]] [POINT]   a row, partition or table as it stood at a point
  history   --table T --pk P --rk R [--diff]      every version of a row
  blame     --cmd ID                              the rows and versions a command produced, its outcome
  rebuild   --table T --into NEW [--to POINT] [--from-snapshot FILE]
                                                  re-project the journal into a fresh table
  undo      --cmd ID [--apply] [--force]          the commands that revert one command (dry run by default)
  restore   --table T [--pk P] --to POINT [--apply]
                                                  the commands that return a table to a point
  snapshot  --table T --out FILE [--at SEQ]       export tips and versions consistent at a sequence
  load      --in FILE --into NEW                  load a snapshot into a fresh table
  verify    --table T [--to POINT]                check a live table against its journal, row for row
  diff      --table A --against B [--to POINT]    compare two tables row for row (blue/green rebuilds)

Every command takes --json, the connection flags (--nats, --creds, --nkey,
--user, --password, --tls-*; env TABLEJOURNAL_NATS...) and the table store
flags (--tables, --data; env TABLEJOURNAL_TABLES, TABLEJOURNAL_DATA).
asof and history at a sequence, and load, need no NATS server.
Run 'replay <command> --help' for its flags.

Exit status: 0 done, 1 error, 2 usage, 3 refused (conflicts, or a command
rejected by the projector) or, for verify and diff, the tables differ.
`

// Replay runs the replay command.
func Replay(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	name, args, err := replaySubcommand(args, stdout)
	if name == "" || err != nil {
		return err
	}
	cmd := replayCommands[name]
	rc := &replayCmd{name: name, stdout: stdout, stderr: stderr}
	fs := rc.flagSet()
	cmd.flags(rc, fs)
	if err := parseArgs(fs, args, stdout, fmt.Sprintf("Usage: replay %s %s\n\nFlags:\n", name, cmd.usage)); err != nil {
		return err
	}
	if *rc.version {
		printVersion(stdout, "replay")
		return nil
	}
	if fs.NArg() > 0 {
		return usageError(fmt.Errorf("unexpected argument %q; %s takes only flags", fs.Arg(0), name))
	}
	fs.Visit(func(f *flag.Flag) { rc.set[f.Name] = true })
	if err := checkValues(rc); err != nil {
		return usageError(err)
	}
	if err := cmd.check(rc); err != nil {
		return usageError(err)
	}
	if err := rc.open(ctx, cmd.nats(rc)); err != nil {
		return err
	}
	defer rc.close()
	return cmd.run(ctx, rc)
}

// replaySubcommand finds the subcommand in args, which may follow the
// flags every subcommand takes (replay --nats URL asof ...), and returns
// it with its arguments, those flags included. It returns "" when it
// handled args itself: --help, --version, or a mistake (err).
func replaySubcommand(args []string, stdout io.Writer) (string, []string, error) {
	g := &replayCmd{}
	global := g.flagSet()
	if err := global.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, replayUsage)
		}
		return "", nil, flagError(err)
	}
	if *g.version {
		printVersion(stdout, "replay")
		return "", nil, nil
	}
	names := "asof, history, blame, rebuild, undo, restore, snapshot, load, verify or diff"
	if global.NArg() == 0 {
		return "", nil, usageError(fmt.Errorf("no command given: want %s", names))
	}
	name := global.Arg(0)
	flags := args[:len(args)-global.NArg()]
	if n := len(flags); n > 0 && flags[n-1] == "--" {
		flags = flags[:n-1]
	}
	switch _, ok := replayCommands[name]; {
	case name == "help":
		fmt.Fprint(stdout, replayUsage)
		return "", nil, flag.ErrHelp
	case !ok:
		return "", nil, usageError(fmt.Errorf("unknown command %q: want %s", name, names))
	}
	return name, append(append([]string(nil), flags...), global.Args()[1:]...), nil
}

// replayCommand is one subcommand: its flags, its checks, whether it needs
// NATS, and its body.
type replayCommand struct {
	usage string
	flags func(*replayCmd, *flag.FlagSet)
	check func(*replayCmd) error
	nats  func(*replayCmd) natsNeed
	run   func(context.Context, *replayCmd) error
}

type natsNeed int

const (
	natsNo natsNeed = iota
	natsIfUp
	natsYes
)

var replayCommands map[string]replayCommand

func init() {
	replayCommands = map[string]replayCommand{
		"asof":     asofCommand,
		"history":  historyCommand,
		"blame":    blameCommand,
		"rebuild":  rebuildCommand,
		"undo":     undoCommand,
		"restore":  restoreCommand,
		"snapshot": snapshotCommand,
		"load":     loadCommand,
		"verify":   verifyCommand,
		"diff":     diffCommand,
	}
}

// replayCmd holds the flags and connections of one replay run.
type replayCmd struct {
	name           string
	stdout, stderr io.Writer
	set            map[string]bool

	version      *bool
	nf           natsFlags
	tables, data string
	stream       string
	asJSON       bool

	table, pk, rk, into string
	seq                 uint64
	at, cmdID, to       string
	diff, apply, force  bool
	resume              bool
	workers             int
	file                string
	atSeq               uint64
	durable             string
	timeout             time.Duration
	df                  diffFlags

	nc      *nats.Conn
	js      jetstream.JetStream
	closeSt io.Closer
	rp      *replay.Replayer
	st      store.Store
}

// flagSet returns a flag set with the flags every subcommand takes.
func (rc *replayCmd) flagSet() *flag.FlagSet {
	fs := quietFlagSet("replay " + rc.name)
	rc.set = make(map[string]bool)
	rc.version = versionFlag(fs)
	rc.nf.register(fs, DefaultNATSURL)
	fs.StringVar(&rc.tables, "tables", "", "table store: Azure connection string or sqlite:PATH; default the embedded store in --data (env "+EnvTables+")")
	fs.StringVar(&rc.data, "data", envOr(EnvData, "./data"), "data folder of the embedded store (env "+EnvData+")")
	fs.StringVar(&rc.stream, "stream", "", "journal stream name (default JOURNAL)")
	fs.BoolVar(&rc.asJSON, "json", false, "print JSON instead of text")
	return fs
}

// pointFlags registers --seq, --time and --cmd.
func (rc *replayCmd) pointFlags(fs *flag.FlagSet) {
	fs.Uint64Var(&rc.seq, "seq", 0, "the point: just after journal sequence N")
	fs.StringVar(&rc.at, "time", "", "the point: the state as of this RFC 3339 time")
	fs.StringVar(&rc.cmdID, "cmd", "", "the point: just after this command")
}

// point returns the point the flags name, and whether one was named.
func (rc *replayCmd) point() (replay.Point, bool, error) {
	var ps []replay.Point
	if rc.set["seq"] {
		ps = append(ps, replay.Seq(rc.seq))
	}
	if rc.set["time"] {
		t, err := time.Parse(time.RFC3339Nano, rc.at)
		if err != nil {
			return replay.Point{}, false, fmt.Errorf("--time %q: want RFC 3339, as in 2026-11-21T10:00:00Z", rc.at)
		}
		ps = append(ps, replay.Time(t))
	}
	if rc.set["cmd"] && rc.name == "asof" {
		ps = append(ps, replay.Cmd(rc.cmdID))
	}
	if rc.set["to"] {
		p, err := replay.ParsePoint(rc.to)
		if err != nil {
			return replay.Point{}, false, fmt.Errorf("--to: %w", err)
		}
		ps = append(ps, p)
	}
	switch len(ps) {
	case 0:
		return replay.Head(), false, nil
	case 1:
		return ps[0], true, nil
	}
	return replay.Point{}, false, errors.New("name one point: --seq, --time, --cmd or --to")
}

// checkValues refuses, before anything is read, a flag given an empty
// value where it names something (--cmd ” would look up no command), and
// a table name the store would refuse.
func checkValues(rc *replayCmd) error {
	for _, f := range []struct{ name, value string }{
		{"cmd", rc.cmdID}, {"table", rc.table}, {"into", rc.into}, {"to", rc.to}, {"time", rc.at},
		{"in", rc.file}, {"out", rc.file}, {"from-snapshot", rc.file},
	} {
		if rc.set[f.name] && f.value == "" {
			return fmt.Errorf("--%s needs a value", f.name)
		}
	}
	for _, f := range []struct{ name, value string }{{"table", rc.table}, {"into", rc.into}} {
		if rc.set[f.name] && !store.ValidTableName(f.value) {
			return fmt.Errorf("--%s %q: rule %s: a table name is 3 to 63 letters and digits, starting with a letter (^[A-Za-z][A-Za-z0-9]{2,62}$), and not \"tables\"", f.name, f.value, events.RuleTableName)
		}
	}
	return nil
}

func need(rc *replayCmd, flags ...string) error {
	var missing []string
	for _, f := range flags {
		if !rc.set[f] {
			missing = append(missing, "--"+f)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("replay %s needs %s", rc.name, strings.Join(missing, " and "))
	}
	return nil
}

// open connects to the table store and, as needed, to NATS.
func (rc *replayCmd) open(ctx context.Context, nn natsNeed) error {
	if rc.tables == "" {
		rc.tables = envOr(EnvTables, "")
	}
	if nn != natsNo {
		nc, js, err := connectURL(&rc.nf, rc.nf.url, "tablejournal-replay")
		switch {
		case err == nil:
			rc.nc, rc.js = nc, js
		case nn == natsYes:
			return err
		}
	}
	st, closer, err := stores.Open(ctx, rc.tables, rc.data)
	if err != nil {
		return fmt.Errorf("table store: %w", err)
	}
	rc.st, rc.closeSt = st, closer
	cfg := replay.Config{Store: st, JetStream: rc.js, Journal: rc.stream, Durable: rc.durable, Workers: rc.workers}
	rc.rp, err = replay.New(ctx, cfg)
	if err != nil && nn == natsIfUp && rc.js != nil {
		// NATS is up but holds no journal: read the tables alone.
		cfg.JetStream = nil
		rc.rp, err = replay.New(ctx, cfg)
	}
	return err
}

func (rc *replayCmd) close() {
	if rc.nc != nil {
		rc.nc.Close()
	}
	if rc.closeSt != nil {
		rc.closeSt.Close()
	}
}

// resolve turns the point flags into a sequence; without a point and
// without NATS it is "now": every version there is.
func (rc *replayCmd) resolve(ctx context.Context) (uint64, replay.Point, error) {
	p, named, err := rc.point()
	if err != nil {
		return 0, p, err
	}
	if !named && rc.rp.Journal() == nil {
		return math.MaxInt64, p, nil
	}
	seq, err := rc.rp.Resolve(ctx, p)
	return seq, p, err
}

// progress returns a progress callback drawing a bar on stderr when it is
// a terminal, and nil otherwise.
func (rc *replayCmd) progress(what, unit string) (func(done, total int64), func()) {
	f, ok := rc.stderr.(*os.File)
	if !ok || rc.asJSON || !replayTerminal(f) {
		return nil, func() {}
	}
	var bar *progressbar.ProgressBar
	return func(done, total int64) {
			if bar == nil {
				bar = progressbar.NewOptions64(max(total, 1),
					progressbar.OptionSetWriter(rc.stderr),
					progressbar.OptionSetDescription(what),
					progressbar.OptionShowCount(),
					progressbar.OptionShowIts(),
					progressbar.OptionSetItsString(unit),
					progressbar.OptionSetWidth(30),
					progressbar.OptionThrottle(100*time.Millisecond),
				)
			}
			if total > bar.GetMax64() {
				bar.ChangeMax64(total)
			}
			_ = bar.Set64(done)
		}, func() {
			if bar != nil {
				_ = bar.Finish()
				fmt.Fprintln(rc.stderr)
			}
		}
}

// replayTerminal is a seam for tests.
var replayTerminal = func(f *os.File) bool { return term.IsTerminal(int(f.Fd())) }

// refused marks a refusal (conflicts, rejected commands): exit status 3.
func refused(err error) error {
	if errors.Is(err, replay.ErrConflicts) || errors.Is(err, replay.ErrRejected) {
		return replayRefusal{err}
	}
	return err
}

// replayRefusal is ErrRejected without repeating it in the message.
type replayRefusal struct{ err error }

func (r replayRefusal) Error() string   { return r.err.Error() }
func (r replayRefusal) Unwrap() []error { return []error{ErrRejected, r.err} }

// plural renders "1 row", "2 rows".
func plural[N int | int64 | uint64](n N, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// createAtomic writes a file through a temporary one renamed into place
// once complete, so a failed snapshot leaves no partial file behind.
func createAtomic(path string, write func(io.Writer) error) error {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if err := write(tmp); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}
