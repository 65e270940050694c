package console

// The repair page, with Config.AllowChanges: an undo, a restore, a prune
// or an erase, planned and previewed (GET), then confirmed (POST) and
// applied, journaled as the replay command's are. The page drives the
// replay.Plan the replay packages return: its Preview is what the page
// shows, its Fingerprint rides in the confirmation form, and its Apply
// refuses a plan the tables changed under (replay.ErrStale). The commands
// a repair publishes name the signed-in user as their issuer
// ("console:<user>", replay.Source.WithIssuer).

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/tablejournal/tablejournal/replay"
	"github.com/tablejournal/tablejournal/replay/erasure"
	"github.com/tablejournal/tablejournal/replay/repair"
	"github.com/tablejournal/tablejournal/replay/retention"
	"github.com/tablejournal/tablejournal/rows"
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
	// Issuer is the issuer the repair's commands are published under.
	Issuer string
	// Rows, for an erase, are the keys of the rows it erases, at most
	// eraseListed of them; RowsMore counts the others.
	Rows     []string
	RowsMore int
	CSRF     string
	// Result is what the confirmed plan did.
	Result *replay.Result
	Err    string
}

func (p repairPage) title() string { return "Repair: " + p.Req.Kind }

// RowSteps are the plan's steps over rows (undo, restore).
func (p repairPage) RowSteps() []replay.Step {
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
	issuer := repairIssuer(h.user(r))
	p, seq, err := h.svc.plan(r.Context(), rq, issuer)
	if err != nil {
		h.httpError(w, r, err)
		return
	}
	page := repairPage{Req: rq, Seq: seq, Plan: p.Preview(), Issuer: issuer, CSRF: h.csrf}
	if rq.Kind == "erase" {
		if page.Rows, page.RowsMore, err = h.svc.eraseRows(r.Context(), rq); err != nil {
			h.httpError(w, r, err)
			return
		}
	}
	h.render(w, r, "repair", page)
}

// repairApply applies a confirmed repair, if its plan is still the one
// previewed: the plan made now has the fingerprint the form carries, and
// its Apply finds it still the one the tables call for.
func (h *Handler) repairApply(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	rq := repairFrom(r.PostForm)
	issuer := repairIssuer(h.user(r)) // from the credentials, never from the form
	p, seq, err := h.svc.plan(ctx, rq, issuer)
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
		res, err = h.applyDetached(ctx, rq, p)
		if stale = errors.Is(err, replay.ErrStale); stale {
			if p, seq, err = h.svc.plan(ctx, rq, issuer); err != nil {
				h.httpError(w, r, err)
				return
			}
			v = p.Preview()
		}
	}
	if stale {
		w.WriteHeader(http.StatusConflict)
		h.render(w, r, "repair", repairPage{Req: rq, Seq: seq, Plan: v, Issuer: issuer, CSRF: h.csrf,
			Err: "The tables changed since the preview: here is the plan as it is now. Nothing was applied."})
		return
	}
	page := repairPage{Req: rq, Seq: seq, Issuer: issuer, Result: &res}
	if err != nil {
		page.Err = err.Error()
	}
	h.render(w, r, "repair", page)
}

// applyDetached applies p on after the request ends: an erase of a large
// partition takes minutes, and a browser that gives up, or a proxy's
// timeout, must not stop it halfway (the same erase run again would finish
// it, but nobody would know to). It stops when the console does. What it
// did is logged, for the case nobody reads the page: the commands it
// published are on the journal page too.
func (h *Handler) applyDetached(ctx context.Context, rq repairRequest, p replay.Plan) (replay.Result, error) {
	actx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	defer cancel()
	defer context.AfterFunc(h.base, cancel)()
	start := time.Now()
	res, err := p.Apply(actx)
	log := h.cfg.Logger.With("kind", rq.Kind, "table", rq.Table, "pk", rq.PK, "took", time.Since(start).Round(time.Millisecond))
	var ids []string
	for _, c := range res.Published {
		ids = append(ids, c.ID)
	}
	counts := make([]any, 0, 2*len(res.Counts))
	for _, c := range res.Counts {
		counts = append(counts, slog.Int64(c.What, c.N))
	}
	switch {
	case err != nil:
		log.Warn("console repair failed", "commands", ids, "err", err)
	case ctx.Err() != nil:
		log.Info("console repair applied after its request ended", append([]any{"commands", ids}, counts...)...)
	default:
		log.Info("console repair applied", append([]any{"commands", ids}, counts...)...)
	}
	return res, err
}

