package console

import (
	"bytes"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/replay/history"
)

// parse parses each page's template with the layout and the charts.
func (h *Handler) parse() error {
	funcs := template.FuncMap{
		"link": h.link,
		"ts":   timeText,
		// val is every value a page shows: hidden with HideValues.
		"val": func(v edm.Value) string {
			if h.cfg.HideValues {
				return "•••"
			}
			return v.Text()
		},
		// reason is a rejection's reason (or, code "note", the command
		// page's note on a body it does not show): with HideValues, cut
		// where it may quote a value (hideReasonValues).
		"reason": func(code any, reason string) string {
			if h.cfg.HideValues {
				return hideReasonValues(fmt.Sprint(code), reason)
			}
			return reason
		},
		"fields": fields,
		"diff":   history.Diff,
		"secs":   secsText,
		"rate":   func(f float64) string { return fmt.Sprintf("%.1f/s", f) },
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
	h.templates = make(map[string]*template.Template)
	for _, p := range pages {
		t, err := template.New(p.name).Funcs(funcs).ParseFS(templateFS, "templates/layout.html", "templates/charts.html", "templates/"+p.name+".html")
		if err != nil {
			return fmt.Errorf("console: template %s: %w", p.name, err)
		}
		h.templates[p.name] = t
	}
	_, err := fs.Stat(staticFS, "static/htmx.min.js")
	return err
}

// timeText renders a time (or a *time.Time, nil or zero as "").
func timeText(t any) string {
	var tt time.Time
	switch v := t.(type) {
	case time.Time:
		tt = v
	case *time.Time:
		if v != nil {
			tt = *v
		}
	}
	if tt.IsZero() {
		return ""
	}
	return tt.UTC().Format("2006-01-02 15:04:05.000Z")
}

// secsText renders seconds (a float, as the status reports them) or a
// duration.
func secsText(d any) string {
	var s float64
	switch v := d.(type) {
	case float64:
		s = v
	case time.Duration:
		s = v.Seconds()
	}
	return fmt.Sprintf("%.1fs", s)
}

// field is one property of a row, as the pages list them.
type field struct {
	Name  string
	Value edm.Value
}

// fields lists an entity's properties, by name.
func fields(e edm.Entity) []field {
	out := make([]field, 0, len(e))
	for name, v := range e {
		out = append(out, field{name, v})
	}
	slices.SortFunc(out, func(a, b field) int { return strings.Compare(a.Name, b.Name) })
	return out
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
	Pages      []navLink // the navigation bar
	Changes    bool      // the console may change the tables (Config.AllowChanges)
	HideValues bool
	Grafana    string
	Data       any
}

// navLink is a page of the navigation bar.
type navLink struct{ Name, Title string }

// render answers with a page: its template inside the layout.
func (h *Handler) render(w http.ResponseWriter, r *http.Request, name string, data any) {
	h.renderTemplate(w, r, name, "layout", data)
}

// renderTemplate answers with one template of a page: the layout, or a
// part that htmx refreshes.
func (h *Handler) renderTemplate(w http.ResponseWriter, r *http.Request, page, tmpl string, data any) {
	var title string
	if t, ok := data.(interface{ title() string }); ok {
		title = t.title()
	}
	v := view{Title: title, Nav: page, Changes: h.cfg.AllowChanges, HideValues: h.cfg.HideValues, Grafana: h.cfg.GrafanaURL, Data: data}
	for _, p := range h.nav {
		v.Pages = append(v.Pages, navLink{p.name, p.nav})
	}
	var buf bytes.Buffer
	if err := h.templates[page].ExecuteTemplate(&buf, tmpl, v); err != nil {
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
