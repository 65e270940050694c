package console

// The verify page: a verify started from its form re-projects a table's
// journal into a scratch store on the console's machine and compares it
// with the live table, in the background; its page polls it (htmx).

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/tablejournal/tablejournal/replay/rebuild"
	"github.com/tablejournal/tablejournal/store/sqlite"
)

func init() {
	register(page{name: "verify", nav: "Verify", order: 50, routes: func(h *Handler) []route {
		v := &verifies{h: h, jobs: make(map[int]*verifyJob)}
		return []route{{"GET /verify", v.list}, {"POST /verify", v.start}, {"GET /verify/job", v.show}, {"GET /verify/panel", v.panel}}
	}})
}

// maxVerifyDiffs bounds the differences a verify job keeps for its page;
// the rest are counted.
const maxVerifyDiffs = 200

// verifyTimeout bounds one verify started from the console.
const verifyTimeout = time.Hour

// verifies are the verifies started from one console, which live as long
// as it.
type verifies struct {
	h       *Handler
	mu      sync.Mutex
	jobs    map[int]*verifyJob
	nextJob int
}

// verifyJob is a verify started from the console, running in the
// background; its page polls it.
type verifyJob struct {
	ID      int
	Table   string
	Started time.Time

	mu          sync.Mutex
	phase       string
	done, total int64
	diffs       []rebuild.Difference
	more        int64
	finished    bool
	summary     rebuild.DiffStats
	err         string
}

// verifyView is a copy of a job's state for a template.
type verifyView struct {
	ID          int
	Table       string
	Started     time.Time
	Phase       string
	Done, Total int64
	Diffs       []rebuild.Difference
	More        int64
	Finished    bool
	Summary     rebuild.DiffStats
	Err         string
}

func (j *verifyJob) view() verifyView {
	j.mu.Lock()
	defer j.mu.Unlock()
	return verifyView{ID: j.ID, Table: j.Table, Started: j.Started, Phase: j.phase, Done: j.done, Total: j.total,
		Diffs: slices.Clone(j.diffs), More: j.more, Finished: j.finished, Summary: j.summary, Err: j.err}
}

type verifyPage struct {
	Tables []string
	CSRF   string
	Jobs   []verifyView
	Job    *verifyView
}

func (verifyPage) title() string { return "Verify" }

func (v *verifies) list(w http.ResponseWriter, r *http.Request) {
	p := verifyPage{CSRF: v.h.csrf}
	p.Tables, _ = v.h.svc.tables(r.Context())
	v.mu.Lock()
	for _, j := range v.jobs {
		p.Jobs = append(p.Jobs, j.view())
	}
	v.mu.Unlock()
	slices.SortFunc(p.Jobs, func(a, b verifyView) int { return b.ID - a.ID })
	v.h.render(w, r, "verify", p)
}

// start starts a verify of a table and sends the browser to its page. The
// verify runs on after the request, until it ends or the handler is
// closed.
func (v *verifies) start(w http.ResponseWriter, r *http.Request) {
	table := r.PostFormValue("table")
	if table == "" {
		v.h.httpError(w, r, fmt.Errorf("%w: name a table", errBadRequest))
		return
	}
	v.mu.Lock()
	v.nextJob++
	j := &verifyJob{ID: v.nextJob, Table: table, Started: v.h.cfg.Now(), phase: "starting"}
	v.jobs[j.ID] = j
	v.mu.Unlock()
	ctx, cancel := context.WithTimeout(v.h.base, verifyTimeout)
	go func() {
		defer cancel()
		sum, err := v.h.svc.verify(ctx, table, func(phase string, done, total int64) {
			j.mu.Lock()
			j.phase, j.done, j.total = phase, done, total
			j.mu.Unlock()
		}, func(d rebuild.Difference) error {
			j.mu.Lock()
			if len(j.diffs) < maxVerifyDiffs {
				j.diffs = append(j.diffs, d)
			} else {
				j.more++
			}
			j.mu.Unlock()
			return nil
		})
		j.mu.Lock()
		j.finished, j.summary = true, sum
		if err != nil {
			j.err = err.Error()
		}
		j.mu.Unlock()
	}()
	http.Redirect(w, r, v.h.link("/verify/job", "id", j.ID), http.StatusSeeOther)
}

func (v *verifies) job(r *http.Request) (*verifyView, error) {
	id, err := strconv.Atoi(r.URL.Query().Get("id"))
	if err != nil {
		return nil, fmt.Errorf("%w: ?id=N names a verify", errBadRequest)
	}
	v.mu.Lock()
	j, ok := v.jobs[id]
	v.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("verify %d: %w (verifies live as long as the console)", id, errNotFound)
	}
	view := j.view()
	return &view, nil
}

func (v *verifies) show(w http.ResponseWriter, r *http.Request) {
	job, err := v.job(r)
	if err != nil {
		v.h.httpError(w, r, err)
		return
	}
	v.h.render(w, r, "verify", verifyPage{Job: job, CSRF: v.h.csrf})
}

func (v *verifies) panel(w http.ResponseWriter, r *http.Request) {
	job, err := v.job(r)
	if err != nil {
		v.h.httpError(w, r, err)
		return
	}
	v.h.renderTemplate(w, r, "verify", "vpanel", verifyPage{Job: job})
}

// verify re-projects table's journal into a temporary embedded store on
// this machine, so that a verify from the console writes nothing to the
// table store, and compares the live table with it.
func (s *services) verify(ctx context.Context, table string, progress func(string, int64, int64), diff func(rebuild.Difference) error) (rebuild.DiffStats, error) {
	if s.rp.Journal() == nil {
		return rebuild.DiffStats{}, errNoJournal
	}
	dir, err := os.MkdirTemp("", "tablejournal-console-verify-")
	if err != nil {
		return rebuild.DiffStats{}, err
	}
	defer os.RemoveAll(dir)
	scratch, err := sqlite.Open(ctx, filepath.Join(dir, "scratch.db"))
	if err != nil {
		return rebuild.DiffStats{}, fmt.Errorf("scratch store: %w", err)
	}
	defer scratch.Close()
	st, err := s.rb.Verify(ctx, rebuild.VerifyConfig{Table: table, Scratch: scratch, Progress: progress, OnDiff: diff})
	if errors.Is(err, rebuild.ErrUnknownTable) {
		err = fmt.Errorf("%w: %w", errNotFound, err)
	}
	return st, err
}
