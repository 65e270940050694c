package cli

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"time"

	"github.com/schollz/progressbar/v3"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/replay"
	"github.com/tablejournal/tablejournal/store/sqlite"
)

// ErrDrift marks a table that differs from its journal or from the table
// it was compared with: exit status 3.
var ErrDrift = errors.New("tables differ")

// diffFlags are the flags verify and diff add to the common ones.
type diffFlags struct {
	against      string
	max          int
	scratchLocal bool
}

var verifyCommand = replayCommand{
	usage: "--table T [--to POINT | --seq N | --time T] [--scratch-local] [--max N] [--workers N]",
	flags: func(rc *replayCmd, fs *flag.FlagSet) {
		fs.StringVar(&rc.table, "table", "", "the live table to check against its journal (required)")
		fs.StringVar(&rc.to, "to", "", "the point checked: seq:N, time:T, cmd:ID (default: what the projector has fully applied)")
		fs.Uint64Var(&rc.seq, "seq", 0, "the point checked: journal sequence N")
		fs.StringVar(&rc.at, "time", "", "the point checked: as of this RFC 3339 time")
		fs.IntVar(&rc.workers, "workers", 0, "partitions re-projected at once (default 8)")
		fs.StringVar(&rc.durable, "durable", "", "prefix of the projector's durable consumers, read for the default point (default \"projector\")")
		fs.BoolVar(&rc.df.scratchLocal, "scratch-local", false, "re-project into a temporary embedded store on this machine instead of a scratch table beside the live one (no writes to the table store)")
		fs.IntVar(&rc.df.max, "max", 100, "differences listed at most (0: all); the counts are always complete")
	},
	check: func(rc *replayCmd) error {
		if err := need(rc, "table"); err != nil {
			return err
		}
		_, _, err := rc.point()
		return err
	},
	nats: func(*replayCmd) natsNeed { return natsYes },
	run: func(ctx context.Context, rc *replayCmd) error {
		seq, named, err := namedSeq(ctx, rc)
		if err != nil {
			return err
		}
		if named && seq == 0 {
			return fmt.Errorf("verify: %w: the point is before the first command; nothing to check", replay.ErrBadPoint)
		}
		cfg := replay.VerifyConfig{Table: rc.table, Seq: seq, Workers: rc.workers}
		if rc.df.scratchLocal {
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
			cfg.Scratch = st
		}
		out := newDiffPrinter(rc)
		cfg.OnDiff, cfg.Progress = out.add, out.progress
		st, err := rc.rp.Verify(ctx, cfg)
		out.done()
		if err != nil {
			return err
		}
		return out.summary(st, "")
	},
}

var diffCommand = replayCommand{
	usage: "--table A --against B [--to POINT | --seq N | --time T] [--max N]",
	flags: func(rc *replayCmd, fs *flag.FlagSet) {
		fs.StringVar(&rc.table, "table", "", "the table checked, such as the live one (required)")
		fs.StringVar(&rc.df.against, "against", "", "the reference table, such as a rebuilt shadow (required)")
		fs.StringVar(&rc.to, "to", "", "compare both as they stood at this point: seq:N, time:T, cmd:ID (default every row as stored)")
		fs.Uint64Var(&rc.seq, "seq", 0, "compare both as they stood at journal sequence N")
		fs.StringVar(&rc.at, "time", "", "compare both as they stood at this RFC 3339 time")
		fs.IntVar(&rc.df.max, "max", 100, "differences listed at most (0: all); the counts are always complete")
	},
	check: func(rc *replayCmd) error {
		if err := need(rc, "table", "against"); err != nil {
			return err
		}
		if rc.table == rc.df.against {
			return errors.New("--table and --against name the same table")
		}
		_, _, err := rc.point()
		return err
	},
	nats: func(rc *replayCmd) natsNeed {
		if rc.set["time"] || rc.set["to"] {
			return natsYes
		}
		return natsNo
	},
	run: func(ctx context.Context, rc *replayCmd) error {
		seq, _, err := namedSeq(ctx, rc)
		if err != nil {
			return err
		}
		out := newDiffPrinter(rc)
		st, err := rc.rp.DiffTables(ctx, replay.DiffConfig{Table: rc.table, Against: rc.df.against, Seq: seq, OnDiff: out.add, Progress: out.progress})
		out.done()
		if err != nil {
			return err
		}
		return out.summary(st, rc.df.against)
	},
}

// namedSeq resolves the point the flags name; 0 and false when they name
// none.
func namedSeq(ctx context.Context, rc *replayCmd) (uint64, bool, error) {
	if _, named, _ := rc.point(); !named {
		return 0, false, nil
	}
	seq, _, err := rc.resolve(ctx)
	return seq, true, err
}

