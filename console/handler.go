package console

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"embed"
	"encoding/hex"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/tablejournal/tablejournal/replay"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Config configures a console Handler.
type Config struct {
	// Replay is what the pages read through: the tables, and the journal
	// with its outcomes and the projectors' status, which every page but
	// row history and as-of at a sequence needs (replay.New with a
	// JetStream connection). Required.
	Replay *replay.Source
	// Prefix is the path the handler is mounted at, such as "/console",
	// without a trailing slash; links are built under it. If empty, the
	// root. Mount the handler with http.StripPrefix(Prefix, h).
	Prefix string
	// HideValues shows property names and types but never their values
	// (personal data).
	HideValues bool
	// GrafanaURL, if set, is linked from the health page. Credentials and
	// the query of the URL are never shown.
	GrafanaURL string
	// AllowChanges offers undo, restore, prune and erase, each planned,
	// previewed and confirmed, and journaled as the replay command's are.
	// Without it the console changes nothing.
	AllowChanges bool
	// Auth, if set, is required of every request.
	Auth *Auth
	// Logger receives the errors of pages. If nil, slog.Default().
	Logger *slog.Logger
	// Now is the clock of the charts. If nil, time.Now.
	Now func() time.Time
}

// Auth is the console's optional authentication: a bearer token, or a user
// and password (HTTP basic), or both.
type Auth struct {
	Token          string
	User, Password string
}

// Handler is the console: an http.Handler. It is safe for concurrent use.
type Handler struct {
	cfg       Config
	svc       *services
	mux       *http.ServeMux
	templates map[string]*template.Template // of each page, by name
	nav       []page                        // the pages of the navigation bar, in order
	posts     []string                      // the paths that take a form post

	csrf   string
	base   context.Context // of the work pages start in the background (verifies)
	cancel context.CancelFunc

	lag lagSamples // the health page's (page_health.go)
}

// page is one page of the console: a file page_<name>.go, which registers
// it (register, from its init) with its routes and the query behind them,
// and its template templates/<name>.html. Adding a page is those two files.
type page struct {
	name string
	// nav is its title in the navigation bar, at position order; "" for a
	// page reached by links only.
	nav   string
	order int
	// changes: served only with Config.AllowChanges.
	changes bool
	// routes are its routes ("GET /journal"), made for one Handler.
	routes func(h *Handler) []route
}

// route is one route of a page.
type route struct {
	pattern string
	serve   http.HandlerFunc
}

// pages are the pages registered, by their files' init.
var pages []page

// register adds a page to every console; its file's init calls it.
func register(p page) { pages = append(pages, p) }

// New returns the console handler.
func New(cfg Config) (*Handler, error) {
	if cfg.Replay == nil {
		return nil, errors.New("console: Config.Replay is required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	cfg.Prefix = strings.TrimRight(cfg.Prefix, "/")
	cfg.GrafanaURL = publicURL(cfg.GrafanaURL)
	h := &Handler{cfg: cfg, svc: newServices(cfg.Replay), mux: http.NewServeMux(), csrf: newToken()}
	h.base, h.cancel = context.WithCancel(context.Background())
	if err := h.parse(); err != nil {
		return nil, err
	}
	static, err := fs.Sub(staticFS, "static")
	if err != nil {
		return nil, err
	}
	h.mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServer(http.FS(static))))
	for _, p := range pages {
		if p.changes && !cfg.AllowChanges || p.routes == nil {
			continue
		}
		for _, rt := range p.routes(h) {
			h.mux.HandleFunc(rt.pattern, rt.serve)
			if path, ok := strings.CutPrefix(rt.pattern, http.MethodPost+" "); ok {
				h.posts = append(h.posts, path)
			}
		}
		if p.nav != "" {
			h.nav = append(h.nav, p)
		}
	}
	slices.SortFunc(h.nav, func(a, b page) int { return a.order - b.order })
	return h, nil
}

// publicURL drops what a URL must not show: its user information and its
// query (a token may ride in either).
func publicURL(s string) string {
	if s == "" {
		return ""
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		return ""
	}
	u.User, u.RawQuery, u.Fragment = nil, "", ""
	return u.String()
}

