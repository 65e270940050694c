// Package consoleserve is what replay console and projector --console-addr
// share to serve the web console (package console): its flags, the
// authentication file, and a listener that stops with the command.
package consoleserve

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/tablejournal/tablejournal/console"
	"github.com/tablejournal/tablejournal/replay"
)

// Flags are the console's flags; Prefix is prepended to their names
// ("console-" in the projector, "" in replay console).
type Flags struct {
	Addr, AuthFile, Grafana  string
	HideValues, AllowChanges bool
}

// Register adds the flags to fs. addrUsage describes the address flag,
// which is prefix+"addr" with default addr.
func (f *Flags) Register(fs *flag.FlagSet, prefix, addr, addrUsage string) {
	fs.StringVar(&f.Addr, prefix+"addr", addr, addrUsage)
	fs.StringVar(&f.AuthFile, prefix+"auth-file", "", "require authentication of the console: a file holding user:password (HTTP basic) or a bearer token")
	fs.BoolVar(&f.HideValues, prefix+"hide-values", false, "console: show property names and types, never their values (personal data)")
	fs.BoolVar(&f.AllowChanges, prefix+"allow-changes", false, "console: offer undo, restore, prune and erase (plan, preview, confirm; journaled); without it the console changes nothing")
	fs.StringVar(&f.Grafana, prefix+"grafana-url", "", "console: link the health page to this Grafana dashboard (its query and credentials are never shown)")
}

// Config returns the console's config over rp from the flags, reading the
// authentication file. A file's secret never appears in an error.
func (f *Flags) Config(rp *replay.Source, log *slog.Logger) (console.Config, error) {
	cfg := console.Config{Replay: rp, HideValues: f.HideValues, AllowChanges: f.AllowChanges, GrafanaURL: f.Grafana, Logger: log}
	if f.AuthFile == "" {
		return cfg, nil
	}
	a, err := ReadAuth(f.AuthFile)
	if err != nil {
		return cfg, err
	}
	cfg.Auth = a
	return cfg, nil
}

// ReadAuth reads an authentication file: its first line is user:password
// for HTTP basic authentication, or else a bearer token.
func ReadAuth(path string) (*console.Auth, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("console auth file: %w", err)
	}
	line, _, _ := strings.Cut(string(b), "\n")
	line = strings.TrimSpace(line)
	if line == "" {
		return nil, fmt.Errorf("console auth file %s is empty: want user:password or a token", path)
	}
	if u, p, ok := strings.Cut(line, ":"); ok && u != "" && p != "" {
		return &console.Auth{User: u, Password: p}, nil
	}
	return &console.Auth{Token: line}, nil
}

// Loopback reports whether addr listens on a loopback address only.
func Loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// Server is a running console.
type Server struct {
	URL  string
	h    *console.Handler
	srv  *http.Server
	done chan error
}

// Start listens on addr and serves h, sampling the projectors' lag in the
// background, until Close or ctx ends. A listener off loopback without
// authentication is logged as a warning.
func Start(ctx context.Context, addr string, h *console.Handler, authed bool, log *slog.Logger) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("console: %w", err)
	}
	if !Loopback(addr) && !authed {
		log.Warn("the console listens beyond loopback without authentication; give it an auth file", "addr", ln.Addr().String())
	}
	s := &Server{URL: "http://" + ln.Addr().String() + "/", h: h, done: make(chan error, 1),
		srv: &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}}
	sctx, cancel := context.WithCancel(ctx)
	go func() { _ = h.Run(sctx, 5*time.Second) }()
	go func() {
		err := s.srv.Serve(ln)
		cancel()
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
		s.done <- err
	}()
	context.AfterFunc(ctx, func() { _ = s.Close() })
	return s, nil
}

// Close stops the server, letting requests in flight finish for a few
// seconds, and the verifies started from the console.
func (s *Server) Close() error {
	defer s.h.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return s.srv.Shutdown(ctx)
}

// Wait returns when the server stopped, with its error.
func (s *Server) Wait() error { return <-s.done }
