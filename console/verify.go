package console

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"sync"
	"time"
)

// maxVerifyDiffs bounds the differences a verify job keeps for its page;
// the rest are counted.
const maxVerifyDiffs = 200

// verifyTimeout bounds one verify started from the console.
const verifyTimeout = time.Hour

// verifyJob is a verify started from the console, running in the
// background; its page polls it.
type verifyJob struct {
	ID      int
	Table   string
	Started time.Time

	mu          sync.Mutex
	phase       string
	done, total int64
	diffs       []Difference
	more        int64
	finished    bool
	summary     VerifySummary
	err         string
}

// verifyView is a copy of a job's state for a template.
type verifyView struct {
	ID          int
	Table       string
	Started     time.Time
	Phase       string
	Done, Total int64
	Diffs       []Difference
	More        int64
	Finished    bool
	Summary     VerifySummary
	Err         string
}

func (j *verifyJob) view() verifyView {
	j.mu.Lock()
	defer j.mu.Unlock()
	return verifyView{ID: j.ID, Table: j.Table, Started: j.Started, Phase: j.phase, Done: j.done, Total: j.total,
		Diffs: slices.Clone(j.diffs), More: j.more, Finished: j.finished, Summary: j.summary, Err: j.err}
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

type verifyPage struct {
	Tables []string
	CSRF   string
	Jobs   []verifyView
	Job    *verifyView
}

func (verifyPage) title() string { return "Verify" }

func (h *Handler) verifyList(w http.ResponseWriter, r *http.Request) {
	p := verifyPage{CSRF: h.csrf}
	p.Tables, _ = h.cfg.Source.Tables(r.Context())
	h.mu.Lock()
	for _, j := range h.jobs {
		p.Jobs = append(p.Jobs, j.view())
	}
	h.mu.Unlock()
	slices.SortFunc(p.Jobs, func(a, b verifyView) int { return b.ID - a.ID })
	h.render(w, r, "verify", p)
}

// verifyStart starts a verify of a table and sends the browser to its
// page. The verify runs on after the request, until it ends or the
// handler is closed.
func (h *Handler) verifyStart(w http.ResponseWriter, r *http.Request) {
	table := r.PostFormValue("table")
	if table == "" {
		h.httpError(w, r, fmt.Errorf("%w: name a table", ErrBadRequest))
		return
	}
	h.mu.Lock()
	h.nextJob++
	j := &verifyJob{ID: h.nextJob, Table: table, Started: h.cfg.Now(), phase: "starting"}
	h.jobs[j.ID] = j
	h.mu.Unlock()
	ctx, cancel := context.WithTimeout(h.base, verifyTimeout)
	go func() {
		defer cancel()
		sum, err := h.cfg.Source.Verify(ctx, table, func(phase string, done, total int64) {
			j.mu.Lock()
			j.phase, j.done, j.total = phase, done, total
			j.mu.Unlock()
		}, func(d Difference) {
			j.mu.Lock()
			if len(j.diffs) < maxVerifyDiffs {
				j.diffs = append(j.diffs, d)
			} else {
				j.more++
			}
			j.mu.Unlock()
		})
		j.mu.Lock()
		j.finished, j.summary = true, sum
		if err != nil {
			j.err = err.Error()
		}
		j.mu.Unlock()
	}()
	http.Redirect(w, r, h.link("/verify/job", "id", j.ID), http.StatusSeeOther)
}

func (h *Handler) verifyJob(r *http.Request) (*verifyView, error) {
	id, err := strconv.Atoi(r.URL.Query().Get("id"))
	if err != nil {
		return nil, fmt.Errorf("%w: ?id=N names a verify", ErrBadRequest)
	}
	h.mu.Lock()
	j, ok := h.jobs[id]
	h.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("verify %d: %w (verifies live as long as the console)", id, ErrNotFound)
	}
	v := j.view()
	return &v, nil
}

func (h *Handler) verifyShow(w http.ResponseWriter, r *http.Request) {
	v, err := h.verifyJob(r)
	if err != nil {
		h.httpError(w, r, err)
		return
	}
	h.render(w, r, "verify", verifyPage{Job: v, CSRF: h.csrf})
}

func (h *Handler) verifyPanel(w http.ResponseWriter, r *http.Request) {
	v, err := h.verifyJob(r)
	if err != nil {
		h.httpError(w, r, err)
		return
	}
	h.renderTemplate(w, r, "verify", "vpanel", verifyPage{Job: v})
}

// Close stops the verifies started from the console.
func (h *Handler) Close() {
	h.cancel()
}
