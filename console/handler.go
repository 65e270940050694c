package console

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"time"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Config configures a console Handler.
type Config struct {
	// Source is what the console reads. Required.
	Source Source
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
	cfg   Config
	mux   *http.ServeMux
	pages map[string]*template.Template

	csrf   string
	base   context.Context // of the verifies started here
	cancel context.CancelFunc

	mu      sync.Mutex
	samples []sample // health samples, oldest first
	jobs    map[int]*verifyJob
	nextJob int
}

// sample is one reading of the projectors' lag.
type sample struct {
	At      time.Time
	Lag     time.Duration
	Pending uint64
}

// keepSamples is how far back the lag chart reaches.
const keepSamples = 15 * time.Minute

// New returns the console handler.
func New(cfg Config) (*Handler, error) {
	if cfg.Source == nil {
		return nil, errors.New("console: Config.Source is required")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	cfg.Prefix = strings.TrimRight(cfg.Prefix, "/")
	cfg.GrafanaURL = publicURL(cfg.GrafanaURL)
	h := &Handler{cfg: cfg, mux: http.NewServeMux(), csrf: newToken(), jobs: make(map[int]*verifyJob)}
	h.base, h.cancel = context.WithCancel(context.Background())
	if err := h.parse(); err != nil {
		return nil, err
	}
	static, err := fs.Sub(staticFS, "static")
	if err != nil {
		return nil, err
	}
	h.mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServer(http.FS(static))))
	h.mux.HandleFunc("GET /{$}", h.journal)
	h.mux.HandleFunc("GET /journal", h.journal)
	h.mux.HandleFunc("GET /activity", h.activity)
	h.mux.HandleFunc("GET /command", h.command)
	h.mux.HandleFunc("GET /row", h.row)
	h.mux.HandleFunc("GET /asof", h.asof)
	h.mux.HandleFunc("GET /health", h.health)
	h.mux.HandleFunc("GET /health/panel", h.healthPanel)
	h.mux.HandleFunc("GET /retention", h.retention)
	h.mux.HandleFunc("GET /verify", h.verifyList)
	h.mux.HandleFunc("POST /verify", h.verifyStart)
	h.mux.HandleFunc("GET /verify/job", h.verifyShow)
	h.mux.HandleFunc("GET /verify/panel", h.verifyPanel)
	if cfg.AllowChanges {
		h.mux.HandleFunc("GET /repair", h.repairPreview)
		h.mux.HandleFunc("POST /repair", h.repairApply)
	}
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
	case r.Method == http.MethodPost && h.posts(r.URL.Path):
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

// posts reports whether path takes a form post: a verify, which checks
// and changes nothing (its scratch store is a temporary file), and with
// AllowChanges a confirmed repair.
func (h *Handler) posts(path string) bool {
	return path == "/verify" || path == "/repair" && h.cfg.AllowChanges
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

// Run samples the projectors' lag every interval until ctx ends, so that
// the lag chart covers the minutes before a page was opened. Without it
// the chart holds the samples of the health pages served.
func (h *Handler) Run(ctx context.Context, every time.Duration) error {
	if every <= 0 {
		every = 5 * time.Second
	}
	t := time.NewTicker(every)
	defer t.Stop()
	for {
		if hl, err := h.cfg.Source.Health(ctx); err == nil {
			h.record(hl)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

func (h *Handler) record(hl Health) {
	h.mu.Lock()
	defer h.mu.Unlock()
	now := h.cfg.Now()
	if n := len(h.samples); n > 0 && now.Sub(h.samples[n-1].At) < 500*time.Millisecond {
		return
	}
	h.samples = append(h.samples, sample{At: now, Lag: hl.MaxLag, Pending: hl.Pending})
	i := 0
	for i < len(h.samples) && now.Sub(h.samples[i].At) > keepSamples {
		i++
	}
	h.samples = h.samples[i:]
}

func (h *Handler) lagSamples() []sample {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]sample(nil), h.samples...)
}

// httpError answers err with the status its sentinel says; the error of a
// Source carries no secret (it is what the commands print too).
func (h *Handler) httpError(w http.ResponseWriter, r *http.Request, err error) {
	code := http.StatusInternalServerError
	switch {
	case errors.Is(err, ErrNotFound):
		code = http.StatusNotFound
	case errors.Is(err, ErrBadRequest):
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
		return 0, fmt.Errorf("%w: %s=%q: want a number", ErrBadRequest, name, s)
	}
	return n, nil
}
