package writercmd

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/tablejournal/tablejournal/cmd/internal/cli"
	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/events/rules"
	"github.com/tablejournal/tablejournal/journal"
	"github.com/tablejournal/tablejournal/journal/outcomes"
	"github.com/tablejournal/tablejournal/wire"
)

// writerEntry is one writer subcommand: a row operation, or apply.
type writerEntry struct {
	cli.Spec
	op    events.OpKind // "" for apply
	alias string        // another name of the operation
}

// opUsage is the usage line of every operation.
const opUsage = "--table T --pk P --rk R [--set name[:type]=value]... [flags]"

// writerCommands is the command table of the writer, in the order of
// --help.
var writerCommands = []writerEntry{
	{cli.NewSpec("insert", opUsage, "create the row; rejected if it exists"), events.OpInsert, ""},
	{cli.NewSpec("replace", opUsage, "replace the row's properties; rejected if it does not exist"), events.OpReplace, ""},
	{cli.NewSpec("merge", opUsage, "merge properties into the row; rejected if it does not exist"), events.OpMerge, ""},
	{cli.NewSpec("upsert", opUsage, "insert or replace"), events.OpUpsert, ""},
	{cli.NewSpec("upsert-merge", opUsage, "insert or merge (also upsertMerge)"), events.OpUpsertMerge, "upsertMerge"},
	{cli.NewSpec("delete", opUsage, "delete the row; rejected if it does not exist; takes no --set"), events.OpDelete, ""},
	{cli.NewSpec("apply", "[flags] FILE", "publish the commands of FILE, JSON lines"), "", ""},
}

func findWriter(name string) (writerEntry, bool) {
	for _, e := range writerCommands {
		if e.Name == name || (e.alias != "" && e.alias == name) {
			return e, true
		}
	}
	return writerEntry{}, false
}

// writerUsage is the writer's --help, generated from the table.
func writerUsage() string {
	var b strings.Builder
	apply, _ := findWriter("apply")
	b.WriteString("Usage:\n  " + cli.NewSpec("OP", opUsage, "").Line("writer") + "\n  " + apply.Line("writer") + "\n")
	b.WriteString("  writer layout --table T --plain|--versioned [flags]   (set a new table's row layout; writer layout --help)\n")
	b.WriteString(`
Publishes commands into the tablejournal journal and prints each command's ID
and journal sequence once the journal stored it. With --wait it also waits for
the projector's outcome: applied (with the row versions), rejected (with the
reason) or duplicate.

Operations, one row operation per command (use apply for several):
`)
	for _, e := range writerCommands {
		if e.op != "" {
			fmt.Fprintf(&b, "  %-13s %s\n", e.Name, e.Summary)
		}
	}
	b.WriteString(`
Property values, --set (repeatable, one property each):
  name=value              String
  name:string=value       String (the value may hold '=' and ':')
  name:bool=true|false    Boolean
  name:int32=N            Int32 (also name:int=N)
  name:int64=N            Int64, exact beyond 2^53
  name:double=X           Double: a decimal number, NaN, Infinity or -Infinity
  name:datetime=T         DateTime, RFC 3339 with at most 7 fractional digits,
                          e.g. 2026-11-21T10:00:00.1234567Z
  name:guid=G             Guid, 8-4-4-4-12 hex digits
  name:binary=BASE64      Binary, standard padded base64
  name:binary=@PATH       Binary, the bytes of the file PATH
The type may also be written as its EDM name (name:Edm.Int64=N).

The command ID is --id, or else a fresh UUIDv7. IDs are 1-128 characters of
[A-Za-z0-9._:-]; publishing the same ID again is the same command, stored once.

apply publishes the commands of FILE ("-" for standard input), JSON lines in
the JSON form of the journal's wire format, one command per line, pipelined.
Every line needs its own "id", so loading the same file twice is deduplicated.
A line that does not decode or validate is reported with its line number and
skipped; the load goes on and the exit status is 3. A summary goes to stderr
at the end; a progress bar is drawn on stderr when stderr is a terminal
(unless per-command output goes to a terminal too). Per command it prints one
line with --verbose, one JSON object with --json, otherwise nothing.

Interrupted, apply sends no more lines and waits up to --timeout for the
acknowledgements of those it sent: each counts as published, or unconfirmed
(sent, not acknowledged: it may be in the journal), and the summary says from
which line on none was sent. Apply the same input again to finish.

Output, per command: "published ID seq N", or "already in the journal: ID seq
N" when the journal held the ID already; with --json one JSON object:
  {"id":ID,"seq":N,"duplicate":BOOL[,"line":N][,"outcome":{...}][,"error":MSG][,"unconfirmed":true]}
and, for an invalid line of apply, {"line":N,"id":ID,"error":MSG,"rule":RULE}.

Exit status:
  0  published (and with --wait: applied, or a duplicate of an applied command)
  1  an error: connecting, publishing, no outcome within --timeout
  2  a command-line mistake
  3  a command was invalid (the rule is named) or the projector rejected it

Environment:
  ` + cli.EnvNATS + `           NATS server URL (default ` + cli.DefaultNATSURL + `)
  ` + cli.EnvNATSCreds + `     NATS credentials file
  ` + cli.EnvNATSNkey + `      NATS nkey seed file
  ` + cli.EnvNATSUser + `      NATS user
  ` + cli.EnvNATSPassword + `  NATS password (never shown)

Flags:
`)
	return b.String()
}

