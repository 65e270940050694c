package cli

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"os"
	"text/tabwriter"

	"github.com/tablejournal/tablejournal/internal/snapfile"
	"github.com/tablejournal/tablejournal/replay"
)

var asofCommand = replayCommand{
	usage: "--table T [--pk P [--rk R]] [--seq N | --time T | --cmd ID]",
	flags: func(rc *replayCmd, fs *flag.FlagSet) {
		fs.StringVar(&rc.table, "table", "", "table (required)")
		fs.StringVar(&rc.pk, "pk", "", "partition key: one partition (or, with --rk, one row); default the whole table")
		fs.StringVar(&rc.rk, "rk", "", "row key: one row (needs --pk)")
		rc.pointFlags(fs)
	},
	check: func(rc *replayCmd) error {
		if err := need(rc, "table"); err != nil {
			return err
		}
		if rc.set["rk"] && !rc.set["pk"] {
			return errors.New("--rk needs --pk")
		}
		_, _, err := rc.point()
		return err
	},
	nats: func(rc *replayCmd) natsNeed {
		switch {
		case rc.set["time"] || rc.set["cmd"]:
			return natsYes
		case rc.set["seq"]:
			return natsIfUp
		}
		return natsIfUp
	},
	run: func(ctx context.Context, rc *replayCmd) error {
		seq, p, err := rc.resolve(ctx)
		if err != nil {
			return err
		}
		at := pointText(p, seq)
		if rc.set["rk"] {
			row, ok, err := rc.rp.AsOfRow(ctx, rc.table, rc.pk, rc.rk, seq)
			if err != nil {
				return err
			}
			printAsOfRow(rc, at, seq, row, ok)
			return nil
		}
		return printAsOfRows(ctx, rc, at, seq)
	},
}

var historyCommand = replayCommand{
	usage: "--table T --pk P --rk R [--diff]",
	flags: func(rc *replayCmd, fs *flag.FlagSet) {
		fs.StringVar(&rc.table, "table", "", "table (required)")
		fs.StringVar(&rc.pk, "pk", "", "partition key (required)")
		fs.StringVar(&rc.rk, "rk", "", "row key (required)")
		fs.BoolVar(&rc.diff, "diff", false, "show what changed between consecutive versions")
	},
	check: func(rc *replayCmd) error { return need(rc, "table", "pk", "rk") },
	nats:  func(*replayCmd) natsNeed { return natsNo },
	run: func(ctx context.Context, rc *replayCmd) error {
		rows, err := rc.rp.History(ctx, rc.table, rc.pk, rc.rk)
		if err != nil {
			return err
		}
		printHistory(rc, rows)
		return nil
	},
}

var blameCommand = replayCommand{
	usage: "--cmd ID",
	flags: func(rc *replayCmd, fs *flag.FlagSet) {
		fs.StringVar(&rc.cmdID, "cmd", "", "command ID (required)")
	},
	check: func(rc *replayCmd) error { return need(rc, "cmd") },
	nats:  func(*replayCmd) natsNeed { return natsYes },
	run: func(ctx context.Context, rc *replayCmd) error {
		b, err := rc.rp.Blame(ctx, rc.cmdID)
		if err != nil {
			return err
		}
		printBlame(rc, b)
		return nil
	},
}

var rebuildCommand = replayCommand{
	usage: "--table T --into NEW [--to POINT | --seq N | --time T] [--from-snapshot FILE] [--workers N] [--resume]",
	flags: func(rc *replayCmd, fs *flag.FlagSet) {
		fs.StringVar(&rc.table, "table", "", "source table in the journal (default: the snapshot's)")
		fs.StringVar(&rc.into, "into", "", "destination table, empty or new (required)")
		fs.StringVar(&rc.to, "to", "", "last point applied: seq:N, time:T, cmd:ID (default the head)")
		fs.Uint64Var(&rc.seq, "seq", 0, "last journal sequence applied (like --to seq:N)")
		fs.StringVar(&rc.at, "time", "", "apply the journal as of this RFC 3339 time (like --to time:T)")
		fs.StringVar(&rc.file, "from-snapshot", "", "load this snapshot (a file, a blob URL with a SAS token, or azblob://CONTAINER/BLOB) first, then replay only the journal after it")
		fs.IntVar(&rc.workers, "workers", 0, "partitions applied at once (default 8)")
		fs.BoolVar(&rc.resume, "resume", false, "continue a rebuild that stopped: allow a non-empty --into")
	},
	check: func(rc *replayCmd) error {
		if err := need(rc, "into"); err != nil {
			return err
		}
		if !rc.set["table"] && !rc.set["from-snapshot"] {
			return errors.New("replay rebuild needs --table (or --from-snapshot)")
		}
		_, _, err := rc.point()
		return err
	},
	nats: func(*replayCmd) natsNeed { return natsYes },
	run: func(ctx context.Context, rc *replayCmd) error {
		seq, _, err := rc.resolve(ctx)
		if err != nil {
			return err
		}
		cfg := replay.RebuildConfig{Table: rc.table, Into: rc.into, To: seq, Resume: rc.resume, Workers: rc.workers}
		if seq == 0 {
			return fmt.Errorf("rebuild: %w: the point is before the first command; nothing to rebuild", replay.ErrBadPoint)
		}
		if rc.file != "" {
			f, err := snapfile.Open(ctx, rc.file, rc.tables)
			if err != nil {
				return err
			}
			defer f.Close()
			cfg.Snapshot = f
		}
		var done func()
		cfg.Progress, done = rc.progress("rebuild", "cmd")
		st, err := rc.rp.Rebuild(ctx, cfg)
		done()
		if err != nil {
			return err
		}
		printRebuild(rc, st)
		return nil
	},
}

