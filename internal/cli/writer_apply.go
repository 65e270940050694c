package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/journal"
)

// maxApplyLine is the longest line apply reads: a command of the largest
// size (4 MiB of entities) with room for JSON escaping and base64.
const maxApplyLine = 32 << 20

// maxListed is how many invalid lines or rejections the summary lists.
const maxListed = 100

// Seams for tests.
var (
	writerStdin io.Reader = os.Stdin
	isTerminal            = func(w io.Writer) bool {
		f, ok := w.(interface{ Fd() uintptr })
		return ok && term.IsTerminal(int(f.Fd()))
	}
)

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
	switch {
	case b.ID != "" && b.Seq != 0:
		return fmt.Sprintf("line %d (id %s, seq %d): %s", b.Line, b.ID, b.Seq, b.Error)
	case b.ID != "":
		return fmt.Sprintf("line %d (id %s): %s", b.Line, b.ID, b.Error)
	}
	return fmt.Sprintf("line %d: %s", b.Line, b.Error)
}

// applyRun is the state of one apply.
type applyRun struct {
	w              *writerCmd
	stdout, stderr io.Writer
	perCommand     bool

	lines     int // non-blank lines read
	published []*writeResult
	pending   []pendingPublish // in publish order
	invalid   []badLine
	failed    []badLine
}

type pendingPublish struct {
	r *writeResult
	f *journal.Future
}

// runApply publishes the commands of the JSON-lines file path.
func (w *writerCmd) runApply(ctx context.Context, path string, stdout, stderr io.Writer) error {
	in, size, err := openApplyInput(path)
	if err != nil {
		return err
	}
	defer in.Close()
	ct, _ := w.contentType()
	nc, js, err := w.nats.connect(ctx, "tablejournal-writer")
	if err != nil {
		return err
	}
	defer nc.Close()

	var outcomesAfter uint64
	{
		cctx, cancel := context.WithTimeout(ctx, w.timeout)
		err := w.checkStreams(cctx, js)
		if err == nil && w.wait {
			st, serr := js.Stream(cctx, journal.OutcomesStream)
			if serr != nil {
				err = fmt.Errorf("--wait: open the %s stream: %w", journal.OutcomesStream, serr)
			} else {
				outcomesAfter = st.CachedInfo().State.LastSeq
			}
		}
		cancel()
		if err != nil {
			return err
		}
	}

	a := &applyRun{w: w, stdout: stdout, stderr: stderr, perCommand: w.jsonOut || w.verbose}
	var bar *progressbar.ProgressBar
	if isTerminal(stderr) && !(a.perCommand && isTerminal(stdout)) {
		bar = progressbar.NewOptions64(size,
			progressbar.OptionSetWriter(stderr),
			progressbar.OptionSetDescription("apply"),
			progressbar.OptionShowBytes(true),
			progressbar.OptionSetWidth(30),
			progressbar.OptionThrottle(100*time.Millisecond),
			progressbar.OptionSetSpinnerChangeInterval(0),
			progressbar.OptionClearOnFinish(),
		)
	}

	jw := journal.NewWriter(js, w.stream, journal.WithContentType(ct), journal.WithMaxInFlight(w.maxInFlight))
	loadErr := a.load(ctx, jw, newLineReader(in, maxApplyLine), bar)
	// Settle what is in flight even when the load stopped early: those
	// commands may be stored, and the user needs their IDs.
	a.settle(ctx, true)
	if bar != nil {
		_ = bar.Finish()
	}

	var waitErr error
	if w.wait && loadErr == nil {
		wctx, cancel := context.WithTimeout(ctx, w.timeout)
		waitErr = awaitOutcomes(wctx, js, outcomesAfter, a.published)
		if waitErr != nil {
			waitErr = w.waitError(wctx, waitErr, "the published commands")
		}
		cancel()
		if a.perCommand {
			for _, r := range a.published {
				a.print(r)
			}
		}
	}
	return a.summary(loadErr, waitErr)
}

