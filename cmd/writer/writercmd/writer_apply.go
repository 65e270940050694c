package writercmd

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"

	"github.com/tablejournal/tablejournal/cmd/internal/cli"
	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/events/rules"
	"github.com/tablejournal/tablejournal/journal"
	"github.com/tablejournal/tablejournal/journal/outcomes"
	"github.com/tablejournal/tablejournal/wire"
)

// maxApplyLine is the longest line apply reads: a command of the largest
// size (4 MiB of entities) with room for JSON escaping and base64.
const maxApplyLine = 32 << 20

// maxListed is how many invalid lines or rejections the summary lists.
const maxListed = 100

// badLine is a line of apply's input that is not a valid command, or whose
// command could not be published or was rejected.
type badLine struct {
	Line  int    `json:"line"`
	ID    string `json:"id,omitempty"`
	Seq   uint64 `json:"seq,omitempty"`
	Error string `json:"error"`
	Rule  string `json:"rule,omitempty"`
}

func (b badLine) String() string {
	id := b.ID
	if !plainID(id) { // an invalid ID may hold anything, even terminal escapes
		id = strconv.QuoteToASCII(id)
	}
	switch {
	case b.ID != "" && b.Seq != 0:
		return fmt.Sprintf("line %d (id %s, seq %d): %s", b.Line, id, b.Seq, b.Error)
	case b.ID != "":
		return fmt.Sprintf("line %d (id %s): %s", b.Line, id, b.Error)
	}
	return fmt.Sprintf("line %d: %s", b.Line, b.Error)
}

// plainID reports whether id is made of the characters a valid command ID
// has.
func plainID(id string) bool {
	for i := 0; i < len(id); i++ {
		c := id[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '_' || c == ':' || c == '-') {
			return false
		}
	}
	return true
}

// applyRun is the state of one apply.
type applyRun struct {
	w              *applyCmd
	stdout, stderr io.Writer
	perCommand     bool

	lines       int     // non-blank lines read
	pending     []entry // in line order, not yet settled
	flying      int     // entries of pending that were sent (have a Future)
	done        []entry // settled, in line order; kept with --wait, to print after the outcomes
	published   []*writeResult
	invalid     []badLine
	unconfirmed []badLine // sent, but no acknowledgement: they may be in the journal
	failed      []badLine // not sent, or the journal failed to store them
	refused     []badLine // refused by the journal: the ID is there with another body (exit 3)

	// Where an interrupted load stopped: the first line not sent, and how
	// many non-blank lines from it on were not sent (-1: not known, the
	// rest of a stream is not read).
	stoppedAt, notSent int
}

// entry is one non-blank line: a command published (r and f) or not (bad).
type entry struct {
	r   *writeResult
	f   *journal.Future
	bad *badLine
}

// run publishes the commands of the JSON-lines file w.path.
func (w *applyCmd) run(ctx context.Context, stdio cli.IO) error {
	stdout, stderr := stdio.Stdout, stdio.Stderr
	in, size, err := openApplyInput(w.path, stdio.Input())
	if err != nil {
		return err
	}
	defer in.Close()
	ct, _ := w.contentType()
	nc, js, err := w.nf.Connect(ctx, "tablejournal-writer")
	if err != nil {
		return err
	}
	defer nc.Close()

	var outcomesAfter uint64
	{
		cctx, cancel := context.WithTimeout(ctx, w.timeout)
		err := w.checkStreams(cctx, js)
		if err == nil && w.wait {
			if outcomesAfter, err = outcomes.NewReader(js).Last(cctx); err != nil {
				err = fmt.Errorf("--wait: %w", err)
			}
		}
		cancel()
		if err != nil {
			return err
		}
	}

	a := &applyRun{w: w, stdout: stdout, stderr: stderr, perCommand: w.jsonOut || w.verbose}
	var bar *cli.Progress
	if !(a.perCommand && stdio.Terminal(unwrapWriter(stdout))) {
		bar = cli.NewProgress(stdio, stderr, size, "apply", cli.UnitBytes)
	}

	jw := journal.NewWriter(js, w.stream, journal.WithContentType(ct), journal.WithMaxInFlight(w.maxInFlight))
	lr := newLineReader(in, maxApplyLine)
	loadErr := a.load(ctx, jw, lr, bar)
	// Settle what is in flight even when the load stopped early (ctx ended):
	// those commands were sent and may be stored; their acknowledgements
	// are awaited for up to --timeout, and the user needs their IDs.
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), w.timeout)
	a.settle(sctx, true)
	cancel()
	bar.Finish()
	if a.stoppedAt > 0 {
		if size >= 0 { // a file: count what was not sent
			a.notSent = countRest(lr, a.notSent)
		} else { // a stream may not end: leave it unread
			a.notSent = -1
		}
	}

	var waitErr error
	if w.wait {
		if loadErr == nil {
			wctx, cancel := context.WithTimeout(ctx, w.timeout)
			waitErr = awaitOutcomes(wctx, js, outcomesAfter+1, a.published)
			if waitErr != nil {
				waitErr = w.waitError(wctx, waitErr, "the published commands")
			}
			cancel()
		}
		for _, e := range a.done {
			a.print(e)
		}
	}
	return a.summary(loadErr, waitErr)
}

