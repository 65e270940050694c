package replaycmd

import (
	"context"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/tablejournal/tablejournal/cmd/internal/cli"
	"github.com/tablejournal/tablejournal/replay"
	"github.com/tablejournal/tablejournal/replay/erasure"
)

// eraseCmd is replay erase (SPEC §10, docs/erasure.md).
type eraseCmd struct {
	replayBase
	rowFlags
	apply bool
	wait  time.Duration
}

func (c *eraseCmd) flags(fs *flag.FlagSet) {
	c.register(fs, "partition key (required): the partition to erase, or the row's with --rk", "row key: erase one row (default the whole partition)")
	fs.BoolVar(&c.apply, "apply", false, "publish the erase, wait for it, remove the key's messages and print the receipt (default: dry run)")
	fs.DurationVar(&c.wait, "wait", 10*time.Minute, "with --apply, how long to wait for the projector to apply the erase; running the same erase again later finishes the job")
}

func (c *eraseCmd) check() error   { return c.need("table", "pk") }
func (c *eraseCmd) nats() natsNeed { return natsYes }

func (c *eraseCmd) target() erasure.Target {
	t := erasure.Target{Table: c.table, PK: c.pk}
	if c.set["rk"] {
		rk := c.rk
		t.RK = &rk
	}
	return t
}

func (c *eraseCmd) run(ctx context.Context, stdio cli.IO) error {
	r := planRun{apply: c.apply}
	// --wait bounds the wait for the projector alone, not the secure
	// deletes after it (a partition of 100,000 commands takes over an
	// hour): Ctrl-C stops those, and the same command finishes the job.
	p, err := erasure.New(c.rp).WithWait(c.wait).PlanErase(ctx, c.target())
	if err != nil {
		return err
	}
	r.show = func(res *replay.Result, _ error) cli.Result {
		if res == nil {
			return erasePlanView{Table: p.Target.Table, Partition: p.Target.RK == nil, KeySHA256: p.Target.SHA256(),
				EraseID: p.EraseID, EraseSeq: p.EraseSeq, TableRows: p.TableRows, JournalMsgs: len(p.Journal), Kept: p.Kept,
				ChangeEvents: len(p.Changes), Outcomes: len(p.Outcomes), Behind: p.Behind, DryRun: true}
		}
		if rec, ok := res.Receipt.(*erasure.Receipt); ok {
			return eraseReceiptView{rec}
		}
		return nil
	}
	return runPlan(ctx, &c.replayBase, stdio, p, r)
}

// erasePlanView is the dry run of replay erase.
type erasePlanView struct {
	Table        string   `json:"table"`
	Partition    bool     `json:"partition"`
	KeySHA256    string   `json:"keySha256"`
	EraseID      string   `json:"eraseId,omitempty"`
	EraseSeq     uint64   `json:"eraseSeq,omitempty"`
	TableRows    int      `json:"tableRows"`
	JournalMsgs  int      `json:"journalMessages"`
	Kept         []uint64 `json:"keptSeqs,omitempty"`
	ChangeEvents int      `json:"changeEvents"`
	Outcomes     int      `json:"outcomes"`
	Behind       int      `json:"behindEntries"`
	DryRun       bool     `json:"dryRun"`
}

func (v erasePlanView) Text(w io.Writer) {
	what := "row"
	if v.Partition {
		what = "partition"
	}
	fmt.Fprintf(w, "erase of a %s of %s (key sha256 %s), dry run:\n", what, v.Table, v.KeySHA256)
	if v.EraseSeq != 0 {
		fmt.Fprintf(w, "  journaled already: %s at seq %d (--apply finishes it)\n", v.EraseID, v.EraseSeq)
	}
	fmt.Fprintf(w, "  table rows (tips, versions, tombstones): %d\n  journal commands: %d\n  change events: %d\n  outcomes: %d\n",
		v.TableRows, v.JournalMsgs, v.ChangeEvents, v.Outcomes)
	if v.Behind > 0 {
		fmt.Fprintf(w, "  messages of the partition recorded behind the journal: %d\n", v.Behind)
	}
	if len(v.Kept) > 0 {
		fmt.Fprintf(w, "  kept: %d commands that also touched other rows (seqs %s)\n", len(v.Kept), seqRanges(v.Kept))
	}
	fmt.Fprintln(w, "  not reachable: copies held by consumers of the change feed, and snapshots (see docs/erasure.md)")
}

// eraseReceiptView is the receipt of replay erase --apply.
type eraseReceiptView struct{ *erasure.Receipt }

func (v eraseReceiptView) Text(w io.Writer) {
	r := v.Receipt
	fmt.Fprintf(w, "erased by %s at seq %d: table %s, key sha256 %s\n", r.EraseID, r.EraseSeq, r.Table, r.KeySHA256)
	fmt.Fprintf(w, "  removed: %d table rows, %d journal commands, %d change events, %d outcomes\n",
		r.Removed.TableRows, r.Removed.JournalMsgs, r.Removed.ChangeEvents, r.Removed.Outcomes)
	if r.Removed.BehindEntries > 0 {
		fmt.Fprintf(w, "  removed: %d messages of the partition recorded behind the journal\n", r.Removed.BehindEntries)
	}
	if len(r.JournalSeqs) > 0 {
		fmt.Fprintf(w, "  journal seqs removed: %s\n", seqRanges(r.JournalSeqs))
	}
	if len(r.KeptSeqs) > 0 {
		fmt.Fprintf(w, "  kept: %d commands that also touched other rows, seqs %s\n", len(r.KeptSeqs), seqRanges(r.KeptSeqs))
	}
	fmt.Fprintf(w, "  %s .. %s, verified: %v\n", r.Started.Format("2006-01-02T15:04:05Z"), r.Finished.Format("2006-01-02T15:04:05Z"), r.Verified)
}

// maxSeqRanges bounds the ranges of sequences a text receipt or plan
// prints: a partition of 100,000 commands interleaved with others is as
// many ranges, which --json lists in full.
const maxSeqRanges = 20

// seqRanges writes seqs as runs of consecutive sequences, "3, 5-9, 12",
// the first maxSeqRanges of them, then how many more there are.
func seqRanges(seqs []uint64) string {
	seqs = slices.Sorted(slices.Values(seqs))
	var b strings.Builder
	runs := 0
	for i := 0; i < len(seqs); {
		j := i
		for j+1 < len(seqs) && seqs[j+1] <= seqs[j]+1 {
			j++
		}
		if runs < maxSeqRanges {
			if runs > 0 {
				b.WriteString(", ")
			}
			if seqs[j] == seqs[i] {
				fmt.Fprint(&b, seqs[i])
			} else {
				fmt.Fprintf(&b, "%d-%d", seqs[i], seqs[j])
			}
		}
		runs++
		i = j + 1
	}
	if more := runs - maxSeqRanges; more > 0 {
		fmt.Fprintf(&b, " and %d more ranges (--json lists every sequence)", more)
	}
	return b.String()
}