// openApplyInput opens apply's input and returns its size, or -1 if it is
// not known.
func openApplyInput(path string) (io.ReadCloser, int64, error) {
	if path == "-" {
		return io.NopCloser(writerStdin), -1, nil
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
// the load cannot go on: the input cannot be read, or ctx ended.
func (a *applyRun) load(ctx context.Context, jw *journal.Writer, lr *lineReader, bar *progressbar.ProgressBar) error {
	for {
		line, n, err := lr.next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if bar != nil {
			_ = bar.Add(n)
		}
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
			a.bad(badLine{Line: lr.line, Error: err.Error(), Rule: string(events.RuleCommandTooLarge)})
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
			if ve := (*events.ValidationError)(nil); errors.As(err, &ve) {
				b.Rule = string(ve.Rule)
			}
			a.bad(b)
			continue
		}
		f, err := jw.PublishAsync(ctx, cmd)
		if err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("stopped at line %d: %w", lr.line, ctx.Err())
			}
			a.failed = append(a.failed, badLine{Line: lr.line, ID: cmd.ID, Error: err.Error()})
			continue
		}
		a.pending = append(a.pending, pendingPublish{r: &writeResult{Line: lr.line, ID: cmd.ID}, f: f})
		a.settle(ctx, false)
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
	if a.w.jsonOut {
		printJSON(a.stdout, b)
	} else if a.w.verbose {
		fmt.Fprintf(a.stdout, "line %d: invalid: %s\n", b.Line, b.Error)
	}
}

// settle takes the results of the publishes in flight, in order, as far as
// they are known; with all, it waits for all of them.
func (a *applyRun) settle(ctx context.Context, all bool) {
	for len(a.pending) > 0 {
		p := a.pending[0]
		if !all {
			select {
			case <-p.f.Done():
			default:
				return
			}
		}
		res, err := p.f.Result(ctx)
		a.pending[0] = pendingPublish{}
		a.pending = a.pending[1:]
		if err != nil {
			b := badLine{Line: p.r.Line, ID: p.r.ID, Error: err.Error()}
			a.failed = append(a.failed, b)
			if a.w.jsonOut {
				printJSON(a.stdout, writeResult{Line: b.Line, ID: b.ID, Error: b.Error})
			} else if a.w.verbose {
				fmt.Fprintf(a.stdout, "line %d: not published: %s\n", b.Line, b.Error)
			}
			continue
		}
		p.r.Seq, p.r.Duplicate = res.Seq, res.Duplicate
		a.published = append(a.published, p.r)
		if !a.w.wait {
			a.print(p.r)
		}
	}
}

// print prints the result of one published command, if per-command output
// is on.
func (a *applyRun) print(r *writeResult) {
	switch {
	case a.w.jsonOut:
		printJSON(a.stdout, r)
	case a.w.verbose:
		prefix := fmt.Sprintf("line %d: ", r.Line)
		printPublished(a.stdout, prefix, *r)
		if r.Outcome != nil {
			printOutcome(a.stdout, prefix, r.Outcome)
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
		case r.Outcome.Status == journal.StatusApplied:
			applied++
		case r.Outcome.Status == journal.StatusDuplicate:
			duplicate++
		case r.Outcome.Status == journal.StatusRejected:
			rejected++
			rejections = append(rejections, badLine{Line: r.Line, ID: r.ID, Seq: r.Seq, Error: r.Outcome.Reason})
		}
	}
	w := a.stderr
	fmt.Fprintf(w, "apply: %d commands read, %d published (%d already in the journal), %d invalid", a.lines, len(a.published), dups, len(a.invalid))
	if len(a.failed) > 0 {
		fmt.Fprintf(w, ", %d not published", len(a.failed))
	}
	fmt.Fprintln(w)
	if a.w.wait {
		fmt.Fprintf(w, "outcomes: %d applied, %d rejected, %d duplicate", applied, rejected, duplicate)
		if unknown > 0 {
			fmt.Fprintf(w, ", %d unknown", unknown)
		}
		fmt.Fprintln(w)
	}
	list(w, "invalid lines", a.invalid)
	list(w, "not published", a.failed)
	list(w, "rejected", rejections)

	switch {
	case loadErr != nil:
		return loadErr
	case len(a.failed) > 0:
		return fmt.Errorf("%d of %d commands not published; the first, line %d: %s", len(a.failed), a.lines, a.failed[0].Line, a.failed[0].Error)
	case waitErr != nil:
		return waitErr
	case len(a.invalid) > 0 || rejected > 0:
		return rejection{fmt.Errorf("%d invalid lines, %d commands rejected", len(a.invalid), rejected)}
	}
	return nil
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
