package projectiontest

import (
	"context"
	"hash/fnv"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/tablejournal/tablejournal/journal/tablelayout"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/journal"
	"github.com/tablejournal/tablejournal/journal/journaltest"
	"github.com/tablejournal/tablejournal/journal/outcomes"
	"github.com/tablejournal/tablejournal/projection"
	"github.com/tablejournal/tablejournal/rows"
	"github.com/tablejournal/tablejournal/store"
	"github.com/tablejournal/tablejournal/store/azure"
	"github.com/tablejournal/tablejournal/store/sqlite"
	"github.com/tablejournal/tablejournal/store/storetest"
	"github.com/tablejournal/tablejournal/wire"
)

// Backend opens a fresh table store for one test.
type Backend struct {
	Name string
	// Open opens the store answering pages shuffled (Shuffled).
	Open func(t testing.TB) store.Store
	// Ordered opens the store as it answers, in key order.
	Ordered func(t testing.TB) store.Store
}

// Backends returns the embedded store and, when azuriteConn is not empty,
// Azure Tables on that Azurite, each answering every page of a query with
// its rows shuffled (Shuffled), as Cosmos DB for Table does: every
// store-backed test of the projector and replay runs on unsorted pages.
// (The stores are tested answering in key order by the conformance suite,
// and by the tests that open Backend.Ordered.)
// Every store opened has its tables' layout checked when the test ends
// (CheckLayout).
func Backends(azuriteConn string) []Backend {
	if azuriteConn == "" {
		return LazyBackends(nil)
	}
	return LazyBackends(func(testing.TB) string { return azuriteConn })
}

// LazyBackends is Backends with the Azurite's connection string asked of
// azuriteConn (nil: no Azurite) only when a test opens the azurite backend,
// so that one started on demand (azurite.Shared) is started only for the
// tests that use it.
func LazyBackends(azuriteConn func(testing.TB) string) []Backend {
	bs := []Backend{{Name: "sqlite", Ordered: orderedSQLite}}
	if azuriteConn != nil {
		bs = append(bs, Backend{Name: "azurite", Ordered: func(t testing.TB) store.Store {
			s, err := azure.New(azure.Config{ConnectionString: azuriteConn(t)})
			if err != nil {
				t.Fatal(err)
			}
			// One Azurite serves the whole test binary: give each store its
			// own tables.
			ns := newNamespaced(s)
			CheckLayout(t, ns)
			return ns
		}})
	}
	for i := range bs {
		ordered := bs[i].Ordered
		bs[i].Open = func(t testing.TB) store.Store { return Shuffled(t, ordered(t)) }
	}
	return bs
}

// Shuffled wraps st so that every page of a query comes back with its rows
// shuffled (storetest.Shuffle), seeded by the test's name so that a failure
// repeats.
func Shuffled(t testing.TB, st store.Store) store.Store {
	h := fnv.New64a()
	h.Write([]byte(t.Name()))
	return &storetest.Shuffle{Store: st, Seed: h.Sum64()}
}

// SQLite opens the embedded store in a fresh file of the test, answering
// every page of a query shuffled (Shuffled), as Cosmos DB for Table does,
// its tables' layout checked when the test ends (CheckLayout).
func SQLite(t testing.TB) store.Store {
	t.Helper()
	return Shuffled(t, orderedSQLite(t))
}

// orderedSQLite is SQLite without the shuffle.
func orderedSQLite(t testing.TB) store.Store {
	t.Helper()
	s, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "tables.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	CheckLayout(t, s)
	return s
}

// Harness is a real pipeline for one test (a Pipeline, closed when the
// test ends) with a Writer and what the test published through it.
type Harness struct {
	*Pipeline
	t      testing.TB
	Writer *journal.Writer

	sent  map[string]bool
	acked map[string]uint64 // command ID → the sequence the journal acknowledged
}

// Options configure Start.
type Options struct {
	// Journal configures the stream; tests set a tiny Duplicates window to
	// let re-sent command IDs reach the projector.
	Journal journal.Config
}

