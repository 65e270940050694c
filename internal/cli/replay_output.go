package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/internal/snapfile"
	"github.com/tablejournal/tablejournal/journal"
	"github.com/tablejournal/tablejournal/projection"
	"github.com/tablejournal/tablejournal/replay"
)

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

// diffJSON is what changed between two versions of a row, each part an
// entity in the OData JSON form: added and removed properties (removed
// with their last values), and the changed ones before and after.
type diffJSON struct {
	Added   json.RawMessage `json:"added,omitempty"`
	Removed json.RawMessage `json:"removed,omitempty"`
	Before  json.RawMessage `json:"before,omitempty"`
	After   json.RawMessage `json:"after,omitempty"`
}

func diffOut(before, after events.Entity) *diffJSON {
	var added, removed, was, now events.Entity
	put := func(e *events.Entity, name string, v events.Value) {
		if *e == nil {
			*e = events.Entity{}
		}
		(*e)[name] = v
	}
	for _, c := range replay.Diff(before, after) {
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
	enc := func(e events.Entity) json.RawMessage {
		if e == nil {
			return nil
		}
		b, _ := events.MarshalEntityJSON(e)
		return b
	}
	return &diffJSON{Added: enc(added), Removed: enc(removed), Before: enc(was), After: enc(now)}
}

// outcomeJSON is an outcome as the commands print it: its time with 7
// fractional digits, as every time they print.
type outcomeJSON journal.Outcome

func (o outcomeJSON) MarshalJSON() ([]byte, error) {
	type plain journal.Outcome
	return json.Marshal(struct {
		plain
		At string `json:"at"`
	}{plain(o), timeText(o.At)})
}

func rowOut(r projection.Row) replayRow {
	ent, _ := events.MarshalEntityJSON(r.Props)
	return replayRow{PK: r.PK, RK: r.RK, Version: r.Version, Op: string(r.Op), Cmd: r.Cmd, Seq: r.Seq,
		At: timeText(r.At), Deleted: r.Deleted, Tip: r.Tip, Entity: ent}
}

func replayJSON(w io.Writer, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		fmt.Fprintf(w, "{\"error\":%q}\n", err.Error())
		return
	}
	w.Write(append(b, '\n'))
}

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
	names := make([]string, 0, len(e))
	for n := range e {
		names = append(names, n)
	}
	sort.Strings(names)
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = n + "=" + valueText(e[n])
	}
	return strings.Join(parts, " ")
}

func timeText(t time.Time) string { return t.UTC().Format(events.DateTimeLayout) }

func printAsOfRow(rc *replayCmd, at string, seq uint64, row projection.Row, ok bool) {
	if rc.asJSON {
		out := map[string]any{"table": rc.table, "pk": rc.pk, "rk": rc.rk, "point": at, "exists": ok}
		if seq != math.MaxInt64 {
			out["seq"] = seq
		}
		switch {
		case ok:
			out["row"] = rowOut(row)
		case row.Deleted:
			out["tombstone"] = rowOut(row)
		}
		replayJSON(rc.stdout, out)
		return
	}
	w := rc.stdout
	switch {
	case !ok && row.Deleted:
		fmt.Fprintf(w, "%s %q/%q at %s: deleted (version %d, by %s at seq %d, %s)\n",
			rc.table, rc.pk, rc.rk, at, row.Version, row.Cmd, row.Seq, timeText(row.At))
		return
	case !ok:
		fmt.Fprintf(w, "%s %q/%q at %s: did not exist\n", rc.table, rc.pk, rc.rk, at)
		return
	}
	fmt.Fprintf(w, "%s %q/%q at %s: version %d, %s by %s at seq %d, %s\n",
		rc.table, rc.pk, rc.rk, at, row.Version, row.Op, row.Cmd, row.Seq, timeText(row.At))
	printProps(w, row.Props)
}

