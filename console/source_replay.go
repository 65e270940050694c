package console

// The one adapter of the console to the packages the replay and projector
// commands read through: replay and its parts (history: time travel and
// blame; repair, rebuild, retention, erasure), journal (the
// journal's messages and the outcomes), wire (subjects and outcome types),
// rows (the layout's prune horizon) and projection/status (the shards). Nothing else of the console knows
// them; when they move, only this file follows.

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/journal"
	"github.com/tablejournal/tablejournal/projection"
	"github.com/tablejournal/tablejournal/projection/status"
	"github.com/tablejournal/tablejournal/replay"
	"github.com/tablejournal/tablejournal/replay/erasure"
	"github.com/tablejournal/tablejournal/replay/history"
	"github.com/tablejournal/tablejournal/replay/rebuild"
	"github.com/tablejournal/tablejournal/replay/repair"
	"github.com/tablejournal/tablejournal/replay/retention"
	"github.com/tablejournal/tablejournal/rows"
	"github.com/tablejournal/tablejournal/store"
	"github.com/tablejournal/tablejournal/store/sqlite"
	"github.com/tablejournal/tablejournal/wire"
)

// SourceConfig configures NewSource.
type SourceConfig struct {
	// Replay reads the tables and the journal; it needs its JetStream
	// connection for every page but row history and as-of at a sequence.
	// Required.
	Replay *replay.Source
	// JetStream reaches the outcomes and the status bucket; nil leaves the
	// console with the tables alone.
	JetStream jetstream.JetStream
	// Journal and Durable name the journal stream and the projector's
	// consumers; if empty, the defaults.
	Journal, Durable string
}

// NewSource returns the Source that reads through the replay, journal and
// status packages.
func NewSource(cfg SourceConfig) (Source, error) {
	if cfg.Replay == nil {
		return nil, errors.New("console: SourceConfig.Replay is required")
	}
	src := cfg.Replay
	s := &replaySource{rp: src, hist: history.New(src), plans: repair.New(src), rb: rebuild.New(src),
		pruner: retention.NewPruner(src), compactor: retention.NewCompactor(src), eraser: erasure.New(src),
		js: cfg.JetStream, st: src.Store(),
		status: status.Config{Journal: cfg.Journal, Durable: cfg.Durable}}
	if cfg.JetStream != nil {
		s.outcomes = journal.NewOutcomes(cfg.JetStream)
	}
	return s, nil
}

type replaySource struct {
	rp        *replay.Source
	hist      *history.Reader
	plans     *repair.Planner
	rb        *rebuild.Rebuilder
	pruner    *retention.Pruner
	compactor *retention.Compactor
	eraser    *erasure.Eraser
	js        jetstream.JetStream
	st        store.Store
	outcomes  *journal.Outcomes
	status    status.Config
}

var _ Source = (*replaySource)(nil)

var errStop = errors.New("stop")

// errNoJournal says a page needs NATS.
var errNoJournal = fmt.Errorf("this page needs the journal: start the console with a NATS connection: %w", replay.ErrNoJournal)

func (s *replaySource) journal() (*journal.Journal, error) {
	j := s.rp.Journal()
	if j == nil || s.outcomes == nil {
		return nil, errNoJournal
	}
	return j, nil
}