// writerBase holds the flags both forms of the writer take.
type writerBase struct {
	nf       cli.NATSFlags
	stream   string
	jsonOut  bool
	wait     bool
	timeout  time.Duration
	encoding string

	version *bool
	set     map[string]bool // flags given on the command line
	cmdID   string          // the ID of the command an operation built
}

func (w *writerBase) register(fs *flag.FlagSet) {
	w.version = cli.VersionFlag(fs)
	w.nf.Register(fs, cli.DefaultNATSURL)
	fs.StringVar(&w.stream, "stream", cli.EnvOr(cli.EnvStream, wire.JournalStream), "journal stream name (env "+cli.EnvStream+")")
	fs.BoolVar(&w.jsonOut, "json", false, "print one JSON object per command instead of text")
	fs.BoolVar(&w.wait, "wait", false, "wait for the projector's outcome of each command")
	fs.DurationVar(&w.timeout, "timeout", cli.WaitTimeout, "how long to wait for the journal's acknowledgement and, with --wait, the outcome (apply: for the outcomes after the last line)")
	fs.StringVar(&w.encoding, "encoding", "msgpack", "payload encoding: msgpack or json")
}

// opCmd is a row operation: writer insert, replace, merge, upsert,
// upsert-merge or delete. Its flags are written into the command it
// publishes.
type opCmd struct {
	*writerBase
	cmd         events.Command
	row         events.RowOp
	ifVersion   onceInt64
	sets, metas stringList
}

func (c *opCmd) flags(fs *flag.FlagSet) {
	fs.StringVar(&c.cmd.Table, "table", "", "OP: table name (required)")
	fs.StringVar(&c.cmd.PK, "pk", "", "OP: partition key (required; may be empty: --pk '')")
	fs.StringVar(&c.row.RK, "rk", "", "OP: row key (required; may be empty: --rk '')")
	fs.Var(&c.sets, "set", "OP: a property, `name[:type]=value`; repeatable (see above)")
	fs.Var(&c.ifVersion, "if-version", "OP: apply only if the row exists at exactly this logical `version`")
	fs.StringVar(&c.cmd.ID, "id", "", "OP: command ID (default a fresh UUIDv7)")
	fs.StringVar(&c.cmd.Issuer, "issuer", "", "OP: name of the issuing service, recorded in the command")
	fs.Var(&c.metas, "meta", "OP: metadata `key=value` recorded in the command; repeatable")
}

// applyCmd is writer apply.
type applyCmd struct {
	*writerBase
	verbose     bool
	maxInFlight int
	path        string
}

func (c *applyCmd) flags(fs *flag.FlagSet) {
	fs.BoolVar(&c.verbose, "verbose", false, "apply: print one line per command")
	fs.IntVar(&c.maxInFlight, "max-in-flight", journal.DefaultMaxInFlight, "apply: most commands awaiting the journal's acknowledgement at once")
}

// flagNames returns the names of the flags register registers.
func flagNames(register func(*flag.FlagSet)) []string {
	fs := cli.QuietFlagSet("")
	register(fs)
	var names []string
	fs.VisitAll(func(f *flag.Flag) { names = append(names, f.Name) })
	return names
}

type stringList []string

// onceInt64 is an int64 flag that may be given once: a second
// --if-version would silently replace the guard the first one set.
type onceInt64 struct {
	v   int64
	set bool
}

func (o *onceInt64) String() string { return strconv.FormatInt(o.v, 10) }

func (o *onceInt64) Set(s string) error {
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return errors.New("not an integer")
	}
	if o.set {
		return fmt.Errorf("given twice (%d, then %d): rule %s: a row operation has one guard", o.v, v, rules.IfVersionTwice)
	}
	o.v, o.set = v, true
	return nil
}

func (l *stringList) String() string     { return strings.Join(*l, ",") }
func (l *stringList) Set(s string) error { *l = append(*l, s); return nil }

