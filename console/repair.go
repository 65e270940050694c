package console

import (
	"errors"
	"net/http"
	"net/url"
	"strings"
)

// repairFrom reads a repair from the query or the posted form.
func repairFrom(v url.Values) Repair {
	return Repair{Kind: v.Get("kind"), Cmd: v.Get("cmd"), Table: v.Get("table"), PK: v.Get("pk"), RK: v.Get("rk"),
		All: v.Get("scope") == "table", Row: v.Get("what") == "row", Point: v.Get("at"), Force: v.Get("force") == "1"}
}

// params is the repair as link parameters, for the confirmation form.
func (r Repair) Params() map[string]string {
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
	Plan   RepairPlan
	CSRF   string
	Result *RepairResult
	Err    string
}

func (p repairPage) title() string { return "Repair: " + p.Plan.Kind }

// repairPreview shows what a repair would do, and the form that confirms
// it. Planning changes nothing.
func (h *Handler) repairPreview(w http.ResponseWriter, r *http.Request) {
	rep := repairFrom(r.URL.Query())
	rep.By = h.user(r)
	plan, err := h.cfg.Source.Plan(r.Context(), rep)
	if err != nil {
		h.httpError(w, r, err)
		return
	}
	h.render(w, r, "repair", repairPage{Plan: plan, CSRF: h.csrf})
}

// repairApply applies a confirmed repair, if its plan is still the one
// previewed.
func (h *Handler) repairApply(w http.ResponseWriter, r *http.Request) {
	rep := repairFrom(r.PostForm)
	rep.By = h.user(r) // from the credentials, never from the form
	res, err := h.cfg.Source.Apply(r.Context(), rep, r.PostFormValue("plan"))
	if errors.Is(err, ErrPlanChanged) {
		w.WriteHeader(http.StatusConflict)
		plan, perr := h.cfg.Source.Plan(r.Context(), rep)
		if perr != nil {
			h.httpError(w, r, perr)
			return
		}
		h.render(w, r, "repair", repairPage{Plan: plan, CSRF: h.csrf, Err: "The tables changed since the preview: here is the plan as it is now. Nothing was applied."})
		return
	}
	page := repairPage{Plan: res.Plan, Result: &res}
	if page.Plan.Kind == "" { // nothing was planned
		page.Plan.Repair = rep
	}
	if err != nil {
		if errors.Is(err, ErrNotFound) || errors.Is(err, ErrBadRequest) {
			h.httpError(w, r, err)
			return
		}
		page.Err = err.Error()
	}
	h.render(w, r, "repair", page)
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