func (s *replaySource) Resolve(ctx context.Context, point string) (uint64, error) {
	p, err := replay.ParsePoint(point)
	if err != nil {
		return 0, fmt.Errorf("%w: %w", ErrBadRequest, err)
	}
	if p.Kind == replay.AtSeq && s.rp.Journal() == nil {
		return p.Seq, nil
	}
	seq, err := s.rp.Resolve(ctx, p)
	switch {
	case errors.Is(err, replay.ErrBadPoint):
		return 0, fmt.Errorf("%w: %w", ErrBadRequest, err)
	case errors.Is(err, replay.ErrNoOutcome):
		return 0, fmt.Errorf("%w: %w", ErrNotFound, err)
	}
	return seq, err
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

func (s *replaySource) Journal(ctx context.Context, q JournalQuery) (JournalPage, error) {
	j, err := s.journal()
	if err != nil {
		return JournalPage{}, err
	}
	if q.Limit <= 0 {
		q.Limit = 100
	}
	if q.Scan <= 0 {
		q.Scan = 50 * q.Limit
	}
	head, err := j.Head(ctx)
	if err != nil {
		return JournalPage{}, err
	}
	page := JournalPage{Head: head}
	if q.Cmd != "" {
		outs, err := s.outcomes.History(ctx, q.Cmd)
		if err != nil {
			return page, err
		}
		for _, o := range outs {
			e := s.entryAt(ctx, j, o)
			if q.match(e) {
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
		var cands []JournalEntry
		err := j.ReadAny(ctx, from, to, subj, func(m journal.Msg) error {
			e := decodeEntry(m)
			if q.Issuer == "" || e.Issuer == q.Issuer {
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
func (s *replaySource) journalRange(ctx context.Context, j *journal.Journal, page JournalPage, from, end uint64, subj []string, limit int) (JournalPage, error) {
	var es []JournalEntry
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

func (q JournalQuery) match(e JournalEntry) bool {
	return (q.Issuer == "" || e.Issuer == q.Issuer) &&
		(q.Status == "" || e.Status == q.Status) &&
		(q.Code == "" || e.Code == q.Code) &&
		(q.Table == "" || strings.EqualFold(e.Table, q.Table)) && // table names are case-insensitive
		(q.PK == "" || e.PK == q.PK)
}

// decodeEntry reads a journal message: a command, a prune or an erase.
// Its table is as the body spells it, else the subject's token.
func decodeEntry(m journal.Msg) JournalEntry {
	e := JournalEntry{Seq: m.Seq, Time: m.Time, Kind: "command"}
	if table, _, pk, err := wire.ParseJournalSubject(m.Subject); err == nil {
		e.Table, e.PK = table, pk
	}
	if journal.IsEraseMsg(m.Header) {
		e.Kind = "erase"
		if x, err := journal.DecodeEraseMsg(m); err == nil {
			e.ID, e.Issuer, e.IssuedAt, e.Table = x.ID, x.Issuer, x.IssuedAt, x.Table
		}
		return e
	}
	c, err := journal.DecodeMsg(m)
	if err != nil {
		e.ID = m.Header.Get("Nats-Msg-Id")
		return e
	}
	e.ID, e.Issuer, e.IssuedAt, e.Ops, e.Table = c.ID, c.Issuer, c.IssuedAt, len(c.Ops), c.Table
	if c.IsPrune() {
		e.Kind = "prune"
	}
	return e
}

func outcomeInto(e *JournalEntry, o wire.Outcome) {
	e.Status, e.Code, e.Rule, e.Reason = string(o.Status), string(o.Code), o.Rule, o.Reason
	e.Rows, e.Removed = len(o.Rows), o.Pruned
}

// attachOutcomes sets each entry's outcome: the latest of its ID, or, when
// that is of another message of the same ID, the one of its own.
func (s *replaySource) attachOutcomes(ctx context.Context, es []JournalEntry) error {
	if len(es) == 0 {
		return nil
	}
	ids := make([]string, 0, len(es))
	for _, e := range es {
		if e.ID != "" {
			ids = append(ids, e.ID)
		}
	}
	latest, err := s.outcomes.LatestAll(ctx, ids)
	if err != nil {
		return fmt.Errorf("outcomes: %w", err)
	}
	for i := range es {
		o, ok := latest[es[i].ID]
		if ok && o.Seq != es[i].Seq {
			ok = false
			hist, err := s.outcomes.History(ctx, es[i].ID)
			if err != nil {
				return fmt.Errorf("outcomes of %s: %w", es[i].ID, err)
			}
			for _, h := range hist {
				if h.Seq == es[i].Seq {
					o, ok = h, true
				}
			}
		}
		if ok {
			outcomeInto(&es[i], o)
		}
	}
	return nil
}

// entryAt is the journal entry of an outcome, with its message if stored.
func (s *replaySource) entryAt(ctx context.Context, j *journal.Journal, o wire.Outcome) JournalEntry {
	e := JournalEntry{Seq: o.Seq, Time: o.At, ID: o.ID, Table: o.Table, PK: o.PK, Kind: "command"}
	if m, err := j.Get(ctx, o.Seq); err == nil {
		e = decodeEntry(m)
	}
	outcomeInto(&e, o)
	return e
}

func (s *replaySource) Command(ctx context.Context, id string) (CommandView, error) {
	j, err := s.journal()
	if err != nil {
		return CommandView{}, err
	}
	b, err := s.hist.Blame(ctx, id)
	if errors.Is(err, replay.ErrNoOutcome) {
		return CommandView{}, fmt.Errorf("command %q: %w", id, ErrNotFound)
	} else if err != nil {
		return CommandView{}, err
	}
	v := CommandView{JournalEntry: JournalEntry{Seq: b.Outcome.Seq, Time: b.Outcome.At, ID: id,
		Table: b.Outcome.Table, PK: b.Outcome.PK, Kind: "command"}}
	m, merr := j.Get(ctx, b.Outcome.Seq)
	if merr == nil {
		v.JournalEntry = decodeEntry(m)
		v.Trace = traceID(m.Header.Get(projection.HeaderTraceparent))
		if x, err := journal.DecodeEraseMsg(m); err == nil && journal.IsEraseMsg(m.Header) && x.RK != nil {
			v.EraseRow, v.EraseRK = true, *x.RK
		}
	} else {
		v.Gone = "the journal no longer stores this command (erased or trimmed)"
	}
	outcomeInto(&v.JournalEntry, b.Outcome)
	if hist, err := s.outcomes.History(ctx, id); err == nil {
		for _, o := range hist {
			e := JournalEntry{Seq: o.Seq, Time: o.At, ID: o.ID, Table: o.Table, PK: o.PK}
			outcomeInto(&e, o)
			v.Outcomes = append(v.Outcomes, e)
		}
	}
	if c := b.Command; c != nil {
		v.Meta = c.Meta
		if c.Prune != nil {
			v.PruneHorizon = c.Prune.Horizon
		}
		for _, op := range c.Ops {
			o := Op{Op: string(op.Op), RK: op.RK, Fields: fields(op.Entity)}
			if op.IfVersion != nil {
				o.If = fmt.Sprintf("version %d", *op.IfVersion)
			}
			v.Ops = append(v.Ops, o)
		}
	} else if b.DecodeErr != "" && v.Gone == "" && v.Kind != "erase" {
		v.Gone = "the command does not decode: " + b.DecodeErr
	}
	for _, r := range b.Versions {
		v.Versions = append(v.Versions, VersionRef{RK: r.RK, Version: r.Version, Op: string(r.Op),
			Deleted: r.Deleted, Tip: r.Tip, Fields: fields(r.Props)})
	}
	return v, nil
}

// traceID is the trace ID of a W3C traceparent header.
func traceID(parent string) string {
	parts := strings.Split(parent, "-")
	if len(parts) != 4 {
		return ""
	}
	return parts[1]
}

// historyPage is the versions a row page shows when HistoryQuery.Limit
// is zero.
const historyPage = 100

func (s *replaySource) History(ctx context.Context, q HistoryQuery) (RowHistory, error) {
	table, pk, rk := q.Table, q.PK, q.RK
	h := RowHistory{Table: table, PK: pk, RK: rk}
	vs, err := s.hist.History(ctx, table, pk, rk)
	var ee *replay.ErasedError
	switch {
	case errors.As(err, &ee):
		// Every version of the row went with an erase: the page says so.
		vs, err = nil, nil
	case errors.Is(err, store.ErrTableNotFound):
		return h, fmt.Errorf("table %s: %w", table, ErrNotFound)
	}
	if err != nil {
		return h, err
	}
	if hz, err := s.horizon(ctx, table, pk); err == nil && hz.Seq > 0 {
		h.PrunedBefore, h.PruneCmd, h.PruneRemoved = hz.Seq, hz.Cmd, hz.Total
	}
	if err := s.hist.Erased(ctx, table, pk, rk, 0); errors.As(err, &ee) {
		h.Erased = erasedView(ee)
	}
	if len(vs) == 0 {
		return h, fmt.Errorf("row %s/%s/%s: %w", table, pk, rk, ErrNotFound)
	}
	h.Total = len(vs)
	lo, hi := historyWindow(vs, q)
	if lo > 0 {
		h.Older = vs[lo].Seq
	}
	if hi < len(vs) {
		h.Newer = vs[hi-1].Seq
	}
	// Issuers, properties and differences are read for the page alone: a
	// row of 5,000 versions costs one page's journal reads, not 5,000.
	issuers := s.issuers(ctx, vs[lo:hi])
	for i := lo; i < hi; i++ {
		r := vs[i]
		v := Version{Version: r.Version, Seq: r.Seq, At: r.At, Cmd: r.Cmd, Issuer: issuers[r.Seq],
			Op: string(r.Op), Deleted: r.Deleted, Tip: r.Tip, Fields: fields(r.Props)}
		var before, after edm.Entity
		if i > 0 && !vs[i-1].Deleted {
			before = vs[i-1].Props
		}
		if !r.Deleted {
			after = r.Props
		}
		v.Changes = changes(history.Diff(before, after))
		h.Versions = append(h.Versions, v)
	}
	return h, nil
}

// historyWindow is the page [lo, hi) of versions (oldest first) that q
// selects: the newest before q.Before, else the oldest after q.After,
// else the newest.
func historyWindow(vs []rows.Row, q HistoryQuery) (lo, hi int) {
	n := q.Limit
	if n <= 0 {
		n = historyPage
	}
	switch {
	case q.Before != 0:
		hi, _ = slices.BinarySearchFunc(vs, q.Before, func(r rows.Row, seq uint64) int { return cmp.Compare(r.Seq, seq) })
		return max(0, hi-n), hi
	case q.After != 0:
		lo, found := slices.BinarySearchFunc(vs, q.After, func(r rows.Row, seq uint64) int { return cmp.Compare(r.Seq, seq) })
		if found {
			lo++
		}
		return lo, min(len(vs), lo+n)
	}
	return max(0, len(vs)-n), len(vs)
}

// issuers reads the issuer of the command of each version, when the
// journal still stores it.
func (s *replaySource) issuers(ctx context.Context, vs []rows.Row) map[uint64]string {
	out := make(map[uint64]string, len(vs))
	j := s.rp.Journal()
	if j == nil {
		return out
	}
	for _, r := range vs {
		if m, err := j.Get(ctx, r.Seq); err == nil {
			out[r.Seq] = decodeEntry(m).Issuer
		}
	}
	return out
}

func erasedView(e *replay.ErasedError) *Erasure {
	x := &Erasure{PK: e.PK, Cmd: e.Cmd, Seq: e.Seq, At: e.At, Partition: e.RK == nil}
	if e.RK != nil {
		x.RK = *e.RK
	}
	return x
}

// horizon reads the prune horizon of a partition of table, from its
// history table when it is plain (SPEC §4).
func (s *replaySource) horizon(ctx context.Context, table, pk string) (rows.Horizon, error) {
	vt, err := s.rp.VersionTable(ctx, table)
	if err != nil {
		return rows.Horizon{}, err
	}
	return rows.ReadHorizon(ctx, s.st, vt, pk)
}

// Tables lists the store's tables, but not the history table of a plain
// table (SPEC §4): its rows are the plain table's history, shown on the
// plain table's pages, not a table of its own.
func (s *replaySource) Tables(ctx context.Context) ([]string, error) {
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

// asOfKey is the continuation key of an as-of page.
func asOfKey(pk, rk string) string { return pk + "\x00" + rk }

func (s *replaySource) AsOf(ctx context.Context, q AsOfQuery) (AsOfPage, error) {
	if q.Limit <= 0 {
		q.Limit = 100
	}
	var page AsOfPage
	afterPK, afterRK, cont := strings.Cut(q.After, "\x00")
	// add appends a row, or ends the page when it is full.
	add := func(r AsOfRow) error {
		if cont && asOfKey(r.PK, r.RK) <= q.After {
			return nil
		}
		if len(page.Rows) == q.Limit {
			page.Next = asOfKey(page.Rows[len(page.Rows)-1].PK, page.Rows[len(page.Rows)-1].RK)
			return errStop
		}
		page.Rows = append(page.Rows, r)
		return nil
	}
	_ = afterRK
	partition := func(pk string) error {
		if q.Against != 0 {
			return s.diffPartition(ctx, q, pk, &page, add)
		}
		return s.partitionAt(ctx, q.Table, pk, q.Seq, &page, add)
	}
	var err error
	if !q.All {
		err = partition(q.PK)
	} else {
		// The partitions of the history, for a plain table: a partition
		// whose rows are all deleted now had rows then.
		vt, verr := s.rp.VersionTable(ctx, q.Table)
		if verr != nil {
			return page, verr
		}
		err = s.st.Partitions(ctx, vt, func(pk string) error {
			if cont && store.CompareKeys(pk, afterPK) < 0 {
				return nil
			}
			return partition(pk)
		})
	}
	switch {
	case errors.Is(err, errStop):
		return page, nil
	case errors.Is(err, store.ErrTableNotFound):
		return page, fmt.Errorf("table %s: %w", q.Table, ErrNotFound)
	}
	return page, err
}

// partitionAt adds the rows of one partition at seq; a prune or an erase
// of the partition is noted in the page rather than failing it.
func (s *replaySource) partitionAt(ctx context.Context, table, pk string, seq uint64, page *AsOfPage, add func(AsOfRow) error) error {
	err := s.hist.AsOfErasures(ctx, table, store.InPartition(pk), seq, func(es []*replay.ErasedError) error {
		for _, e := range es {
			page.Erased = append(page.Erased, *erasedView(e))
		}
		return nil
	}, func(r rows.Row) error {
		return add(AsOfRow{PK: r.PK, RK: r.RK, Version: r.Version, Seq: r.Seq, Cmd: r.Cmd, At: r.At, Fields: fields(r.Props)})
	})
	var pe *replay.PrunedError
	var ee *replay.ErasedError
	switch {
	case errors.As(err, &pe):
		page.Pruned = pe.Error()
		return nil
	case errors.As(err, &ee):
		page.Erased = append(page.Erased, *erasedView(ee))
		return nil
	}
	return err
}

// diffPartition adds the rows of one partition that differ between
// q.Seq and q.Against.
func (s *replaySource) diffPartition(ctx context.Context, q AsOfQuery, pk string, page *AsOfPage, add func(AsOfRow) error) error {
	at := func(seq uint64) (map[string]rows.Row, error) {
		m := make(map[string]rows.Row)
		err := s.hist.AsOf(ctx, q.Table, store.InPartition(pk), seq, func(r rows.Row) error {
			m[r.RK] = r
			return nil
		})
		var pe *replay.PrunedError
		var ee *replay.ErasedError
		switch {
		case errors.As(err, &pe):
			page.Pruned = pe.Error()
			return m, nil
		case errors.As(err, &ee):
			page.Erased = append(page.Erased, *erasedView(ee))
			return m, nil
		}
		return m, err
	}
	a, err := at(q.Seq)
	if err != nil {
		return err
	}
	b, err := at(q.Against)
	if err != nil {
		return err
	}
	keys := make([]string, 0, len(a)+len(b))
	for k := range a {
		keys = append(keys, k)
	}
	for k := range b {
		if _, ok := a[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, store.CompareKeys)
	for _, k := range keys {
		ra, inA := a[k]
		rb, inB := b[k]
		r := AsOfRow{PK: pk, RK: k}
		switch {
		case inA && inB && ra.Seq == rb.Seq:
			continue
		case !inA:
			r.Kind = "added"
		case !inB:
			r.Kind = "removed"
		default:
			r.Kind = "changed"
		}
		var before, after edm.Entity
		if inA {
			before = ra.Props
		}
		newest := ra
		if inB {
			after, newest = rb.Props, rb
		}
		r.Version, r.Seq, r.Cmd, r.At, r.Fields = newest.Version, newest.Seq, newest.Cmd, newest.At, fields(newest.Props)
		r.Changes = changes(history.Diff(before, after))
		if err := add(r); err != nil {
			return err
		}
	}
	return nil
}

// Steps finds the applied commands of the scope next to seq.
func (s *replaySource) Steps(ctx context.Context, table, pk string, all bool, seq uint64) (prev, next uint64, err error) {
	j, err := s.journal()
	if err != nil {
		return 0, 0, err
	}
	subj := filter(table, pk, all)
	head, err := j.Head(ctx)
	if err != nil {
		return 0, 0, err
	}
	// applied returns the sequences of the scope's applied commands in
	// [from, to], in order.
	applied := func(from, to uint64) ([]uint64, error) {
		var es []JournalEntry
		err := j.ReadAny(ctx, from, to, subj, func(m journal.Msg) error {
			es = append(es, decodeEntry(m))
			return nil
		})
		if err != nil {
			return nil, err
		}
		if err := s.attachOutcomes(ctx, es); err != nil {
			return nil, err
		}
		var out []uint64
		for _, e := range es {
			if e.Status == string(wire.StatusApplied) {
				out = append(out, e.Seq)
			}
		}
		return out, nil
	}
	// Windows grow from small, so that the step next to a busy point
	// costs a short read, and a far one a few long ones.
	const first, most = 128, 1 << 16
	for from, w := seq+1, uint64(first); from <= head && next == 0 && from <= seq+most; from, w = from+w, w*4 {
		got, err := applied(from, min(head, from+w-1))
		if err != nil {
			return 0, 0, err
		}
		if len(got) > 0 {
			next = got[0]
		}
	}
	for to, w := min(seq, head+1), uint64(first); to > 1 && prev == 0 && to+most > seq; w *= 4 {
		from := uint64(1)
		if to > w {
			from = to - w
		}
		got, err := applied(from, to-1)
		if err != nil {
			return 0, 0, err
		}
		if len(got) > 0 {
			prev = got[len(got)-1]
		}
		to = from
	}
	if !all && prev != 0 {
		// A step into the partition's pruned history would show nothing
		// but the prune.
		if hz, err := s.horizon(ctx, table, pk); err == nil && hz.Pruned(prev) {
			prev = 0
		}
	}
	return prev, next, nil
}

func (s *replaySource) Recent(ctx context.Context, n int) ([]OutcomeSample, error) {
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
	var out []OutcomeSample
	err = s.outcomes.Follow(ctx, from, func(seq uint64, o wire.Outcome) bool {
		out = append(out, OutcomeSample{At: o.At, Status: string(o.Status), Code: string(o.Code)})
		return seq >= last
	})
	return out, err
}

func (s *replaySource) Health(ctx context.Context) (Health, error) {
	if s.js == nil {
		return Health{}, errNoJournal
	}
	ov, err := status.Read(ctx, s.js, s.status)
	if err != nil {
		return Health{}, err
	}
	h := Health{At: ov.At, Pending: ov.Totals.Pending, MaxLag: seconds(ov.Totals.MaxLagSeconds),
		Rate: ov.Totals.Rate, Unowned: ov.Totals.Unowned}
	for _, b := range ov.Totals.Behind {
		h.Behind = append(h.Behind, b.String())
	}
	for _, b := range ov.Totals.Held {
		h.Held = append(h.Held, b.String())
	}
	if j := s.rp.Journal(); j != nil {
		if h.Head, err = j.Head(ctx); err != nil {
			return h, err
		}
	}
	for _, sh := range ov.Shards {
		x := Shard{Shard: sh.Shard, Owner: sh.Owner, Applied: sh.Applied, Pending: sh.Pending,
			Lag: seconds(sh.LagSeconds), Rate: sh.Rate, Consumer: sh.Consumer}
		if sh.OwnerSince != nil {
			x.OwnerSince = *sh.OwnerSince
		}
		h.Shards = append(h.Shards, x)
	}
	return h, nil
}

func seconds(f float64) time.Duration { return time.Duration(f * float64(time.Second)) }

// fields renders an entity's properties, by name.
func fields(e edm.Entity) []Field {
	out := make([]Field, 0, len(e))
	for name, v := range e {
		out = append(out, field(name, v))
	}
	slices.SortFunc(out, func(a, b Field) int { return strings.Compare(a.Name, b.Name) })
	return out
}

func field(name string, v edm.Value) Field {
	return Field{Name: name, Type: v.Type.String(), Value: v.Text()}
}

func changes(cs []history.PropChange) []Change {
	out := make([]Change, 0, len(cs))
	for _, c := range cs {
		out = append(out, Change{Name: c.Name, Before: field(c.Name, c.Before), After: field(c.Name, c.After),
			HadBefore: c.HadBefore, HasAfter: c.HasNow})
	}
	return out
}

func (s *replaySource) Retention(ctx context.Context, table string, limit int) (RetentionLog, error) {
	out := RetentionLog{Table: table}
	if s.rp.Journal() != nil {
		hz, ok, err := s.compactor.Horizon(ctx, table)
		if err != nil {
			return out, err
		}
		if ok {
			out.Compacted = &Compaction{Seq: hz.Seq, Snapshot: hz.Snapshot, SHA256: hz.SHA256, Recorded: hz.Recorded}
		}
	}
	// The markers and the fence sort together, outside the tips and
	// versions: one range over every partition finds them all.
	vt, err := s.rp.VersionTable(ctx, table) // a plain table's history (SPEC §4)
	if err != nil {
		return out, err
	}
	from, _ := rows.ErasedRange()
	q := store.AllPartitions.Query(store.Query{From: from, To: rows.FenceKeyEnd})
	err = store.All(ctx, s.st, vt, q, func(e store.Entity) error {
		if len(out.Prunes)+len(out.Erasures) >= limit {
			out.Truncated = true
			return errStop
		}
		if e.RK == rows.FenceKey {
			if hz := rows.HorizonOf(e.Props); hz.Seq > 0 {
				out.Prunes = append(out.Prunes, Prune{PK: e.PK, Seq: hz.Seq, Cmd: hz.Cmd, Removed: hz.Total})
			}
			return nil
		}
		rk, whole, ok := rows.MarkerRK(e.RK)
		if m, mok := rows.DecodeMarker(e); ok && mok {
			out.Erasures = append(out.Erasures, Erasure{PK: e.PK, Cmd: m.Cmd, Seq: m.Seq, At: m.At, Partition: whole, RK: rk})
		}
		return nil
	})
	switch {
	case errors.Is(err, errStop):
		err = nil
	case errors.Is(err, store.ErrTableNotFound):
		err = fmt.Errorf("table %s: %w", table, ErrNotFound)
	}
	return out, err
}

// Verify re-projects into a temporary embedded store on this machine, so
// that a verify from the console writes nothing to the table store.
func (s *replaySource) Verify(ctx context.Context, table string, progress func(string, int64, int64), diff func(Difference)) (VerifySummary, error) {
	if s.rp.Journal() == nil {
		return VerifySummary{}, errNoJournal
	}
	dir, err := os.MkdirTemp("", "tablejournal-console-verify-")
	if err != nil {
		return VerifySummary{}, err
	}
	defer os.RemoveAll(dir)
	scratch, err := sqlite.Open(ctx, filepath.Join(dir, "scratch.db"))
	if err != nil {
		return VerifySummary{}, fmt.Errorf("scratch store: %w", err)
	}
	defer scratch.Close()
	st, err := s.rb.Verify(ctx, rebuild.VerifyConfig{Table: table, Scratch: scratch, Progress: progress,
		OnDiff: func(d rebuild.Difference) error {
			diff(Difference{Kind: string(d.Kind), PK: d.PK, Key: d.Key, Columns: changes(d.Columns)})
			return nil
		}})
	if errors.Is(err, rebuild.ErrUnknownTable) {
		err = fmt.Errorf("%w: %w", ErrNotFound, err)
	}
	return VerifySummary{Seq: st.Seq, Rows: st.Rows, Missing: st.Missing, Extra: st.Extra, Changed: st.Changed, Elapsed: st.Elapsed}, err
}

func (s *replaySource) Plan(ctx context.Context, r Repair) (RepairPlan, error) {
	p, _, err := s.plan(ctx, r)
	return p, err
}

// plan computes a repair's plan, and the function that applies it.
func (s *replaySource) plan(ctx context.Context, r Repair) (RepairPlan, func() (RepairResult, error), error) {
	out := RepairPlan{Repair: r, Issuer: repairIssuer(r.By)}
	if _, err := s.journal(); err != nil {
		return out, nil, err
	}
	s = s.publishingAs(out.Issuer)
	part := store.InPartition(r.PK)
	if r.All {
		part = store.AllPartitions
	}
	if r.Kind == "restore" || r.Kind == "prune" {
		seq, err := s.Resolve(ctx, r.Point)
		if err != nil {
			return out, nil, err
		}
		out.Seq = seq
	}
	switch r.Kind {
	case "undo", "restore":
		return s.planCommands(ctx, r, part, out)
	case "prune":
		return s.planPrune(ctx, r, part, out)
	case "erase":
		return s.planErase(ctx, r, out)
	}
	return out, nil, fmt.Errorf("%w: unknown repair %q: want undo, restore, prune or erase", ErrBadRequest, r.Kind)
}

// repairIssuer is the issuer of the commands of a repair asked for by
// user.
func repairIssuer(user string) string {
	if user == "" {
		return "console"
	}
	return "console:" + user
}

// publishingAs is s with planners whose commands name issuer.
func (s *replaySource) publishingAs(issuer string) *replaySource {
	c := *s
	c.rp = s.rp.WithIssuer(issuer)
	c.plans, c.pruner, c.eraser = repair.New(c.rp), retention.NewPruner(c.rp), erasure.New(c.rp)
	return &c
}

// eraseListed bounds the row keys an erase preview lists.
const eraseListed = 50

// eraseRows lists the keys of the rows an erase of t takes: the row, or
// the rows of the partition (tips, tombstones included), at most
// eraseListed and the count of the others.
func (s *replaySource) eraseRows(ctx context.Context, t erasure.Target) ([]string, int, error) {
	if t.RK != nil {
		return []string{*t.RK}, 0, nil
	}
	var keys []string
	more := 0
	vt, err := s.rp.VersionTable(ctx, t.Table) // a plain table's history (SPEC §4)
	if err != nil {
		return nil, 0, err
	}
	from, to := rows.TipRange()
	err = store.All(ctx, s.st, vt, store.Query{PK: t.PK, From: from, To: to}, func(e store.Entity) error {
		r, err := rows.DecodeRow(e)
		if err != nil {
			return err
		}
		if len(keys) < eraseListed {
			keys = append(keys, r.RK)
		} else {
			more++
		}
		return nil
	})
	if errors.Is(err, store.ErrTableNotFound) {
		err = nil
	}
	return keys, more, err
}

// planCommands plans an undo or a restore: the commands replay's repair
// planner would publish.
func (s *replaySource) planCommands(ctx context.Context, r Repair, part store.Partition, out RepairPlan) (RepairPlan, func() (RepairResult, error), error) {
	var p *repair.Plan
	var err error
	if r.Kind == "undo" {
		p, err = s.plans.PlanUndo(ctx, r.Cmd, repair.UndoOptions{Force: r.Force})
	} else {
		p, err = s.plans.PlanRestore(ctx, r.Table, part, out.Seq)
	}
	if errors.Is(err, replay.ErrNoOutcome) {
		return out, nil, fmt.Errorf("%w: %w", ErrNotFound, err)
	} else if err != nil {
		return out, nil, err
	}
	out.Table, out.PK, out.Seq = p.Table, p.PK, p.Seq
	for _, st := range p.Steps {
		var before, after edm.Entity
		if st.Exists {
			before = st.Current.Props
		}
		if st.TargetExists {
			after = st.Target.Props
		}
		out.Steps = append(out.Steps, RepairStep{PK: st.PK, RK: st.RK, Op: string(st.Op), Conflict: st.Conflict,
			Changes: changes(history.Diff(before, after))})
	}
	for _, c := range p.Commands {
		out.Commands = append(out.Commands, c.ID)
	}
	switch {
	case p.Blocked():
		out.Blocked = fmt.Sprintf("%d rows were changed again by later commands; undo with force to put them back all the same", len(p.Conflicts()))
	case r.Kind == "undo" && p.Status != wire.StatusApplied:
		out.Blocked = fmt.Sprintf("the command was %s: there is nothing to undo", p.Status)
	case len(p.Commands) == 0:
		out.Blocked = "nothing to do"
	}
	out.Fingerprint = fingerprint(out.Commands)
	return out, func() (RepairResult, error) {
		applied, err := s.plans.Apply(ctx, p)
		var res RepairResult
		for _, a := range applied {
			e := JournalEntry{Seq: a.Outcome.Seq, ID: a.Command.ID, Table: a.Command.Table, PK: a.Command.PK, Kind: "command"}
			outcomeInto(&e, a.Outcome)
			res.Outcomes = append(res.Outcomes, e)
		}
		return res, err
	}, nil
}

// planPrune plans the prunes of a partition or table before a point.
func (s *replaySource) planPrune(ctx context.Context, r Repair, part store.Partition, out RepairPlan) (RepairPlan, func() (RepairResult, error), error) {
	cfg := retention.PruneConfig{Table: r.Table, Partition: part, Before: out.Seq}
	var keys []string
	_, err := s.pruner.Prune(ctx, cfg, func(pp retention.PrunePartition) error {
		out.Counts = append(out.Counts, Count{What: fmt.Sprintf("partition %q: rows before seq %d", pp.PK, pp.Horizon), N: pp.Rows})
		keys = append(keys, fmt.Sprintf("%s\x00%d\x00%d", pp.PK, pp.Horizon, pp.Rows))
		return nil
	})
	if err != nil {
		return out, nil, err
	}
	if len(keys) == 0 {
		out.Blocked = "nothing to prune"
	}
	out.Fingerprint = fingerprint(keys)
	return out, func() (RepairResult, error) {
		cfg.Apply = true
		var res RepairResult
		_, err := s.pruner.Prune(ctx, cfg, func(pp retention.PrunePartition) error {
			res.Counts = append(res.Counts, Count{What: fmt.Sprintf("partition %q: rows removed", pp.PK), N: pp.Rows})
			if pp.Outcome != nil {
				e := JournalEntry{Seq: pp.Outcome.Seq, ID: pp.Command, Table: r.Table, PK: pp.PK, Kind: "prune"}
				outcomeInto(&e, *pp.Outcome)
				res.Outcomes = append(res.Outcomes, e)
			}
			return nil
		})
		return res, err
	}, nil
}

// planErase plans the erase of a row or a partition: counts, never values.
func (s *replaySource) planErase(ctx context.Context, r Repair, out RepairPlan) (RepairPlan, func() (RepairResult, error), error) {
	t := erasure.Target{Table: r.Table, PK: r.PK}
	if r.Row {
		rk := r.RK
		t.RK = &rk
	}
	p, err := s.eraser.PlanErase(ctx, t)
	if err != nil {
		return out, nil, err
	}
	out.Counts = []Count{{"table rows", int64(p.TableRows)}, {"journal commands", int64(len(p.Journal))},
		{"journal commands kept (they touched other rows too)", int64(len(p.Kept))},
		{"change events", int64(len(p.Changes))}, {"outcomes", int64(len(p.Outcomes))}}
	if out.Rows, out.RowsMore, err = s.eraseRows(ctx, t); err != nil {
		return out, nil, err
	}
	if p.Empty() {
		out.Blocked = "nothing of the key is left"
	}
	out.Fingerprint = fingerprint([]string{fmt.Sprint(p.TableRows, p.Journal, p.Kept, p.Changes, p.Outcomes)})
	return out, func() (RepairResult, error) {
		rc, err := s.eraser.EraseKey(ctx, t, time.Now)
		if rc == nil {
			return RepairResult{}, err
		}
		return RepairResult{Counts: []Count{{"table rows removed", int64(rc.Removed.TableRows)},
			{"journal messages removed", int64(rc.Removed.JournalMsgs)}, {"change events removed", int64(rc.Removed.ChangeEvents)},
			{"outcomes removed", int64(rc.Removed.Outcomes)}},
			Outcomes: []JournalEntry{{Seq: rc.EraseSeq, ID: rc.EraseID, Table: rc.Table, Kind: "erase", Status: "applied"}}}, err
	}, nil
}

func (s *replaySource) Apply(ctx context.Context, r Repair, want string) (RepairResult, error) {
	p, apply, err := s.plan(ctx, r)
	if err != nil {
		return RepairResult{}, err
	}
	if p.Fingerprint != want {
		return RepairResult{}, ErrPlanChanged
	}
	if p.Blocked != "" {
		return RepairResult{}, fmt.Errorf("%w: %s", ErrBadRequest, p.Blocked)
	}
	res, err := apply()
	res.Plan = p
	return res, err
}

// fingerprint names a plan by what it would do.
func fingerprint(parts []string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}
