package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"text/tabwriter"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/events/rules"
	"github.com/tablejournal/tablejournal/wire"
)

// Result is a command's typed result: rendered once as text, and as JSON
// by encoding/json.
type Result interface {
	Text(w io.Writer)
}

// Render prints r as JSON (one line) or as text.
func Render(w io.Writer, asJSON bool, r Result) {
	if asJSON {
		PrintJSON(w, r)
		return
	}
	r.Text(w)
}

// PrintJSON prints v as one line of JSON. It is the one JSON printer of
// every command.
func PrintJSON(w io.Writer, v any) {
	b, err := json.Marshal(v)
	if err != nil { // cannot happen: plain structs
		fmt.Fprintf(w, "{\"error\":%q}\n", err.Error())
		return
	}
	w.Write(append(b, '\n'))
}

// progress is a progress bar drawn on a terminal. A nil *Progress draws
// nothing, so callers need not check.
type Progress struct {
	bar  *progressbar.ProgressBar
	w    io.Writer
	keep bool // leave the finished bar on its line
}

// UnitBytes is the unit of a bar that counts bytes.
const UnitBytes = "bytes"

// NewProgress returns a bar on w when w is a terminal, and nil otherwise.
// size -1 draws a spinner; unit is UnitBytes or what the count counts
// ("cmd", "row"). A bar counting bytes is cleared when finished; others
// stay on their line.
func NewProgress(stdio IO, w io.Writer, size int64, what, unit string) *Progress {
	if !stdio.Terminal(w) {
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
	if unit == UnitBytes {
		opts = append(opts, progressbar.OptionShowBytes(true), progressbar.OptionClearOnFinish())
	} else {
		opts = append(opts, progressbar.OptionShowCount(), progressbar.OptionShowIts(), progressbar.OptionSetItsString(unit))
	}
	return &Progress{bar: progressbar.NewOptions64(size, opts...), w: w, keep: unit != UnitBytes}
}

// Set moves the bar to done of total, raising its end when total grew.
func (p *Progress) Set(done, total int64) {
	if p == nil {
		return
	}
	if total > p.bar.GetMax64() {
		p.bar.ChangeMax64(total)
	}
	_ = p.bar.Set64(done)
}

// Add moves the bar n further.
func (p *Progress) Add(n int) {
	if p != nil {
		_ = p.bar.Add(n)
	}
}

// Clear takes the bar off its line, before other output.
func (p *Progress) Clear() {
	if p != nil {
		_ = p.bar.Clear()
	}
}

// Finish completes the bar.
func (p *Progress) Finish() {
	if p == nil {
		return
	}
	_ = p.bar.Finish()
	if p.keep {
		fmt.Fprintln(p.w)
	}
}

// Plural renders "1 row", "2 rows".
func Plural[N int | int64 | uint64](n N, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// TimeText renders a time as every command prints it: UTC, 7 fractional
// digits.
func TimeText(t time.Time) string { return t.UTC().Format(edm.DateTimeLayout) }

// NewTab is the tab writer of every aligned table the commands print.
func NewTab(w io.Writer) *tabwriter.Writer { return tabwriter.NewWriter(w, 0, 4, 2, ' ', 0) }

// SortedNames returns the keys of m in order.
func SortedNames[V any](m map[string]V) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

// OutcomeJSON is an outcome as the commands print it: its time with 7
// fractional digits, as every time they print.
type OutcomeJSON wire.Outcome

func (o OutcomeJSON) MarshalJSON() ([]byte, error) {
	type plain wire.Outcome
	return json.Marshal(struct {
		plain
		At string `json:"at"`
	}{plain(o), TimeText(o.At)})
}

// ErrorJSON is the --json form of an error that ended a command.
type ErrorJSON struct {
	ID    string `json:"id,omitempty"`
	Error string `json:"error"`
	Rule  string `json:"rule,omitempty"`
	Usage bool   `json:"usage,omitempty"`
}

// ErrorResult is err as ErrorJSON, naming the command ID id and the rule
// it broke, if any.
func ErrorResult(err error, id string) ErrorJSON {
	e := ErrorJSON{ID: id, Error: err.Error(), Usage: errors.Is(err, ErrUsage)}
	if ve := (*rules.ValidationError)(nil); errors.As(err, &ve) {
		e.Rule = string(ve.Rule)
	}
	return e
}
