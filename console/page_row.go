package console

// The row page: every stored version of a row, with its difference to the
// one before, its prune horizon and its erasure.

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/replay"
	"github.com/tablejournal/tablejournal/replay/history"
	"github.com/tablejournal/tablejournal/rows"
)

func init() {
	register(page{name: "row", routes: func(h *Handler) []route {
		return []route{{"GET /row", h.row}}
	}})
}

// rowPage is every stored version of one row.
type rowPage struct {
	Table, PK, RK string
	Versions      []rowVersion
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

func (h *Handler) row(w http.ResponseWriter, r *http.Request) {
	qs := r.URL.Query()
	table, pk, rk := qs.Get("table"), qs.Get("pk"), qs.Get("rk")
	if table == "" || !qs.Has("pk") || !qs.Has("rk") {
		h.httpError(w, r, fmt.Errorf("%w: name a row: ?table=T&pk=P&rk=R", errBadRequest))
		return
	}
	p, err := h.svc.rowHistory(r.Context(), table, pk, rk)
	if err != nil {
		h.httpError(w, r, err)
		return
	}
	h.render(w, r, "row", p)
}

// rowHistory reads every stored version of a row, oldest first.
func (s *services) rowHistory(ctx context.Context, table, pk, rk string) (rowPage, error) {
	p := rowPage{Table: table, PK: pk, RK: rk}
	vs, err := s.hist.History(ctx, table, pk, rk)
	if err != nil {
		return p, err
	}
	if hz, err := rows.ReadHorizon(ctx, s.st, table, pk); err == nil {
		p.Pruned = hz
	}
	var ee *replay.ErasedError
	if err := s.hist.Erased(ctx, table, pk, rk, 0); errors.As(err, &ee) {
		p.Erased = ee
	}
	if len(vs) == 0 && p.Erased == nil {
		return p, fmt.Errorf("row %s/%s/%s: %w", table, pk, rk, errNotFound)
	}
	issuers := s.issuers(ctx, vs)
	var prev *rows.Row
	for i, r := range vs {
		var before, after edm.Entity
		if prev != nil && !prev.Deleted {
			before = prev.Props
		}
		if !r.Deleted {
			after = r.Props
		}
		p.Versions = append(p.Versions, rowVersion{Row: r, Issuer: issuers[r.Seq], Changes: history.Diff(before, after)})
		prev = &vs[i]
	}
	p.Timeline = versionsChart(vs)
	return p, nil
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