// openApplyInput opens apply's input and returns its size, or -1 if it is
// not known.
func openApplyInput(path string, stdin io.Reader) (io.ReadCloser, int64, error) {
	if path == "-" {
		return io.NopCloser(stdin), -1, nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, 0, err
	}
	size := int64(-1)
	if fi, err := f.Stat(); err == nil && fi.Mode().IsRegular() {
		size = fi.Size()
	}
	return f, size, nil
}

// load reads, checks and publishes every line. It returns an error only when
// the load cannot go on: the input cannot be read, or ctx ended (then it
// sends no more, and a.stoppedAt is the first line it did not send). The
// commands it sent are not abandoned when ctx ends: they are published
// under a context without its cancellation, bounded by the journal
// writer's retry budget, so that their acknowledgements still count.
func (a *applyRun) load(ctx context.Context, jw *journal.Writer, lr *lineReader, bar *cli.Progress) error {
	pctx := context.WithoutCancel(ctx)
	// stop records where the load stopped: at the line just read, not
	// sent, or else at the next one.
	stop := func(readNotSent bool) error {
		a.stoppedAt, a.notSent = lr.line+1, 0
		if readNotSent {
			a.stoppedAt, a.notSent = lr.line, 1
		}
		return interrupted(ctx, fmt.Sprintf("at line %d", a.stoppedAt))
	}
	for {
		if ctx.Err() != nil {
			return stop(false)
		}
		line, n, err := lr.next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		bar.Add(n)
		if err != nil && !errors.Is(err, errLineTooLong) {
			return fmt.Errorf("read line %d: %w", lr.line, err)
		}
		if err == nil {
			line = bytes.TrimSpace(line)
			if lr.line == 1 {
				line = bytes.TrimPrefix(line, []byte("\uFEFF"))
			}
			if len(line) == 0 {
				continue
			}
		}
		a.lines++
		if err != nil {
			a.bad(badLine{Line: lr.line, Error: err.Error(), Rule: string(rules.CommandTooLarge)})
			a.settle(ctx, false)
			continue
		}
		cmd, err := events.UnmarshalJSON(line)
		if err == nil {
			err = cmd.Validate()
		}
		if err != nil {
			b := badLine{Line: lr.line, Error: err.Error()}
			if cmd != nil {
				b.ID = cmd.ID
			} else {
				b.ID = lenientID(line)
			}
			if ve := (*rules.ValidationError)(nil); errors.As(err, &ve) {
				b.Rule = string(ve.Rule)
			}
			a.bad(b)
			a.settle(ctx, false)
			continue
		}
		if !a.waitSlot(ctx) {
			a.lines--
			return stop(true)
		}
		f, err := jw.PublishAsync(pctx, cmd)
		if err != nil {
			a.pending = append(a.pending, entry{r: &writeResult{Line: lr.line, ID: cmd.ID, Error: err.Error()}})
			a.notPublished(badLine{Line: lr.line, ID: cmd.ID, Error: err.Error()}, err)
			a.settle(ctx, false)
			continue
		}
		a.pending = append(a.pending, entry{r: &writeResult{Line: lr.line, ID: cmd.ID}, f: f})
		a.flying++
		a.settle(ctx, false)
	}
}

