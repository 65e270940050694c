package metrics

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Check is one condition of readiness or liveness: nil when it holds,
// else an error saying why not (shown in the probe's body).
type Check struct {
	Name  string
	Check func() error
}

// Server serves /metrics (the Prometheus text format), /healthz (200 while
// every liveness check holds) and /readyz (200 while every readiness check
// holds; 503 with the reasons in the body otherwise).
type Server struct {
	srv *http.Server
	ln  net.Listener
}

// Listen binds addr ("127.0.0.1:9464"; port 0 picks one) and serves in the
// background until Close.
func (m *Metrics) Listen(addr string, live, ready []Check) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics address %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{}))
	mux.Handle("GET /healthz", probe(live))
	mux.Handle("GET /readyz", probe(ready))
	s := &Server{ln: ln, srv: &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}}
	go func() { _ = s.srv.Serve(ln) }()
	return s, nil
}

// Addr is the address the server listens on.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Close stops the server, waiting up to ctx for requests in flight.
func (s *Server) Close(ctx context.Context) error {
	if err := s.srv.Shutdown(ctx); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

func probe(checks []Check) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		var failed []string
		for _, c := range checks {
			if err := c.Check(); err != nil {
				failed = append(failed, c.Name+": "+err.Error())
			}
		}
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		w.Header().Set("Cache-Control", "no-store")
		if len(failed) > 0 {
			w.WriteHeader(http.StatusServiceUnavailable)
			fmt.Fprintln(w, strings.Join(failed, "\n"))
			return
		}
		fmt.Fprintln(w, "ok")
	})
}

// NATSCheck holds while nc is connected.
func NATSCheck(nc *nats.Conn) Check {
	return Check{Name: "nats", Check: func() error {
		if nc.IsConnected() {
			return nil
		}
		return fmt.Errorf("not connected to NATS (%s)", strings.ToLower(nc.Status().String()))
	}}
}

// StoreCheck holds while the table store answers: it fails when the
// store has been asked and has not answered for stall (a request in flight
// or failed unanswered: refused, timed out, busy), and when it has not
// answered at all for stale (ProbeStore asks it when the projector does
// not).
func (m *Metrics) StoreCheck(stall, stale time.Duration) Check {
	return Check{Name: "store", Check: func() error {
		now := m.now()
		s := m.st.snapshot(now)
		var msg string
		switch {
		case s.LastAnswer.IsZero() && s.Waiting < stall:
			return errors.New("the table store has not answered yet")
		case s.Waiting >= stall:
			msg = fmt.Sprintf("the table store has not answered for %s while asked", s.Waiting.Round(time.Second))
		case now.Sub(s.LastAnswer) > stale:
			msg = fmt.Sprintf("the table store has not answered for %s", now.Sub(s.LastAnswer).Round(time.Second))
		default:
			return nil
		}
		if !s.BusySince.IsZero() {
			msg += "; it answers busy: " + s.LastBusy
		}
		return errors.New(msg)
	}}
}