// Run runs the writer command: cmd/writer is cli.Main(writercmd.Run, ...).
// With --json, an error that printed nothing on stdout (a usage error, an
// invalid command) is printed there as
// {"error":MSG[,"id":ID][,"rule":RULE][,"usage":true]} too.
func Run(ctx context.Context, args []string, stdio cli.IO) error {
	out := &watchedWriter{w: stdio.Stdout}
	wio := stdio
	wio.Stdout = out
	b := &writerBase{}
	err := writer(ctx, args, wio, b)
	if err != nil && !out.wrote && !errors.Is(err, flag.ErrHelp) &&
		(b.jsonOut || slices.Contains(args, "--json") || slices.Contains(args, "-json")) {
		cli.PrintJSON(stdio.Stdout, cli.ErrorResult(err, b.cmdID))
	}
	return err
}

// watchedWriter records whether anything was written through it.
type watchedWriter struct {
	w     io.Writer
	wrote bool
}

func (w *watchedWriter) Write(p []byte) (int, error) {
	w.wrote = true
	return w.w.Write(p)
}

// unwrapWriter returns the writer a watchedWriter wraps, for the terminal
// check.
func unwrapWriter(w io.Writer) io.Writer {
	if ww, ok := w.(*watchedWriter); ok {
		return ww.w
	}
	return w
}

// writerFlagSet returns the flag set of the writer, with the flags of
// both forms bound into b and the two forms' types: --help lists them all,
// and a flag of the other form is named as such rather than unknown.
func writerFlagSet(b *writerBase) (*flag.FlagSet, *opCmd, *applyCmd) {
	op, apply := &opCmd{writerBase: b}, &applyCmd{writerBase: b}
	fs := cli.QuietFlagSet("writer")
	b.register(fs)
	op.flags(fs)
	apply.flags(fs)
	return fs, op, apply
}

// writer parses args into b and the subcommand's type and runs it.
func writer(ctx context.Context, args []string, stdio cli.IO, b *writerBase) error {
	fs, op, apply := writerFlagSet(b)
	help := func() error {
		cli.PrintHelp(stdio.Stdout, writerUsage(), fs)
		return flag.ErrHelp
	}
	if len(args) == 0 {
		return cli.UsageError(fmt.Errorf("no operation: want %s", cli.NameList(cli.SpecsOf(writerCommands))))
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		return help()
	case "-version", "--version", "version":
		cli.PrintVersion(stdio.Stdout, "writer")
		return nil
	}
	if args[0] == "layout" {
		return runLayout(ctx, args[1:], stdio)
	}
	if strings.HasPrefix(args[0], "-") {
		return cli.UsageError(fmt.Errorf("no operation before %q: write writer OP [flags], OP one of %s", args[0], cli.NameList(cli.SpecsOf(writerCommands))))
	}
	name := args[0]
	e, ok := findWriter(name)
	if !ok {
		return cli.UsageError(fmt.Errorf("unknown operation %q: want %s", name, cli.NameList(cli.SpecsOf(writerCommands))))
	}
	pos, err := parseInterleaved(fs, args[1:])
	if errors.Is(err, flag.ErrHelp) {
		return help()
	}
	if err != nil {
		return cli.FlagError(err)
	}
	if *b.version {
		cli.PrintVersion(stdio.Stdout, "writer")
		return nil
	}
	b.set = map[string]bool{}
	fs.Visit(func(f *flag.Flag) { b.set[f.Name] = true })
	if err := b.check(apply.maxInFlight); err != nil {
		return cli.UsageError(err)
	}

	if e.op != "" {
		for _, f := range flagNames(apply.flags) {
			if b.set[f] {
				return cli.UsageError(fmt.Errorf("--%s is for apply only", f))
			}
		}
		if len(pos) > 0 {
			return cli.UsageError(fmt.Errorf("unexpected argument %q: %s takes only flags", pos[0], name))
		}
		cmd, err := op.build(e.op, stdio.Time())
		if err != nil {
			return cli.UsageError(err)
		}
		b.cmdID = cmd.ID
		return op.run(ctx, cmd, stdio)
	}
	for _, f := range flagNames(op.flags) {
		if b.set[f] {
			return cli.UsageError(fmt.Errorf("--%s is not for apply: each line of FILE holds the whole command", f))
		}
	}
	if len(pos) != 1 {
		return cli.UsageError(errors.New("apply takes one FILE of JSON lines (\"-\" for standard input)"))
	}
	apply.path = pos[0]
	return apply.run(ctx, stdio)
}

