package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/tablejournal/tablejournal/events"
)

// result is a command's typed result: rendered once as text, and as JSON
// by encoding/json.
type result interface {
	text(w io.Writer)
}

// render prints r as JSON (one line) or as text.
func render(w io.Writer, asJSON bool, r result) {
	if asJSON {
		printJSON(w, r)
		return
	}
	r.text(w)
}

// printJSON prints v as one line of JSON. It is the one JSON printer of
// every command.
func printJSON(w io.Writer, v any) {
	b, err := json.Marshal(v)
	if err != nil { // cannot happen: plain structs
		fmt.Fprintf(w, "{\"error\":%q}\n", err.Error())
		return
	}
	w.Write(append(b, '\n'))
}

// progress is a progress bar drawn on a terminal. A nil *progress draws
// nothing, so callers need not check.
type progress struct {
	bar  *progressbar.ProgressBar
	w    io.Writer
	keep bool // leave the finished bar on its line
}

// unitBytes is the unit of a bar that counts bytes.
const unitBytes = "bytes"

// newProgress returns a bar on w when w is a terminal, and nil otherwise.
// size -1 draws a spinner; unit is unitBytes or what the count counts
// ("cmd", "row"). A bar counting bytes is cleared when finished; others
// stay on their line.
func newProgress(stdio IO, w io.Writer, size int64, what, unit string) *progress {
	if !stdio.terminal(w) {
		return nil
	}
	opts := []progressbar.Option{
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetDescription(what),
		progressbar.OptionSetWidth(30),
		progressbar.OptionThrottle(100 * time.Millisecond),
		// No render goroutine of the library's own: it draws a spinner
		// under a lock that Clear does not take (a data race with clear).
		// The spinner moves when the count does.
		progressbar.OptionSetSpinnerChangeInterval(0),
	}
	if unit == unitBytes {
		opts = append(opts, progressbar.OptionShowBytes(true), progressbar.OptionClearOnFinish())
	} else {
		opts = append(opts, progressbar.OptionShowCount(), progressbar.OptionShowIts(), progressbar.OptionSetItsString(unit))
	}
	return &progress{bar: progressbar.NewOptions64(size, opts...), w: w, keep: unit != unitBytes}
}

// set moves the bar to done of total, raising its end when total grew.
func (p *progress) set(done, total int64) {
	if p == nil {
		return
	}
	if total > p.bar.GetMax64() {
		p.bar.ChangeMax64(total)
	}
	_ = p.bar.Set64(done)
}

// add moves the bar n further.
func (p *progress) add(n int) {
	if p != nil {
		_ = p.bar.Add(n)
	}
}

// clear takes the bar off its line, before other output.
func (p *progress) clear() {
	if p != nil {
		_ = p.bar.Clear()
	}
}

// finish completes the bar.
func (p *progress) finish() {
	if p == nil {
		return
	}
	_ = p.bar.Finish()
	if p.keep {
		fmt.Fprintln(p.w)
	}
}

// plural renders "1 row", "2 rows".
func plural[N int | int64 | uint64](n N, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// timeText renders a time as every command prints it: UTC, 7 fractional
// digits.
func timeText(t time.Time) string { return t.UTC().Format(events.DateTimeLayout) }

func newTab(w io.Writer) *tabwriter.Writer { return tabwriter.NewWriter(w, 0, 4, 2, ' ', 0) }

// valueText renders a value with its EDM type: Edm.Int64(9007199254740993),
// strings quoted.
func valueText(v events.Value) string {
	if v.Type == events.TypeString {
		return v.Type.String() + "(" + strconv.Quote(v.Str) + ")"
	}
	return v.GoString()
}

// propsText renders properties as name=Edm.Type(value), by name.
func propsText(e events.Entity) string {
	names := sortedNames(e)
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = n + "=" + valueText(e[n])
	}
	return strings.Join(parts, " ")
}

// sortedNames returns the keys of m in order.
func sortedNames[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// entityJSON is an entity in the OData JSON form commands use, so every
// EDM type survives; nil stays absent.
func entityJSON(e events.Entity) json.RawMessage {
	if e == nil {
		return nil
	}
	b, _ := events.MarshalEntityJSON(e)
	return b
}
