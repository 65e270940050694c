package console

import (
	"bytes"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"path"
	"strings"
	"time"
)

// pageNames are the templates of full pages, each parsed with layout.html.
var pageNames = []string{"journal", "command", "row", "asof", "health", "error", "verify", "retention", "repair"}

func (h *Handler) parse() error {
	funcs := template.FuncMap{
		"link": h.link,
		"ts": func(t time.Time) string {
			if t.IsZero() {
				return ""
			}
			return t.UTC().Format("2006-01-02 15:04:05.000Z")
		},
		"val": func(f Field) string {
			if h.cfg.HideValues {
				return "•••"
			}
			return f.Value
		},
		"reason": func(code, reason string) string {
			if h.cfg.HideValues {
				return hideReasonValues(code, reason)
			}
			return reason
		},
		"secs": func(d time.Duration) string { return fmt.Sprintf("%.1fs", d.Seconds()) },
		"rate": func(f float64) string { return fmt.Sprintf("%.1f/s", f) },
		"add": func(xs ...int64) int64 {
			var t int64
			for _, x := range xs {
				t += x
			}
			return t
		},
		"before": func(n uint64) uint64 { return max(n, 1) - 1 },
		"static": func(name string) string { return h.cfg.Prefix + "/static/" + name },
	}
	h.pages = make(map[string]*template.Template)
	for _, name := range pageNames {
		t, err := template.New(name).Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/charts.html", "templates/"+name+".html")
		if err != nil {
			return fmt.Errorf("console: template %s: %w", name, err)
		}
		h.pages[name] = t
	}
	_, err := fs.Stat(staticFS, "static/htmx.min.js")
	return err
}

// link builds a URL of the console: path under the prefix, then pairs of
// query names and values, empty values left out.
func (h *Handler) link(p string, kv ...any) string {
	q := url.Values{}
	for i := 0; i+1 < len(kv); i += 2 {
		v := fmt.Sprint(kv[i+1])
		if v != "" && v != "0" {
			q.Set(fmt.Sprint(kv[i]), v)
		}
	}
	u := h.cfg.Prefix + path.Clean("/"+p)
	if len(q) > 0 {
		u += "?" + q.Encode()
	}
	return u
}

// view is what every page's layout reads.
type view struct {
	Title      string
	Nav        string
	Changes    bool // the console may change the tables (Config.AllowChanges)
	HideValues bool
	Grafana    string
	Data       any
}

func (h *Handler) render(w http.ResponseWriter, r *http.Request, name string, data any) {
	h.renderTemplate(w, r, name, "layout", data)
}

func (h *Handler) renderTemplate(w http.ResponseWriter, r *http.Request, page, tmpl string, data any) {
	var title string
	if t, ok := data.(interface{ title() string }); ok {
		title = t.title()
	}
	var buf bytes.Buffer
	err := h.pages[page].ExecuteTemplate(&buf, tmpl, view{Title: title, Nav: page, Changes: h.cfg.AllowChanges, HideValues: h.cfg.HideValues,
		Grafana: h.cfg.GrafanaURL, Data: data})
	if err != nil {
		h.cfg.Logger.Error("console template failed", "page", page, "err", err)
		http.Error(w, "template failed", http.StatusInternalServerError)
		return
	}
	if w.Header().Get("Content-Type") == "" {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
	}
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(buf.Bytes())
}

// journalPage is the data of the journal page.
type journalPage struct {
	Q      url.Values
	From   string
	Page   JournalPage
	Latest uint64
}

func (journalPage) title() string { return "Journal" }

func (h *Handler) journal(w http.ResponseWriter, r *http.Request) {
	qs := r.URL.Query()
	q := JournalQuery{Table: qs.Get("table"), PK: qs.Get("pk"), Cmd: qs.Get("cmd"), Issuer: qs.Get("issuer"),
		Status: qs.Get("status"), Code: qs.Get("code")}
	from := strings.TrimSpace(qs.Get("from"))
	if from != "" {
		if n, err := uintParam(r, "from"); err == nil {
			q.From = n
		} else if t, terr := time.Parse(time.RFC3339Nano, from); terr == nil {
			q.Time = t
		} else {
			h.httpError(w, r, fmt.Errorf("%w: from=%q: want a journal sequence or an RFC 3339 time", ErrBadRequest, from))
			return
		}
	}
	switch q.Status {
	case "", "applied", "rejected", "duplicate":
	default:
		h.httpError(w, r, fmt.Errorf("%w: status=%q: want applied, rejected or duplicate", ErrBadRequest, q.Status))
		return
	}
	if q.PK != "" && q.Table == "" {
		h.httpError(w, r, fmt.Errorf("%w: a partition filter needs a table", ErrBadRequest))
		return
	}
	page, err := h.cfg.Source.Journal(r.Context(), q)
	if err != nil {
		h.httpError(w, r, err)
		return
	}
	data := journalPage{Q: qs, From: from, Page: page}
	if page.Head > 100 {
		data.Latest = page.Head - 99
	} else {
		data.Latest = 1
	}
	h.render(w, r, "journal", data)
}

