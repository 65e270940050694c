package console

// The repair page, with Config.AllowChanges: an undo, a restore, a prune
// or an erase, planned and previewed (GET), then confirmed (POST) and
// applied, journaled as the replay command's are. The page drives the
// replay.Plan the replay packages return: its Preview is what the page
// shows, its Fingerprint rides in the confirmation form, and its Apply
// refuses a plan the tables changed under (replay.ErrStale).

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"

	"github.com/tablejournal/tablejournal/replay"
	"github.com/tablejournal/tablejournal/replay/erasure"
	"github.com/tablejournal/tablejournal/replay/repair"
	"github.com/tablejournal/tablejournal/replay/retention"
	"github.com/tablejournal/tablejournal/store"
)

func init() {
	register(page{name: "repair", changes: true, routes: func(h *Handler) []route {
		return []route{{"GET /repair", h.repairPreview}, {"POST /repair", h.repairApply}}
	}})
}

// repairRequest names one correction, as the links and the confirmation
// form carry it.
type repairRequest struct {
	Kind string // "undo", "restore", "prune" or "erase"
	// Cmd is the undone command.
	Cmd string
	// Table, PK (All for the whole table) and, for a row erase, RK.
	Table, PK, RK string
	All, Row      bool
	// Point is where a restore goes back to, or a prune's horizon.
	Point string
	// Force undoes rows later commands changed again.
	Force bool
}

// repairFrom reads a repair from the query or the posted form.
func repairFrom(v url.Values) repairRequest {
	return repairRequest{Kind: v.Get("kind"), Cmd: v.Get("cmd"), Table: v.Get("table"), PK: v.Get("pk"), RK: v.Get("rk"),
		All: v.Get("scope") == "table", Row: v.Get("what") == "row", Point: v.Get("at"), Force: v.Get("force") == "1"}
}

// Params is the repair as link parameters, for the confirmation form.
func (r repairRequest) Params() map[string]string {
	m := map[string]string{"kind": r.Kind, "cmd": r.Cmd, "table": r.Table, "pk": r.PK, "at": r.Point}
	if r.All {
		m["scope"] = "table"
	}
	if r.Row {
		m["what"], m["rk"] = "row", r.RK
	}
	if r.Force {
		m["force"] = "1"
	}
	return m
}

type repairPage struct {
	Req repairRequest
	// Seq is the point resolved, for a restore or a prune.
	Seq  uint64
	Plan replay.Preview
	CSRF string
	// Result is what the confirmed plan did.
	Result *replay.Result
	Err    string
}

func (p repairPage) title() string { return "Repair: " + p.Req.Kind }

// Rows are the plan's steps over rows (undo, restore).
func (p repairPage) Rows() []replay.Step {
	var out []replay.Step
	for _, s := range p.Plan.Steps {
		if s.What == "" {
			out = append(out, s)
		}
	}
	return out
}

// Counts are what the plan's counted steps remove (prune, erase).
func (p repairPage) Counts() []replay.Count {
	var out []replay.Count
	for _, s := range p.Plan.Steps {
		if s.What != "" {
			out = append(out, s.Count)
		}
	}
	return out
}

// Commands are the IDs of the commands the plan publishes.
func (p repairPage) Commands() []string {
	var out []string
	seen := map[string]bool{}
	for _, s := range p.Plan.Steps {
		if s.Command != "" && !seen[s.Command] {
			seen[s.Command] = true
			out = append(out, s.Command)
		}
	}
	return out
}

// repairPreview shows what a repair would do, and the form that confirms
// it. Planning changes nothing.
func (h *Handler) repairPreview(w http.ResponseWriter, r *http.Request) {
	rq := repairFrom(r.URL.Query())
	p, seq, err := h.svc.plan(r.Context(), rq)
	if err != nil {
		h.httpError(w, r, err)
		return
	}
	h.render(w, r, "repair", repairPage{Req: rq, Seq: seq, Plan: p.Preview(), CSRF: h.csrf})
}

// repairApply applies a confirmed repair, if its plan is still the one
// previewed: the plan made now has the fingerprint the form carries, and
// its Apply finds it still the one the tables call for.
func (h *Handler) repairApply(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	rq := repairFrom(r.PostForm)
	p, seq, err := h.svc.plan(ctx, rq)
	if err != nil {
		h.httpError(w, r, err)
		return
	}
	v := p.Preview()
	stale := v.Fingerprint != r.PostFormValue("plan")
	var res replay.Result
	if !stale {
		if v.Blocked != "" {
			h.httpError(w, r, fmt.Errorf("%w: %s", errBadRequest, v.Blocked))
			return
		}
		res, err = p.Apply(ctx)
		if stale = errors.Is(err, replay.ErrStale); stale {
			if p, seq, err = h.svc.plan(ctx, rq); err != nil {
				h.httpError(w, r, err)
				return
			}
			v = p.Preview()
		}
	}
	if stale {
		w.WriteHeader(http.StatusConflict)
		h.render(w, r, "repair", repairPage{Req: rq, Seq: seq, Plan: v, CSRF: h.csrf,
			Err: "The tables changed since the preview: here is the plan as it is now. Nothing was applied."})
		return
	}
	page := repairPage{Req: rq, Seq: seq, Result: &res}
	if err != nil {
		page.Err = err.Error()
	}
	h.render(w, r, "repair", page)
}

// plan makes the plan of a repair, and resolves its point.
func (s *services) plan(ctx context.Context, rq repairRequest) (replay.Plan, uint64, error) {
	if _, err := s.journal(); err != nil {
		return nil, 0, err
	}
	part := store.InPartition(rq.PK)
	if rq.All {
		part = store.AllPartitions
	}
	var seq uint64
	if rq.Kind == "restore" || rq.Kind == "prune" {
		var err error
		if seq, err = s.resolve(ctx, rq.Point); err != nil {
			return nil, 0, err
		}
	}
	var p replay.Plan
	var err error
	switch rq.Kind {
	case "undo":
		p, err = s.plans.PlanUndo(ctx, rq.Cmd, repair.UndoOptions{Force: rq.Force})
	case "restore":
		p, err = s.plans.PlanRestore(ctx, rq.Table, part, seq)
	case "prune":
		p, err = s.pruner.PlanPrune(ctx, retention.PruneConfig{Table: rq.Table, Partition: part, Before: seq})
	case "erase":
		t := erasure.Target{Table: rq.Table, PK: rq.PK}
		if rq.Row {
			rk := rq.RK
			t.RK = &rk
		}
		p, err = s.eraser.PlanErase(ctx, t)
	default:
		return nil, 0, fmt.Errorf("%w: unknown repair %q: want undo, restore, prune or erase", errBadRequest, rq.Kind)
	}
	if errors.Is(err, replay.ErrNoOutcome) {
		return nil, 0, fmt.Errorf("%w: %w", errNotFound, err)
	}
	return p, seq, err
}
