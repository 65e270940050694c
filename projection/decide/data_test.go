package decide

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/cockroachdb/datadriven"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/rows"
	"github.com/tablejournal/tablejournal/store"
	"github.com/tablejournal/tablejournal/wire"
)

// TestApplyData runs the pure decision (decide.go) on the files of
// testdata/apply, in the style of Pebble's data-driven tests: each file
// sets the partition's rows, applies commands to them and holds what the
// apply must answer (results, rows after, store operations). A change of
// behaviour is a reviewed diff of a text file; after one, regenerate the
// expectations with
//
//	go test -run TestApplyData ./projection/decide -rewrite
//
// and read the diff. Commands:
//
//	layout plain|versioned  the layout the applies that follow are
//	                        projected in (SPEC §4; versioned until said):
//	                        on plain, each apply also answers the writes
//	                        to the plain table (PlainOp), which starts
//	                        holding the rows' tips
//
//	plain                   the plain table's rows, one per line, where it
//	                        differs from the tips (a crash between the two
//	                        writes, another owner): <rk> seq=<seq> | <rk> absent
//
//	rows                    the partition's rows before, one per line:
//	<rk> v=<version> seq=<seq> cmd=<id> [deleted] [<prop>=<int> ...]
//
//	fence erase=<seq>       the partition's fence holds <seq> as its newest
//	                        erase (_eraseSeq) for the applies that follow.
//
//	apply                   commands in journal order, one per line:
//	<seq> <id> [prior=<seq>:<status>[:same|:other]] <op> <rk> [ifv=<n>] [<prop>=<int> ...] [; <op> <rk> ...]
//	                        (:same and :other give the prior outcome the
//	                        digest of this command or of another body)
//	<seq> <id> [prior=<seq>:<status>] erase <rk>|*
//	                        an erase of a row, or of the partition (*)
//	                        answers each result, the rows after, the
//	                        store operations of the (last) transaction,
//	                        how many transactions the commands took (a
//	                        command must commit apart when its ID is
//	                        already in the open transaction, or after an
//	                        erase) and the fence the last one writes; the
//	                        rows after become the rows of the next command
//	                        of the file.
func TestApplyData(t *testing.T) {
	datadriven.Walk(t, "testdata/apply", func(t *testing.T, path string) {
		state := map[string]*rowState{}
		var eraseSeq uint64
		var layout wire.Layout
		plain := map[string]PlainRow{} // the plain table where it differs from the tips
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			switch d.Cmd {
			case "layout":
				var l string
				d.ScanArgs(t, "layout", &l)
				layout = wire.Layout(l)
				return ""
			case "plain":
				for _, line := range nonEmptyLines(d.Input) {
					f := strings.Fields(line)
					if len(f) != 2 {
						d.Fatalf(t, "plain row %q: want <rk> seq=<seq>|absent", line)
					}
					if f[1] == "absent" {
						plain[f[0]] = PlainRow{}
						continue
					}
					n, err := strconv.ParseUint(strings.TrimPrefix(f[1], "seq="), 10, 64)
					if err != nil {
						d.Fatalf(t, "plain row %q: %v", line, err)
					}
					plain[f[0]] = PlainRow{Exists: true, Seq: n, ETag: fmt.Sprintf("e%d", n)}
				}
				return ""
			case "fence":
				d.ScanArgs(t, "erase", &eraseSeq)
				return ""
			case "rows":
				state = map[string]*rowState{}
				for _, line := range nonEmptyLines(d.Input) {
					rk, s, err := parseRow(line)
					if err != nil {
						d.Fatalf(t, "%v", err)
					}
					state[rk] = s
				}
				return ""
			case "apply":
				var entries []Entry
				for _, line := range nonEmptyLines(d.Input) {
					e, err := parseEntry(line)
					if err != nil {
						d.Fatalf(t, "%v", err)
					}
					entries = append(entries, e)
				}
				b, txns := runTxns(t, state, eraseSeq, entries...)
				out := describeApply(b)
				out += fmt.Sprintf("transactions: %d\nfence: %s\n", txns, describeFence(b.Last))
				if layout == wire.LayoutPlain {
					out += describePlain(b, state, plain, entries)
				}
				for rk, s := range b.Cur {
					state[rk] = s
				}
				return out
			}
			d.Fatalf(t, "unknown command %q", d.Cmd)
			return ""
		})
	})
}