// ServeHTTP authenticates the request, refuses any change, and serves the
// page.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hd := w.Header()
	hd.Set("Content-Security-Policy", "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; frame-ancestors 'none'")
	hd.Set("X-Content-Type-Options", "nosniff")
	// same-origin: no URL of the console leaves it in a Referer, and a
	// form post still carries its Origin (no-referrer would send "null").
	hd.Set("Referrer-Policy", "same-origin")
	if !h.authorized(r) {
		hd.Set("WWW-Authenticate", `Basic realm="tablejournal console", charset="UTF-8"`)
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return
	}
	switch {
	case r.Method == http.MethodGet || r.Method == http.MethodHead:
	case r.Method == http.MethodPost && slices.Contains(h.posts, r.URL.Path):
		// A form post: a verify, which checks and changes nothing (its
		// scratch store is a temporary file), and with AllowChanges a
		// confirmed repair.
		if !h.csrfOK(r) {
			http.Error(w, "refused: the form did not come from this console (CSRF)", http.StatusForbidden)
			return
		}
	default:
		hd.Set("Allow", "GET, HEAD")
		http.Error(w, "this console changes nothing: only GET and HEAD are served", http.StatusMethodNotAllowed)
		return
	}
	h.mux.ServeHTTP(w, r)
}

func (h *Handler) authorized(r *http.Request) bool {
	a := h.cfg.Auth
	if a == nil {
		return true
	}
	if a.Token != "" {
		if tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer "); ok && same(tok, a.Token) {
			return true
		}
	}
	if a.User != "" {
		if u, p, ok := r.BasicAuth(); ok && same(u, a.User) && same(p, a.Password) {
			return true
		}
	}
	return false
}

// same compares two secrets in constant time.
func same(a, b string) bool {
	x, y := sha256.Sum256([]byte(a)), sha256.Sum256([]byte(b))
	return subtle.ConstantTimeCompare(x[:], y[:]) == 1
}

// newToken returns a random token for the forms that post (CSRF).
func newToken() string {
	b := make([]byte, 32)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// csrfOK checks a form post: it carries the console's token and, when the
// browser says where it comes from, comes from the console's own origin.
func (h *Handler) csrfOK(r *http.Request) bool {
	if site := r.Header.Get("Sec-Fetch-Site"); site != "" && site != "same-origin" && site != "none" {
		return false
	}
	if o := r.Header.Get("Origin"); o != "" {
		u, err := url.Parse(o)
		if err != nil || u.Host != r.Host {
			return false
		}
	}
	return same(r.PostFormValue("csrf"), h.csrf)
}

// Close stops the work pages started in the background (verifies).
func (h *Handler) Close() {
	h.cancel()
}

// errNotFound: a command or row the console does not know; it answers
// 404. Checked with errors.Is.
var errNotFound = errors.New("not found")

// errBadRequest wraps a query the console cannot answer as asked (a point
// beyond the head, a malformed time); it answers 400.
var errBadRequest = errors.New("bad request")

func init() { register(page{name: "error"}) }

// httpError answers err with the status its sentinel says; the errors of
// the replay packages carry no secret (they are what the commands print
// too).
func (h *Handler) httpError(w http.ResponseWriter, r *http.Request, err error) {
	code := http.StatusInternalServerError
	switch {
	case errors.Is(err, errNotFound):
		code = http.StatusNotFound
	case errors.Is(err, errBadRequest):
		code = http.StatusBadRequest
	case errors.Is(err, context.Canceled):
		return
	}
	if code == http.StatusInternalServerError {
		h.cfg.Logger.Warn("console page failed", "path", r.URL.Path, "err", err)
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(code)
	h.render(w, r, "error", errorPage{Code: code, Message: err.Error()})
}

type errorPage struct {
	Code    int
	Message string
}

// uintParam reads a non-negative integer parameter; "" is 0.
func uintParam(r *http.Request, name string) (uint64, error) {
	s := r.URL.Query().Get(name)
	if s == "" {
		return 0, nil
	}
	n, err := strconv.ParseUint(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: %s=%q: want a number", errBadRequest, name, s)
	}
	return n, nil
}
