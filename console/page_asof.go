package console

// The as-of page: a partition or a table as it stood at a point, stepping
// through the commands that changed it, and the rows that differ between
// two points.

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/journal"
	"github.com/tablejournal/tablejournal/replay"
	"github.com/tablejournal/tablejournal/replay/history"
	"github.com/tablejournal/tablejournal/rows"
	"github.com/tablejournal/tablejournal/store"
	"github.com/tablejournal/tablejournal/wire"
)

func init() {
	register(page{name: "asof", nav: "As of", order: 20, routes: func(h *Handler) []route {
		return []route{{"GET /asof", h.asof}}
	}})
}

// asofQuery selects a page of a table's or a partition's state at a
// sequence.
type asofQuery struct {
	Table string
	PK    string
	All   bool // the whole table, PK ignored
	Seq   uint64
	// After continues a page: the rows after this key ("pk\x00rk").
	After string
	// Limit bounds the rows; if zero, 100.
	Limit int
	// Against, if set, is a second sequence: the page then holds the rows
	// that differ between Seq and Against.
	Against uint64
}

// asofRow is one row at a point or, in a comparison, one row that differs
// between two: Kind "added", "removed" or "changed", with the changes.
type asofRow struct {
	rows.Row
	Kind    string
	Changes []history.PropChange
}

// asofRows is one page of a state at a point.
type asofRows struct {
	Rows []asofRow
	// Next continues the page (asofQuery.After); "" at the end.
	Next string
	// Erased lists the keys erased after the point (no values).
	Erased []*replay.ErasedError
	// Pruned, when set, says the point is before the partition's prune
	// horizon.
	Pruned string
}

type asofPage struct {
	Tables           []string
	Table, PK        string
	All              bool
	At, Against      string
	Seq, AgainstSeq  uint64
	From, To         uint64 // a comparison's older and newer point
	Prev, Next       uint64
	After            string
	Page             asofRows
	Compare, Stepped bool
}

func (p asofPage) title() string { return "As of " + p.At }

func (h *Handler) asof(w http.ResponseWriter, r *http.Request) {
	qs := r.URL.Query()
	ctx := r.Context()
	p := asofPage{Table: qs.Get("table"), PK: qs.Get("pk"), All: qs.Get("scope") == "table",
		At: qs.Get("at"), Against: qs.Get("against"), After: qs.Get("after")}
	if p.At == "" {
		p.At = "head"
	}
	p.Tables, _ = h.svc.tables(ctx)
	p.Tables = spelled(p.Tables, p.Table)
	if p.Table == "" {
		h.render(w, r, "asof", p)
		return
	}
	var err error
	if p.Seq, err = h.svc.resolve(ctx, p.At); err != nil {
		h.httpError(w, r, err)
		return
	}
	q := asofQuery{Table: p.Table, PK: p.PK, All: p.All, Seq: p.Seq, After: p.After}
	if p.Against != "" {
		if p.AgainstSeq, err = h.svc.resolve(ctx, p.Against); err != nil {
			h.httpError(w, r, err)
			return
		}
		q.Against, p.Compare = p.AgainstSeq, true
		// A comparison reads from the older point to the newer, in
		// whichever order they were given: a row created between them
		// is added, not removed.
		p.From, p.To = min(p.Seq, p.AgainstSeq), max(p.Seq, p.AgainstSeq)
		q.Seq, q.Against = p.From, p.To
	}
	if p.Page, err = h.svc.asOf(ctx, q); err != nil {
		h.httpError(w, r, err)
		return
	}
	if prev, next, err := h.svc.steps(ctx, p.Table, p.PK, p.All, p.Seq); err == nil {
		p.Prev, p.Next, p.Stepped = prev, next, true
	}
	if p.Page.Pruned != "" {
		// The point is before the prune horizon: earlier points are too.
		p.Prev = 0
	}
	h.render(w, r, "asof", p)
}

// spelled is the tables of the store, with the one a page names in the
// page's spelling: table names are case-insensitive, and a store may list
// them in lower case (an option must match to be selected).
func spelled(tables []string, table string) []string {
	for i, t := range tables {
		if strings.EqualFold(t, table) {
			tables[i] = table
		}
	}
	return tables
}

// asOfKey is the continuation key of an as-of page.
func asOfKey(pk, rk string) string { return pk + "\x00" + rk }

// asOf returns a page of the rows of a partition (or of the whole table
// when q.All) as they stood at a journal sequence, or that differ between
// two.
func (s *services) asOf(ctx context.Context, q asofQuery) (asofRows, error) {
	if q.Limit <= 0 {
		q.Limit = 100
	}
	var page asofRows
	afterPK, _, cont := strings.Cut(q.After, "\x00")
	// add appends a row, or ends the page when it is full.
	add := func(r asofRow) error {
		if cont && asOfKey(r.PK, r.RK) <= q.After {
			return nil
		}
		if len(page.Rows) == q.Limit {
			page.Next = asOfKey(page.Rows[len(page.Rows)-1].PK, page.Rows[len(page.Rows)-1].RK)
			return errStop
		}
		page.Rows = append(page.Rows, r)
		return nil
	}
	partition := func(pk string) error {
		if q.Against != 0 {
			return s.diffPartition(ctx, q, pk, &page, add)
		}
		return s.partitionAt(ctx, q.Table, pk, q.Seq, &page, add)
	}
	var err error
	if !q.All {
		err = partition(q.PK)
	} else {
		// The partitions of the history, for a plain table: a partition
		// whose rows are all deleted now had rows then.
		vt, verr := s.rp.VersionTable(ctx, q.Table)
		if verr != nil {
			return page, verr
		}
		err = s.st.Partitions(ctx, vt, func(pk string) error {
			if cont && store.CompareKeys(pk, afterPK) < 0 {
				return nil
			}
			return partition(pk)
		})
	}
	switch {
	case errors.Is(err, errStop):
		return page, nil
	case errors.Is(err, store.ErrTableNotFound):
		return page, fmt.Errorf("table %s: %w", q.Table, errNotFound)
	}
	return page, err
}