func nonEmptyLines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return out
}

// parseRow reads "<rk> v=<version> seq=<seq> cmd=<id> [deleted] [<prop>=<int> ...]".
func parseRow(line string) (string, *rowState, error) {
	f := strings.Fields(line)
	r := rows.Row{PK: "p", RK: f[0], Tip: true, Props: edm.Entity{}, At: t0}
	for _, kv := range f[1:] {
		if kv == "deleted" {
			r.Deleted, r.Tip, r.Op = true, false, events.OpDelete
			continue
		}
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return "", nil, fmt.Errorf("row %q: %q is not key=value", line, kv)
		}
		n, err := strconv.ParseInt(v, 10, 64)
		switch k {
		case "cmd":
			r.Cmd, err = v, nil
		case "v":
			r.Version = n
		case "seq":
			r.Seq = uint64(n)
		default:
			r.Props[k] = edm.Int64(n)
		}
		if err != nil {
			return "", nil, fmt.Errorf("row %q: %w", line, err)
		}
	}
	if r.Deleted {
		return r.RK, &rowState{Latest: &r}, nil
	}
	return r.RK, &rowState{Tip: &r, Latest: &r}, nil
}

// parseEntry reads "<seq> <id> [prior=<seq>:<status>] <op> <rk> [ifv=<n>] [<prop>=<int> ...] [; ...]".
func parseEntry(line string) (Entry, error) {
	f := strings.Fields(line)
	if len(f) < 2 {
		return Entry{}, fmt.Errorf("command %q: want <seq> <id> ops", line)
	}
	seq, err := strconv.ParseUint(f[0], 10, 64)
	if err != nil {
		return Entry{}, fmt.Errorf("command %q: %w", line, err)
	}
	e := entry(seq, f[1])
	rest := f[2:]
	var priorBody string
	if len(rest) > 0 && strings.HasPrefix(rest[0], "prior=") {
		ps, st, _ := strings.Cut(strings.TrimPrefix(rest[0], "prior="), ":")
		st, body, _ := strings.Cut(st, ":")
		n, err := strconv.ParseUint(ps, 10, 64)
		if err != nil {
			return Entry{}, fmt.Errorf("command %q: %w", line, err)
		}
		e.Prior = Prior{Seq: n, Status: wire.Status(st)}
		rest = rest[1:]
		priorBody = body
	}
	if len(rest) == 2 && rest[0] == "erase" {
		er := &events.Erase{ID: f[1], Table: e.Cmd.Table, PK: e.Cmd.PK}
		if rest[1] != "*" {
			er.RK = &rest[1]
		}
		e.Cmd, e.Erase = nil, er
		return e, nil
	}
	for _, opText := range strings.Split(strings.Join(rest, " "), ";") {
		of := strings.Fields(opText)
		if len(of) < 2 {
			return Entry{}, fmt.Errorf("command %q: op %q: want <op> <rk>", line, opText)
		}
		o := events.RowOp{Op: events.OpKind(of[0]), RK: of[1]}
		if o.Op != events.OpDelete {
			o.Entity = edm.Entity{}
		}
		for _, kv := range of[2:] {
			k, v, _ := strings.Cut(kv, "=")
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return Entry{}, fmt.Errorf("command %q: %q: %w", line, kv, err)
			}
			if k == "ifv" {
				o.IfVersion = &n
				continue
			}
			o.Entity[k] = edm.Int64(n)
		}
		e.Cmd.Ops = append(e.Cmd.Ops, o)
	}
	switch priorBody {
	case "same":
		e.Prior.Digest = e.Cmd.Digest()
	case "other":
		e.Prior.Digest = "another body"
	}
	return e, nil
}

