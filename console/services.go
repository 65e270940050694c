package console

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/tablejournal/tablejournal/journal"
	"github.com/tablejournal/tablejournal/journal/outcomes"
	"github.com/tablejournal/tablejournal/projection/status"
	"github.com/tablejournal/tablejournal/replay"
	"github.com/tablejournal/tablejournal/replay/history"
	"github.com/tablejournal/tablejournal/replay/rebuild"
	"github.com/tablejournal/tablejournal/replay/retention"
	"github.com/tablejournal/tablejournal/rows"
	"github.com/tablejournal/tablejournal/store"
	"github.com/tablejournal/tablejournal/wire"
)

// services are what the pages read through, one bundle made by New: the
// replay packages the replay and projector commands use (history: time
// travel and blame; repair, rebuild, retention, erasure), journal (the
// messages and their outcomes), wire (subjects and outcome types), rows
// (the layout's markers) and projection/status (the shards). The console
// keeps no copy of the row layout or of the journal's encoding: a page
// reads these packages' own types and its template renders them.
// The planners of a repair are made for each request, to publish as the
// signed-in user (page_repair.go).
type services struct {
	rp        *replay.Source
	st        store.Store
	js        jetstream.JetStream // nil without the journal
	hist      *history.Reader
	rb        *rebuild.Rebuilder
	compactor *retention.Compactor
	outcomes  *outcomes.Reader // nil without the journal
	status    status.Config
}

func newServices(rp *replay.Source) *services {
	s := &services{rp: rp, st: rp.Store(), js: rp.JetStream(), hist: history.New(rp),
		rb: rebuild.New(rp), compactor: retention.NewCompactor(rp),
		status: status.Config{Journal: rp.Config().Journal, Durable: rp.Config().Durable}}
	if s.js != nil {
		s.outcomes = outcomes.NewReader(s.js)
	}
	return s
}

// errStop ends a read early.
var errStop = errors.New("stop")

// errNoJournal says a page needs NATS.
var errNoJournal = fmt.Errorf("this page needs the journal: start the console with a NATS connection: %w", replay.ErrNoJournal)

// journal returns the journal, or errNoJournal.
func (s *services) journal() (*journal.Journal, error) {
	j := s.rp.Journal()
	if j == nil || s.outcomes == nil {
		return nil, errNoJournal
	}
	return j, nil
}

// resolve turns a point ("head", "seq:N" or N, "time:T" or an RFC 3339
// time, "cmd:ID") into a journal sequence.
func (s *services) resolve(ctx context.Context, point string) (uint64, error) {
	p, err := replay.ParsePoint(point)
	if err != nil {
		return 0, fmt.Errorf("%w: %w", errBadRequest, err)
	}
	if p.Kind == replay.AtSeq && s.rp.Journal() == nil {
		return p.Seq, nil
	}
	seq, err := s.rp.Resolve(ctx, p)
	switch {
	case errors.Is(err, replay.ErrBadPoint):
		return 0, fmt.Errorf("%w: %w", errBadRequest, err)
	case errors.Is(err, replay.ErrNoOutcome):
		return 0, fmt.Errorf("%w: %w", errNotFound, err)
	}
	return seq, err
}

// tables lists the tables of the store, sorted, but not the history
// table of a plain table (SPEC §4): its rows are the plain table's
// history, shown on the plain table's pages, not a table of its own.
func (s *services) tables(ctx context.Context) ([]string, error) {
	ts, err := s.st.ListTables(ctx)
	if err != nil {
		return nil, err
	}
	return userTables(ctx, s.rp, ts)
}

// userTables is ts sorted, less the history tables of the plain tables
// among them.
func userTables(ctx context.Context, rp *replay.Source, ts []string) ([]string, error) {
	have := make(map[string]bool, len(ts))
	for _, t := range ts {
		have[strings.ToLower(t)] = true
	}
	hidden := make(map[string]bool)
	for _, t := range ts {
		h, err := wire.HistoryTable(t)
		if err != nil || !have[strings.ToLower(h)] {
			continue
		}
		l, err := rp.Layout(ctx, t)
		if err != nil {
			return nil, err
		}
		if l == wire.LayoutPlain {
			hidden[strings.ToLower(h)] = true
		}
	}
	out := ts[:0:0]
	for _, t := range ts {
		if !hidden[strings.ToLower(t)] {
			out = append(out, t)
		}
	}
	slices.Sort(out)
	return out, nil
}

// horizon reads the prune horizon of a partition of table, from its
// history table when it is plain (SPEC §4).
func (s *services) horizon(ctx context.Context, table, pk string) (rows.Horizon, error) {
	vt, err := s.rp.VersionTable(ctx, table)
	if err != nil {
		return rows.Horizon{}, err
	}
	return rows.ReadHorizon(ctx, s.st, vt, pk)
}

// filter is the journal subject filters of a table or partition: its
// lower-case token's and, for a table spelled with capitals, the spelling
// a journal written before holds (wire.TableFilters).
func filter(table, pk string, all bool) []string {
	switch {
	case table == "":
		return nil
	case all:
		return wire.TableFilters(table)
	}
	return wire.PartitionFilters(table, pk)
}

// recent returns the outcomes of the newest commands, at most n, oldest
// first: the activity and rejection charts.
func (s *services) recent(ctx context.Context, n int) ([]wire.Outcome, error) {
	if s.outcomes == nil {
		return nil, errNoJournal
	}
	last, err := s.outcomes.Last(ctx)
	if err != nil || last == 0 {
		return nil, err
	}
	from := uint64(1)
	if last > uint64(n) {
		from = last - uint64(n) + 1
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	var out []wire.Outcome
	err = s.outcomes.Follow(ctx, from, func(seq uint64, o wire.Outcome) bool {
		out = append(out, o)
		return seq >= last
	})
	return out, err
}