// parseInterleaved parses flags placed before, between and after positional
// arguments, and returns the positional ones.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		args = fs.Args()
		if len(args) == 0 {
			return pos, nil
		}
		pos = append(pos, args[0])
		args = args[1:]
	}
}

// check reports mistakes in the flags shared by both forms.
func (w *writerBase) check(maxInFlight int) error {
	if w.timeout <= 0 {
		return errors.New("--timeout must be positive")
	}
	if maxInFlight < 1 {
		return errors.New("--max-in-flight must be at least 1")
	}
	if _, err := w.contentType(); err != nil {
		return err
	}
	return nil
}

func (w *writerBase) contentType() (string, error) {
	switch w.encoding {
	case "msgpack":
		return wire.ContentTypeMsgpack, nil
	case "json":
		return wire.ContentTypeJSON, nil
	}
	return "", fmt.Errorf("--encoding %q: want msgpack or json", w.encoding)
}

// build completes the command of operation op from the flags, issued at
// now. Its errors are command-line mistakes; the limits of the wire format
// are left to Validate.
func (c *opCmd) build(op events.OpKind, now time.Time) (*events.Command, error) {
	for _, f := range []string{"table", "pk", "rk"} {
		if !c.set[f] {
			return nil, fmt.Errorf("--%s is required", f)
		}
	}
	row := c.row
	row.Op = op
	if op == events.OpDelete {
		if len(c.sets) > 0 {
			return nil, errors.New("--set: delete takes no properties")
		}
	} else {
		row.Entity = make(edm.Entity, len(c.sets))
		for _, s := range c.sets {
			name, v, err := parseSet(s, os.ReadFile)
			if err != nil {
				return nil, fmt.Errorf("--set %q: %w", s, err)
			}
			if _, dup := row.Entity[name]; dup {
				return nil, fmt.Errorf("--set %q: property %q is set twice", s, name)
			}
			row.Entity[name] = v
		}
	}
	if c.set["if-version"] {
		v := c.ifVersion.v
		row.IfVersion = &v
	}
	cmd := c.cmd
	cmd.Ops = []events.RowOp{row}
	cmd.IssuedAt = now.UTC()
	for _, m := range c.metas {
		k, v, ok := strings.Cut(m, "=")
		if !ok {
			return nil, fmt.Errorf("--meta %q: want key=value", m)
		}
		if cmd.Meta == nil {
			cmd.Meta = make(map[string]string, len(c.metas))
		}
		if _, dup := cmd.Meta[k]; dup {
			return nil, fmt.Errorf("--meta %q: key %q is set twice", m, k)
		}
		cmd.Meta[k] = v
	}
	if !c.set["id"] {
		id, err := uuid.NewV7()
		if err != nil {
			return nil, fmt.Errorf("generate a command ID: %w", err)
		}
		cmd.ID = id.String()
	}
	return &cmd, nil
}

// why is a rejected outcome's reason led by its code (SPEC §5), the word a
// program branches on: "exists: ops[0] insert ...".
func why(o *wire.Outcome) string {
	if o.Code == "" {
		return o.Reason
	}
	return string(o.Code) + ": " + o.Reason
}

// rejection is an error that exits with ExitRejected: an invalid command or
// a command the projector rejected.
type rejection struct{ err error }

func (r rejection) Error() string   { return r.err.Error() }
func (r rejection) Unwrap() []error { return []error{cli.ErrRejected, r.err} }

// writeResult is what the writer reports about one published command.
type writeResult struct {
	Line      int           `json:"line,omitempty"`
	ID        string        `json:"id"`
	Seq       uint64        `json:"seq"`
	Duplicate bool          `json:"duplicate"`
	Outcome   *wire.Outcome `json:"outcome,omitempty"`
	Error     string        `json:"error,omitempty"`
	// Unconfirmed: apply sent the command but had no acknowledgement when
	// it stopped waiting; it may be in the journal.
	Unconfirmed bool `json:"unconfirmed,omitempty"`
}

// MarshalJSON prints the outcome's time as every command does.
func (r writeResult) MarshalJSON() ([]byte, error) {
	type plain writeResult
	return json.Marshal(struct {
		plain
		Outcome *cli.OutcomeJSON `json:"outcome,omitempty"`
	}{plain(r), (*cli.OutcomeJSON)(r.Outcome)})
}

