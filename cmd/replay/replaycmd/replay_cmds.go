package replaycmd

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"time"

	"github.com/tablejournal/tablejournal/cmd/internal/cli"
	"github.com/tablejournal/tablejournal/wire"

	"github.com/tablejournal/tablejournal/replay"
	"github.com/tablejournal/tablejournal/replay/history"
	"github.com/tablejournal/tablejournal/replay/rebuild"
	"github.com/tablejournal/tablejournal/replay/repair"
	"github.com/tablejournal/tablejournal/replay/snapshot"
	"github.com/tablejournal/tablejournal/rows"
	"github.com/tablejournal/tablejournal/store"
)

// rowFlags are --table, --pk and --rk: a row, or with fewer of them a
// partition or table.
type rowFlags struct{ table, pk, rk string }

func (r *rowFlags) register(fs *flag.FlagSet, pk, rk string) {
	fs.StringVar(&r.table, "table", "", "table (required)")
	fs.StringVar(&r.pk, "pk", "", pk)
	fs.StringVar(&r.rk, "rk", "", rk)
}

// asofCmd is replay asof.
type asofCmd struct {
	replayBase
	rowFlags
	pt pointFlags
}

func (c *asofCmd) flags(fs *flag.FlagSet) {
	c.register(fs, "partition key: one partition (or, with --rk, one row); default the whole table", "row key: one row (needs --pk)")
	fs.Uint64Var(&c.pt.seq, "seq", 0, "the point: just after journal sequence N")
	fs.StringVar(&c.pt.at, "time", "", "the point: the state as of this RFC 3339 time")
	fs.StringVar(&c.pt.cmd, "cmd", "", "the point: just after this command")
}

func (c *asofCmd) check() error {
	return c.needPoint(&c.pt, c.set["rk"] && !c.set["pk"], "--rk needs --pk", "table")
}

func (c *asofCmd) nats() natsNeed { return c.natsIf(natsIfUp, "time", "cmd") }

func (c *asofCmd) run(ctx context.Context, stdio cli.IO) error {
	seq, p, err := c.resolve(ctx, &c.pt)
	if err != nil {
		return err
	}
	at := pointText(p, seq)
	if c.set["rk"] {
		row, ok, err := history.New(c.rp).AsOfRowErased(ctx, c.table, c.pk, c.rk, seq)
		if err != nil {
			return err
		}
		cli.Render(stdio.Stdout, c.asJSON, newAsOfRow(c.table, c.pk, c.rk, at, seq, row, ok))
		return nil
	}
	return c.rows(ctx, stdio.Stdout, at, seq)
}

// partition is what --pk selects: that partition when given (--pk "" is
// the partition with the empty key, which Azure allows), else the whole
// table.
func partition(set map[string]bool, pk string) store.Partition {
	if set["pk"] {
		return store.InPartition(pk)
	}
	return store.AllPartitions
}

// historyCmd is replay history.
type historyCmd struct {
	replayBase
	rowFlags
	diff bool
}

func (c *historyCmd) flags(fs *flag.FlagSet) {
	c.register(fs, "partition key (required)", "row key (required)")
	fs.BoolVar(&c.diff, "diff", false, "show what changed between consecutive versions")
}

func (c *historyCmd) check() error   { return c.need("table", "pk", "rk") }
func (c *historyCmd) nats() natsNeed { return natsNo }

func (c *historyCmd) run(ctx context.Context, stdio cli.IO) error {
	rs, err := history.New(c.rp).History(ctx, c.table, c.pk, c.rk)
	if err != nil {
		return err
	}
	h := newHistory(c.table, c.pk, c.rk, rs, c.diff)
	vt, err := c.rp.VersionTable(ctx, c.table) // a plain table's history (SPEC §4)
	if err != nil {
		return err
	}
	hz, err := rows.ReadHorizon(ctx, c.rp.Store(), vt, c.pk)
	if err != nil {
		return err
	}
	if len(rs) > 0 && rs[0].Version > 0 && hz.Seq > 0 {
		// The versions before the oldest kept are not in the table: say
		// that a prune removed them, not that the row has no more.
		h.Pruned = &prunedOut{Before: hz.Seq, Cmd: hz.Cmd, Versions: rs[0].Version}
	}
	cli.Render(stdio.Stdout, c.asJSON, h)
	return nil
}

// blameCmd is replay blame.
type blameCmd struct {
	replayBase
	cmd string
}

func (c *blameCmd) flags(fs *flag.FlagSet) {
	fs.StringVar(&c.cmd, "cmd", "", "command ID (required)")
}

func (c *blameCmd) check() error   { return c.need("cmd") }
func (c *blameCmd) nats() natsNeed { return natsYes }

func (c *blameCmd) run(ctx context.Context, stdio cli.IO) error {
	b, err := history.New(c.rp).Blame(ctx, c.cmd)
	if err != nil {
		return err
	}
	cli.Render(stdio.Stdout, c.asJSON, newBlame(b))
	return nil
}

// rebuildCmd is replay rebuild.
type rebuildCmd struct {
	replayBase
	cfg      rebuild.Config
	pt       pointFlags
	snapshot string
	pk       string
	behind   bool
}

