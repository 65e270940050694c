package writercmd

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tablejournal/tablejournal/cmd/internal/cli"
	"github.com/tablejournal/tablejournal/cmd/internal/cli/clitest"
	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/events/rules"
	"github.com/tablejournal/tablejournal/journal/journaltest"
	"github.com/tablejournal/tablejournal/journal/outcomes"
	"github.com/tablejournal/tablejournal/wire"
)

// applyLine is one line of apply's --json output: a published command or an
// invalid line.
type applyLine struct {
	writeResult
	Rule string `json:"rule"`
}

func applyOutput(t *testing.T, stdout string) map[int]applyLine {
	t.Helper()
	byLine := map[int]applyLine{}
	last := 0
	sc := bufio.NewScanner(strings.NewReader(stdout))
	for sc.Scan() {
		var l applyLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatalf("stdout line %q: %v", sc.Text(), err)
		}
		if l.Line <= last {
			t.Fatalf("stdout line %q: not after line %d", sc.Text(), last)
		}
		last = l.Line
		byLine[l.Line] = l
	}
	return byLine
}

func TestWriterApply(t *testing.T) {
	t.Parallel()
	e := startWriterEnv(t, false)
	lines := []string{
		1: `{"id":"a-1","table":"orders","pk":"customer-42","ops":[{"op":"upsert","rk":"o1","entity":{"status":"new","qty":"9007199254740993","qty@odata.type":"Edm.Int64"}}]}`,
		2: ``,
		3: `{not json`,
		4: `{"id":"a-2","table":"orders","pk":"customer-42","ops":[{"op":"insert","rk":"o2","entity":{"total":12.5}},{"op":"delete","rk":"o1","ifVersion":0}],"issuer":"loader"}`,
		5: `{"id":"a-3","table":"ab","pk":"p","ops":[{"op":"upsert","rk":"r","entity":{}}]}`,
		6: `{"id":"a-1","table":"orders","pk":"customer-42","ops":[{"op":"upsert","rk":"o1","entity":{"status":"new","qty":"9007199254740993","qty@odata.type":"Edm.Int64"}}]}`,
		7: `{"id":"a-4","table":"orders","pk":"p","ops":[{"op":"upsert","rk":"r","entity":{"n":"x","n@odata.type":"Edm.Int64"}}]}`,
		8: `{"id":"a-5","table":"orders","pk":"p","ops":[{"op":"merge","rk":"r","entity":{"ok":true}}]}` + "\r",
		9: `  {"id":"a-6","table":"other","pk":"q","ops":[{"op":"delete","rk":"r"}]}  `,
	}
	// The last line has no end of line.
	path := clitest.CommandsFile(t, strings.Join(lines[1:], "\n"))

	stdout, stderr, code := e.run(t, "apply", path, "--json")
	if code != cli.ExitRejected {
		t.Fatalf("exit %d, want %d (invalid lines); stderr %q", code, cli.ExitRejected, stderr)
	}
	out := applyOutput(t, stdout)
	published := map[int]string{1: "a-1", 4: "a-2", 6: "a-1", 8: "a-5", 9: "a-6"}
	invalid := map[int]rules.Rule{3: rules.Malformed, 5: rules.TableName, 7: rules.BadInt64}
	if len(out) != len(published)+len(invalid) {
		t.Errorf("stdout has lines %v, want %v and %v", out, published, invalid)
	}
	for n, id := range published {
		l := out[n]
		if l.ID != id || l.Seq == 0 || l.Error != "" {
			t.Errorf("line %d: %+v, want %s published", n, l, id)
			continue
		}
		if n == 6 {
			if !l.Duplicate || l.Seq != out[1].Seq {
				t.Errorf("line 6 repeats line 1's id: %+v, want a duplicate at seq %d", l, out[1].Seq)
			}
			continue
		}
		got, _ := e.command(t, l.Seq)
		want, err := events.UnmarshalJSON([]byte(strings.TrimSpace(lines[n])))
		if err != nil {
			t.Fatal(err)
		}
		if !got.Equal(want) {
			t.Errorf("line %d stored %+v, want %+v", n, got, want)
		}
	}
	for n, rule := range invalid {
		if l := out[n]; l.Rule != string(rule) || l.Error == "" || l.Seq != 0 {
			t.Errorf("line %d: %+v, want invalid by rule %s", n, l, rule)
		}
	}
	if id := out[5].ID; id != "a-3" {
		t.Errorf("line 5: id %q, want a-3", id)
	}
	if head, _ := e.j.Head(journaltest.Context(t, 5*time.Second)); head != 4 {
		t.Errorf("journal head %d, want 4 commands stored", head)
	}
	for _, want := range []string{
		"apply: 8 commands read, 5 published (1 already in the journal), 3 invalid\n",
		"invalid lines:\n  line 3: rule malformed",
		"  line 5 (id a-3): table: rule table-name",
		"  line 7 (id a-4): ops[0].entity[\"n\"]: rule bad-int64",
		"rejected: 3 invalid lines\n",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr %q does not contain %q", stderr, want)
		}
	}

	// Loading the same file again stores nothing new.
	stdout, stderr, code = e.run(t, "apply", path)
	if code != cli.ExitRejected || stdout != "" || !strings.Contains(stderr, "5 published (5 already in the journal), 3 invalid") {
		t.Errorf("again: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}

	// All good: exit 0.
	good := clitest.CommandsFile(t, lines[1]+"\n"+lines[8]+"\n")
	stdout, stderr, code = e.run(t, "apply", good)
	if code != cli.ExitOK || stdout != "" || !strings.Contains(stderr, "2 commands read, 2 published") {
		t.Errorf("good file: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}

	// A missing file is an error.
	_, stderr, code = e.run(t, "apply", filepath.Join(t.TempDir(), "missing.jsonl"))
	if code != cli.ExitFailure || !strings.Contains(stderr, "missing.jsonl") {
		t.Errorf("missing file: exit %d, stderr %q", code, stderr)
	}
}

// Standard input, --verbose, and the progress bar.
// TestWriterApplyBodyDiffers: a line reusing a command ID with another
// body is refused as a single command is, exit 3 and the journal's
// reason; before, apply counted it "not published" and exited 1.
func TestWriterApplyBodyDiffers(t *testing.T) {
	t.Parallel()
	e := startWriterEnv(t, false)
	path := clitest.CommandsFile(t, `{"id":"bd-1","table":"orders","pk":"p","ops":[{"op":"upsert","rk":"r","entity":{"n":1}}]}
{"id":"bd-2","table":"orders","pk":"p","ops":[{"op":"upsert","rk":"s","entity":{"n":1}}]}
{"id":"bd-1","table":"orders","pk":"p","ops":[{"op":"upsert","rk":"r","entity":{"n":2}}]}
`)
	_, stderr, code := e.run(t, "apply", path)
	if code != cli.ExitRejected {
		t.Fatalf("exit %d, want %d (refused as a single command is); stderr %q", code, cli.ExitRejected, stderr)
	}
	for _, want := range []string{
		"apply: 3 commands read, 2 published (0 already in the journal), 0 invalid, 1 refused\n",
		"refused:\n  line 3 (id bd-1): publish bd-1: command ID bd-1 is already in the journal with a different body (seq 1)",
		"rejected: 1 of 3 commands refused; the first, line 3: publish bd-1: command ID bd-1 is already in the journal with a different body (seq 1); publish a new command under a new ID\n",
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	if strings.Contains(stderr, "not published") {
		t.Errorf("stderr counts the refusal as a failure to publish:\n%s", stderr)
	}
	// The single command says the same, with the same exit status.
	_, single, code := e.run(t, "upsert", "--table", "orders", "--pk", "p", "--rk", "r", "--id", "bd-1", "--set", "n:int32=3")
	if code != cli.ExitRejected || !strings.Contains(single, "rejected: ") || !strings.Contains(single, "command ID bd-1 is already in the journal with a different body (seq 1)") {
		t.Errorf("single command: exit %d, stderr %q", code, single)
	}
}

func TestWriterApplyStdinProgress(t *testing.T) {
	t.Parallel()
	e := startWriterEnv(t, false)
	input := `{"id":"s-1","table":"orders","pk":"p","ops":[{"op":"upsert","rk":"r","entity":{"a":"b"}}]}` + "\n" +
		`{"id":"s-2","table":"orders","pk":"p","ops":[{"op":"nope","rk":"r"}]}` + "\n"

	tests := []struct {
		name        string
		args        []string
		stdoutTerm  bool
		wantBar     bool
		wantStdout  []string
		emptyStdout bool
	}{
		{"bar on a terminal", []string{"apply", "-"}, true, true, nil, true},
		{"verbose to a pipe keeps the bar", []string{"apply", "--verbose", "-"}, false, true,
			[]string{"line 1: already in the journal: s-1 seq 1 (the ID was published before; nothing new stored)\nline 2: invalid: ops[0].op: rule unknown-op"}, false},
		{"verbose to the terminal hides the bar", []string{"apply", "-", "--verbose"}, true, false,
			[]string{"line 1: already in the journal: s-1 seq 1"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			stdout, stderr, code := e.runTerm(t, strings.NewReader(input), tt.stdoutTerm, tt.args...)
			if code != cli.ExitRejected {
				t.Fatalf("exit %d, stderr %q", code, stderr)
			}
			if hasBar := strings.Contains(stderr, "apply "); hasBar != tt.wantBar {
				t.Errorf("progress bar drawn: %v, want %v; stderr %q", hasBar, tt.wantBar, stderr)
			}
			if tt.emptyStdout && stdout != "" {
				t.Errorf("stdout %q, want nothing", stdout)
			}
			for _, w := range tt.wantStdout {
				if !strings.Contains(stdout, w) {
					t.Errorf("stdout %q does not contain %q", stdout, w)
				}
			}
			if !strings.Contains(stderr, "apply: 2 commands read, 1 published") || !strings.Contains(stderr, "line 2 (id s-2): ops[0].op: rule unknown-op") {
				t.Errorf("stderr %q lacks the summary", stderr)
			}
		})
	}
}

// termBuffer is a buffer the terminal check takes for a terminal.
type termBuffer struct{ bytes.Buffer }

// runTerm runs the writer with stdin, and with stderr, and stdout if
// stdoutTerm, passing for terminals.
func (e *writerEnv) runTerm(t *testing.T, stdin io.Reader, stdoutTerm bool, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb termBuffer
	var stdoutW io.Writer = &out.Buffer
	if stdoutTerm {
		stdoutW = &out
	}
	err := Run(journaltest.Context(t, time.Minute), append(args, "--nats", e.url), cli.IO{Stdin: stdin, Stdout: stdoutW, Stderr: &errb,
		IsTerminal: func(w io.Writer) bool { _, ok := w.(*termBuffer); return ok }})
	code = cli.Exit(err, &errb)
	return out.String(), errb.String(), code
}

func strconvU(n uint64) string { return strconv.FormatUint(n, 10) }

func TestWriterWait(t *testing.T) {
	t.Parallel()
	e := startWriterEnv(t, true)
	row := func(op, pk, rk string, extra ...string) []string {
		return append([]string{op, "--table", "orders", "--pk", pk, "--rk", rk, "--wait"}, extra...)
	}

	t.Run("applied", func(t *testing.T) {
		stdout, stderr, code := e.run(t, row("upsert", "w-applied", "r1", "--set", "a:int64=1", "--json")...)
		if code != cli.ExitOK {
			t.Fatalf("exit %d, stderr %q", code, stderr)
		}
		r := oneResult(t, stdout, stderr)
		o := r.Outcome
		if o == nil || o.Status != wire.StatusApplied || o.Seq != r.Seq || o.ID != r.ID ||
			len(o.Rows) != 1 || o.Rows[0] != (wire.RowVersion{RK: "r1", Version: 0, Op: "upsert"}) {
			t.Fatalf("result %+v, outcome %+v", r, o)
		}

		stdout, stderr, code = e.run(t, row("merge", "w-applied", "r1", "--set", "b=2")...)
		if code != cli.ExitOK || !strings.HasPrefix(stdout, "published ") || !strings.HasSuffix(stdout, "\napplied: row \"r1\" version 1 (merge)\n") {
			t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
		}
		stdout, stderr, code = e.run(t, row("delete", "w-applied", "r1", "--if-version", "1")...)
		if code != cli.ExitOK || !strings.HasSuffix(stdout, "\napplied: row \"r1\" version 2 (delete, tombstone)\n") {
			t.Fatalf("delete: exit %d, stdout %q, stderr %q", code, stdout, stderr)
		}
	})

	t.Run("rejected", func(t *testing.T) {
		if _, stderr, code := e.run(t, row("insert", "w-rejected", "r1")...); code != cli.ExitOK {
			t.Fatalf("first insert: exit %d, stderr %q", code, stderr)
		}
		stdout, stderr, code := e.run(t, row("insert", "w-rejected", "r1", "--id", "w-rej-1", "--json")...)
		if code != cli.ExitRejected {
			t.Fatalf("exit %d, want %d; stderr %q", code, cli.ExitRejected, stderr)
		}
		r := oneResult(t, stdout, stderr)
		if r.Outcome == nil || r.Outcome.Status != wire.StatusRejected || r.Outcome.Reason == "" {
			t.Fatalf("outcome %+v", r.Outcome)
		}
		want := "rejected: command w-rej-1 (seq " + strconvU(r.Seq) + "): " + string(r.Outcome.Code) + ": " + r.Outcome.Reason + "\n"
		if stderr != want || !strings.Contains(stderr, `insert "r1"`) {
			t.Errorf("stderr %q, want %q", stderr, want)
		}

		_, stderr, code = e.run(t, row("replace", "w-rejected", "r1", "--if-version", "7", "--set", "a=b")...)
		if code != cli.ExitRejected || !strings.Contains(stderr, `replace "r1"`) {
			t.Errorf("if-version mismatch: exit %d, stderr %q", code, stderr)
		}
	})

	t.Run("duplicate", func(t *testing.T) {
		// A client without Nats-Msg-Id published the command first, so
		// JetStream does not know its ID: the projector finds it on the row.
		cmd := &events.Command{ID: "w-dup-1", Table: "orders", PK: "w-dup", Ops: []events.RowOp{
			{Op: events.OpUpsert, RK: "r1", Entity: edm.Entity{"a": edm.String("x")}}}}
		first := writerPublishRaw(t, e.js, cmd)
		if o, err := outcomes.NewReader(e.js).Await(journaltest.Context(t, 30*time.Second), cmd.ID, first); err != nil || o.Status != wire.StatusApplied {
			t.Fatalf("first publish: outcome %+v, %v", o, err)
		}

		args := row("upsert", "w-dup", "r1", "--set", "a=x", "--id", "w-dup-1")
		stdout, stderr, code := e.run(t, args...)
		wantLine := "duplicate: command w-dup-1 already applied at journal sequence " + strconvU(first) + "\n"
		if code != cli.ExitOK || !strings.HasPrefix(stdout, "published w-dup-1 seq ") || !strings.HasSuffix(stdout, wantLine) {
			t.Fatalf("exit %d, stdout %q (want it to end %q), stderr %q", code, stdout, wantLine, stderr)
		}

		// The same ID again within the window: JetStream holds it, and the
		// outcome is the one of the stored sequence, not the latest one.
		stdout, stderr, code = e.run(t, append(args, "--json")...)
		if code != cli.ExitOK {
			t.Fatalf("again: exit %d, stderr %q", code, stderr)
		}
		r := oneResult(t, stdout, stderr)
		if !r.Duplicate || r.Seq == first || r.Outcome == nil || r.Outcome.Seq != r.Seq || r.Outcome.Status != wire.StatusDuplicate {
			t.Fatalf("again: result %+v, outcome %+v", r, r.Outcome)
		}
		// And the first sequence still reports applied.
		if o, err := outcomes.NewReader(e.js).Await(journaltest.Context(t, 10*time.Second), cmd.ID, first); err != nil || o.Status != wire.StatusApplied {
			t.Errorf("outcome of seq %d: %+v, %v", first, o, err)
		}
	})

	t.Run("apply", func(t *testing.T) {
		path := clitest.CommandsFile(t, strings.Join([]string{
			`{"id":"wa-1","table":"orders","pk":"w-apply","ops":[{"op":"insert","rk":"r1","entity":{"n":1}}]}`,
			`{"id":"wa-2","table":"orders","pk":"w-apply","ops":[{"op":"insert","rk":"r1","entity":{"n":2}}]}`,
			`{"id":"wa-3","table":"orders","pk":"w-apply","ops":[{"op":"replace","rk":"r1","entity":{"n":3}},{"op":"insert","rk":"r2","entity":{}}]}`,
			`{"id":"wa-4","table":"orders","pk":"w-apply","ops":[]}`,
			`{"id":"wa-5","table":"orders","pk":"w-apply-2","ops":[{"op":"upsert","rk":"r","entity":{}}]}`,
			`{"id":"wa-1","table":"orders","pk":"w-apply","ops":[{"op":"insert","rk":"r1","entity":{"n":1}}]}`,
		}, "\n")+"\n")
		stdout, stderr, code := e.run(t, "apply", "--wait", "--json", path)
		if code != cli.ExitRejected {
			t.Fatalf("exit %d, stderr %q", code, stderr)
		}
		out := applyOutput(t, stdout)
		want := map[int]struct {
			status wire.Status
			rows   []wire.RowVersion
		}{
			1: {wire.StatusApplied, []wire.RowVersion{{RK: "r1", Version: 0, Op: "insert"}}},
			2: {wire.StatusRejected, nil},
			3: {wire.StatusApplied, []wire.RowVersion{{RK: "r1", Version: 1, Op: "replace"}, {RK: "r2", Version: 0, Op: "insert"}}},
			5: {wire.StatusApplied, []wire.RowVersion{{RK: "r", Version: 0, Op: "upsert"}}},
			6: {wire.StatusApplied, []wire.RowVersion{{RK: "r1", Version: 0, Op: "insert"}}}, // line 1's, held by JetStream
		}
		for n, w := range want {
			l := out[n]
			if l.Outcome == nil || l.Outcome.Status != w.status || l.Outcome.Seq != l.Seq || len(l.Outcome.Rows) != len(w.rows) {
				t.Errorf("line %d: %+v outcome %+v, want %s %v", n, l, l.Outcome, w.status, w.rows)
				continue
			}
			for i := range w.rows {
				if l.Outcome.Rows[i] != w.rows[i] {
					t.Errorf("line %d: rows %v, want %v", n, l.Outcome.Rows, w.rows)
				}
			}
		}
		if l := out[4]; l.Rule != string(rules.OpsCount) {
			t.Errorf("line 4: %+v, want invalid by %s", l, rules.OpsCount)
		}
		for _, w := range []string{
			"apply: 6 commands read, 5 published (1 already in the journal), 1 invalid\n",
			"outcomes: 4 applied, 1 rejected, 0 duplicate\n",
			"invalid lines:\n  line 4 (id wa-4): ops: rule ops-count",
			"rejected:\n  line 2 (id wa-2, seq ",
			"rejected: 1 invalid line, 1 command rejected\n",
		} {
			if !strings.Contains(stderr, w) {
				t.Errorf("stderr %q does not contain %q", stderr, w)
			}
		}
	})
}

func TestLineReader(t *testing.T) {
	t.Parallel()
	const max = 70000
	long := strings.Repeat("y", 66000) // over the reader's buffer, under max
	input := "short\n" + strings.Repeat("x", 100000) + "\n" + long + "\r\n\n" + "last"
	lr := newLineReader(strings.NewReader(input), max)
	want := []struct {
		line string
		n    int
		err  error
	}{
		{"short", 6, nil},
		{"", 100001, errLineTooLong},
		{long, len(long) + 2, nil},
		{"", 1, nil},
		{"last", 4, nil},
		{"", 0, io.EOF},
		{"", 0, io.EOF},
	}
	total := 0
	for i, w := range want {
		line, n, err := lr.next()
		total += n
		if string(line) != w.line || n != w.n || err != w.err {
			t.Fatalf("line %d: got %d bytes of line (%d read), %v; want %d bytes (%d read), %v", i+1, len(line), n, err, len(w.line), w.n, w.err)
		}
	}
	if total != len(input) || lr.line != 5 {
		t.Errorf("read %d bytes in %d lines, want %d in 5", total, lr.line, len(input))
	}
}

// Unknown fields, in any spelling, and an op without "rk" are invalid lines
// that name the field; "rk": "" is the empty RowKey and publishes.
func TestWriterApplyUnknownFields(t *testing.T) {
	t.Parallel()
	e := startWriterEnv(t, false)
	lines := []string{
		`{"id":"u-1","table":"orders","pk":"p","ops":[{"op":"replace","rk":"r","ifversion":0,"entity":{}}]}`,
		`{"id":"u-2","table":"orders","pk":"p","ops":[{"op":"upsert","RK":"x","entity":{}}]}`,
		`{"id":"u-3","table":"orders","pk":"p","ops":[{"op":"upsert","entity":{}}]}`,
		`{"id":"u-4","table":"orders","pk":"p","ops":[{"op":"upsert","rk":"","entity":{}}],"extra":true}`,
		`{"id":"u-5","table":"orders","pk":"p","ops":[{"op":"upsert","rk":"","entity":{}}]}`,
	}
	stdout, stderr, code := e.run(t, "apply", clitest.CommandsFile(t, strings.Join(lines, "\n")), "--json")
	if code != cli.ExitRejected {
		t.Fatalf("exit %d, want %d (invalid lines); stderr %q", code, cli.ExitRejected, stderr)
	}
	out := applyOutput(t, stdout)
	for n, rule := range map[int]rules.Rule{1: rules.UnknownField, 2: rules.UnknownField, 3: rules.RKRequired, 4: rules.UnknownField} {
		if l := out[n]; l.Rule != string(rule) || l.Seq != 0 {
			t.Errorf("line %d: %+v, want invalid by rule %s", n, l, rule)
		}
	}
	if l := out[5]; l.ID != "u-5" || l.Seq == 0 {
		t.Errorf("line 5: %+v, want u-5 published", l)
	}
	for _, want := range []string{
		`line 1 (id u-1): ops[0]: rule unknown-field: unknown field "ifversion"`,
		`line 2 (id u-2): ops[0]: rule unknown-field: unknown field "RK"`,
		`line 3 (id u-3): ops[0].rk: rule rk-required`,
		`line 4 (id u-4): rule unknown-field: unknown field "extra"`,
	} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr %q does not contain %q", stderr, want)
		}
	}
}
