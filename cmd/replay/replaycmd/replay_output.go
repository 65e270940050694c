package replaycmd

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"time"

	"github.com/tablejournal/tablejournal/cmd/internal/cli"
	"github.com/tablejournal/tablejournal/cmd/internal/entityfmt"
	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/replay"
	"github.com/tablejournal/tablejournal/replay/history"
	"github.com/tablejournal/tablejournal/replay/rebuild"
	"github.com/tablejournal/tablejournal/replay/snapshot"
	"github.com/tablejournal/tablejournal/rows"
	"github.com/tablejournal/tablejournal/wire"
)

// The typed results of replay's subcommands. Each is printed by render:
// as text by its text method, as JSON by its fields. JSON members are in
// alphabetical order, as they always were.

// replayRow is a row version in JSON output; entity is in the OData JSON
// form commands use, so every EDM type survives.
type replayRow struct {
	PK      string          `json:"pk"`
	RK      string          `json:"rk"`
	Version int64           `json:"version"`
	Op      string          `json:"op"`
	Cmd     string          `json:"cmd"`
	Seq     uint64          `json:"seq"`
	At      string          `json:"at"`
	Deleted bool            `json:"deleted,omitempty"`
	Tip     bool            `json:"tip,omitempty"`
	Entity  json.RawMessage `json:"entity"`
	// Diff is, for history --diff, what changed from the version before.
	Diff *diffJSON `json:"diff,omitempty"`
}

func rowOut(r rows.Row) replayRow {
	return replayRow{PK: r.PK, RK: r.RK, Version: r.Version, Op: string(r.Op), Cmd: r.Cmd, Seq: r.Seq,
		At: cli.TimeText(r.At), Deleted: r.Deleted, Tip: r.Tip, Entity: entityfmt.JSON(r.Props)}
}

// rowPtr is rowOut of r when ok, else nil.
func rowPtr(r rows.Row, ok bool) *replayRow {
	if !ok {
		return nil
	}
	out := rowOut(r)
	return &out
}

// diffJSON is what changed between two versions of a row, each part an
// entity in the OData JSON form: added and removed properties (removed
// with their last values), and the changed ones before and after.
type diffJSON struct {
	Added   json.RawMessage `json:"added,omitempty"`
	Removed json.RawMessage `json:"removed,omitempty"`
	Before  json.RawMessage `json:"before,omitempty"`
	After   json.RawMessage `json:"after,omitempty"`
}

func diffOut(before, after edm.Entity) *diffJSON {
	var added, removed, was, now edm.Entity
	put := func(e *edm.Entity, name string, v edm.Value) {
		if *e == nil {
			*e = edm.Entity{}
		}
		(*e)[name] = v
	}
	for _, c := range history.Diff(before, after) {
		switch {
		case !c.HadBefore:
			put(&added, c.Name, c.After)
		case !c.HasNow:
			put(&removed, c.Name, c.Before)
		default:
			put(&was, c.Name, c.Before)
			put(&now, c.Name, c.After)
		}
	}
	return &diffJSON{Added: entityfmt.JSON(added), Removed: entityfmt.JSON(removed), Before: entityfmt.JSON(was), After: entityfmt.JSON(now)}
}

// asofRow is replay asof of one row.
type asofRow struct {
	Exists    bool       `json:"exists"`
	PK        string     `json:"pk"`
	Point     string     `json:"point"`
	RK        string     `json:"rk"`
	Row       *replayRow `json:"row,omitempty"`
	Seq       *uint64    `json:"seq,omitempty"` // absent for "now"
	Table     string     `json:"table"`
	Tombstone *replayRow `json:"tombstone,omitempty"`

	row rows.Row
}

func newAsOfRow(table, pk, rk, at string, seq uint64, row rows.Row, ok bool) asofRow {
	r := asofRow{Exists: ok, PK: pk, Point: at, RK: rk, Table: table, row: row,
		Row: rowPtr(row, ok), Tombstone: rowPtr(row, !ok && row.Deleted)}
	if seq != math.MaxInt64 {
		r.Seq = &seq
	}
	return r
}

