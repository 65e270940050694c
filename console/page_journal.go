package console

// The journal page: the commands from a sequence or a time, filtered by
// table, partition, command ID, issuer and outcome, with their outcomes;
// / is the journal. Its activity chart loads after it (htmx).

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/tablejournal/tablejournal/journal"
)

func init() {
	register(page{name: "journal", nav: "Journal", order: 10, routes: func(h *Handler) []route {
		return []route{{"GET /{$}", h.journal}, {"GET /journal", h.journal}, {"GET /activity", h.activity}}
	}})
}

// journalQuery selects a page of the journal. Its zero value is the first
// page of the whole journal.
type journalQuery struct {
	// From is the first sequence read; if zero, Time, else 1.
	From uint64
	// Time, if set and From is zero, starts at the first command stored at
	// or after it.
	Time time.Time
	// Table and PK narrow the journal to a table or one partition of it.
	Table, PK string
	// Cmd selects the messages that carried one command ID.
	Cmd string
	// Issuer, Status and Code filter the commands read.
	Issuer, Status, Code string
	// Limit bounds the entries returned; if zero, 100.
	Limit int
	// Scan bounds the messages read to fill the page; if zero, 50 times
	// Limit. A filtered page may hold fewer than Limit entries and a
	// continuation.
	Scan int
}

// journalQueryOf reads the query of the journal page's URL.
func journalQueryOf(r *http.Request) (journalQuery, error) {
	qs := r.URL.Query()
	q := journalQuery{Table: qs.Get("table"), PK: qs.Get("pk"), Cmd: qs.Get("cmd"), Issuer: qs.Get("issuer"),
		Status: qs.Get("status"), Code: qs.Get("code")}
	if from := strings.TrimSpace(qs.Get("from")); from != "" {
		if n, err := uintParam(r, "from"); err == nil {
			q.From = n
		} else if t, terr := time.Parse(time.RFC3339Nano, from); terr == nil {
			q.Time = t
		} else {
			return q, fmt.Errorf("%w: from=%q: want a journal sequence or an RFC 3339 time", errBadRequest, from)
		}
	}
	switch q.Status {
	case "", "applied", "rejected", "duplicate":
	default:
		return q, fmt.Errorf("%w: status=%q: want applied, rejected or duplicate", errBadRequest, q.Status)
	}
	if q.PK != "" && q.Table == "" {
		return q, fmt.Errorf("%w: a partition filter needs a table", errBadRequest)
	}
	return q, nil
}

// journalEntries is one page of the journal.
type journalEntries struct {
	Entries []entry
	// Next is the sequence the next page starts at; 0 when the head was
	// reached.
	Next uint64
	// Head is the journal's last sequence when the page was read.
	Head uint64
}

// journalPage is the data of the journal page.
type journalPage struct {
	Q      url.Values
	From   string
	Page   journalEntries
	Latest uint64
}

func (journalPage) title() string { return "Journal" }

func (h *Handler) journal(w http.ResponseWriter, r *http.Request) {
	q, err := journalQueryOf(r)
	if err != nil {
		h.httpError(w, r, err)
		return
	}
	page, err := h.svc.readJournal(r.Context(), q)
	if err != nil {
		h.httpError(w, r, err)
		return
	}
	data := journalPage{Q: r.URL.Query(), From: strings.TrimSpace(r.URL.Query().Get("from")), Page: page, Latest: 1}
	if page.Head > 100 {
		data.Latest = page.Head - 99
	}
	h.render(w, r, "journal", data)
}

// recentOutcomes is how many of the newest outcomes the activity and
// rejection charts count.
const recentOutcomes = 2000

// activity is the journal page's chart of commands per minute, loaded
// after the page (htmx) so that the page's list does not wait for it.
func (h *Handler) activity(w http.ResponseWriter, r *http.Request) {
	recent, err := h.svc.recent(r.Context(), recentOutcomes)
	if err != nil {
		h.httpError(w, r, err)
		return
	}
	h.renderTemplate(w, r, "journal", "activity", activityChart(recent, h.cfg.Now(), false))
}

// readJournal returns one page of the commands matching q, in journal
// order.
func (s *services) readJournal(ctx context.Context, q journalQuery) (journalEntries, error) {
	j, err := s.journal()
	if err != nil {
		return journalEntries{}, err
	}
	if q.Limit <= 0 {
		q.Limit = 100
	}
	if q.Scan <= 0 {
		q.Scan = 50 * q.Limit
	}
	head, err := j.Head(ctx)
	if err != nil {
		return journalEntries{}, err
	}
	page := journalEntries{Head: head}
	if q.Cmd != "" {
		outs, err := s.outcomes.History(ctx, q.Cmd)
		if err != nil {
			return page, err
		}
		for _, o := range outs {
			if e := s.entryAt(ctx, j, o); q.match(e) {
				page.Entries = append(page.Entries, e)
			}
		}
		return page, nil
	}
	from := q.From
	if from == 0 && !q.Time.IsZero() {
		from, err = j.SeqAtTime(ctx, q.Time)
		if errors.Is(err, journal.ErrNotFound) {
			return page, nil
		} else if err != nil {
			return page, err
		}
	}
	from = max(from, 1)
	end := min(head, from+uint64(q.Scan)-1)
	subj := filter(q.Table, q.PK, q.PK == "")
	if q.Issuer == "" && q.Status == "" && q.Code == "" {
		return s.journalRange(ctx, j, page, from, end, subj, q.Limit)
	}
	const chunk = 500
	for from <= end {
		to := min(end, from+chunk-1)
		var cands []entry
		err := j.ReadAny(ctx, from, to, subj, func(m journal.Msg) error {
			if e := decodeEntry(m); q.Issuer == "" || e.Issuer == q.Issuer {
				cands = append(cands, e)
			}
			return nil
		})
		if err != nil {
			return page, err
		}
		if err := s.attachOutcomes(ctx, cands); err != nil {
			return page, err
		}
		for _, e := range cands {
			if !q.match(e) {
				continue
			}
			if len(page.Entries) == q.Limit {
				page.Next = e.Seq
				return page, nil
			}
			page.Entries = append(page.Entries, e)
		}
		from = to + 1
	}
	if from <= head {
		page.Next = from
	}
	return page, nil
}

// journalRange is a page unfiltered by outcome or issuer: its first limit
// messages the subject filter matches, in one read stopped after them.
func (s *services) journalRange(ctx context.Context, j *journal.Journal, page journalEntries, from, end uint64, subj []string, limit int) (journalEntries, error) {
	var es []entry
	err := j.ReadAny(ctx, from, end, subj, func(m journal.Msg) error {
		if len(es) == limit {
			page.Next = m.Seq
			return errStop
		}
		es = append(es, decodeEntry(m))
		return nil
	})
	if err != nil && !errors.Is(err, errStop) {
		return page, err
	}
	if err := s.attachOutcomes(ctx, es); err != nil {
		return page, err
	}
	page.Entries = es
	if page.Next == 0 && end < page.Head {
		page.Next = end + 1
	}
	return page, nil
}

func (q journalQuery) match(e entry) bool {
	return (q.Issuer == "" || e.Issuer == q.Issuer) &&
		(q.Status == "" || string(e.Outcome.Status) == q.Status) &&
		(q.Code == "" || string(e.Outcome.Code) == q.Code) &&
		(q.Table == "" || strings.EqualFold(e.Table, q.Table)) && // table names are case-insensitive
		(q.PK == "" || e.PK == q.PK)
}