// Start starts a Pipeline on st in a temporary folder of the test, without
// a projector (StartProjector), and closes it when the test ends.
func Start(t testing.TB, st store.Store, opts Options) *Harness {
	t.Helper()
	return start(t, st, PipelineConfig{Dir: t.TempDir(), Journal: opts.Journal})
}

// Attach is Start on servers the test started itself, such as a
// journaltest.Cluster: url may list several. Server is nil.
func Attach(t testing.TB, url string, st store.Store, opts Options) *Harness {
	t.Helper()
	return start(t, st, PipelineConfig{URL: url, Journal: opts.Journal})
}

func start(t testing.TB, st store.Store, cfg PipelineConfig) *Harness {
	t.Helper()
	p, err := StartPipeline(journaltest.Context(t, time.Minute), st, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Errorf("projector: %v", err)
		}
	})
	return &Harness{Pipeline: p, t: t, Writer: journal.NewWriter(p.JS, p.Journal.Name())}
}

// StartProjector runs a projector on the harness's store in the
// background until StopProjector or the end of the test, and returns it.
// Its Logger, if nil, is QuietLogger().
func (h *Harness) StartProjector(cfg projection.Config) *projection.Projector {
	h.t.Helper()
	if cfg.Logger == nil {
		cfg.Logger = QuietLogger()
	}
	p, err := h.RunProjector(cfg)
	if err != nil {
		h.t.Fatal(err)
	}
	return p
}

// PublishAll publishes cmds in order, pipelined, and returns the journal
// sequence of each (0 for a re-send). A command whose ID was published
// before is re-sent as a plain NATS client would, without a Nats-Msg-Id
// header, so JetStream does not deduplicate it and the projector's own
// duplicate detection has to.
func (h *Harness) PublishAll(ctx context.Context, cmds []*events.Command) []uint64 {
	h.t.Helper()
	if h.sent == nil {
		h.sent = make(map[string]bool)
	}
	var fs []*journal.Future
	var at []int // the index in cmds of each of fs
	for i, c := range cmds {
		if h.sent[c.ID] {
			data, err := events.MarshalMsgpack(c)
			if err != nil {
				h.t.Fatal(err)
			}
			msg := nats.NewMsg(wire.JournalSubject(c.Table, c.PK))
			msg.Data = data
			h.resend(ctx, c.ID, msg)
			continue
		}
		h.sent[c.ID] = true
		f, err := h.Writer.PublishAsync(ctx, c)
		if err != nil {
			h.t.Fatalf("publish %s: %v", c.ID, err)
		}
		fs, at = append(fs, f), append(at, i)
	}
	if h.acked == nil {
		h.acked = make(map[string]uint64)
	}
	seqs := make([]uint64, len(cmds))
	for i, f := range fs {
		res, err := f.Result(ctx)
		if err != nil {
			h.t.Fatalf("publish %s: %v", f.ID(), err)
		}
		h.acked[res.ID] = res.Seq
		seqs[at[i]] = res.Seq
	}
	return seqs
}

// resend publishes a command again without a Nats-Msg-Id, so the journal
// stores it again and the projector must find it a duplicate. It is sent
// synchronously, again after a failure (a node restarting): one stored
// twice is one more duplicate, which the model reads from the journal.
// (Waiting for PublishAsyncComplete instead waited for every async publish
// of the connection, the writer's abandoned attempts too, and TestChaos
// timed out on one whose ack never came.)
func (h *Harness) resend(ctx context.Context, id string, msg *nats.Msg) {
	h.t.Helper()
	for {
		pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		_, err := h.JS.PublishMsg(pctx, msg)
		cancel()
		if err == nil {
			return
		}
		select {
		case <-ctx.Done():
			h.t.Fatalf("re-send %s: %v", id, err)
		case <-time.After(100 * time.Millisecond): // a pause between attempts
		}
	}
}