func (r asofRow) Text(w io.Writer) {
	row := r.row
	switch {
	case !r.Exists && row.Deleted:
		fmt.Fprintf(w, "%s %q/%q at %s: deleted (version %d, by %s at seq %d, %s)\n",
			r.Table, r.PK, r.RK, r.Point, row.Version, row.Cmd, row.Seq, cli.TimeText(row.At))
		return
	case !r.Exists:
		fmt.Fprintf(w, "%s %q/%q at %s: did not exist\n", r.Table, r.PK, r.RK, r.Point)
		return
	}
	fmt.Fprintf(w, "%s %q/%q at %s: version %d, %s by %s at seq %d, %s\n",
		r.Table, r.PK, r.RK, r.Point, row.Version, row.Op, row.Cmd, row.Seq, cli.TimeText(row.At))
	printProps(w, row.Props)
}

func printProps(w io.Writer, e edm.Entity) {
	tw := cli.NewTab(w)
	fmt.Fprintln(tw, "  PROPERTY\tTYPE\tVALUE")
	for _, n := range cli.SortedNames(e) {
		v := e[n]
		text := v.Text()
		if v.Type == edm.TypeString {
			text = strconv.Quote(text)
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", n, v.Type, text)
	}
	tw.Flush()
}

// asofHead opens the JSON of asof over a table or partition; its rows
// follow as they are read.
type asofHead struct {
	Erased []erasedOut `json:"erased"` // what was erased after the point
	Point  string      `json:"point"`
	PK     *string     `json:"pk"` // null: the whole table
	Table  string      `json:"table"`
}

// rows streams the rows of a table or partition at seq. Nothing is printed
// when the read fails before the first row (no table, say): only the
// error. JSON that fails later ends with an "error" member.
func (c *asofCmd) rows(ctx context.Context, w io.Writer, at string, seq uint64) error {
	part := partition(c.set, c.pk)
	n := 0
	if c.asJSON {
		h := asofHead{Point: at, Table: c.table}
		if c.set["pk"] {
			h.PK = &c.pk
		}
		open := func() {
			head, _ := json.Marshal(h)
			fmt.Fprintf(w, "%s,\"rows\":[", head[:len(head)-1])
		}
		err := history.New(c.rp).AsOfErasures(ctx, c.table, part, seq, func(g []*replay.ErasedError) error {
			h.Erased = erasedList(g)
			return nil
		}, func(r rows.Row) error {
			b, _ := json.Marshal(rowOut(r))
			if n == 0 {
				open()
			} else {
				w.Write([]byte{','})
			}
			n++
			_, err := w.Write(b)
			return err
		})
		switch {
		case err != nil && n == 0:
			return err
		case n == 0:
			open()
		}
		if err != nil {
			msg, _ := json.Marshal(err.Error())
			fmt.Fprintf(w, "],\"error\":%s}\n", msg)
			return err
		}
		fmt.Fprintln(w, "]}")
		return nil
	}
	// The tab writer holds every line until Flush: on an error none is shown.
	tw := cli.NewTab(w)
	fmt.Fprintln(tw, "PK\tRK\tV\tOP\tCMD\tSEQ\tAT\tPROPERTIES")
	var gone []erasedOut
	err := history.New(c.rp).AsOfErasures(ctx, c.table, part, seq, func(g []*replay.ErasedError) error {
		gone = erasedList(g)
		return nil
	}, func(r rows.Row) error {
		n++
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%d\t%s\t%s\n", r.PK, r.RK, r.Version, r.Op, r.Cmd, r.Seq, cli.TimeText(r.At), entityfmt.Props(r.Props))
		return nil
	})
	if err != nil {
		return err
	}
	scope := c.table
	if c.set["pk"] {
		scope += fmt.Sprintf(" %q", c.pk)
	}
	fmt.Fprintf(w, "%s at %s\n", scope, at)
	tw.Flush()
	fmt.Fprintln(w, cli.Plural(n, "row"))
	erasedText(w, gone)
	return nil
}

// historyView is replay history.
type historyView struct {
	PK       string      `json:"pk"`
	RK       string      `json:"rk"`
	Table    string      `json:"table"`
	Versions []replayRow `json:"versions"`
	// Pruned says that earlier versions of the row were pruned.
	Pruned *prunedOut `json:"pruned,omitempty"`

	rows []rows.Row
	diff bool
}

// prunedOut is what history says of pruned versions: the partition's
// prune horizon, the prune command, and how many of the row's versions
// (0 to Versions-1) are gone.
type prunedOut struct {
	Before   uint64 `json:"before"`
	Cmd      string `json:"cmd"`
	Versions int64  `json:"versions"`
}

func newHistory(table, pk, rk string, rows []rows.Row, diff bool) historyView {
	h := historyView{PK: pk, RK: rk, Table: table, Versions: make([]replayRow, len(rows)), rows: rows, diff: diff}
	var prev edm.Entity // nil: the row did not exist
	for i, r := range rows {
		h.Versions[i] = rowOut(r)
		if diff {
			now := liveProps(r)
			h.Versions[i].Diff = diffOut(prev, now)
			prev = now
		}
	}
	return h
}

// liveProps is a version's properties, nil for a tombstone.
func liveProps(r rows.Row) edm.Entity {
	if r.Deleted {
		return nil
	}
	return r.Props
}

func (h historyView) Text(w io.Writer) {
	if len(h.rows) == 0 {
		fmt.Fprintf(w, "%s %q/%q has no versions\n", h.Table, h.PK, h.RK)
		return
	}
	if p := h.Pruned; p != nil {
		fmt.Fprintf(w, "%s %q/%q: %s kept (%s pruned before sequence %d by %s)\n", h.Table, h.PK, h.RK,
			cli.Plural(len(h.rows), "version"), cli.Plural(p.Versions, "earlier version"), p.Before, p.Cmd)
	} else {
		fmt.Fprintf(w, "%s %q/%q: %s\n", h.Table, h.PK, h.RK, cli.Plural(len(h.rows), "version"))
	}
	tw := cli.NewTab(w)
	what := "PROPERTIES"
	if h.diff {
		what = "CHANGES"
	}
	fmt.Fprintf(tw, "V\tOP\tCMD\tSEQ\tAT\tSTATE\t%s\n", what)
	var prev edm.Entity // nil: the row did not exist
	for _, r := range h.rows {
		props := entityfmt.Props(r.Props)
		if h.diff {
			now := liveProps(r)
			props = diffText(prev, now)
			prev = now
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%s\t%s\t%s\n", r.Version, r.Op, r.Cmd, r.Seq, cli.TimeText(r.At), stateText(r, ""), props)
	}
	tw.Flush()
}

// stateText names a version's state: a tombstone, the current version, or
// other.
func stateText(r rows.Row, other string) string {
	switch {
	case r.Deleted:
		return "tombstone"
	case r.Tip:
		return "current"
	}
	return other
}

// diffText renders what changed from before to after: +added, -removed,
// ~changed (old → new); a nil side is an absent row.
func diffText(before, after edm.Entity) string {
	text := ""
	for _, c := range history.Diff(before, after) {
		if text != "" {
			text += " "
		}
		switch {
		case !c.HadBefore:
			text += "+" + c.Name + "=" + entityfmt.Value(c.After)
		case !c.HasNow:
			text += "-" + c.Name + "=" + entityfmt.Value(c.Before)
		default:
			text += "~" + c.Name + ": " + entityfmt.Value(c.Before) + " → " + entityfmt.Value(c.After)
		}
	}
	if text == "" {
		return "(no change)"
	}
	return text
}

// blame is replay blame.
type blame struct {
	DecodeError string             `json:"decodeError,omitempty"`
	Issuer      *string            `json:"issuer,omitempty"`
	Meta        *map[string]string `json:"meta,omitempty"` // present (maybe null) when the command decoded
	Outcome     cli.OutcomeJSON    `json:"outcome"`
	Shard       int                `json:"shard"`
	Subject     string             `json:"subject"`
	Time        string             `json:"time,omitempty"`
	Versions    []replayRow        `json:"versions"`

	b *history.Blame
}

func newBlame(b *history.Blame) blame {
	out := blame{DecodeError: b.DecodeErr, Outcome: cli.OutcomeJSON(b.Outcome), Shard: b.Shard, Subject: b.Subject,
		Versions: make([]replayRow, len(b.Versions)), b: b}
	if !b.Time.IsZero() {
		out.Time = cli.TimeText(b.Time)
	}
	if b.Command != nil {
		out.Issuer, out.Meta = &b.Command.Issuer, &b.Command.Meta
	}
	for i, r := range b.Versions {
		out.Versions[i] = rowOut(r)
	}
	return out
}

func (bl blame) Text(out io.Writer) {
	b, o := bl.b, bl.b.Outcome
	w := cli.NewTab(out)
	fmt.Fprintf(w, "command\t%s\n", o.ID)
	fmt.Fprintf(w, "status\t%s\n", statusText(o))
	fmt.Fprintf(w, "journal\tseq %d, %s\n", o.Seq, cli.TimeText(o.At))
	if b.Subject != "" {
		shard := fmt.Sprintf("shard %d", b.Shard)
		if b.Shard < 0 {
			shard = "no shard"
		}
		fmt.Fprintf(w, "subject\t%s (%s)\n", b.Subject, shard)
	}
	fmt.Fprintf(w, "partition\t%s %q\n", o.Table, o.PK)
	if b.Command != nil {
		if b.Command.Issuer != "" {
			fmt.Fprintf(w, "issuer\t%s\n", b.Command.Issuer)
		}
		for _, k := range cli.SortedNames(b.Command.Meta) {
			fmt.Fprintf(w, "meta\t%s=%s\n", k, b.Command.Meta[k])
		}
	}
	if b.DecodeErr != "" {
		fmt.Fprintf(w, "message\t%s\n", b.DecodeErr)
	}
	w.Flush()
	if len(b.Versions) == 0 {
		return
	}
	fmt.Fprintln(out)
	w = cli.NewTab(out)
	fmt.Fprintln(w, "RK\tV\tOP\tSTATE\tPROPERTIES")
	for _, r := range b.Versions {
		fmt.Fprintf(w, "%s\t%d\t%s\t%s\t%s\n", r.RK, r.Version, r.Op, stateText(r, "superseded"), entityfmt.Props(r.Props))
	}
	w.Flush()
}

// statusText is an outcome's status with its reason.
func statusText(o wire.Outcome) string {
	if o.Reason != "" {
		return string(o.Status) + ": " + o.Reason
	}
	return string(o.Status)
}

// perSecond is n over d, for the rates of the summaries.
func perSecond[N int64 | uint64](n N, d time.Duration) float64 {
	return float64(n) / max(d.Seconds(), 1e-9)
}

// rebuildView is replay rebuild.
type rebuildView struct {
	Applied           int64   `json:"applied"`
	Commands          int64   `json:"commands"`
	CommandsPerSecond float64 `json:"commandsPerSecond"`
	Duplicates        int64   `json:"duplicates"`
	Erased            int64   `json:"erased,omitempty"`
	From              uint64  `json:"from"`
	Into              string  `json:"into"`
	Loaded            int64   `json:"loaded"`
	Rejected          int64   `json:"rejected"`
	Seconds           float64 `json:"seconds"`
	Skipped           int64   `json:"skipped"`
	Table             string  `json:"table"`
	To                uint64  `json:"to"`

	elapsed time.Duration
}

func newRebuild(st rebuild.Stats) rebuildView {
	return rebuildView{Applied: st.Applied, Commands: st.Commands, CommandsPerSecond: perSecond(st.Commands, st.Elapsed),
		Duplicates: st.Duplicates, Erased: st.Erased, From: st.From, Into: st.Into, Loaded: st.Loaded, Rejected: st.Rejected,
		Seconds: st.Elapsed.Seconds(), Skipped: st.Skipped, Table: st.Table, To: st.To, elapsed: st.Elapsed}
}

func (r rebuildView) Text(w io.Writer) {
	if r.Loaded > 0 {
		fmt.Fprintf(w, "loaded %s of %s from the snapshot\n", cli.Plural(r.Loaded, "row"), r.Table)
	}
	if r.Erased > 0 {
		fmt.Fprintf(w, "dropped %s of keys erased after the snapshot\n", cli.Plural(r.Erased, "row"))
	}
	fmt.Fprintf(w, "rebuilt %s into %s from seq %d to %d: %s (%d applied, %d rejected, %s, %d skipped) in %s, %.0f commands/s\n",
		r.Table, r.Into, r.From, r.To, cli.Plural(r.Commands, "command"), r.Applied, r.Rejected, cli.Plural(r.Duplicates, "duplicate"), r.Skipped,
		r.elapsed.Round(time.Millisecond), r.CommandsPerSecond)
}

// rowsResult is replay snapshot (File and Partitions set) and replay load
// (Into and Transactions set): rows of one table at one sequence, written
// to a file or loaded from one. Its JSON keys stay in alphabetical order.
type rowsResult struct {
	Entities          int64   `json:"entities"`
	EntitiesPerSecond float64 `json:"entitiesPerSecond"`
	Erased            int64   `json:"erased,omitempty"`
	File              string  `json:"file,omitempty"`
	Into              string  `json:"into,omitempty"`
	Partitions        *int64  `json:"partitions,omitempty"`
	Seconds           float64 `json:"seconds"`
	Seq               uint64  `json:"seq"`
	Table             string  `json:"table"`
	Transactions      *int64  `json:"transactions,omitempty"`

	elapsed time.Duration
}

func newRowsResult(entities int64, h snapshot.Header, elapsed time.Duration) rowsResult {
	return rowsResult{Entities: entities, EntitiesPerSecond: perSecond(entities, elapsed),
		Seconds: elapsed.Seconds(), Seq: h.Seq, Table: h.Table, elapsed: elapsed}
}

func newSnapshotResult(st snapshot.Stats, file string) rowsResult {
	r := newRowsResult(st.Entities, st.Header, st.Elapsed)
	r.File, r.Partitions = file, &st.Partitions
	return r
}

func newLoadResult(st snapshot.LoadStats, into string) rowsResult {
	r := newRowsResult(st.Entities, st.Header, st.Elapsed)
	r.Into, r.Transactions, r.Erased = into, &st.Transactions, st.Erased
	return r
}

func (r rowsResult) Text(w io.Writer) {
	if r.Transactions != nil {
		fmt.Fprintf(w, "loaded %s of %s at seq %d into %s in %s, %s, %.0f rows/s\n",
			cli.Plural(r.Entities, "row"), r.Table, r.Seq, r.Into, cli.Plural(*r.Transactions, "transaction"), r.elapsed.Round(time.Millisecond), r.EntitiesPerSecond)
		if r.Erased > 0 {
			fmt.Fprintf(w, "dropped %s of keys erased after the snapshot\n", cli.Plural(r.Erased, "row"))
		}
		fmt.Fprintf(w, "(the journal after seq %d is not applied; rebuild --from-snapshot loads and applies it in one step)\n", r.Seq)
		return
	}
	from := cli.Plural(*r.Partitions, "partition")
	if *r.Partitions == 0 {
		from = "one scan of the table"
	}
	fmt.Fprintf(w, "snapshot of %s at seq %d: %s (tips, versions and fences) from %s in %s, %.0f rows/s, written to %s\n",
		r.Table, r.Seq, cli.Plural(r.Entities, "row"), from, r.elapsed.Round(time.Millisecond), r.EntitiesPerSecond, r.File)
}
