package cli

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

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/journal"
)

const writerUsage = `Usage:
  writer OP --table T --pk P --rk R [--set name[:type]=value]... [flags]
  writer apply [flags] FILE

Publishes commands into the tablejournal journal and prints each command's ID
and journal sequence once the journal stored it. With --wait it also waits for
the projector's outcome: applied (with the row versions), rejected (with the
reason) or duplicate.

Operations, one row operation per command (use apply for several):
  insert        create the row; rejected if it exists
  replace       replace the row's properties; rejected if it does not exist
  merge         merge properties into the row; rejected if it does not exist
  upsert        insert or replace
  upsert-merge  insert or merge (also upsertMerge)
  delete        delete the row; rejected if it does not exist; takes no --set

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

Output, per command: "published ID seq N", or "already in the journal: ID seq
N" when the journal held the ID already; with --json one JSON object:
  {"id":ID,"seq":N,"duplicate":BOOL[,"line":N][,"outcome":{...}][,"error":MSG]}
and, for an invalid line of apply, {"line":N,"id":ID,"error":MSG,"rule":RULE}.

Exit status:
  0  published (and with --wait: applied, or a duplicate of an applied command)
  1  an error: connecting, publishing, no outcome within --timeout
  2  a command-line mistake
  3  a command was invalid (the rule is named) or the projector rejected it

Environment:
  ` + EnvNATS + `           NATS server URL (default ` + DefaultNATSURL + `)
  ` + EnvNATSCreds + `     NATS credentials file
  ` + EnvNATSNkey + `      NATS nkey seed file
  ` + EnvNATSUser + `      NATS user
  ` + EnvNATSPassword + `  NATS password (never shown)

Flags:
`

// writerOps maps the command-line operation names to the wire names.
var writerOps = map[string]events.OpKind{
	"insert":       events.OpInsert,
	"replace":      events.OpReplace,
	"merge":        events.OpMerge,
	"upsert":       events.OpUpsert,
	"upsert-merge": events.OpUpsertMerge,
	"upsertMerge":  events.OpUpsertMerge,
	"delete":       events.OpDelete,
}

// Flags that only one form of the command takes.
var (
	opOnlyFlags    = []string{"table", "pk", "rk", "set", "if-version", "id", "issuer", "meta"}
	applyOnlyFlags = []string{"verbose", "max-in-flight"}
)

// writerNow is the clock that stamps issuedAt; a seam for tests.
var writerNow = time.Now

// writerCmd holds the parsed flags of the writer command.
type writerCmd struct {
	nats     natsFlags
	stream   string
	jsonOut  bool
	wait     bool
	timeout  time.Duration
	encoding string

	table, pk, rk, id, issuer string
	ifVersion                 int64
	sets, metas               stringList

	verbose     bool
	maxInFlight int

	version *bool
	cmdID   string // the ID of the command built from the flags

	set map[string]bool // flags given on the command line
}

type stringList []string

func (l *stringList) String() string     { return strings.Join(*l, ",") }
func (l *stringList) Set(s string) error { *l = append(*l, s); return nil }

func (w *writerCmd) flagSet() *flag.FlagSet {
	fs := quietFlagSet("writer")
	w.version = versionFlag(fs)
	w.nats.register(fs, DefaultNATSURL)
	fs.StringVar(&w.stream, "stream", journal.DefaultStream, "journal stream name")
	fs.BoolVar(&w.jsonOut, "json", false, "print one JSON object per command instead of text")
	fs.BoolVar(&w.wait, "wait", false, "wait for the projector's outcome of each command")
	fs.DurationVar(&w.timeout, "timeout", waitTimeout, "how long to wait for the journal's acknowledgement and, with --wait, the outcome (apply: for the outcomes after the last line)")
	fs.StringVar(&w.encoding, "encoding", "msgpack", "payload encoding: msgpack or json")

	fs.StringVar(&w.table, "table", "", "OP: table name (required)")
	fs.StringVar(&w.pk, "pk", "", "OP: partition key (required; may be empty: --pk '')")
	fs.StringVar(&w.rk, "rk", "", "OP: row key (required; may be empty: --rk '')")
	fs.Var(&w.sets, "set", "OP: a property, `name[:type]=value`; repeatable (see above)")
	fs.Int64Var(&w.ifVersion, "if-version", 0, "OP: apply only if the row exists at exactly this logical `version`")
	fs.StringVar(&w.id, "id", "", "OP: command ID (default a fresh UUIDv7)")
	fs.StringVar(&w.issuer, "issuer", "", "OP: name of the issuing service, recorded in the command")
	fs.Var(&w.metas, "meta", "OP: metadata `key=value` recorded in the command; repeatable")

	fs.BoolVar(&w.verbose, "verbose", false, "apply: print one line per command")
	fs.IntVar(&w.maxInFlight, "max-in-flight", journal.DefaultMaxInFlight, "apply: most commands awaiting the journal's acknowledgement at once")
	return fs
}