// AwaitOutcomes waits until every command ID in ids has an outcome, and
// returns the newest of each: it follows the outcomes stream from its
// start, without polling, for at most two minutes within ctx.
func (h *Harness) AwaitOutcomes(ctx context.Context, ids []string) map[string]wire.Outcome {
	h.t.Helper()
	want := make(map[string]bool, len(ids))
	for _, id := range ids {
		want[id] = true
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	got := make(map[string]wire.Outcome, len(ids))
	err := outcomes.NewReader(h.JS).Follow(ctx, 1, func(_ uint64, o wire.Outcome) bool {
		got[o.ID] = o
		delete(want, o.ID)
		return len(want) == 0
	})
	if err != nil {
		h.t.Fatalf("awaiting %d outcomes: %v", len(want), err)
	}
	return got
}

// CheckAcknowledged checks that every command PublishAll published with
// the Writer and saw acknowledged is in the journal, under its ID at the
// sequence the acknowledgement named.
func (h *Harness) CheckAcknowledged(ctx context.Context) {
	h.t.Helper()
	for id, seq := range h.acked {
		m, err := h.Journal.Get(ctx, seq)
		if err != nil {
			h.t.Errorf("acknowledged command %s at seq %d: %v", id, seq, err)
			continue
		}
		if got := m.Header.Get(jetstream.MsgIDHeader); got != id {
			h.t.Errorf("seq %d holds %q, acknowledged as %s", seq, got, id)
		}
	}
	h.t.Logf("%d acknowledged commands are in the journal", len(h.acked))
}

// WaitProjected waits until every journal message up to the journal's head
// has an outcome: the projector has handled all of it. On timeout it names
// the sequences still without one.
func (h *Harness) WaitProjected(ctx context.Context) {
	h.t.Helper()
	head, err := h.Journal.Head(ctx)
	if err != nil {
		h.t.Fatal(err)
	}
	// Layout settings are no commands: they get no outcome.
	settings, err := tablelayout.Settings(ctx, h.Journal)
	if err != nil {
		h.t.Fatal(err)
	}
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if dl, ok := ctx.Deadline(); ok {
		wctx, cancel = context.WithDeadline(ctx, dl.Add(-time.Until(dl)/10))
		defer cancel()
	}
	done := false
	for !done && wctx.Err() == nil {
		// One outcome per journal message; none is ever deleted.
		if n, err := outcomes.NewReader(h.JS).Last(ctx); err == nil && n >= head-uint64(len(settings)) {
			done = true
			break
		}
		select {
		case <-wctx.Done():
		case <-time.After(20 * time.Millisecond):
		}
	}
	if done {
		return
	}
	got := h.Outcomes(ctx)
	var missing []uint64
	for seq := uint64(1); seq <= head; seq++ {
		if _, ok := got[seq]; !ok && !slices.Contains(settings, seq) {
			missing = append(missing, seq)
		}
	}
	if len(missing) > 20 {
		missing = missing[:20]
	}
	h.t.Fatalf("%d of %d journal messages have an outcome; missing e.g. %v", len(got), head, missing)
}

// WaitFor polls cond until it holds or ctx ends, failing the test then.
func WaitFor(t testing.TB, ctx context.Context, what string, cond func() (bool, error)) {
	t.Helper()
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		ok, err := cond()
		if ok {
			return
		}
		if err != nil {
			last = err
		}
		select {
		case <-ctx.Done():
			t.Fatalf("waiting until %s: %v (last error: %v)", what, ctx.Err(), last)
		case <-tick.C:
		}
	}
}

// Outcomes reads every outcome stored, by journal sequence.
func (h *Harness) Outcomes(ctx context.Context) map[uint64]wire.Outcome {
	h.t.Helper()
	out := make(map[uint64]wire.Outcome)
	oc := outcomes.NewReader(h.JS)
	last, err := oc.Last(ctx)
	if err != nil {
		h.t.Fatal(err)
	}
	if last == 0 {
		return out
	}
	err = oc.Follow(ctx, 1, func(seq uint64, o wire.Outcome) bool {
		out[o.Seq] = o
		return seq >= last
	})
	if err != nil {
		h.t.Fatal(err)
	}
	return out
}