// run publishes one command and, with --wait, waits for its outcome.
func (w *opCmd) run(ctx context.Context, cmd *events.Command, stdio cli.IO) error {
	stdout := stdio.Stdout
	if err := cmd.Validate(); err != nil {
		return rejection{fmt.Errorf("invalid command %s: %w", cmd.ID, err)}
	}
	ct, _ := w.contentType()
	nc, js, err := w.nf.Connect(ctx, "tablejournal-writer")
	if err != nil {
		return err
	}
	defer nc.Close()
	ctx, cancel := context.WithTimeout(ctx, w.timeout)
	defer cancel()
	if err := w.checkStreams(ctx, js); err != nil {
		return err
	}

	jw := journal.NewWriter(js, w.stream, journal.WithContentType(ct))
	res, err := jw.Publish(ctx, cmd)
	if err != nil {
		if errors.Is(err, rules.ErrInvalid) || errors.Is(err, journal.ErrBodyDiffers) {
			return rejection{err}
		}
		return err
	}
	r := writeResult{ID: res.ID, Seq: res.Seq, Duplicate: res.Duplicate}
	if !w.jsonOut {
		printPublished(stdout, "", r)
	}
	if w.wait {
		o, err := outcomes.NewReader(js).Await(ctx, res.ID, res.Seq)
		if err != nil {
			err = w.waitError(ctx, err, fmt.Sprintf("command %s (seq %d)", res.ID, res.Seq))
			if w.jsonOut {
				r.Error = err.Error()
				cli.PrintJSON(stdout, r)
			}
			return err
		}
		r.Outcome = &o
	}
	if w.jsonOut {
		cli.PrintJSON(stdout, r)
	} else if r.Outcome != nil && r.Outcome.Status != wire.StatusRejected {
		printOutcome(stdout, "", r.Outcome)
	}
	if o := r.Outcome; o != nil && o.Status == wire.StatusRejected {
		return rejection{fmt.Errorf("command %s (seq %d): %s", o.ID, o.Seq, why(o))}
	}
	return nil
}

// checkStreams fails early, with a hint, when the journal stream (or, with
// --wait, the outcomes stream) does not exist: a publish would otherwise
// retry until its budget is spent. Other errors, such as a user without the
// right to read stream information, are left to the publish to report.
func (w *writerBase) checkStreams(ctx context.Context, js jetstream.JetStream) error {
	if err := journal.CheckMaxPayload(js.Conn()); err != nil {
		return err
	}
	_, err := journal.Open(ctx, js, w.stream)
	switch {
	case errors.Is(err, jetstream.ErrStreamNotFound):
		return fmt.Errorf("journal stream %s does not exist: start the projector, which creates it, or check --stream", w.stream)
	case errors.Is(err, journal.ErrNotJournal):
		return fmt.Errorf("--stream: %w", err)
	}
	if w.wait {
		if _, err := outcomes.NewReader(js).Last(ctx); errors.Is(err, jetstream.ErrStreamNotFound) {
			return fmt.Errorf("--wait needs the %s stream, which the projector creates: is a projector running?", wire.OutcomesStream)
		}
	}
	return nil
}

// waitError explains a failed wait for an outcome.
func (w *writerBase) waitError(ctx context.Context, err error, what string) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("no outcome for %s within --timeout %s: is a projector running?", what, w.timeout)
	}
	if errors.Is(ctx.Err(), context.Canceled) {
		return interrupted(ctx, "while waiting for the outcome of "+what+" (published: the projector applies it all the same)")
	}
	return fmt.Errorf("wait for the outcome of %s: %w", what, err)
}

// printPublished prints the text line of a published command; prefix is
// "line N: " for apply.
func printPublished(w io.Writer, prefix string, r writeResult) {
	if r.Duplicate {
		fmt.Fprintf(w, "%salready in the journal: %s seq %d (the ID was published before; nothing new stored)\n", prefix, r.ID, r.Seq)
		return
	}
	fmt.Fprintf(w, "%spublished %s seq %d\n", prefix, r.ID, r.Seq)
}

// printOutcome prints an outcome as text.
func printOutcome(w io.Writer, prefix string, o *wire.Outcome) {
	switch o.Status {
	case wire.StatusApplied:
		if len(o.Rows) == 0 {
			fmt.Fprintf(w, "%sapplied\n", prefix)
		}
		for _, r := range o.Rows {
			what := r.Op
			if r.Deleted {
				what += ", tombstone"
			}
			fmt.Fprintf(w, "%sapplied: row %s version %d (%s)\n", prefix, strconv.Quote(r.RK), r.Version, what)
		}
	case wire.StatusDuplicate:
		fmt.Fprintf(w, "%sduplicate: %s\n", prefix, o.Reason)
	case wire.StatusRejected:
		fmt.Fprintf(w, "%srejected: %s\n", prefix, why(o))
	default:
		fmt.Fprintf(w, "%s%s: %s\n", prefix, o.Status, o.Reason)
	}
}