func (c *rebuildCmd) flags(fs *flag.FlagSet) {
	fs.StringVar(&c.cfg.Table, "table", "", "source table in the journal (default: the snapshot's)")
	fs.StringVar(&c.cfg.Into, "into", "", "destination table, empty or new (required, unless --pk)")
	fs.StringVar(&c.pk, "pk", "", "rebuild this partition of --table in place, from the journal, up to its head: the way back when the store lost writes (stop the projectors first)")
	fs.BoolVar(&c.behind, "behind", false, "rebuild in place every partition of --table (without --table: of every table) that projector status lists behind, and clear them there (stop the projectors first)")
	c.pt.rangeFlags(fs, "last point applied: seq:N, time:T, cmd:ID (default the head)",
		"last journal sequence applied (like --to seq:N)", "apply the journal as of this RFC 3339 time (like --to time:T)")
	fs.StringVar(&c.snapshot, "from-snapshot", "", "load this snapshot (a file, a blob URL with a SAS token, or azblob://CONTAINER/BLOB) first, then replay only the journal after it")
	c.workersFlag(fs, "partitions applied at once (default 8)")
	fs.BoolVar(&c.cfg.Resume, "resume", false, "continue a rebuild that stopped: allow a non-empty --into")
}

func (c *rebuildCmd) check() error {
	if c.set["pk"] {
		return c.checkPartition()
	}
	if c.behind {
		return c.checkBehind()
	}
	if err := c.need("into"); err != nil {
		return err
	}
	if !c.set["table"] && !c.set["from-snapshot"] {
		return errors.New("replay rebuild needs --table (or --from-snapshot)")
	}
	_, _, err := c.pt.point(c.set)
	return err
}

func (c *rebuildCmd) nats() natsNeed { return natsYes }

func (c *rebuildCmd) run(ctx context.Context, stdio cli.IO) error {
	if c.set["pk"] {
		return c.runPartition(ctx, stdio)
	}
	if c.behind {
		return c.runBehind(ctx, stdio)
	}
	seq, _, err := c.resolve(ctx, &c.pt)
	if err != nil {
		return err
	}
	if seq == 0 {
		return fmt.Errorf("rebuild: %w: the point is before the first command; nothing to rebuild", replay.ErrBadPoint)
	}
	c.cfg.To = seq
	if c.snapshot != "" {
		f, err := snapshot.Open(ctx, c.snapshot, c.tables, c.auth)
		if err != nil {
			return err
		}
		defer f.Close()
		c.cfg.Snapshot = f
	} else if f, err := c.recordedSnapshot(ctx, stdio); err != nil {
		return err
	} else if f != nil {
		defer f.Close()
	}
	var done func()
	c.cfg.Progress, done = c.progress(stdio, "rebuild", "cmd")
	st, err := rebuild.New(c.rp).Rebuild(ctx, c.cfg)
	done()
	if errors.Is(err, replay.ErrNotEmpty) {
		return fmt.Errorf("%w; to finish a rebuild into it that stopped, run the same command with --resume", err)
	}
	if err != nil {
		return err
	}
	cli.Render(stdio.Stdout, c.asJSON, newRebuild(st))
	return nil
}

// planFlags are the flags of the subcommands that plan commands: undo and
// restore.
type planFlags struct {
	apply   bool
	timeout time.Duration
}

func (p *planFlags) register(fs *flag.FlagSet, apply string) {
	fs.BoolVar(&p.apply, "apply", false, apply)
	fs.DurationVar(&p.timeout, "timeout", replay.DefaultAwait, "with --apply: how long to wait for the projector's outcomes")
}

// undoCmd is replay undo.
type undoCmd struct {
	replayBase
	cmd  string
	opts repair.UndoOptions
	plan planFlags
}

func (c *undoCmd) flags(fs *flag.FlagSet) {
	fs.StringVar(&c.cmd, "cmd", "", "the command to undo (required)")
	fs.BoolVar(&c.opts.Force, "force", false, "include rows that later commands changed again")
	c.plan.register(fs, "publish the undo commands and wait for their outcomes (default: dry run)")
}

func (c *undoCmd) check() error   { return c.need("cmd") }
func (c *undoCmd) nats() natsNeed { return natsYes }

func (c *undoCmd) run(ctx context.Context, stdio cli.IO) error {
	p, err := repair.New(c.rp).PlanUndo(ctx, c.cmd, c.opts)
	if err != nil {
		return err
	}
	return runRepair(ctx, &c.replayBase, stdio, c.plan, p)
}

// restoreCmd is replay restore.
type restoreCmd struct {
	replayBase
	table, pk string
	pt        pointFlags
	plan      planFlags
}

func (c *restoreCmd) flags(fs *flag.FlagSet) {
	fs.StringVar(&c.table, "table", "", "table (required)")
	fs.StringVar(&c.pk, "pk", "", "partition key: restore one partition (default the whole table)")
	c.pt.rangeFlags(fs, "the point to return to: seq:N, time:T, cmd:ID",
		"the point to return to: journal sequence N", "the point to return to: as of this RFC 3339 time")
	c.plan.register(fs, "publish the restore commands and wait for their outcomes (default: dry run)")
}