// Model replays the journal, as stored, into a fresh model: the expected
// result of projecting it.
func (h *Harness) Model(ctx context.Context) *Model {
	h.t.Helper()
	m := NewModel()
	err := h.Journal.Read(ctx, 1, 0, "", func(msg journal.Msg) error {
		c, err := journal.DecodeMsg(msg)
		if err != nil || (msg.Header.Get(jetstream.MsgIDHeader) != "" && msg.Header.Get(jetstream.MsgIDHeader) != c.ID) {
			m.Reject(msg.Seq)
			return nil
		}
		m.Apply(msg.Seq, c)
		return nil
	})
	if err != nil {
		h.t.Fatal(err)
	}
	return m
}

// CompareTable checks that table holds exactly the model's rows: for every
// logical row its tip and every version (values, versions, command IDs,
// sequences, ops, tombstones), and nothing else.
func CompareTable(t testing.TB, st store.Store, table string, m *Model) {
	t.Helper()
	CompareTableIn(t, st, table, table, m)
}

// CompareTableIn is CompareTable of the model's table read from the table
// physical of st that holds its versioned rows (a plain table's history,
// VersionTable).
func CompareTableIn(t testing.TB, st store.Store, physical, table string, m *Model) {
	t.Helper()
	got := make(map[RowID][]rows.Row)
	for id, rs := range TableVersions(t, st, physical) {
		id.Table = table
		got[id] = rs
	}
	n := 0
	for _, id := range m.IDs() {
		if id.Table != table {
			continue
		}
		n++
		want := m.Rows[id]
		have := got[id]
		if len(have) != len(want) {
			t.Errorf("%s/%s: %d versions stored, model has %d:\nstored %v\nmodel  %v", id.PK, id.RK, len(have), len(want), have, want)
			continue
		}
		for i := range want {
			w, h := want[i], have[i]
			isTip := i == len(want)-1 && !w.Deleted
			if h.Version != w.Version || h.Cmd != w.Cmd || h.Seq != w.Seq || h.Op != w.Op ||
				h.Deleted != w.Deleted || h.Tip != isTip || !h.Props.Equal(w.Props) {
				t.Errorf("%s/%s version %d:\nstored %+v\nmodel  %v (tip %v)", id.PK, id.RK, i, h, w, isTip)
			}
		}
	}
	if len(got) != n {
		t.Errorf("table holds %d logical rows, model %d", len(got), n)
	}
}

// TableVersions reads a whole table and returns every logical row's stored
// versions, oldest first.
func TableVersions(t testing.TB, st store.Store, table string) map[RowID][]rows.Row {
	t.Helper()
	got, err := ReadVersions(context.Background(), st, table)
	if err != nil {
		t.Fatal(err)
	}
	return got
}

// ReadVersions is TableVersions returning its error, for polling.
func ReadVersions(ctx context.Context, st store.Store, table string) (map[RowID][]rows.Row, error) {
	got := make(map[RowID][]rows.Row)
	err := store.All(ctx, st, table, store.Query{AllPartitions: true}, func(e store.Entity) error {
		if e.RK == rows.FenceKey || rows.IsErasedKey(e.RK) {
			return nil // bookkeeping, not a logical row
		}
		r, err := rows.DecodeRow(e)
		if err != nil {
			return err
		}
		id := RowID{table, r.PK, r.RK}
		got[id] = append(got[id], r)
		return nil
	})
	if err != nil {
		return nil, err
	}
	for _, rows := range got {
		sort.Slice(rows, func(i, j int) bool { return rows[i].Version < rows[j].Version })
	}
	return got, nil
}

// QuietLogger logs only errors: rejections are expected in these tests.
// TABLEJOURNAL_TEST_LOG=debug|info|warn shows more.
func QuietLogger() *slog.Logger {
	level := slog.LevelError
	if v := os.Getenv("TABLEJOURNAL_TEST_LOG"); v != "" {
		_ = level.UnmarshalText([]byte(v))
	}
	return slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level}))
}