func printProps(w io.Writer, e events.Entity) {
	names := make([]string, 0, len(e))
	for n := range e {
		names = append(names, n)
	}
	sort.Strings(names)
	tw := newTab(w)
	fmt.Fprintln(tw, "  PROPERTY\tTYPE\tVALUE")
	for _, n := range names {
		v := e[n]
		text := v.Text()
		if v.Type == events.TypeString {
			text = strconv.Quote(text)
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\n", n, v.Type, text)
	}
	tw.Flush()
}

// printAsOfRows streams the rows of a table or partition at seq. Nothing
// is printed when the read fails before the first row (no table, say):
// only the error. JSON that fails later ends with an "error" member.
func printAsOfRows(ctx context.Context, rc *replayCmd, at string, seq uint64) error {
	w := rc.stdout
	n := 0
	if rc.asJSON {
		head, _ := json.Marshal(map[string]any{"table": rc.table, "pk": pkJSON(rc.pk, !rc.set["pk"]), "point": at})
		open := func() { fmt.Fprintf(w, "%s,\"rows\":[", head[:len(head)-1]) }
		err := rc.rp.AsOf(ctx, rc.table, rc.partition(), seq, func(r projection.Row) error {
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
	tw := newTab(w)
	fmt.Fprintln(tw, "PK\tRK\tV\tOP\tCMD\tSEQ\tAT\tPROPERTIES")
	err := rc.rp.AsOf(ctx, rc.table, rc.partition(), seq, func(r projection.Row) error {
		n++
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\t%d\t%s\t%s\n", r.PK, r.RK, r.Version, r.Op, r.Cmd, r.Seq, timeText(r.At), propsText(r.Props))
		return nil
	})
	if err != nil {
		return err
	}
	scope := rc.table
	if rc.set["pk"] {
		scope += fmt.Sprintf(" %q", rc.pk)
	}
	fmt.Fprintf(w, "%s at %s\n", scope, at)
	tw.Flush()
	fmt.Fprintln(w, plural(n, "row"))
	return nil
}

func printHistory(rc *replayCmd, rows []projection.Row) {
	if rc.asJSON {
		out := make([]replayRow, len(rows))
		var prev events.Entity // nil: the row did not exist
		for i, r := range rows {
			out[i] = rowOut(r)
			if rc.diff {
				now := r.Props
				if r.Deleted {
					now = nil
				}
				out[i].Diff = diffOut(prev, now)
				prev = now
			}
		}
		replayJSON(rc.stdout, map[string]any{"table": rc.table, "pk": rc.pk, "rk": rc.rk, "versions": out})
		return
	}
	w := rc.stdout
	if len(rows) == 0 {
		fmt.Fprintf(w, "%s %q/%q has no versions\n", rc.table, rc.pk, rc.rk)
		return
	}
	fmt.Fprintf(w, "%s %q/%q: %s\n", rc.table, rc.pk, rc.rk, plural(len(rows), "version"))
	tw := newTab(w)
	what := "PROPERTIES"
	if rc.diff {
		what = "CHANGES"
	}
	fmt.Fprintf(tw, "V\tOP\tCMD\tSEQ\tAT\tSTATE\t%s\n", what)
	var prev events.Entity // nil: the row did not exist
	for _, r := range rows {
		state := ""
		switch {
		case r.Deleted:
			state = "tombstone"
		case r.Tip:
			state = "current"
		}
		props := propsText(r.Props)
		if rc.diff {
			now := r.Props
			if r.Deleted {
				now = nil
			}
			props = diffText(prev, now)
			prev = now
		}
		fmt.Fprintf(tw, "%d\t%s\t%s\t%d\t%s\t%s\t%s\n", r.Version, r.Op, r.Cmd, r.Seq, timeText(r.At), state, props)
	}
	tw.Flush()
}

// diffText renders what changed from before to after: +added, -removed,
// ~changed (old → new); a nil side is an absent row.
func diffText(before, after events.Entity) string {
	var parts []string
	for _, c := range replay.Diff(before, after) {
		switch {
		case !c.HadBefore:
			parts = append(parts, "+"+c.Name+"="+valueText(c.After))
		case !c.HasNow:
			parts = append(parts, "-"+c.Name+"="+valueText(c.Before))
		default:
			parts = append(parts, "~"+c.Name+": "+valueText(c.Before)+" → "+valueText(c.After))
		}
	}
	if len(parts) == 0 {
		return "(no change)"
	}
	return strings.Join(parts, " ")
}

func printBlame(rc *replayCmd, b *replay.Blame) {
	o := b.Outcome
	if rc.asJSON {
		out := map[string]any{"outcome": outcomeJSON(o), "subject": b.Subject, "shard": b.Shard}
		if !b.Time.IsZero() {
			out["time"] = timeText(b.Time)
		}
		if b.DecodeErr != "" {
			out["decodeError"] = b.DecodeErr
		}
		if b.Command != nil {
			out["issuer"], out["meta"] = b.Command.Issuer, b.Command.Meta
		}
		vs := make([]replayRow, len(b.Versions))
		for i, r := range b.Versions {
			vs[i] = rowOut(r)
		}
		out["versions"] = vs
		replayJSON(rc.stdout, out)
		return
	}
	w := newTab(rc.stdout)
	fmt.Fprintf(w, "command\t%s\n", o.ID)
	status := string(o.Status)
	if o.Reason != "" {
		status += ": " + o.Reason
	}
	fmt.Fprintf(w, "status\t%s\n", status)
	fmt.Fprintf(w, "journal\tseq %d, %s\n", o.Seq, timeText(o.At))
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
		for _, k := range sortedKeys(b.Command.Meta) {
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
	fmt.Fprintln(rc.stdout)
	w = newTab(rc.stdout)
	fmt.Fprintln(w, "RK\tV\tOP\tSTATE\tPROPERTIES")
	for _, r := range b.Versions {
		state := "superseded"
		switch {
		case r.Deleted:
			state = "tombstone"
		case r.Tip:
			state = "current"
		}
		fmt.Fprintf(w, "%s\t%d\t%s\t%s\t%s\n", r.RK, r.Version, r.Op, state, propsText(r.Props))
	}
	w.Flush()
}

func sortedKeys(m map[string]string) []string {
	ks := make([]string, 0, len(m))
	for k := range m {
		ks = append(ks, k)
	}
	sort.Strings(ks)
	return ks
}

func printRebuild(rc *replayCmd, st replay.RebuildStats) {
	rate := float64(st.Commands) / max(st.Elapsed.Seconds(), 1e-9)
	if rc.asJSON {
		replayJSON(rc.stdout, map[string]any{"table": st.Table, "into": st.Into, "from": st.From, "to": st.To,
			"loaded": st.Loaded, "commands": st.Commands, "applied": st.Applied, "rejected": st.Rejected,
			"duplicates": st.Duplicates, "skipped": st.Skipped, "seconds": st.Elapsed.Seconds(), "commandsPerSecond": rate})
		return
	}
	w := rc.stdout
	if st.Loaded > 0 {
		fmt.Fprintf(w, "loaded %s of %s from the snapshot\n", plural(st.Loaded, "row"), st.Table)
	}
	fmt.Fprintf(w, "rebuilt %s into %s from seq %d to %d: %s (%d applied, %d rejected, %s, %d skipped) in %s, %.0f commands/s\n",
		st.Table, st.Into, st.From, st.To, plural(st.Commands, "command"), st.Applied, st.Rejected, plural(st.Duplicates, "duplicate"), st.Skipped,
		st.Elapsed.Round(time.Millisecond), rate)
}

func printSnapshot(rc *replayCmd, w io.Writer, st replay.SnapshotStats) {
	rate := float64(st.Entities) / max(st.Elapsed.Seconds(), 1e-9)
	if rc.asJSON {
		replayJSON(w, map[string]any{"table": st.Header.Table, "seq": st.Header.Seq, "file": snapfile.Describe(rc.file),
			"entities": st.Entities, "partitions": st.Partitions, "seconds": st.Elapsed.Seconds(), "entitiesPerSecond": rate})
		return
	}
	from := plural(st.Partitions, "partition")
	if st.Partitions == 0 {
		from = "one scan of the table"
	}
	fmt.Fprintf(w, "snapshot of %s at seq %d: %s (tips and versions) from %s in %s, %.0f rows/s, written to %s\n",
		st.Header.Table, st.Header.Seq, plural(st.Entities, "row"), from, st.Elapsed.Round(time.Millisecond), rate, snapfile.Describe(rc.file))
}

func printLoad(rc *replayCmd, st replay.LoadStats) {
	rate := float64(st.Entities) / max(st.Elapsed.Seconds(), 1e-9)
	if rc.asJSON {
		replayJSON(rc.stdout, map[string]any{"table": st.Header.Table, "seq": st.Header.Seq, "into": rc.into,
			"entities": st.Entities, "transactions": st.Transactions, "seconds": st.Elapsed.Seconds(), "entitiesPerSecond": rate})
		return
	}
	fmt.Fprintf(rc.stdout, "loaded %s of %s at seq %d into %s in %s, %s, %.0f rows/s\n",
		plural(st.Entities, "row"), st.Header.Table, st.Header.Seq, rc.into, plural(st.Transactions, "transaction"), st.Elapsed.Round(time.Millisecond), rate)
	fmt.Fprintf(rc.stdout, "(the journal after seq %d is not applied; rebuild --from-snapshot loads and applies it in one step)\n", st.Header.Seq)
}

// planStep is a plan step in JSON output.
type planStep struct {
	PK        string        `json:"pk"`
	RK        string        `json:"rk"`
	Op        events.OpKind `json:"op,omitempty"`
	IfVersion *int64        `json:"ifVersion,omitempty"`
	Conflict  bool          `json:"conflict,omitempty"`
	Reverted  bool          `json:"reverted,omitempty"`
	Current   *replayRow    `json:"current,omitempty"`
	Undone    *replayRow    `json:"undone,omitempty"`
	Target    *replayRow    `json:"target,omitempty"`
	Command   string        `json:"command,omitempty"`
	Outcome   *outcomeJSON  `json:"outcome,omitempty"`
}

func printPlan(rc *replayCmd, p *replay.Plan, res []replay.Applied) {
	// Which command carries each row.
	carrier := make(map[[2]string]int)
	for i, c := range p.Commands {
		for _, op := range c.Ops {
			carrier[[2]string{c.PK, op.RK}] = i
		}
	}
	if rc.asJSON {
		steps := make([]planStep, len(p.Steps))
		for i, s := range p.Steps {
			ps := planStep{PK: s.PK, RK: s.RK, Op: s.Op, IfVersion: s.IfVersion, Conflict: s.Conflict, Reverted: s.Reverted}
			if s.Exists || s.Current.Deleted {
				r := rowOut(s.Current)
				ps.Current = &r
			}
			if s.Undone != nil {
				r := rowOut(*s.Undone)
				ps.Undone = &r
			}
			if s.TargetExists || s.Target.Deleted {
				r := rowOut(s.Target)
				ps.Target = &r
			}
			if ci, ok := carrier[[2]string{s.PK, s.RK}]; ok && s.Op != "" {
				ps.Command = p.Commands[ci].ID
				if res != nil {
					ps.Outcome = (*outcomeJSON)(&res[ci].Outcome)
				}
			}
			steps[i] = ps
		}
		out := map[string]any{"kind": p.Kind, "table": p.Table, "pk": pkJSON(p.PK, p.AllPartitions), "seq": p.Seq, "steps": steps,
			"commands": len(p.Commands), "conflicts": len(p.Conflicts()), "applied": res != nil}
		if p.Kind == replay.KindUndo {
			// The undone command's outcome; "applied" above is this plan's.
			out["undoes"], out["undoneStatus"] = p.Of, p.Status
			if p.Reason != "" {
				out["undoneReason"] = p.Reason
			}
		}
		if res != nil {
			cs := make([]map[string]any, len(res))
			for i, a := range res {
				cs[i] = map[string]any{"id": a.Command.ID, "seq": a.Publish.Seq, "duplicate": a.Publish.Duplicate, "outcome": outcomeJSON(a.Outcome)}
			}
			out["published"] = cs
		}
		replayJSON(rc.stdout, out)
		return
	}

	w := rc.stdout
	switch p.Kind {
	case replay.KindUndo:
		fmt.Fprintf(w, "undo of %s (seq %d, %s %q)", p.Of, p.Seq, p.Table, p.PK)
		if p.Status != journal.StatusApplied {
			fmt.Fprintf(w, ": the command was %s", p.Status)
			if p.Reason != "" {
				fmt.Fprintf(w, " (%s)", p.Reason)
			}
			fmt.Fprintln(w, "; nothing to undo")
			return
		}
	case replay.KindRestore:
		scope := p.Table
		if !p.AllPartitions {
			scope += fmt.Sprintf(" %q", p.PK)
		}
		fmt.Fprintf(w, "restore of %s to seq %d", scope, p.Seq)
	}
	fmt.Fprintf(w, ": %s, %s, %s\n", plural(len(p.Steps), "row"), plural(len(p.Conflicts()), "conflict"), plural(len(p.Commands), "command"))
	for _, s := range p.Steps {
		fmt.Fprintln(w)
		fmt.Fprint(w, stepTitle(s))
		if ci, ok := carrier[[2]string{s.PK, s.RK}]; ok && s.Op != "" {
			fmt.Fprintf(w, "  [%s]", p.Commands[ci].ID)
		}
		fmt.Fprintln(w)
		if s.Conflict {
			fmt.Fprintf(w, "    now:      %s\n", versionText(s.Current, s.Exists))
			if s.Undone != nil {
				fmt.Fprintf(w, "    %s wrote: %s\n", p.Of, versionText(*s.Undone, !s.Undone.Deleted))
			}
			fmt.Fprintf(w, "    back to:  %s\n", versionText(s.Target, s.TargetExists))
		}
		var now, target events.Entity
		if s.Exists {
			now = s.Current.Props
		}
		if s.TargetExists {
			target = s.Target.Props
		}
		if s.Op != "" {
			for _, c := range replay.Diff(now, target) {
				switch {
				case !c.HadBefore:
					fmt.Fprintf(w, "    + %s = %s\n", c.Name, valueText(c.After))
				case !c.HasNow:
					fmt.Fprintf(w, "    - %s = %s\n", c.Name, valueText(c.Before))
				default:
					fmt.Fprintf(w, "    ~ %s: %s → %s\n", c.Name, valueText(c.Before), valueText(c.After))
				}
			}
		}
	}
	fmt.Fprintln(w)
	if res == nil {
		switch {
		case p.Blocked():
			fmt.Fprintf(w, "refused: %s changed by later commands; --force puts them back too. Nothing published.\n", plural(len(p.Conflicts()), "row"))
		case len(p.Commands) == 0 && reverted(p):
			fmt.Fprintf(w, "already undone by %s: nothing to do\n", p.Steps[0].Current.Cmd)
		case len(p.Commands) == 0:
			fmt.Fprintln(w, "nothing to do")
		default:
			fmt.Fprintf(w, "dry run: nothing published; --apply publishes %s\n", plural(len(p.Commands), "command"))
		}
		return
	}
	tw := newTab(w)
	fmt.Fprintln(tw, "COMMAND\tSEQ\tSTATUS")
	for _, a := range res {
		status := string(a.Outcome.Status)
		if a.Outcome.Reason != "" {
			status += ": " + a.Outcome.Reason
		}
		if a.Publish.Duplicate {
			status += " (published before; deduplicated)"
		}
		fmt.Fprintf(tw, "%s\t%d\t%s\n", a.Command.ID, a.Publish.Seq, status)
	}
	tw.Flush()
}

// reverted reports whether a plan's rows were all put back by the plan's
// own commands: an undo applied before.
func reverted(p *replay.Plan) bool {
	for _, s := range p.Steps {
		if !s.Reverted {
			return false
		}
	}
	return len(p.Steps) > 0
}

// stepTitle is one line naming a step: row, operation and guard.
func stepTitle(s replay.Step) string {
	var b strings.Builder
	fmt.Fprintf(&b, "%q/%q: ", s.PK, s.RK)
	switch {
	case s.Conflict:
		fmt.Fprintf(&b, "CONFLICT, changed later by %s (now version %d)", s.Current.Cmd, s.Current.Version)
		if s.Op != "" {
			fmt.Fprintf(&b, "; %s", opText(s))
		} else {
			b.WriteString("; already at the target")
		}
	case s.Reverted:
		fmt.Fprintf(&b, "already undone by %s (now version %d); nothing to do", s.Current.Cmd, s.Current.Version)
	case s.Op == "":
		b.WriteString("already at the target; nothing to do")
	default:
		b.WriteString(opText(s))
	}
	return b.String()
}

func opText(s replay.Step) string {
	t := string(s.Op)
	if s.IfVersion != nil {
		t += fmt.Sprintf(" ifVersion %d", *s.IfVersion)
	}
	switch {
	case s.TargetExists:
		t += fmt.Sprintf(" → values of version %d (%s at seq %d)", s.Target.Version, s.Target.Cmd, s.Target.Seq)
	case s.Target.Deleted:
		t += fmt.Sprintf(" → deleted, as at version %d", s.Target.Version)
	default:
		t += " → absent"
	}
	return t
}

func versionText(r projection.Row, exists bool) string {
	switch {
	case exists:
		return fmt.Sprintf("version %d by %s: %s", r.Version, r.Cmd, propsText(r.Props))
	case r.Deleted:
		return fmt.Sprintf("deleted (version %d by %s)", r.Version, r.Cmd)
	}
	return "absent"
}