// waitSlot waits until fewer than --max-in-flight sent commands await
// their acknowledgement, so that PublishAsync does not block, and reports
// false if ctx ended first.
func (a *applyRun) waitSlot(ctx context.Context) bool {
	for a.flying >= a.w.maxInFlight {
		var oldest *journal.Future
		for _, e := range a.pending {
			if e.f != nil {
				oldest = e.f
				break
			}
		}
		select {
		case <-oldest.Done():
			a.settle(ctx, false)
		case <-ctx.Done():
			return false
		}
	}
	return ctx.Err() == nil
}

// countRest counts the non-blank lines of the rest of the input, after an
// interrupted load: how many were not sent, beside the notSent already
// counted.
func countRest(lr *lineReader, notSent int) int {
	for {
		line, _, err := lr.next()
		switch {
		case errors.Is(err, io.EOF):
			return notSent
		case errors.Is(err, errLineTooLong):
			notSent++
		case err != nil:
			return -1
		case len(bytes.TrimSpace(line)) > 0:
			notSent++
		}
	}
}

// lenientID returns the "id" of a line that does not decode as a
// command, if a plain JSON decoding finds one, so the summary can name it.
func lenientID(line []byte) string {
	var v struct {
		ID any `json:"id"`
	}
	if json.Unmarshal(line, &v) != nil {
		return ""
	}
	id, _ := v.ID.(string)
	if len(id) > events.MaxIDLen {
		return ""
	}
	return id
}

// bad records an invalid line.
func (a *applyRun) bad(b badLine) {
	a.invalid = append(a.invalid, b)
	a.pending = append(a.pending, entry{bad: &b})
}

// settle takes the entries in line order as far as their results are
// known, and prints them unless --wait holds them back for their outcomes;
// with all, it waits for every result.
func (a *applyRun) settle(ctx context.Context, all bool) {
	for len(a.pending) > 0 {
		e := a.pending[0]
		if e.f != nil {
			if !all {
				select {
				case <-e.f.Done():
				default:
					return
				}
			}
			res, err := e.f.Result(ctx)
			done := isDone(e.f)
			if done {
				res, err = e.f.Result(context.Background()) // a result in wins over ctx
			}
			a.flying--
			switch {
			case err == nil:
				e.r.Seq, e.r.Duplicate = res.Seq, res.Duplicate
				a.published = append(a.published, e.r)
			case !done || errors.Is(err, journal.ErrRetryBudget) || errors.Is(err, journal.ErrAckTimeout):
				// Sent, and no acknowledgement came (in time): it may be
				// stored. Counting it as not published would be wrong
				// as often as not.
				if !done {
					err = fmt.Errorf("no acknowledgement within --timeout %s", a.w.timeout)
				}
				e.r.Error, e.r.Unconfirmed = err.Error(), true
				a.unconfirmed = append(a.unconfirmed, badLine{Line: e.r.Line, ID: e.r.ID, Error: e.r.Error})
			default:
				e.r.Error = err.Error()
				a.notPublished(badLine{Line: e.r.Line, ID: e.r.ID, Error: e.r.Error}, err)
			}
		}
		a.pending[0] = entry{}
		a.pending = a.pending[1:]
		if a.w.wait {
			if a.perCommand {
				a.done = append(a.done, e)
			}
			continue
		}
		a.print(e)
	}
}

// notPublished records a command the journal did not store: refused, as
// a single command is (exit 3), when the journal holds its ID with another
// body; failed otherwise.
func (a *applyRun) notPublished(b badLine, err error) {
	if errors.Is(err, journal.ErrBodyDiffers) || errors.Is(err, rules.ErrInvalid) {
		a.refused = append(a.refused, b)
		return
	}
	a.failed = append(a.failed, b)
}

