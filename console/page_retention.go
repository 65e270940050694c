package console

// The retention page: what prunes, compactions and erasures removed of
// one table, as its rows and the journal record it: counts and commands,
// never values.

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/tablejournal/tablejournal/replay"
	"github.com/tablejournal/tablejournal/replay/retention"
	"github.com/tablejournal/tablejournal/rows"
	"github.com/tablejournal/tablejournal/store"
)

func init() {
	register(page{name: "retention", nav: "Retention", order: 40, routes: func(h *Handler) []route {
		return []route{{"GET /retention", h.retention}}
	}})
}

type retentionPage struct {
	Tables []string
	Table  string
	// Compacted, when set, is the table's journal horizon: the journal
	// holds none of its commands before it, and the snapshot stands for
	// them (its location never holds a secret).
	Compacted *retention.Horizon
	// Prunes are the partitions' prune horizons.
	Prunes   []prunedPartition
	Erasures []*replay.ErasedError
	// Truncated says more entries exist than the page lists.
	Truncated bool
}

// prunedPartition is a partition's prune horizon: versions older than Seq
// were removed by Cmd (Total rows over every prune of the partition, Removed of them by the last).
type prunedPartition struct {
	PK string
	rows.Horizon
}

func (retentionPage) title() string { return "Retention and erasure" }

// retentionLimit bounds the prunes and erasures one retention page lists.
const retentionLimit = 1000

func (h *Handler) retention(w http.ResponseWriter, r *http.Request) {
	var p retentionPage
	p.Tables, _ = h.svc.tables(r.Context())
	table := r.URL.Query().Get("table")
	p.Tables = spelled(p.Tables, table)
	if table != "" {
		if err := h.svc.retentionLog(r.Context(), table, &p); err != nil {
			h.httpError(w, r, err)
			return
		}
	}
	h.render(w, r, "retention", p)
}

// retentionLog reads what was removed of a table's history: the journal
// horizon, the partitions' prune horizons and the erasures.
func (s *services) retentionLog(ctx context.Context, table string, p *retentionPage) error {
	p.Table = table
	if s.rp.Journal() != nil {
		hz, ok, err := s.compactor.Horizon(ctx, table)
		if err != nil {
			return err
		}
		if ok {
			p.Compacted = &hz
		}
	}
	// The markers and the fence sort together, outside the tips and
	// versions: one range over every partition finds them all.
	vt, err := s.rp.VersionTable(ctx, table) // a plain table's history (SPEC §4)
	if err != nil {
		return err
	}
	from, _ := rows.ErasedRange()
	q := store.AllPartitions.Query(store.Query{From: from, To: rows.FenceKeyEnd})
	err = store.All(ctx, s.st, vt, q, func(e store.Entity) error {
		if len(p.Prunes)+len(p.Erasures) >= retentionLimit {
			p.Truncated = true
			return errStop
		}
		if e.RK == rows.FenceKey {
			if hz := rows.HorizonOf(e.Props); hz.Seq > 0 {
				p.Prunes = append(p.Prunes, prunedPartition{PK: e.PK, Horizon: hz})
			}
			return nil
		}
		rk, whole, ok := rows.MarkerRK(e.RK)
		if m, mok := rows.DecodeMarker(e); ok && mok {
			x := &replay.ErasedError{Table: table, PK: e.PK, Cmd: m.Cmd, Seq: m.Seq, At: m.At}
			if !whole {
				x.RK = &rk
			}
			p.Erasures = append(p.Erasures, x)
		}
		return nil
	})
	switch {
	case errors.Is(err, errStop):
		err = nil
	case errors.Is(err, store.ErrTableNotFound):
		err = fmt.Errorf("table %s: %w", table, errNotFound)
	}
	return err
}