// Writer runs the writer command: args are the command-line arguments
// without the program name. With --json, an error that printed nothing on
// stdout (a usage error, an invalid command) is printed there as
// {"error":MSG[,"id":ID][,"rule":RULE][,"usage":true]} too.
func Writer(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var w writerCmd
	out := &watchedWriter{w: stdout}
	err := w.run(ctx, args, out, stderr)
	if err != nil && !out.wrote && !errors.Is(err, flag.ErrHelp) &&
		(w.jsonOut || slices.Contains(args, "--json") || slices.Contains(args, "-json")) {
		printJSON(stdout, errorResult(err, w.cmdID))
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

// errorJSON is the --json form of an error that ended the writer.
type errorJSON struct {
	ID    string `json:"id,omitempty"`
	Error string `json:"error"`
	Rule  string `json:"rule,omitempty"`
	Usage bool   `json:"usage,omitempty"`
}

func errorResult(err error, id string) errorJSON {
	e := errorJSON{ID: id, Error: err.Error(), Usage: errors.Is(err, ErrUsage)}
	if ve := (*events.ValidationError)(nil); errors.As(err, &ve) {
		e.Rule = string(ve.Rule)
	}
	return e
}

func (w *writerCmd) run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := w.flagSet()
	help := func() error {
		printHelp(stdout, writerUsage, fs)
		return flag.ErrHelp
	}
	if len(args) == 0 {
		return usageError(errors.New("no operation: want insert, replace, merge, upsert, upsert-merge, delete or apply"))
	}
	switch args[0] {
	case "-h", "-help", "--help", "help":
		return help()
	case "-version", "--version", "version":
		printVersion(stdout, "writer")
		return nil
	}
	if strings.HasPrefix(args[0], "-") {
		return usageError(fmt.Errorf("no operation before %q: write writer OP [flags], OP one of insert, replace, merge, upsert, upsert-merge, delete or apply", args[0]))
	}
	name := args[0]
	op, isOp := writerOps[name]
	if !isOp && name != "apply" {
		return usageError(fmt.Errorf("unknown operation %q: want insert, replace, merge, upsert, upsert-merge, delete or apply", name))
	}
	pos, err := parseInterleaved(fs, args[1:])
	if errors.Is(err, flag.ErrHelp) {
		return help()
	}
	if err != nil {
		return flagError(err)
	}
	if *w.version {
		printVersion(stdout, "writer")
		return nil
	}
	w.set = map[string]bool{}
	fs.Visit(func(f *flag.Flag) { w.set[f.Name] = true })
	if err := w.check(); err != nil {
		return usageError(err)
	}

	if isOp {
		for _, f := range applyOnlyFlags {
			if w.set[f] {
				return usageError(fmt.Errorf("--%s is for apply only", f))
			}
		}
		if len(pos) > 0 {
			return usageError(fmt.Errorf("unexpected argument %q: %s takes only flags", pos[0], name))
		}
		cmd, err := w.command(op)
		if err != nil {
			return usageError(err)
		}
		w.cmdID = cmd.ID
		return w.runOp(ctx, cmd, stdout)
	}
	for _, f := range opOnlyFlags {
		if w.set[f] {
			return usageError(fmt.Errorf("--%s is not for apply: each line of FILE holds the whole command", f))
		}
	}
	if len(pos) != 1 {
		return usageError(errors.New("apply takes one FILE of JSON lines (\"-\" for standard input)"))
	}
	return w.runApply(ctx, pos[0], stdout, stderr)
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
func (w *writerCmd) check() error {
	if w.timeout <= 0 {
		return errors.New("--timeout must be positive")
	}
	if w.maxInFlight < 1 {
		return errors.New("--max-in-flight must be at least 1")
	}
	if _, err := w.contentType(); err != nil {
		return err
	}
	return nil
}

func (w *writerCmd) contentType() (string, error) {
	switch w.encoding {
	case "msgpack":
		return events.ContentTypeMsgpack, nil
	case "json":
		return events.ContentTypeJSON, nil
	}
	return "", fmt.Errorf("--encoding %q: want msgpack or json", w.encoding)
}

// command builds the command of an operation from the flags. Its errors are
// command-line mistakes; the limits of the wire format are left to Validate.
func (w *writerCmd) command(op events.OpKind) (*events.Command, error) {
	for _, f := range []string{"table", "pk", "rk"} {
		if !w.set[f] {
			return nil, fmt.Errorf("--%s is required", f)
		}
	}
	row := events.RowOp{Op: op, RK: w.rk}
	if op == events.OpDelete {
		if len(w.sets) > 0 {
			return nil, errors.New("--set: delete takes no properties")
		}
	} else {
		row.Entity = make(events.Entity, len(w.sets))
		for _, s := range w.sets {
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
	if w.set["if-version"] {
		v := w.ifVersion
		row.IfVersion = &v
	}
	cmd := &events.Command{
		ID:       w.id,
		Table:    w.table,
		PK:       w.pk,
		Ops:      []events.RowOp{row},
		Issuer:   w.issuer,
		IssuedAt: writerNow().UTC(),
	}
	for _, m := range w.metas {
		k, v, ok := strings.Cut(m, "=")
		if !ok {
			return nil, fmt.Errorf("--meta %q: want key=value", m)
		}
		if cmd.Meta == nil {
			cmd.Meta = make(map[string]string, len(w.metas))
		}
		if _, dup := cmd.Meta[k]; dup {
			return nil, fmt.Errorf("--meta %q: key %q is set twice", m, k)
		}
		cmd.Meta[k] = v
	}
	if !w.set["id"] {
		id, err := uuid.NewV7()
		if err != nil {
			return nil, fmt.Errorf("generate a command ID: %w", err)
		}
		cmd.ID = id.String()
	}
	return cmd, nil
}

// rejection is an error that exits with ExitRejected: an invalid command or
// a command the projector rejected.
type rejection struct{ err error }

func (r rejection) Error() string   { return r.err.Error() }
func (r rejection) Unwrap() []error { return []error{ErrRejected, r.err} }

// writeResult is what the writer reports about one published command.
type writeResult struct {
	Line      int              `json:"line,omitempty"`
	ID        string           `json:"id"`
	Seq       uint64           `json:"seq"`
	Duplicate bool             `json:"duplicate"`
	Outcome   *journal.Outcome `json:"outcome,omitempty"`
	Error     string           `json:"error,omitempty"`
}

// MarshalJSON prints the outcome's time as every command does.
func (r writeResult) MarshalJSON() ([]byte, error) {
	type plain writeResult
	return json.Marshal(struct {
		plain
		Outcome *outcomeJSON `json:"outcome,omitempty"`
	}{plain(r), (*outcomeJSON)(r.Outcome)})
}

// runOp publishes one command and, with --wait, waits for its outcome.
func (w *writerCmd) runOp(ctx context.Context, cmd *events.Command, stdout io.Writer) error {
	if err := cmd.Validate(); err != nil {
		return rejection{fmt.Errorf("invalid command %s: %w", cmd.ID, err)}
	}
	ct, _ := w.contentType()
	nc, js, err := w.nats.connect(ctx, "tablejournal-writer")
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
		if errors.Is(err, events.ErrInvalid) {
			return rejection{err}
		}
		return err
	}
	r := writeResult{ID: res.ID, Seq: res.Seq, Duplicate: res.Duplicate}
	if !w.jsonOut {
		printPublished(stdout, "", r)
	}
	if w.wait {
		o, err := awaitOutcome(ctx, js, res.ID, res.Seq)
		if err != nil {
			err = w.waitError(ctx, err, fmt.Sprintf("command %s (seq %d)", res.ID, res.Seq))
			if w.jsonOut {
				r.Error = err.Error()
				printJSON(stdout, r)
			}
			return err
		}
		r.Outcome = &o
	}
	if w.jsonOut {
		printJSON(stdout, r)
	} else if r.Outcome != nil && r.Outcome.Status != journal.StatusRejected {
		printOutcome(stdout, "", r.Outcome)
	}
	if o := r.Outcome; o != nil && o.Status == journal.StatusRejected {
		return rejection{fmt.Errorf("command %s (seq %d): %s", o.ID, o.Seq, o.Reason)}
	}
	return nil
}

// checkStreams fails early, with a hint, when the journal stream (or, with
// --wait, the outcomes stream) does not exist: a publish would otherwise
// retry until its budget is spent. Other errors, such as a user without the
// right to read stream information, are left to the publish to report.
func (w *writerCmd) checkStreams(ctx context.Context, js jetstream.JetStream) error {
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
		if _, err := js.Stream(ctx, journal.OutcomesStream); errors.Is(err, jetstream.ErrStreamNotFound) {
			return fmt.Errorf("--wait needs the %s stream, which the projector creates: is a projector running?", journal.OutcomesStream)
		}
	}
	return nil
}

// waitError explains a failed wait for an outcome.
func (w *writerCmd) waitError(ctx context.Context, err error, what string) error {
	if errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return fmt.Errorf("no outcome for %s within --timeout %s: is a projector running?", what, w.timeout)
	}
	return fmt.Errorf("wait for the outcome of %s: %w", what, err)
}

func printJSON(w io.Writer, v any) {
	b, err := json.Marshal(v)
	if err != nil { // cannot happen: plain structs
		fmt.Fprintf(w, "{\"error\":%q}\n", err.Error())
		return
	}
	b = append(b, '\n')
	w.Write(b)
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
func printOutcome(w io.Writer, prefix string, o *journal.Outcome) {
	switch o.Status {
	case journal.StatusApplied:
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
	case journal.StatusDuplicate:
		fmt.Fprintf(w, "%sduplicate: %s\n", prefix, o.Reason)
	case journal.StatusRejected:
		fmt.Fprintf(w, "%srejected: %s\n", prefix, o.Reason)
	default:
		fmt.Fprintf(w, "%s%s: %s\n", prefix, o.Status, o.Reason)
	}
}
