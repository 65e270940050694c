package projection_test

import (
	"context"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/internal/azurite"
	"github.com/tablejournal/tablejournal/journal/journaltest"
	"github.com/tablejournal/tablejournal/projection"
	"github.com/tablejournal/tablejournal/projection/projectiontest"
	"github.com/tablejournal/tablejournal/rows"
	"github.com/tablejournal/tablejournal/store"
	"github.com/tablejournal/tablejournal/store/storetest"
	"github.com/tablejournal/tablejournal/wire"
)

// azuriteSrv is started by the first test that opens an azurite backend:
// the tests that need none run without Azurite installed.
var azuriteSrv azurite.Shared

func TestMain(m *testing.M) {
	os.Exit(azurite.RunShared(m, &azuriteSrv))
}

func backends() []projectiontest.Backend {
	return projectiontest.LazyBackends(func(t testing.TB) string { return azuriteSrv.Get(t).ConnectionString() })
}

// sizes of the model workload per backend: Azurite is an order of
// magnitude slower, so it gets a smaller workload with the same checks.
// The "-paged" runs read through storetest.Paging. sqlite's 4,000 commands
// still give its 240 rows deep histories, every op kind, rejections and
// re-sent IDs (it was 10,000: the same paths, two and a half times the
// time, and under load its pipelined publish outlasted the writer's
// one-minute retry budget). sqlite-paged reads every row back through
// pages of 16 entities with empty pages (no row cache), which makes it the
// slowest per command: 1,500 commands (it was 3,000, the longest test of
// the package) meet the same readers and the same empty pages.
var modelSize = map[string]struct{ commands, partitions, rowsPer int }{
	"sqlite":        {4_000, 20, 12},
	"azurite":       {1_500, 20, 10},
	"sqlite-paged":  {1_500, 20, 12},
	"azurite-paged": {1_000, 20, 12},
}

// pagedBackends returns each backend as it is and wrapped to page like
// Azure: a small scan budget, and an empty page with a continuation first
// in every query and every third query, which every reader of the
// projector must follow.
func pagedBackends(t *testing.T) []projectiontest.Backend {
	var out []projectiontest.Backend
	for _, b := range backends() {
		out = append(out, b, projectiontest.Backend{Name: b.Name + "-paged", Open: func(tb testing.TB) store.Store {
			// Paged like Azure, then shuffled: Paging needs its store's order.
			p := &storetest.Paging{Store: b.Ordered(tb), Budget: 16, EmptyEvery: 3, EmptyFirst: true}
			tb.Cleanup(func() {
				if p.EmptyPages() == 0 {
					t.Errorf("%s: no empty page met: the paging wrapper was not exercised", b.Name)
				}
			})
			return projectiontest.Shuffled(tb, p)
		}})
	}
	return out
}

// TestModel projects a seeded random workload and checks every row's
// current state and complete history, and every command's outcome, against
// an independent model. It then projects the same journal into a second,
// fresh store and checks that both hold identical rows (determinism). It
// runs on both stores as they are and through the Azure-paging wrapper.
//
// It runs on both layouts (SPEC §4): on plain, the history table is
// checked as the versioned table is, and the table itself must hold
// exactly the history's tips, on both projections.
func TestModel(t *testing.T) {
	for _, b := range pagedBackends(t) {
		for _, layout := range projectiontest.Layouts {
			name := b.Name
			if layout != wire.LayoutVersioned {
				name += "-" + string(layout)
			}
			t.Run(name, func(t *testing.T) { testModel(t, b, layout) })
		}
	}
}

func testModel(t *testing.T, b projectiontest.Backend, layout wire.Layout) {
	size := modelSize[b.Name]
	ctx := journaltest.Context(t, 10*time.Minute)
	h := projectiontest.Start(t, b.Open(t), projectiontest.Options{})
	h.SetLayout(ctx, "orders", layout)
	vt := projectiontest.VersionTable(t, "orders", layout)
	cfg := projection.Config{}
	if strings.HasSuffix(b.Name, "-paged") {
		// No row cache: every batch reads its rows back, through the pages.
		cfg.Applier.CacheRows = -1
	}
	h.StartProjector(cfg)

	w := projectiontest.NewWorkload(42, "orders", size.partitions, size.rowsPer)
	cmds := make([]*events.Command, size.commands)
	for i := range cmds {
		cmds[i] = w.Next()
	}
	h.PublishAll(ctx, cmds)
	h.WaitProjected(ctx)

	model := h.Model(ctx)
	if n := len(model.Rows); n < 200 {
		t.Fatalf("workload touched %d rows, want at least 200", n)
	}
	projectiontest.CompareTableIn(t, h.Store, vt, "orders", model)
	projectiontest.CheckOutcomes(t, h.Outcomes(ctx), model)
	h.CheckChangeFeed(ctx, "orders", model)

	// Determinism: the same journal into a fresh store.
	second := b.Open(t)
	p2, err := projection.New(ctx, h.JS, second, projection.Config{Durable: "second", NoChangeFeed: true, Logger: projectiontest.QuietLogger()})
	if err != nil {
		t.Fatal(err)
	}
	rctx, cancel := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- p2.Run(rctx) }()
	want := projectiontest.TableVersions(t, h.Store, vt)
	projectiontest.WaitFor(t, ctx, "the second projection catches up", func() (bool, error) {
		got, err := projectiontest.ReadVersions(ctx, second, vt)
		return err == nil && projectiontest.SameVersionCount(got, want), err
	})
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	projectiontest.CompareTableIn(t, second, vt, "orders", model)
	projectiontest.CompareStores(t, h.Store, second, vt)
	if layout == wire.LayoutPlain {
		projectiontest.CompareStores(t, h.Store, second, "orders")
		projectiontest.CheckPlain(t, h.Store, "orders")
		projectiontest.CheckPlain(t, second, "orders")
	}
}