// user is who signed in: the Basic-auth user name, "token" for the bearer
// token, "" without authentication.
func (h *Handler) user(r *http.Request) string {
	if h.cfg.Auth == nil {
		return ""
	}
	if u, _, ok := r.BasicAuth(); ok && h.cfg.Auth.User != "" && same(u, h.cfg.Auth.User) {
		return u
	}
	if strings.HasPrefix(r.Header.Get("Authorization"), "Bearer ") {
		return "token"
	}
	return ""
}

// repairIssuer is the issuer of the commands of a repair asked for by
// user.
func repairIssuer(user string) string {
	if user == "" {
		return "console"
	}
	return "console:" + user
}

// plan makes the plan of a repair, whose commands name issuer, and
// resolves its point.
func (s *services) plan(ctx context.Context, rq repairRequest, issuer string) (replay.Plan, uint64, error) {
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
	rp := s.rp.WithIssuer(issuer)
	var p replay.Plan
	var err error
	switch rq.Kind {
	case "undo":
		p, err = repair.New(rp).PlanUndo(ctx, rq.Cmd, repair.UndoOptions{Force: rq.Force})
	case "restore":
		p, err = repair.New(rp).PlanRestore(ctx, rq.Table, part, seq)
	case "prune":
		p, err = retention.NewPruner(rp).PlanPrune(ctx, retention.PruneConfig{Table: rq.Table, Partition: part, Before: seq})
	case "erase":
		p, err = erasure.New(rp).PlanErase(ctx, rq.eraseTarget())
	default:
		return nil, 0, fmt.Errorf("%w: unknown repair %q: want undo, restore, prune or erase", errBadRequest, rq.Kind)
	}
	if errors.Is(err, replay.ErrNoOutcome) {
		return nil, 0, fmt.Errorf("%w: %w", errNotFound, err)
	}
	return p, seq, err
}

// eraseTarget is the key an erase request names.
func (r repairRequest) eraseTarget() erasure.Target {
	t := erasure.Target{Table: r.Table, PK: r.PK}
	if r.Row {
		rk := r.RK
		t.RK = &rk
	}
	return t
}

// eraseListed bounds the row keys an erase preview lists.
const eraseListed = 50

// eraseRows lists the keys of the rows an erase takes: the row, or the
// rows of the partition (tips, tombstones included), at most eraseListed
// and the count of the others.
func (s *services) eraseRows(ctx context.Context, rq repairRequest) ([]string, int, error) {
	t := rq.eraseTarget()
	if t.RK != nil {
		return []string{*t.RK}, 0, nil
	}
	var keys []string
	more := 0
	vt, err := s.rp.VersionTable(ctx, t.Table) // a plain table's history (SPEC §4)
	if err != nil {
		return nil, 0, err
	}
	from, to := rows.TipRange()
	err = store.All(ctx, s.st, vt, store.Query{PK: t.PK, From: from, To: to}, func(e store.Entity) error {
		r, err := rows.DecodeRow(e)
		if err != nil {
			return err
		}
		if len(keys) < eraseListed {
			keys = append(keys, r.RK)
		} else {
			more++
		}
		return nil
	})
	if errors.Is(err, store.ErrTableNotFound) {
		err = nil
	}
	return keys, more, err
}