// gone notes in page a prune or an erase that answers a read of a
// partition, rather than failing it; other errors are returned.
func gone(page *asofRows, err error) error {
	var pe *replay.PrunedError
	var ee *replay.ErasedError
	switch {
	case errors.As(err, &pe):
		page.Pruned = pe.Error()
		return nil
	case errors.As(err, &ee):
		page.Erased = append(page.Erased, ee)
		return nil
	}
	return err
}

// partitionAt adds the rows of one partition at seq.
func (s *services) partitionAt(ctx context.Context, table, pk string, seq uint64, page *asofRows, add func(asofRow) error) error {
	err := s.hist.AsOfErasures(ctx, table, store.InPartition(pk), seq, func(es []*replay.ErasedError) error {
		page.Erased = append(page.Erased, es...)
		return nil
	}, func(r rows.Row) error {
		return add(asofRow{Row: r})
	})
	return gone(page, err)
}

// diffPartition adds the rows of one partition that differ between
// q.Seq and q.Against.
func (s *services) diffPartition(ctx context.Context, q asofQuery, pk string, page *asofRows, add func(asofRow) error) error {
	at := func(seq uint64) (map[string]rows.Row, error) {
		m := make(map[string]rows.Row)
		err := s.hist.AsOf(ctx, q.Table, store.InPartition(pk), seq, func(r rows.Row) error {
			m[r.RK] = r
			return nil
		})
		return m, gone(page, err)
	}
	a, err := at(q.Seq)
	if err != nil {
		return err
	}
	b, err := at(q.Against)
	if err != nil {
		return err
	}
	keys := make([]string, 0, len(a)+len(b))
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, store.CompareKeys)
	for _, k := range keys {
		ra, inA := a[k]
		rb, inB := b[k]
		r := asofRow{}
		switch {
		case inA && inB && ra.Seq == rb.Seq:
			continue
		case !inA:
			r.Kind = "added"
		case !inB:
			r.Kind = "removed"
		default:
			r.Kind = "changed"
		}
		var before, after edm.Entity
		if inA {
			before = ra.Props
		}
		r.Row = ra
		if inB {
			after, r.Row = rb.Props, rb
		}
		r.PK, r.RK, r.Changes = pk, k, history.Diff(before, after)
		if err := add(r); err != nil {
			return err
		}
	}
	return nil
}

// steps finds the sequences of the applied commands of a table, or of one
// of its partitions when pk is set, just before and just after seq (0 when
// there is none): the page steps through them.
func (s *services) steps(ctx context.Context, table, pk string, all bool, seq uint64) (prev, next uint64, err error) {
	j, err := s.journal()
	if err != nil {
		return 0, 0, err
	}
	subj := filter(table, pk, all)
	head, err := j.Head(ctx)
	if err != nil {
		return 0, 0, err
	}
	// applied returns the sequences of the scope's applied commands in
	// [from, to], in order.
	applied := func(from, to uint64) ([]uint64, error) {
		var es []entry
		err := j.ReadAny(ctx, from, to, subj, func(m journal.Msg) error {
			es = append(es, decodeEntry(m))
			return nil
		})
		if err != nil {
			return nil, err
		}
		if err := s.attachOutcomes(ctx, es); err != nil {
			return nil, err
		}
		var out []uint64
		for _, e := range es {
			if e.Outcome.Status == wire.StatusApplied {
				out = append(out, e.Seq)
			}
		}
		return out, nil
	}
	// Windows grow from small, so that the step next to a busy point
	// costs a short read, and a far one a few long ones.
	const first, most = 128, 1 << 16
	for from, w := seq+1, uint64(first); from <= head && next == 0 && from <= seq+most; from, w = from+w, w*4 {
		got, err := applied(from, min(head, from+w-1))
		if err != nil {
			return 0, 0, err
		}
		if len(got) > 0 {
			next = got[0]
		}
	}
	for to, w := min(seq, head+1), uint64(first); to > 1 && prev == 0 && to+most > seq; w *= 4 {
		from := uint64(1)
		if to > w {
			from = to - w
		}
		got, err := applied(from, to-1)
		if err != nil {
			return 0, 0, err
		}
		if len(got) > 0 {
			prev = got[len(got)-1]
		}
		to = from
	}
	if !all && prev != 0 {
		// A step into the partition's pruned history would show nothing
		// but the prune.
		if hz, err := s.horizon(ctx, table, pk); err == nil && hz.Pruned(prev) {
			prev = 0
		}
	}
	return prev, next, nil
}