var undoCommand = replayCommand{
	usage: "--cmd ID [--apply] [--force]",
	flags: func(rc *replayCmd, fs *flag.FlagSet) {
		fs.StringVar(&rc.cmdID, "cmd", "", "the command to undo (required)")
		fs.BoolVar(&rc.apply, "apply", false, "publish the undo commands and wait for their outcomes (default: dry run)")
		fs.BoolVar(&rc.force, "force", false, "include rows that later commands changed again")
		timeoutFlag(rc, fs)
	},
	check: func(rc *replayCmd) error { return need(rc, "cmd") },
	nats:  func(*replayCmd) natsNeed { return natsYes },
	run: func(ctx context.Context, rc *replayCmd) error {
		p, err := rc.rp.PlanUndo(ctx, rc.cmdID, replay.UndoOptions{Force: rc.force})
		if err != nil {
			return err
		}
		return runPlan(ctx, rc, p)
	},
}

var restoreCommand = replayCommand{
	usage: "--table T [--pk P] (--to POINT | --seq N | --time T) [--apply]",
	flags: func(rc *replayCmd, fs *flag.FlagSet) {
		fs.StringVar(&rc.table, "table", "", "table (required)")
		fs.StringVar(&rc.pk, "pk", "", "partition key: restore one partition (default the whole table)")
		fs.StringVar(&rc.to, "to", "", "the point to return to: seq:N, time:T, cmd:ID")
		fs.Uint64Var(&rc.seq, "seq", 0, "the point to return to: journal sequence N")
		fs.StringVar(&rc.at, "time", "", "the point to return to: as of this RFC 3339 time")
		fs.BoolVar(&rc.apply, "apply", false, "publish the restore commands and wait for their outcomes (default: dry run)")
		timeoutFlag(rc, fs)
	},
	check: func(rc *replayCmd) error {
		if err := need(rc, "table"); err != nil {
			return err
		}
		_, named, err := rc.point()
		if err == nil && !named {
			err = errors.New("replay restore needs a point: --to, --seq or --time")
		}
		return err
	},
	nats: func(*replayCmd) natsNeed { return natsYes },
	run: func(ctx context.Context, rc *replayCmd) error {
		seq, _, err := rc.resolve(ctx)
		if err != nil {
			return err
		}
		p, err := rc.rp.PlanRestore(ctx, rc.table, rc.partition(), seq)
		if err != nil {
			return err
		}
		return runPlan(ctx, rc, p)
	},
}

