// Package consoleserve is what replay console and projector --console-addr
// share to serve the web console (package console): its flags, the
// authentication file, and a listener that stops with the command.
package consoleserve

import (
	"context"
	"crypto/tls"
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
	TLSCert, TLSKey          string
	HideValues, AllowChanges bool
}

// Register adds the flags to fs. addrUsage describes the address flag,
// which is prefix+"addr" with default addr.
func (f *Flags) Register(fs *flag.FlagSet, prefix, addr, addrUsage string) {
	fs.StringVar(&f.Addr, prefix+"addr", addr, addrUsage)
	fs.StringVar(&f.AuthFile, prefix+"auth-file", "", "require authentication of the console: a `file` with one line \"user NAME PASSWORD\" (HTTP basic) or \"token TOKEN\" (bearer)")
	// Always console-tls-*: replay's --tls-cert/--tls-key are the NATS
	// client's certificate.
	fs.StringVar(&f.TLSCert, "console-tls-cert", "", "console: serve HTTPS with this PEM certificate (chain); needs --console-tls-key")
	fs.StringVar(&f.TLSKey, "console-tls-key", "", "console: the PEM private key of --console-tls-cert")
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

// ErrAuthFile is wrapped by every error about the content of an
// authentication file.
var ErrAuthFile = errors.New("console auth file")

// ReadAuth reads an authentication file. It holds one credential on one
// line, blank lines and lines starting with # aside:
//
//	user NAME PASSWORD   HTTP basic; the password is the rest of the line
//	token TOKEN          a bearer token
//
// The older bare forms are still read where they mean one thing only:
// NAME:PASSWORD with exactly one colon and both sides non-empty, and a
// token without colon or space. Anything else is refused with its line
// number; the secret never appears in an error.
func ReadAuth(path string) (*console.Auth, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("console auth file: %w", err)
	}
	var got *console.Auth
	for i, raw := range strings.Split(string(b), "\n") {
		line := strings.TrimSpace(raw)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		a, why := parseAuthLine(line)
		if why != "" {
			return nil, fmt.Errorf("%w %s, line %d: %s", ErrAuthFile, path, i+1, why)
		}
		if got != nil {
			return nil, fmt.Errorf("%w %s, line %d: a second credential; the console takes one", ErrAuthFile, path, i+1)
		}
		got = a
	}
	if got == nil {
		return nil, fmt.Errorf("%w %s holds no credential: want a line `user NAME PASSWORD` or `token TOKEN`", ErrAuthFile, path)
	}
	return got, nil
}

// parseAuthLine reads one non-blank line; why says, without the secret,
// what is wrong with it.
func parseAuthLine(line string) (*console.Auth, string) {
	kind, rest, _ := strings.Cut(line, " ")
	rest = strings.TrimSpace(rest)
	switch kind {
	case "user":
		name, pw, _ := strings.Cut(rest, " ")
		pw = strings.TrimSpace(pw)
		if name == "" || pw == "" {
			return nil, "want `user NAME PASSWORD`: the name or the password is missing"
		}
		return &console.Auth{User: name, Password: pw}, ""
	case "token":
		if rest == "" || strings.ContainsAny(rest, " \t") {
			return nil, "want `token TOKEN`: one token without spaces"
		}
		return &console.Auth{Token: rest}, ""
	}
	if strings.ContainsAny(line, " \t") {
		return nil, "unknown line kind: want `user NAME PASSWORD` or `token TOKEN`"
	}
	switch n := strings.Count(line, ":"); {
	case n == 0:
		return &console.Auth{Token: line}, ""
	case n == 1:
		if u, p, _ := strings.Cut(line, ":"); u != "" && p != "" {
			return &console.Auth{User: u, Password: p}, ""
		}
		return nil, "NAME:PASSWORD with an empty side; write `user NAME PASSWORD` or `token TOKEN`"
	default:
		return nil, "ambiguous: more than one colon could be NAME:PASSWORD or a token; write `user NAME PASSWORD` or `token TOKEN`"
	}
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

// Start listens on f.Addr and serves h, over HTTPS when f names a
// certificate and key, sampling the projectors' lag in the background,
// until Close or ctx ends. A listener off loopback without authentication
// is logged as a warning.
func Start(ctx context.Context, f *Flags, h *console.Handler, authed bool, log *slog.Logger) (*Server, error) {
	tc, err := f.tlsConfig()
	if err != nil {
		return nil, err
	}
	ln, err := net.Listen("tcp", f.Addr)
	if err != nil {
		return nil, fmt.Errorf("console: %w", err)
	}
	if !Loopback(f.Addr) && !authed {
		log.Warn("the console listens beyond loopback without authentication; give it an auth file", "addr", ln.Addr().String())
	}
	scheme := "http://"
	if tc != nil {
		ln = tls.NewListener(ln, tc)
		scheme = "https://"
	}
	s := &Server{URL: scheme + ln.Addr().String() + "/", h: h, done: make(chan error, 1),
		srv: &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second, TLSConfig: tc,
			ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelDebug)}}
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

// tlsConfig loads the certificate and key, or returns nil when neither
// is given.
func (f *Flags) tlsConfig() (*tls.Config, error) {
	if f.TLSCert == "" && f.TLSKey == "" {
		return nil, nil
	}
	if f.TLSCert == "" || f.TLSKey == "" {
		return nil, errors.New("console: give both --console-tls-cert and --console-tls-key, or neither")
	}
	c, err := tls.LoadX509KeyPair(f.TLSCert, f.TLSKey)
	if err != nil {
		return nil, fmt.Errorf("console: load TLS certificate: %w", err)
	}
	return &tls.Config{Certificates: []tls.Certificate{c}, MinVersion: tls.VersionTLS12}, nil
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