func (c *restoreCmd) check() error {
	if err := c.need("table"); err != nil {
		return err
	}
	_, named, err := c.pt.point(c.set)
	if err == nil && !named {
		err = errors.New("replay restore needs a point: --to, --seq or --time")
	}
	return err
}

func (c *restoreCmd) nats() natsNeed { return natsYes }

func (c *restoreCmd) run(ctx context.Context, stdio cli.IO) error {
	seq, _, err := c.resolve(ctx, &c.pt)
	if err != nil {
		return err
	}
	p, err := repair.New(c.rp).PlanRestore(ctx, c.table, partition(c.set, c.pk), seq)
	if err != nil {
		return err
	}
	return runRepair(ctx, &c.replayBase, stdio, c.plan, p)
}

// snapshotCmd is replay snapshot.
type snapshotCmd struct {
	replayBase
	cfg snapshot.Config
	out string
}

func (c *snapshotCmd) flags(fs *flag.FlagSet) {
	fs.StringVar(&c.cfg.Table, "table", "", "table (required)")
	fs.StringVar(&c.out, "out", "", "where to write the snapshot: a file, - for stdout, a blob URL with a SAS token, or azblob://CONTAINER/BLOB in the --tables account (required)")
	fs.Uint64Var(&c.cfg.Seq, "at", 0, "journal sequence the snapshot is consistent at (default: the highest the projector has fully applied)")
	c.workersFlag(fs, "partitions read at once, listed from the table (default 8); 1 reads the table in one scan")
	c.durableFlag(fs, "prefix of the projector's durable consumers, read for the default --at (default \""+wire.DefaultDurable+"\")")
}

func (c *snapshotCmd) check() error { return c.need("table", "out") }

func (c *snapshotCmd) nats() natsNeed {
	if c.set["at"] {
		return natsIfUp // --at is checked against the journal's head when it is up
	}
	return natsYes
}

func (c *snapshotCmd) run(ctx context.Context, stdio cli.IO) error {
	if c.set["at"] && c.cfg.Seq == 0 {
		return cli.UsageError(errors.New("--at 0 is the empty table; give a journal sequence"))
	}
	var st snapshot.Stats
	write := func(w io.Writer) error {
		var err error
		st, err = snapshot.New(c.rp).Take(ctx, w, c.cfg)
		return err
	}
	var err error
	out := stdio.Stdout
	if c.out == "-" {
		err = write(stdio.Stdout)
		out = stdio.Stderr
	} else {
		err = snapshot.WriteAt(ctx, c.out, c.tables, c.auth, write)
	}
	if err != nil {
		return err
	}
	cli.Render(out, c.asJSON, newSnapshotResult(st, snapshot.Describe(c.out)))
	return nil
}

// loadCmd is replay load.
type loadCmd struct {
	replayBase
	cfg snapshot.LoadConfig
	in  string
}

func (c *loadCmd) flags(fs *flag.FlagSet) {
	fs.StringVar(&c.in, "in", "", "the snapshot: a file, - for stdin, a blob URL with a SAS token, or azblob://CONTAINER/BLOB in the --tables account (required)")
	fs.StringVar(&c.cfg.Into, "into", "", "destination table, empty or new (required)")
	c.workersFlag(fs, "transactions run at once (default 8)")
	fs.BoolVar(&c.cfg.Resume, "resume", false, "finish a load that stopped: allow a non-empty --into")
	fs.BoolVar(&c.cfg.SkipErasureCheck, "risk-loading-erased-keys", false, "load without NATS: the erasures after the snapshot are not read, so keys erased since are loaded back (default: refuse without a journal)")
}

func (c *loadCmd) check() error   { return c.need("in", "into") }
func (c *loadCmd) nats() natsNeed { return natsIfUp }

func (c *loadCmd) run(ctx context.Context, stdio cli.IO) error {
	in := stdio.Input()
	if c.in != "-" {
		f, err := snapshot.Open(ctx, c.in, c.tables, c.auth)
		if err != nil {
			return err
		}
		defer f.Close()
		in = f
	}
	st, err := snapshot.New(c.rp).Load(ctx, in, c.cfg)
	if errors.Is(err, replay.ErrNotEmpty) {
		return fmt.Errorf("%w; to finish a load into it that stopped, run the same command with --resume", err)
	}
	if errors.Is(err, snapshot.ErrErasureUnchecked) {
		return replayRefusal{fmt.Errorf("%w (is NATS reachable, with the journal?); --risk-loading-erased-keys loads it all the same", err)}
	}
	if err != nil {
		return err
	}
	cli.Render(stdio.Stdout, c.asJSON, newLoadResult(st, c.cfg.Into))
	return nil
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
		return fmt.Sprintf("seq %d (as of %s)", seq, cli.TimeText(p.Time))
	}
	return fmt.Sprintf("seq %d (just after %s)", seq, p.Cmd)
}