var snapshotCommand = replayCommand{
	usage: "--table T --out FILE [--at SEQ] [--workers N]",
	flags: func(rc *replayCmd, fs *flag.FlagSet) {
		fs.StringVar(&rc.table, "table", "", "table (required)")
		fs.StringVar(&rc.file, "out", "", "where to write the snapshot: a file, - for stdout, a blob URL with a SAS token, or azblob://CONTAINER/BLOB in the --tables account (required)")
		fs.Uint64Var(&rc.atSeq, "at", 0, "journal sequence the snapshot is consistent at (default: the highest the projector has fully applied)")
		fs.IntVar(&rc.workers, "workers", 0, "partitions read at once, listed from the table (default 8); 1 reads the table in one scan")
		fs.StringVar(&rc.durable, "durable", "", "prefix of the projector's durable consumers, read for the default --at (default \"projector\")")
	},
	check: func(rc *replayCmd) error { return need(rc, "table", "out") },
	nats: func(rc *replayCmd) natsNeed {
		if rc.set["at"] {
			return natsIfUp // --at is checked against the journal's head when it is up
		}
		return natsYes
	},
	run: func(ctx context.Context, rc *replayCmd) error {
		if rc.set["at"] && rc.atSeq == 0 {
			return usageError(errors.New("--at 0 is the empty table; give a journal sequence"))
		}
		cfg := replay.SnapshotConfig{Table: rc.table, Seq: rc.atSeq, Workers: rc.workers}
		var st replay.SnapshotStats
		write := func(w io.Writer) error {
			var err error
			st, err = rc.rp.Snapshot(ctx, w, cfg)
			return err
		}
		var err error
		if rc.file == "-" {
			err = write(rc.stdout)
		} else {
			err = writeSnapshot(ctx, rc, write)
		}
		if err != nil {
			return err
		}
		out := rc.stdout
		if rc.file == "-" {
			out = rc.stderr
		}
		printSnapshot(rc, out, st)
		return nil
	},
}

var loadCommand = replayCommand{
	usage: "--in FILE --into NEW [--workers N] [--resume]",
	flags: func(rc *replayCmd, fs *flag.FlagSet) {
		fs.StringVar(&rc.file, "in", "", "the snapshot: a file, - for stdin, a blob URL with a SAS token, or azblob://CONTAINER/BLOB in the --tables account (required)")
		fs.StringVar(&rc.into, "into", "", "destination table, empty or new (required)")
		fs.IntVar(&rc.workers, "workers", 0, "transactions run at once (default 8)")
		fs.BoolVar(&rc.resume, "resume", false, "finish a load that stopped: allow a non-empty --into")
	},
	check: func(rc *replayCmd) error { return need(rc, "in", "into") },
	nats:  func(*replayCmd) natsNeed { return natsNo },
	run: func(ctx context.Context, rc *replayCmd) error {
		in := io.Reader(os.Stdin)
		if rc.file != "-" {
			f, err := snapfile.Open(ctx, rc.file, rc.tables)
			if err != nil {
				return err
			}
			defer f.Close()
			in = f
		}
		st, err := rc.rp.Load(ctx, in, replay.LoadConfig{Into: rc.into, Resume: rc.resume, Workers: rc.workers})
		if err != nil {
			return err
		}
		printLoad(rc, st)
		return nil
	},
}

// timeoutFlag registers --timeout, the wait for the outcomes of --apply.
func timeoutFlag(rc *replayCmd, fs *flag.FlagSet) {
	fs.DurationVar(&rc.timeout, "timeout", replay.DefaultAwait, "with --apply: how long to wait for the projector's outcomes")
}

// runPlan prints a plan, and with --apply publishes it and prints the
// outcomes. A blocked plan is refused without publishing anything.
func runPlan(ctx context.Context, rc *replayCmd, p *replay.Plan) error {
	if !rc.apply || p.Blocked() {
		printPlan(rc, p, nil)
		if p.Blocked() {
			return refused(fmt.Errorf("undo %s: %w: %s; --force includes them", p.Of, replay.ErrConflicts, plural(len(p.Conflicts()), "row")))
		}
		return nil
	}
	if rc.timeout <= 0 {
		return usageError(errors.New("--timeout must be positive"))
	}
	actx, cancel := context.WithTimeout(ctx, rc.timeout)
	defer cancel()
	res, err := rc.rp.Apply(actx, p)
	if err != nil && errors.Is(actx.Err(), context.DeadlineExceeded) && ctx.Err() == nil {
		err = fmt.Errorf("%s: no outcome for %s within --timeout %s: is a projector running? (applying again is safe: the commands are deduplicated)",
			p.Kind, plural(len(p.Commands), "command"), rc.timeout)
	}
	if err == nil || errors.Is(err, replay.ErrRejected) {
		printPlan(rc, p, res)
	}
	return refused(err)
}

// pointText renders the resolved point for output.
func pointText(p replay.Point, seq uint64) string {
	if seq == math.MaxInt64 {
		return "now"
	}
	switch p.Kind {
	case replay.AtHead:
		return fmt.Sprintf("seq %d (head)", seq)
	case replay.AtSeq:
		return fmt.Sprintf("seq %d", seq)
	case replay.AtTime:
		return fmt.Sprintf("seq %d (as of %s)", seq, timeText(p.Time))
	}
	return fmt.Sprintf("seq %d (just after %s)", seq, p.Cmd)
}

func newTab(w io.Writer) *tabwriter.Writer { return tabwriter.NewWriter(w, 0, 4, 2, ' ', 0) }