// recentOutcomes is how many of the newest outcomes the activity and
// rejection charts count.
const recentOutcomes = 2000

// activity is the journal page's chart of commands per minute, loaded
// after the page (htmx) so that the page's list does not wait for it.
func (h *Handler) activity(w http.ResponseWriter, r *http.Request) {
	recent, err := h.cfg.Source.Recent(r.Context(), recentOutcomes)
	if err != nil {
		h.httpError(w, r, err)
		return
	}
	h.renderTemplate(w, r, "journal", "activity", activityChart(recent, h.cfg.Now(), false))
}

type commandPage struct {
	CommandView
}

func (p commandPage) title() string { return "Command " + p.ID }

func (h *Handler) command(w http.ResponseWriter, r *http.Request) {
	id := r.URL.Query().Get("id")
	if id == "" {
		h.httpError(w, r, fmt.Errorf("%w: name a command: ?id=ID", ErrBadRequest))
		return
	}
	v, err := h.cfg.Source.Command(r.Context(), id)
	if err != nil {
		h.httpError(w, r, err)
		return
	}
	h.render(w, r, "command", commandPage{v})
}

type rowPage struct {
	RowHistory
	Timeline chart
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
		h.httpError(w, r, fmt.Errorf("%w: name a row: ?table=T&pk=P&rk=R", ErrBadRequest))
		return
	}
	q := HistoryQuery{Table: table, PK: pk, RK: rk}
	var err error
	if q.Before, err = uintParam(r, "before"); err == nil {
		q.After, err = uintParam(r, "after")
	}
	if err != nil {
		h.httpError(w, r, err)
		return
	}
	hist, err := h.cfg.Source.History(r.Context(), q)
	if errors.Is(err, ErrNotFound) && hist.Erased != nil {
		// An erased row is not found, and its page says who erased it.
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		w.WriteHeader(http.StatusNotFound)
	} else if err != nil {
		h.httpError(w, r, err)
		return
	}
	h.render(w, r, "row", rowPage{RowHistory: hist, Timeline: versionsChart(hist.Versions)})
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
	Page             AsOfPage
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
	p.Tables, _ = h.cfg.Source.Tables(ctx)
	p.Tables = spelled(p.Tables, p.Table)
	if p.Table == "" {
		h.render(w, r, "asof", p)
		return
	}
	var err error
	if p.Seq, err = h.cfg.Source.Resolve(ctx, p.At); err != nil {
		h.httpError(w, r, err)
		return
	}
	q := AsOfQuery{Table: p.Table, PK: p.PK, All: p.All, Seq: p.Seq, After: p.After}
	if p.Against != "" {
		if p.AgainstSeq, err = h.cfg.Source.Resolve(ctx, p.Against); err != nil {
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
	if p.Page, err = h.cfg.Source.AsOf(ctx, q); err != nil {
		h.httpError(w, r, err)
		return
	}
	if prev, next, err := h.cfg.Source.Steps(ctx, p.Table, p.PK, p.All, p.Seq); err == nil {
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

type healthPage struct {
	Health
	Err        string
	Stalled    map[int]bool
	Lag        chart
	Rejections chart
}

func (healthPage) title() string { return "Health" }

// stalledAfter is how long a shard may hold pending commands without
// progress before the health page calls it stalled.
const stalledAfter = 30 * time.Second

func (h *Handler) healthData(r *http.Request) healthPage {
	var p healthPage
	hl, err := h.cfg.Source.Health(r.Context())
	if err != nil {
		p.Err = err.Error()
		return p
	}
	h.record(hl)
	p.Health = hl
	p.Stalled = make(map[int]bool)
	for _, s := range hl.Shards {
		if s.Pending > 0 && s.Lag > stalledAfter && (s.Owner == "" || s.Rate == 0) {
			p.Stalled[s.Shard] = true
		}
	}
	now := h.cfg.Now()
	p.Lag = lagChart(h.lagSamples(), now)
	if recent, err := h.cfg.Source.Recent(r.Context(), recentOutcomes); err == nil {
		p.Rejections = activityChart(recent, now, true)
	}
	return p
}

func (h *Handler) health(w http.ResponseWriter, r *http.Request) {
	h.render(w, r, "health", h.healthData(r))
}

// healthPanel is the part of the health page htmx refreshes.
func (h *Handler) healthPanel(w http.ResponseWriter, r *http.Request) {
	h.renderTemplate(w, r, "health", "panel", h.healthData(r))
}

type retentionPage struct {
	Tables []string
	Log    RetentionLog
}

func (retentionPage) title() string { return "Retention and erasure" }

// retentionLimit bounds the prunes and erasures one retention page lists.
const retentionLimit = 1000

func (h *Handler) retention(w http.ResponseWriter, r *http.Request) {
	var p retentionPage
	p.Tables, _ = h.cfg.Source.Tables(r.Context())
	table := r.URL.Query().Get("table")
	p.Tables = spelled(p.Tables, table)
	if table != "" {
		var err error
		if p.Log, err = h.cfg.Source.Retention(r.Context(), table, retentionLimit); err != nil {
			h.httpError(w, r, err)
			return
		}
	}
	h.render(w, r, "retention", p)
}