// interrupted is the error of a command stopped because ctx ended: by
// SIGINT or SIGTERM (cli.Main), said as such ("interrupted at line 51")
// rather than as the raw "context canceled"; it still matches ctx.Err()
// with errors.Is.
func interrupted(ctx context.Context, where string) error {
	if errors.Is(ctx.Err(), context.Canceled) {
		return interruption{where, ctx.Err()}
	}
	return fmt.Errorf("stopped %s: %w", where, ctx.Err())
}

type interruption struct {
	where string
	err   error
}

func (i interruption) Error() string { return "interrupted " + i.where }
func (i interruption) Unwrap() error { return i.err }

// isDone reports whether f's result is in.
func isDone(f *journal.Future) bool {
	select {
	case <-f.Done():
		return true
	default:
		return false
	}
}

// print prints one entry, if per-command output is on.
func (a *applyRun) print(e entry) {
	switch {
	case e.bad != nil && a.w.jsonOut:
		cli.PrintJSON(a.stdout, e.bad)
	case e.bad != nil && a.w.verbose:
		fmt.Fprintf(a.stdout, "line %d: invalid: %s\n", e.bad.Line, e.bad.Error)
	case a.w.jsonOut:
		cli.PrintJSON(a.stdout, e.r)
	case a.w.verbose && e.r.Unconfirmed:
		fmt.Fprintf(a.stdout, "line %d: unconfirmed: %s sent, %s; it may be in the journal\n", e.r.Line, e.r.ID, e.r.Error)
	case a.w.verbose && e.r.Error != "":
		fmt.Fprintf(a.stdout, "line %d: not published: %s\n", e.r.Line, e.r.Error)
	case a.w.verbose:
		prefix := fmt.Sprintf("line %d: ", e.r.Line)
		printPublished(a.stdout, prefix, *e.r)
		if e.r.Outcome != nil {
			printOutcome(a.stdout, prefix, e.r.Outcome)
		}
	}
}

// summary prints the summary on stderr and returns the command's error.
func (a *applyRun) summary(loadErr, waitErr error) error {
	dups := 0
	var applied, rejected, duplicate, unknown int
	var rejections []badLine
	for _, r := range a.published {
		if r.Duplicate {
			dups++
		}
		switch {
		case r.Outcome == nil:
			unknown++
		case r.Outcome.Status == wire.StatusApplied:
			applied++
		case r.Outcome.Status == wire.StatusDuplicate:
			duplicate++
		case r.Outcome.Status == wire.StatusRejected:
			rejected++
			rejections = append(rejections, badLine{Line: r.Line, ID: r.ID, Seq: r.Seq, Error: r.Outcome.Reason})
		}
	}
	w := a.stderr
	fmt.Fprintf(w, "apply: %s read, %d published (%d already in the journal), %d invalid", cli.Plural(a.lines, "command"), len(a.published), dups, len(a.invalid))
	if len(a.unconfirmed) > 0 {
		fmt.Fprintf(w, ", %d unconfirmed (sent, not acknowledged: they may be in the journal)", len(a.unconfirmed))
	}
	if len(a.failed) > 0 {
		fmt.Fprintf(w, ", %d not published", len(a.failed))
	}
	if len(a.refused) > 0 {
		fmt.Fprintf(w, ", %d refused", len(a.refused))
	}
	fmt.Fprintln(w)
	if a.stoppedAt > 0 {
		switch {
		case a.notSent < 0:
			fmt.Fprintf(w, "%s at line %d: it and the rest of the input were not read or sent\n", a.stopWord(loadErr), a.stoppedAt)
		default:
			fmt.Fprintf(w, "%s at line %d: %s from it on not sent\n", a.stopWord(loadErr), a.stoppedAt, cli.Plural(a.notSent, "command"))
		}
	}
	if a.stoppedAt > 0 || len(a.unconfirmed) > 0 {
		fmt.Fprintln(w, "to finish, apply the same input again: a command ID the journal or the projector has seen is not applied twice")
	}
	if a.w.wait {
		fmt.Fprintf(w, "outcomes: %d applied, %d rejected, %d duplicate", applied, rejected, duplicate)
		if unknown > 0 {
			fmt.Fprintf(w, ", %d unknown", unknown)
		}
		fmt.Fprintln(w)
	}
	list(w, "invalid lines", a.invalid)
	list(w, "unconfirmed", a.unconfirmed)
	list(w, "not published", a.failed)
	list(w, "refused", a.refused)
	list(w, "rejected", rejections)

	switch {
	case loadErr != nil:
		return loadErr
	case len(a.failed) > 0:
		return fmt.Errorf("%d of %s not published; the first, line %d: %s", len(a.failed), cli.Plural(a.lines, "command"), a.failed[0].Line, a.failed[0].Error)
	case len(a.unconfirmed) > 0:
		return fmt.Errorf("%d of %s unconfirmed: sent, not acknowledged; the first, line %d: %s", len(a.unconfirmed), cli.Plural(a.lines, "command"), a.unconfirmed[0].Line, a.unconfirmed[0].Error)
	case waitErr != nil:
		return waitErr
	case len(a.refused) > 0:
		// As a single command: exit 3, the journal's reason (the ID, the
		// seq holding the other body, what to do) for the first.
		return rejection{fmt.Errorf("%d of %s refused; the first, line %d: %s", len(a.refused), cli.Plural(a.lines, "command"), a.refused[0].Line, a.refused[0].Error)}
	case len(a.invalid) > 0 && rejected > 0:
		return rejection{fmt.Errorf("%s, %s rejected", cli.Plural(len(a.invalid), "invalid line"), cli.Plural(rejected, "command"))}
	case len(a.invalid) > 0:
		return rejection{errors.New(cli.Plural(len(a.invalid), "invalid line"))}
	case rejected > 0:
		return rejection{fmt.Errorf("%s rejected", cli.Plural(rejected, "command"))}
	}
	return nil
}