// TestPoison publishes garbage with a raw NATS client in the middle of a
// workload: each bad message is rejected with a reason, and every valid
// command around it applies.
func TestPoison(t *testing.T) {
	for _, b := range backends() {
		t.Run(b.Name, func(t *testing.T) {
			ctx := journaltest.Context(t, 5*time.Minute)
			h := projectiontest.Start(t, b.Open(t), projectiontest.Options{})
			cfg := projection.Config{}
			if strings.HasSuffix(b.Name, "-paged") {
				// No row cache: every batch reads its rows back, through the pages.
				cfg.Applier.CacheRows = -1
			}
			h.StartProjector(cfg)
			w := projectiontest.NewWorkload(7, "orders", 4, 10)

			valid := func(n int) {
				cmds := make([]*events.Command, n)
				for i := range cmds {
					cmds[i] = w.Next()
				}
				h.PublishAll(ctx, cmds)
			}
			raw := func(subject, contentType string, data []byte, id string) {
				m := nats.NewMsg(subject)
				m.Data = data
				if contentType != "" {
					m.Header.Set("Content-Type", contentType)
				}
				if id != "" {
					m.Header.Set("Nats-Msg-Id", id)
				}
				if _, err := h.JS.PublishMsg(ctx, m); err != nil {
					t.Fatalf("raw publish %s: %v", id, err)
				}
			}
			good := &events.Command{ID: "poison-ok", Table: "orders", PK: "part-00",
				Ops: []events.RowOp{{Op: events.OpUpsert, RK: "x", Entity: edm.Entity{"a": edm.Int32(1)}}}}
			goodJSON, _ := events.MarshalJSON(good)
			tooMany := *good
			tooMany.ID = "poison-too-many-ops"
			for i := 0; i <= events.MaxOpsPerCommand; i++ {
				tooMany.Ops = append(tooMany.Ops, events.RowOp{Op: events.OpUpsert, RK: strings.Repeat("k", i+1), Entity: edm.Entity{}})
			}
			tooManyJSON, _ := events.MarshalJSON(&tooMany)
			badTable := strings.Replace(string(goodJSON), `"orders"`, `"1nvalid"`, 1)
			badTable = strings.Replace(badTable, "poison-ok", "poison-bad-table", 1)
			mismatch := strings.Replace(string(goodJSON), "poison-ok", "poison-mismatch", 1)
			unguarded := `{"id":"poison-ifversion","table":"orders","pk":"part-00","ops":[{"op":"replace","rk":"x","ifversion":0,"entity":{}}]}`
			noRK := `{"id":"poison-no-rk","table":"orders","pk":"part-00","ops":[{"op":"upsert","entity":{}}]}`

			poison := []struct {
				name, subject, ct string
				data              []byte
				id                string
				reason            string // a part of the outcome's reason, if given
			}{
				{"undecodable msgpack", wire.JournalSubject("orders", "part-00"), "", []byte{0xc1, 0xff, 0x00}, "poison-msgpack", ""},
				{"broken JSON", wire.JournalSubject("orders", "part-01"), wire.ContentTypeJSON, []byte(`{"id":"poison-json",`), "poison-json", ""},
				{"subject and body disagree", wire.JournalSubject("orders", "part-02"), wire.ContentTypeJSON, []byte(mismatch), "poison-mismatch", ""},
				{"too many ops", wire.JournalSubject("orders", "part-00"), wire.ContentTypeJSON, tooManyJSON, "poison-too-many-ops", ""},
				{"invalid table", wire.JournalSubject("orders", "part-00"), wire.ContentTypeJSON, []byte(badTable), "poison-bad-table", ""},
				{"unknown content type", wire.JournalSubject("orders", "part-00"), "text/plain", goodJSON, "poison-ok", ""},
				{"big entity", wire.JournalSubject("orders", "part-03"), wire.ContentTypeJSON, bigEntityJSON(t), "poison-big", ""},
				{"unknown field", wire.JournalSubject("orders", "part-00"), wire.ContentTypeJSON, []byte(unguarded), "poison-ifversion",
					`ops[0]: rule unknown-field: unknown field "ifversion"`},
				{"no rk", wire.JournalSubject("orders", "part-00"), wire.ContentTypeJSON, []byte(noRK), "poison-no-rk", "ops[0].rk: rule rk-required"},
				// The subject names no table once stored: it used to stop the shard.
				{"partition token not base64url", wire.JournalPrefix + ".orders.!bad", wire.ContentTypeJSON, goodJSON, "poison-bad-token", "pk-token"},
			}
			valid(200)
			for _, p := range poison {
				raw(p.subject, p.ct, p.data, p.id)
				valid(20)
			}
			h.WaitProjected(ctx)
			model := h.Model(ctx)
			projectiontest.CompareTable(t, h.Store, "orders", model)
			h.CheckChangeFeed(ctx, "orders", model)
			outcomes := h.Outcomes(ctx)
			checkOutcomesStatusOnly(t, outcomes, model)
			byID := map[string]wire.Outcome{}
			for _, o := range outcomes {
				byID[o.ID] = o
			}
			for _, p := range poison {
				o, ok := byID[p.id]
				if !ok || o.Status != wire.StatusRejected || o.Reason == "" || !strings.Contains(o.Reason, p.reason) {
					t.Errorf("%s: outcome %+v, want rejected with a reason %q", p.name, o, p.reason)
					continue
				}
				t.Logf("%s: %s", p.name, o.Reason)
			}
		})
	}
}

