package console

// The row page: one page of the stored versions of a row (the newest 100
// unless a cursor names another), each with its difference to the one
// before, its prune horizon and its erasure.

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"

	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/replay"
	"github.com/tablejournal/tablejournal/replay/history"
	"github.com/tablejournal/tablejournal/rows"
	"github.com/tablejournal/tablejournal/store"
)

func init() {
	register(page{name: "row", routes: func(h *Handler) []route {
		return []route{{"GET /row", h.row}}
	}})
}

// historyPage is the versions a row page shows.
const historyPage = 100

// rowQuery selects a page of a row's versions. Without a cursor it is the
// newest page.
type rowQuery struct {
	Table, PK, RK string
	// Before, if set, selects the newest versions written before this
	// journal sequence (an older page).
	Before uint64
	// After, if set and Before is not, selects the oldest versions written
	// after this journal sequence (a newer page).
	After uint64
	// Limit bounds the versions of the page; if zero, historyPage.
	Limit int
}

// rowPage is one page of the stored versions of one row.
type rowPage struct {
	Table, PK, RK string
	// Versions are the page's versions, oldest first.
	Versions []rowVersion
	// Total is the number of stored versions of the row, over every page.
	Total int
	// Older, when set, continues to the older page (rowQuery.Before);
	// Newer to the newer one (rowQuery.After). Both are 0 at the ends.
	Older, Newer uint64
	// Pruned, when its Seq is set, is the prune horizon of the row's
	// partition: versions older than it were removed.
	Pruned rows.Horizon
	// Erased, when set, says the row or its partition was erased.
	Erased   *replay.ErasedError
	Timeline chart
}

// rowVersion is one version of a row, with its difference to the one
// before and the issuer of the command that wrote it.
type rowVersion struct {
	rows.Row
	Issuer  string
	Changes []history.PropChange
}

func (p rowPage) title() string { return "Row " + p.RK }

// Shown says which versions the page holds, when it is not all of them.
func (p rowPage) Shown() string {
	if len(p.Versions) == 0 || len(p.Versions) == p.Total {
		return ""
	}
	return fmt.Sprintf("versions %d to %d of %d stored (%d a page)", p.Versions[0].Version, p.Versions[len(p.Versions)-1].Version, p.Total, historyPage)
}

func (h *Handler) row(w http.ResponseWriter, r *http.Request) {
	qs := r.URL.Query()
	table, pk, rk := qs.Get("table"), qs.Get("pk"), qs.Get("rk")
	if table == "" || !qs.Has("pk") || !qs.Has("rk") {
		h.httpError(w, r, fmt.Errorf("%w: name a row: ?table=T&pk=P&rk=R", errBadRequest))
		return
	}
	q := rowQuery{Table: table, PK: pk, RK: rk}
	var err error
	if q.Before, err = uintParam(r, "before"); err == nil {
		q.After, err = uintParam(r, "after")
	}
	if err != nil {
		h.httpError(w, r, err)
		return
	}
	p, err := h.svc.rowHistory(r.Context(), q)
	if errors.Is(err, errNotFound) && p.Erased != nil {
		// An erased row is not found, and its page says who erased it.
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(http.StatusNotFound)
	} else if err != nil {
		h.httpError(w, r, err)
		return
	}
	h.render(w, r, "row", p)
}

// rowHistory reads one page of the stored versions of a row, oldest first.
func (s *services) rowHistory(ctx context.Context, q rowQuery) (rowPage, error) {
	table, pk, rk := q.Table, q.PK, q.RK
	p := rowPage{Table: table, PK: pk, RK: rk}
	vs, err := s.hist.History(ctx, table, pk, rk)
	var ee *replay.ErasedError
	switch {
	case errors.As(err, &ee):
		// Every version of the row went with an erase: the page says so.
		vs, err = nil, nil
	case errors.Is(err, store.ErrTableNotFound):
		return p, fmt.Errorf("table %s: %w", table, errNotFound)
	}
	if err != nil {
		return p, err
	}
	if hz, err := s.horizon(ctx, table, pk); err == nil {
		p.Pruned = hz
	}
	if err := s.hist.Erased(ctx, table, pk, rk, 0); errors.As(err, &ee) {
		p.Erased = ee
	}
	if len(vs) == 0 {
		return p, fmt.Errorf("row %s/%s/%s: %w", table, pk, rk, errNotFound)
	}
	p.Total = len(vs)
	lo, hi := historyWindow(vs, q)
	if lo > 0 {
		p.Older = vs[lo].Seq
	}
	if hi < len(vs) {
		p.Newer = vs[hi-1].Seq
	}
	// Issuers and differences are read for the page alone: a row of 5,000
	// versions costs one page's journal reads, not 5,000.
	issuers := s.issuers(ctx, vs[lo:hi])
	for i := lo; i < hi; i++ {
		r := vs[i]
		var before, after edm.Entity
		if i > 0 && !vs[i-1].Deleted {
			before = vs[i-1].Props
		}
		if !r.Deleted {
			after = r.Props
		}
		p.Versions = append(p.Versions, rowVersion{Row: r, Issuer: issuers[r.Seq], Changes: history.Diff(before, after)})
	}
	p.Timeline = versionsChart(vs[lo:hi])
	return p, nil
}

// historyWindow is the page [lo, hi) of versions (oldest first) that q
// selects: the newest before q.Before, else the oldest after q.After,
// else the newest.
func historyWindow(vs []rows.Row, q rowQuery) (lo, hi int) {
	n := q.Limit
	if n <= 0 {
		n = historyPage
	}
	bySeq := func(r rows.Row, seq uint64) int { return cmp.Compare(r.Seq, seq) }
	switch {
	case q.Before != 0:
		hi, _ = slices.BinarySearchFunc(vs, q.Before, bySeq)
		return max(0, hi-n), hi
	case q.After != 0:
		lo, found := slices.BinarySearchFunc(vs, q.After, bySeq)
		if found {
			lo++
		}
		return lo, min(len(vs), lo+n)
	}
	return max(0, len(vs)-n), len(vs)
}

// issuers reads the issuer of the command of each version, when the
// journal still stores it.
func (s *services) issuers(ctx context.Context, vs []rows.Row) map[uint64]string {
	out := make(map[uint64]string, len(vs))
	j := s.rp.Journal()
	if j == nil {
		return out
	}
	for _, r := range vs {
		if m, err := j.Get(ctx, r.Seq); err == nil {
			out[r.Seq] = decodeEntry(m).Issuer
		}
	}
	return out
}