// stopWord says how the load stopped: "interrupted" by a signal, else
// "stopped".
func (a *applyRun) stopWord(loadErr error) string {
	if errors.Is(loadErr, context.Canceled) {
		return "interrupted"
	}
	return "stopped"
}

func list(w io.Writer, title string, bs []badLine) {
	if len(bs) == 0 {
		return
	}
	fmt.Fprintf(w, "%s:\n", title)
	for i, b := range bs {
		if i == maxListed {
			fmt.Fprintf(w, "  ... and %d more (--json lists every one)\n", len(bs)-maxListed)
			break
		}
		fmt.Fprintf(w, "  %s\n", b)
	}
}

// errLineTooLong is a line over the reader's limit; the reader skips it.
var errLineTooLong = fmt.Errorf("line longer than %d bytes", maxApplyLine)

// lineReader reads lines of any length up to a limit, and skips longer
// ones without holding them.
type lineReader struct {
	r    *bufio.Reader
	max  int
	line int // number of the line last returned
	buf  []byte
}

func newLineReader(r io.Reader, max int) *lineReader {
	return &lineReader{r: bufio.NewReaderSize(r, 64<<10), max: max}
}

// next returns the next line without its end of line, and the number of
// bytes it took of the input. A line over the limit is errLineTooLong; at
// the end of the input, io.EOF.
func (l *lineReader) next() ([]byte, int, error) {
	l.buf = l.buf[:0]
	n, tooLong := 0, false
	for {
		chunk, err := l.r.ReadSlice('\n')
		n += len(chunk)
		if !tooLong {
			if len(l.buf)+len(chunk) > l.max+2 { // room for "\r\n"
				tooLong = true
				l.buf = l.buf[:0]
			} else {
				l.buf = append(l.buf, chunk...)
			}
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, n, err
		}
		if n == 0 && errors.Is(err, io.EOF) {
			return nil, 0, io.EOF
		}
		l.line++
		if tooLong {
			return nil, n, errLineTooLong
		}
		line := bytes.TrimSuffix(l.buf, []byte("\n"))
		line = bytes.TrimSuffix(line, []byte("\r"))
		return line, n, nil
	}
}
