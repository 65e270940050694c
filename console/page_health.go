package console

// The health page: the projectors' shards, their lag and the rejections
// over time, refreshed every two seconds (htmx).

import (
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/tablejournal/tablejournal/projection/status"
)

func init() {
	register(page{name: "health", nav: "Health", order: 30, routes: func(h *Handler) []route {
		return []route{{"GET /health", h.health}, {"GET /health/panel", h.healthPanel}}
	}})
}

type healthPage struct {
	status.Overview
	// Head is the journal's last sequence.
	Head       uint64
	Err        string
	Stalled    map[int]bool
	Lag        chart
	Rejections chart
}

func (healthPage) title() string { return "Health" }

// stalledAfter is how long a shard may hold pending commands without
// progress before the health page calls it stalled.
const stalledAfter = 30 * time.Second

func (h *Handler) health(w http.ResponseWriter, r *http.Request) {
	h.render(w, r, "health", h.healthData(r.Context()))
}

// healthPanel is the part of the health page htmx refreshes.
func (h *Handler) healthPanel(w http.ResponseWriter, r *http.Request) {
	h.renderTemplate(w, r, "health", "panel", h.healthData(r.Context()))
}

func (h *Handler) healthData(ctx context.Context) healthPage {
	var p healthPage
	ov, head, err := h.svc.health(ctx)
	if err != nil {
		p.Err = err.Error()
		return p
	}
	now := h.cfg.Now()
	h.lag.record(ov, now)
	p.Overview, p.Head = ov, head
	p.Stalled = make(map[int]bool)
	for _, s := range ov.Shards {
		if s.Pending > 0 && seconds(s.LagSeconds) > stalledAfter && (s.Owner == "" || s.Rate == 0) {
			p.Stalled[s.Shard] = true
		}
	}
	p.Lag = lagChart(h.lag.list(), now)
	if recent, err := h.svc.recent(ctx, recentOutcomes); err == nil {
		p.Rejections = activityChart(recent, now, true)
	}
	return p
}

// health reads the shards' status and the journal's head.
func (s *services) health(ctx context.Context) (status.Overview, uint64, error) {
	if s.js == nil {
		return status.Overview{}, 0, errNoJournal
	}
	ov, err := status.Read(ctx, s.js, s.status)
	if err != nil {
		return ov, 0, err
	}
	var head uint64
	if j := s.rp.Journal(); j != nil {
		head, err = j.Head(ctx)
	}
	return ov, head, err
}

func seconds(f float64) time.Duration { return time.Duration(f * float64(time.Second)) }

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
		if ov, _, err := h.svc.health(ctx); err == nil {
			h.lag.record(ov, h.cfg.Now())
		}
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

// sample is one reading of the projectors' lag.
type sample struct {
	At      time.Time
	Lag     time.Duration
	Pending uint64
}

// keepSamples is how far back the lag chart reaches.
const keepSamples = 15 * time.Minute

// lagSamples are the health samples of a Handler, oldest first.
type lagSamples struct {
	mu      sync.Mutex
	samples []sample
}

func (l *lagSamples) record(ov status.Overview, now time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if n := len(l.samples); n > 0 && now.Sub(l.samples[n-1].At) < 500*time.Millisecond {
		return
	}
	l.samples = append(l.samples, sample{At: now, Lag: seconds(ov.Totals.MaxLagSeconds), Pending: ov.Totals.Pending})
	i := 0
	for i < len(l.samples) && now.Sub(l.samples[i].At) > keepSamples {
		i++
	}
	l.samples = l.samples[i:]
}

func (l *lagSamples) list() []sample {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]sample(nil), l.samples...)
}