// describeApply renders what a batch decided: each result, the rows it
// touched after it, and the store operations of its transaction.
func describeApply(b *Txn) string {
	var sb strings.Builder
	for _, r := range b.Results {
		fmt.Fprintf(&sb, "%d %s: %s", r.Seq, r.ID, r.Status)
		if r.Code != "" {
			fmt.Fprintf(&sb, " (%s)", r.Code)
		}
		for _, rv := range r.Rows {
			fmt.Fprintf(&sb, " %s@%d", rv.RK, rv.Version)
		}
		for _, c := range r.Changes {
			fmt.Fprintf(&sb, " %s:%s", c.RK, c.Kind)
		}
		if r.Erased {
			sb.WriteString(" (before the fence's erase)")
		}
		sb.WriteString("\n")
	}
	sb.WriteString("rows after:\n")
	for _, rk := range slices.Sorted(maps.Keys(b.Cur)) {
		s := b.Cur[rk]
		switch {
		case s.Tip != nil:
			fmt.Fprintf(&sb, "  %s v=%d seq=%d cmd=%s %s\n", rk, s.Tip.Version, s.Tip.Seq, s.Tip.Cmd, props(s.Tip.Props))
		case s.Latest != nil:
			fmt.Fprintf(&sb, "  %s v=%d seq=%d cmd=%s deleted\n", rk, s.Latest.Version, s.Latest.Seq, s.Latest.Cmd)
		default:
			fmt.Fprintf(&sb, "  %s none\n", rk)
		}
	}
	sb.WriteString("store ops:\n")
	ops := b.TxOps()
	slices.SortFunc(ops, func(x, y store.Op) int { return strings.Compare(x.RK, y.RK) })
	for _, o := range ops {
		fmt.Fprintf(&sb, "  %s %s", o.Kind, describeKey(o.RK))
		if o.IfMatch != "" {
			fmt.Fprintf(&sb, " if-match=%s", o.IfMatch)
		}
		if o.Props != nil {
			fmt.Fprintf(&sb, " %s", props(userProps(o.Props)))
		}
		sb.WriteString("\n")
	}
	return sb.String()
}

// describePlain renders the writes that bring the plain table to the
// tips after b (PlainOp) for the rows entries name, the table holding
// before the tips of state but where plain says otherwise (plain is then
// updated to what the writes leave).
func describePlain(b *Txn, state map[string]*rowState, plain map[string]PlainRow, entries []Entry) string {
	var sb strings.Builder
	sb.WriteString("plain table ops:\n")
	upTo := b.Last.Seq
	for _, s := range state {
		if s.Latest != nil {
			upTo = max(upTo, s.Latest.Seq)
		}
	}
	for _, rk := range TouchedRKs(entries) {
		cur, ok := plain[rk]
		if !ok {
			if s := state[rk]; s != nil && s.Tip != nil {
				cur = PlainRow{Exists: true, Seq: s.Tip.Seq, ETag: fmt.Sprintf("e%d", s.Tip.Seq)}
			}
		}
		want := b.Cur[rk]
		if want == nil {
			if want = state[rk]; want == nil {
				want = &rowState{}
			}
		}
		delete(plain, rk)
		op, ok := PlainOp(rk, want, cur, upTo)
		if !ok {
			continue
		}
		fmt.Fprintf(&sb, "  %s %s", op.Kind, rk)
		if op.IfMatch != "" {
			fmt.Fprintf(&sb, " if-match=%s", op.IfMatch)
		}
		if op.Props != nil {
			fmt.Fprintf(&sb, " seq=%d %s", op.Props[rows.ColSeq].Int, props(userProps(op.Props)))
		}
		sb.WriteString("\n")
	}
	return sb.String()
}

// userProps is e without its system columns.
func userProps(e edm.Entity) edm.Entity {
	user := edm.Entity{}
	for k, v := range e {
		if !strings.HasPrefix(k, "_") {
			user[k] = v
		}
	}
	return user
}

// describeKey names a stored RowKey: the tip of a row, or its version row
// (keyed by the journal sequence that wrote it).
func describeKey(key string) string {
	rk, seq, tip, ok := rows.ParseKey(key)
	switch {
	case !ok:
		return key
	case tip:
		return "tip(" + rk + ")"
	}
	return fmt.Sprintf("version(%s seq=%d)", rk, seq)
}

func props(e edm.Entity) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(e)) {
		parts = append(parts, fmt.Sprintf("%s=%d", k, e[k].Int))
	}
	return "{" + strings.Join(parts, " ") + "}"
}

// describeFence renders the fence a transaction writes: the newest command
// that wrote a version.
func describeFence(f Fence) string {
	if !f.Exists {
		return "unchanged"
	}
	return fmt.Sprintf("seq=%d cmd=%s", f.Seq, f.Cmd)
}
