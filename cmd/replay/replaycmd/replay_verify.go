package replaycmd

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/tablejournal/tablejournal/cmd/internal/cli"
	"github.com/tablejournal/tablejournal/cmd/internal/entityfmt"
	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/replay"
	"github.com/tablejournal/tablejournal/replay/rebuild"
	"github.com/tablejournal/tablejournal/store/sqlite"
	"github.com/tablejournal/tablejournal/wire"
)

// verifyCmd is replay verify.
type verifyCmd struct {
	replayBase
	cfg          rebuild.VerifyConfig
	pt           pointFlags
	scratchLocal bool
	max          int
}

func (c *verifyCmd) flags(fs *flag.FlagSet) {
	fs.StringVar(&c.cfg.Table, "table", "", "the live table to check against its journal (required)")
	c.pt.rangeFlags(fs, "the point checked: seq:N, time:T, cmd:ID (default: what the projector has fully applied)",
		"the point checked: journal sequence N", "the point checked: as of this RFC 3339 time")
	c.workersFlag(fs, "partitions re-projected at once (default 8)")
	c.durableFlag(fs, "prefix of the projector's durable consumers, read for the default point (default \""+wire.DefaultDurable+"\")")
	fs.BoolVar(&c.scratchLocal, "scratch-local", false, "re-project into a temporary embedded store on this machine instead of a scratch table beside the live one (no writes to the table store)")
	maxFlag(fs, &c.max)
}

func maxFlag(fs *flag.FlagSet, v *int) {
	fs.IntVar(v, "max", 100, "differences listed at most (0: all); the counts are always complete")
}

func (c *verifyCmd) check() error {
	if err := c.need("table"); err != nil {
		return err
	}
	_, _, err := c.pt.point(c.set)
	return err
}

func (c *verifyCmd) nats() natsNeed { return natsYes }