func checkOutcomesStatusOnly(t *testing.T, got map[uint64]wire.Outcome, model *projectiontest.Model) {
	t.Helper()
	for seq, want := range model.Status {
		if o := got[seq]; string(o.Status) != want {
			t.Errorf("seq %d (%s): outcome %q (%s), model says %s", seq, o.ID, o.Status, o.Reason, want)
		}
	}
}

// bigEntityJSON is a command whose entity is over the 1 MiB limit.
func bigEntityJSON(t *testing.T) []byte {
	e := edm.Entity{}
	for i := 0; i < 17; i++ {
		e["p"+strings.Repeat("x", i+1)] = edm.Binary(make([]byte, 64<<10))
	}
	c := &events.Command{ID: "poison-big", Table: "orders", PK: "part-03",
		Ops: []events.RowOp{{Op: events.OpUpsert, RK: "big", Entity: e}}}
	data, err := events.MarshalJSON(c)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// TestDuplicateWithoutMsgID publishes with a raw NATS client that sets no
// Nats-Msg-Id, so JetStream deduplicates nothing: an insert, a merge of the
// same row, then the very same insert body again. A command ID applies at
// most once, ever: the third message is a duplicate and the row keeps the
// merge, though the row's newest version no longer carries the ID.
func TestDuplicateWithoutMsgID(t *testing.T) {
	for _, b := range backends() {
		t.Run(b.Name, func(t *testing.T) {
			ctx := journaltest.Context(t, time.Minute)
			h := projectiontest.Start(t, b.Open(t), projectiontest.Options{})
			h.StartProjector(projection.Config{})
			insert := `{"id":"ins-1","table":"orders","pk":"p","ops":[{"op":"insert","rk":"x","entity":{"a":1}}]}`
			merge := `{"id":"mrg-1","table":"orders","pk":"p","ops":[{"op":"merge","rk":"x","entity":{"b":2}}]}`
			for i, body := range []string{insert, merge, insert} {
				m := nats.NewMsg(wire.JournalSubject("orders", "p"))
				m.Header.Set("Content-Type", wire.ContentTypeJSON)
				m.Data = []byte(body)
				if err := h.NC.PublishMsg(m); err != nil {
					t.Fatal(err)
				}
				projectiontest.WaitFor(t, ctx, "the message in the journal", func() (bool, error) {
					head, err := h.Journal.Head(ctx)
					return head == uint64(i+1), err
				})
				// Projected before the next is sent: the projector's
				// memory of this batch is gone, only the outcomes remember.
				h.WaitProjected(ctx)
			}
			got := h.Outcomes(ctx)
			for seq, want := range map[uint64]wire.Status{1: wire.StatusApplied, 2: wire.StatusApplied, 3: wire.StatusDuplicate} {
				if o := got[seq]; o.Status != want {
					t.Errorf("seq %d (%s): %s (%s), want %s", seq, o.ID, o.Status, o.Reason, want)
				}
			}
			t.Logf("seq 3: %s", got[3].Reason)
			row, err := rows.Reader{Store: h.Store}.Get(ctx, "orders", "p", "x")
			if err != nil {
				t.Fatal(err)
			}
			if row.Version != 1 || row.Cmd != "mrg-1" || len(row.Props) != 2 {
				t.Errorf("row x: version %d by %s with %v, want version 1 by mrg-1 with a and b", row.Version, row.Cmd, row.Props)
			}
			m := h.Model(ctx)
			projectiontest.CompareTable(t, h.Store, "orders", m)
		})
	}
}