// diffPrinter prints the differences of verify and diff as they are
// found (text), or collects them for one JSON object; it draws a progress
// bar per phase on a terminal.
type diffPrinter struct {
	rc        *replayCmd
	listed    []diffJSONRow
	shown     int
	truncated bool

	phase string
	bar   *progressbar.ProgressBar
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

func newDiffPrinter(rc *replayCmd) *diffPrinter { return &diffPrinter{rc: rc} }

func (p *diffPrinter) add(d replay.Difference) error {
	if p.rc.df.max > 0 && p.shown >= p.rc.df.max {
		p.truncated = true
		return nil
	}
	p.shown++
	got, want := d.Got, d.Want
	var cols []string
	if d.Kind == replay.Changed {
		got, want = events.Entity{}, events.Entity{}
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
	if p.rc.asJSON {
		enc := func(e events.Entity) json.RawMessage {
			if e == nil {
				return nil
			}
			b, _ := events.MarshalEntityJSON(e)
			return b
		}
		p.listed = append(p.listed, diffJSONRow{Kind: string(d.Kind), PK: d.PK, Key: d.Key, Columns: cols, Got: enc(got), Want: enc(want)})
		return nil
	}
	p.clearBar()
	w := p.rc.stdout
	switch d.Kind {
	case replay.Changed:
		fmt.Fprintf(w, "changed  %q %q\n", d.PK, d.Key)
		for _, c := range d.Columns {
			fmt.Fprintf(w, "    %s: %s, want %s\n", c.Name, optValue(c.After, c.HasNow), optValue(c.Before, c.HadBefore))
		}
	case replay.Missing:
		fmt.Fprintf(w, "missing  %q %q  %s\n", d.PK, d.Key, propsText(d.Want))
	case replay.Extra:
		fmt.Fprintf(w, "extra    %q %q  %s\n", d.PK, d.Key, propsText(d.Got))
	}
	return nil
}

func optValue(v events.Value, ok bool) string {
	if !ok {
		return "(none)"
	}
	return valueText(v)
}

// progress draws one bar per phase: the re-projection in commands, then
// the comparison in rows (a spinner: the total is not known).
func (p *diffPrinter) progress(phase string, done, total int64) {
	f, ok := p.rc.stderr.(*os.File)
	if !ok || p.rc.asJSON || !replayTerminal(f) {
		return
	}
	if phase != p.phase {
		p.done()
		p.phase = phase
		unit := "row"
		if phase == "rebuild" {
			unit = "cmd"
		}
		size := total // -1: a spinner
		if total >= 0 {
			size = max(total, 1)
		}
		p.bar = progressbar.NewOptions64(size,
			progressbar.OptionSetWriter(p.rc.stderr),
			progressbar.OptionSetDescription(phase),
			progressbar.OptionShowCount(),
			progressbar.OptionShowIts(),
			progressbar.OptionSetItsString(unit),
			progressbar.OptionSetWidth(30),
			progressbar.OptionThrottle(100*time.Millisecond),
		)
	}
	if total > p.bar.GetMax64() {
		p.bar.ChangeMax64(total)
	}
	_ = p.bar.Set64(done)
}

// clearBar takes the bar off its line before a difference is printed.
func (p *diffPrinter) clearBar() {
	if p.bar != nil {
		_ = p.bar.Clear()
	}
}

// done ends the current bar.
func (p *diffPrinter) done() {
	if p.bar != nil {
		_ = p.bar.Finish()
		fmt.Fprintln(p.rc.stderr)
		p.bar = nil
	}
}

// summary prints the counts, and returns ErrDrift when there are
// differences. against is the reference table; "" for the journal.
func (p *diffPrinter) summary(st replay.DiffStats, against string) error {
	reference := against
	if against == "" {
		reference = "its journal"
	}
	at := fmt.Sprintf("seq %d", st.Seq)
	if st.Seq == math.MaxInt64 {
		at = "every row as stored"
	}
	if p.rc.asJSON {
		v := map[string]any{"table": st.Table, "seq": st.Seq, "rows": st.Rows,
			"identical": st.Identical(), "missing": st.Missing, "extra": st.Extra, "changed": st.Changed,
			"differences": p.listed, "truncated": p.truncated, "seconds": st.Elapsed.Seconds()}
		if p.listed == nil {
			v["differences"] = []diffJSONRow{}
		}
		if against != "" {
			v["against"] = against
		}
		if st.Rebuild != nil {
			v["commands"] = st.Rebuild.Commands
			v["rebuildSeconds"] = st.Rebuild.Elapsed.Seconds()
		}
		replayJSON(p.rc.stdout, v)
	} else {
		w := p.rc.stdout
		if p.truncated {
			fmt.Fprintf(w, "... %d more (--max %d)\n", st.Differences()-int64(p.shown), p.rc.df.max)
		}
		how := ""
		if st.Rebuild != nil {
			how = fmt.Sprintf(", %s re-projected in %s", plural(st.Rebuild.Commands, "command"), st.Rebuild.Elapsed.Round(time.Millisecond))
		}
		if st.Identical() {
			fmt.Fprintf(w, "%s at %s: identical to %s (%s compared%s)\n", st.Table, at, reference, plural(st.Rows, "row"), how)
		} else {
			fmt.Fprintf(w, "%s at %s: %s from %s in %s compared: %d missing, %d extra, %d changed%s\n", st.Table, at,
				plural(st.Differences(), "difference"), reference, plural(st.Rows, "row"), st.Missing, st.Extra, st.Changed, how)
		}
	}
	if st.Identical() {
		return nil
	}
	return driftError(fmt.Sprintf("%s differs from %s at %s: %s", st.Table, reference, at, plural(st.Differences(), "row")))
}

// driftError is ErrDrift without repeating it in the message.
type driftError string

func (e driftError) Error() string { return string(e) }
func (e driftError) Unwrap() error { return ErrDrift }