func (c *verifyCmd) run(ctx context.Context, stdio cli.IO) error {
	seq, named, err := c.namedSeq(ctx, &c.pt)
	if err != nil {
		return err
	}
	if named && seq == 0 {
		return fmt.Errorf("verify: %w: the point is before the first command; nothing to check", replay.ErrBadPoint)
	}
	c.cfg.Seq = seq
	if c.scratchLocal {
		dir, err := os.MkdirTemp("", "tablejournal-verify-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		st, err := sqlite.Open(ctx, filepath.Join(dir, "scratch.db"))
		if err != nil {
			return fmt.Errorf("scratch store: %w", err)
		}
		defer st.Close()
		c.cfg.Scratch = st
	}
	if f, err := recordedSnapshotFor(ctx, &c.replayBase, stdio, "verify", c.cfg.Table, seq); err != nil {
		return err
	} else if f != nil {
		defer f.Close()
		c.cfg.Snapshot = f
	}
	out := newDiffPrinter(stdio, c.asJSON, c.max)
	c.cfg.OnDiff, c.cfg.Progress = out.add, out.progress
	st, err := rebuild.New(c.rp).Verify(ctx, c.cfg)
	out.bar.Finish()
	if err != nil {
		return err
	}
	return out.summary(st, "")
}

// diffCmd is replay diff.
type diffCmd struct {
	replayBase
	cfg rebuild.DiffConfig
	pt  pointFlags
	max int
}

func (c *diffCmd) flags(fs *flag.FlagSet) {
	fs.StringVar(&c.cfg.Table, "table", "", "the table checked, such as the live one (required)")
	fs.StringVar(&c.cfg.Against, "against", "", "the reference table, such as a rebuilt shadow (required)")
	c.pt.rangeFlags(fs, "compare both as they stood at this point: seq:N, time:T, cmd:ID (default every row as stored)",
		"compare both as they stood at journal sequence N", "compare both as they stood at this RFC 3339 time")
	maxFlag(fs, &c.max)
}

func (c *diffCmd) check() error {
	// Table names are case-insensitive: Orders and ORDERS are one table.
	return c.needPoint(&c.pt, strings.EqualFold(c.cfg.Table, c.cfg.Against), "--table and --against name the same table", "table", "against")
}

func (c *diffCmd) nats() natsNeed { return c.natsIf(natsNo, "time", "to") }

func (c *diffCmd) run(ctx context.Context, stdio cli.IO) error {
	seq, _, err := c.namedSeq(ctx, &c.pt)
	if err != nil {
		return err
	}
	out := newDiffPrinter(stdio, c.asJSON, c.max)
	c.cfg.Seq, c.cfg.OnDiff, c.cfg.Progress = seq, out.add, out.progress
	st, err := rebuild.New(c.rp).DiffTables(ctx, c.cfg)
	out.bar.Finish()
	if err != nil {
		return err
	}
	return out.summary(st, c.cfg.Against)
}

// diffPrinter prints the differences of verify and diff as they are
// found (text), or collects them for one JSON object; it draws a progress
// bar per phase on a terminal.
type diffPrinter struct {
	stdio     cli.IO
	asJSON    bool
	max       int
	listed    []diffJSONRow
	shown     int
	truncated bool

	phase string
	bar   *cli.Progress
}

// diffJSONRow is one difference in JSON output: the rows (or, for a
// changed row, its differing columns) in the OData JSON form.
type diffJSONRow struct {
	Kind    string          `json:"kind"`
	PK      string          `json:"pk"`
	Key     string          `json:"key"`
	Columns []string        `json:"columns,omitempty"`
	Got     json.RawMessage `json:"got,omitempty"`
	Want    json.RawMessage `json:"want,omitempty"`
}

func newDiffPrinter(stdio cli.IO, asJSON bool, max int) *diffPrinter {
	return &diffPrinter{stdio: stdio, asJSON: asJSON, max: max}
}

func (p *diffPrinter) add(d rebuild.Difference) error {
	if p.max > 0 && p.shown >= p.max {
		p.truncated = true
		return nil
	}
	p.shown++
	if p.asJSON {
		got, want := d.Got, d.Want
		var cols []string
		if d.Kind == rebuild.Changed {
			got, want = edm.Entity{}, edm.Entity{}
			for _, c := range d.Columns {
				cols = append(cols, c.Name)
				if c.HasNow {
					got[c.Name] = c.After
				}
				if c.HadBefore {
					want[c.Name] = c.Before
				}
			}
		}
		p.listed = append(p.listed, diffJSONRow{Kind: string(d.Kind), PK: d.PK, Key: d.Key, Columns: cols, Got: entityfmt.JSON(got), Want: entityfmt.JSON(want)})
		return nil
	}
	p.bar.Clear()
	w := p.stdio.Stdout
	switch d.Kind {
	case rebuild.Changed:
		fmt.Fprintf(w, "changed  %q %q\n", d.PK, d.Key)
		for _, c := range d.Columns {
			fmt.Fprintf(w, "    %s: %s, want %s\n", c.Name, optValue(c.After, c.HasNow), optValue(c.Before, c.HadBefore))
		}
	case rebuild.Missing:
		fmt.Fprintf(w, "missing  %q %q  %s\n", d.PK, d.Key, entityfmt.Props(d.Want))
	case rebuild.Extra:
		fmt.Fprintf(w, "extra    %q %q  %s\n", d.PK, d.Key, entityfmt.Props(d.Got))
	}
	return nil
}

func optValue(v edm.Value, ok bool) string {
	if !ok {
		return "(none)"
	}
	return entityfmt.Value(v)
}

// progress draws one bar per phase: the re-projection in commands, then
// the comparison in rows (a spinner: the total is not known).
func (p *diffPrinter) progress(phase string, done, total int64) {
	if p.asJSON || !p.stdio.Terminal(p.stdio.Stderr) {
		return
	}
	if phase != p.phase {
		p.bar.Finish()
		p.phase = phase
		unit := "row"
		if phase == "rebuild" {
			unit = "cmd"
		}
		size := total // -1: a spinner
		if total >= 0 {
			size = max(total, 1)
		}
		p.bar = cli.NewProgress(p.stdio, p.stdio.Stderr, size, phase, unit)
	}
	p.bar.Set(done, total)
}

// diffSummary is the result of verify and diff.
type diffSummary struct {
	Against        string        `json:"against,omitempty"` // the reference table; none for the journal
	Changed        int64         `json:"changed"`
	Commands       *int64        `json:"commands,omitempty"` // re-projected by verify
	Differences    []diffJSONRow `json:"differences"`
	Extra          int64         `json:"extra"`
	Identical      bool          `json:"identical"`
	Missing        int64         `json:"missing"`
	RebuildSeconds *float64      `json:"rebuildSeconds,omitempty"`
	Rows           int64         `json:"rows"`
	Seconds        float64       `json:"seconds"`
	Seq            uint64        `json:"seq"`
	Table          string        `json:"table"`
	Truncated      bool          `json:"truncated"`

	st    rebuild.DiffStats
	shown int
	max   int
}

// summary prints the counts, and returns ErrDrift when there are
// differences. against is the reference table; "" for the journal.
func (p *diffPrinter) summary(st rebuild.DiffStats, against string) error {
	s := diffSummary{Against: against, Changed: st.Changed, Differences: p.listed, Extra: st.Extra, Identical: st.Identical(),
		Missing: st.Missing, Rows: st.Rows, Seconds: st.Elapsed.Seconds(), Seq: st.Seq, Table: st.Table, Truncated: p.truncated,
		st: st, shown: p.shown, max: p.max}
	if s.Differences == nil {
		s.Differences = []diffJSONRow{}
	}
	if rb := st.Rebuild; rb != nil {
		secs := rb.Elapsed.Seconds()
		s.Commands, s.RebuildSeconds = &rb.Commands, &secs
	}
	cli.Render(p.stdio.Stdout, p.asJSON, s)
	if st.Identical() {
		return nil
	}
	if st.TableLost {
		return driftError(fmt.Sprintf("%s does not exist in the table store; its journal has it at %s: %s missing",
			st.Table, s.at(), cli.Plural(st.Differences(), "row")))
	}
	return driftError(fmt.Sprintf("%s differs from %s at %s: %s", st.Table, s.reference(), s.at(), cli.Plural(st.Differences(), "row")))
}

// reference names what the table was compared with.
func (s diffSummary) reference() string {
	if s.Against == "" {
		return "its journal"
	}
	return s.Against
}

func (s diffSummary) at() string {
	if s.Seq == math.MaxInt64 {
		return "every row as stored"
	}
	return fmt.Sprintf("seq %d", s.Seq)
}

func (s diffSummary) Text(w io.Writer) {
	st := s.st
	if s.Truncated {
		fmt.Fprintf(w, "... %d more (--max %d)\n", st.Differences()-int64(s.shown), s.max)
	}
	how := ""
	if st.Rebuild != nil {
		how = fmt.Sprintf(", %s re-projected in %s", cli.Plural(st.Rebuild.Commands, "command"), st.Rebuild.Elapsed.Round(time.Millisecond))
	}
	if st.Identical() {
		fmt.Fprintf(w, "%s at %s: identical to %s (%s compared%s)\n", st.Table, s.at(), s.reference(), cli.Plural(st.Rows, "row"), how)
		return
	}
	fmt.Fprintf(w, "%s at %s: %s from %s in %s compared: %d missing, %d extra, %d changed%s\n", st.Table, s.at(),
		cli.Plural(st.Differences(), "difference"), s.reference(), cli.Plural(st.Rows, "row"), st.Missing, st.Extra, st.Changed, how)
}

// driftError is ErrDrift without repeating it in the message.
type driftError string

func (e driftError) Error() string { return string(e) }
func (e driftError) Unwrap() error { return cli.ErrDrift }
