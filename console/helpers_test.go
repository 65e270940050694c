package console_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/tablejournal/tablejournal/journal/tablelayout"

	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/nats-io/nats.go/jetstream"
	tj "github.com/tablejournal/tablejournal"

	"github.com/tablejournal/tablejournal/console"
	"github.com/tablejournal/tablejournal/internal/azurite"
	"github.com/tablejournal/tablejournal/journal"
	"github.com/tablejournal/tablejournal/journal/journaltest"
	"github.com/tablejournal/tablejournal/projection"
	"github.com/tablejournal/tablejournal/projection/projectiontest"
	"github.com/tablejournal/tablejournal/replay"
	"github.com/tablejournal/tablejournal/replay/retention"
	"github.com/tablejournal/tablejournal/store"
	"github.com/tablejournal/tablejournal/tablejournaltest"
	"github.com/tablejournal/tablejournal/wire"
)

var azuriteSrv *azurite.Server

func TestMain(m *testing.M) { os.Exit(azurite.Run(m, &azuriteSrv)) }

// backend is a table store the console's tests run against.
type backend struct {
	name   string
	tables func() string
}

func backends() []backend {
	return []backend{
		{"sqlite", func() string { return "" }},
		{"azurite", func() string { return azuriteSrv.ConnectionString() }},
	}
}

var tableN atomic.Int64

// traceHex is the trace ID the seeded command c3 is published under.
const traceHex = "4bf92f3577b34da6a3ce929d0e0e4736"

// fixture is a seeded pipeline and a console over it.
type fixture struct {
	t      testing.TB
	client *tj.Client
	rp     *replay.Source
	st     store.Store
	js     jetstream.JetStream
	srv    *httptest.Server
	h      *console.Handler
	table  string
	// seqs of the seeded commands by ID.
	seq map[string]uint64
}

// seed starts a real pipeline (in-process nats-server, real projector,
// the table store tables) and applies the story the tests read:
//
//	c1 insert order-7 {status new, total 10}
//	c2 merge order-7 {status paid}
//	c3 replace order-7 {status shipped, total 12}  (with a trace)
//	c4 insert order-8 and order-9
//	c5 insert order-7 again: rejected, code exists
//	c6 delete order-9: a tombstone
//	d1 insert customer-7/order-1
//	e1..e3 insert, merge, merge customer-9/p1, then a prune of
//	customer-9 at e2 (version 0 goes)
func seed(t testing.TB, tables string, cfg console.Config) *fixture {
	t.Helper()
	return seedIn(t, tables, wire.LayoutVersioned, cfg)
}

// seedIn is seed with the table set to layout first (SPEC §3).
func seedIn(t testing.TB, tables string, layout wire.Layout, cfg console.Config) *fixture {
	t.Helper()
	p := tablejournaltest.New(t, tables)
	return seedOn(t, p.URL(), p.Store(), layout, cfg)
}

// seedErasable is seed on the embedded store, over a journal that allows
// the message deletes of an erase.
func seedErasable(t testing.TB, cfg console.Config) *fixture {
	t.Helper()
	return seedErasableIn(t, wire.LayoutVersioned, cfg)
}

// seedErasableIn is seedErasable with the table set to layout first.
func seedErasableIn(t testing.TB, layout wire.Layout, cfg console.Config) *fixture {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	jc := journal.Config{AllowMsgDelete: true}
	p, err := projectiontest.StartPipeline(ctx, nil, projectiontest.PipelineConfig{Dir: t.TempDir(), Journal: jc,
		ServerLogger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := p.Close(); err != nil {
			t.Error(err)
		}
	})
	if _, err := p.RunProjector(projection.Config{Journal: jc, Logger: slog.New(slog.DiscardHandler)}); err != nil {
		t.Fatal(err)
	}
	return seedOn(t, p.URL(), p.Store, layout, cfg)
}

// seedOn seeds the pipeline at natsURL, which projects into st, its
// table in layout.
func seedOn(t testing.TB, natsURL string, st store.Store, layout wire.Layout, cfg console.Config) *fixture {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	f := &fixture{t: t, table: fmt.Sprintf("orders%d", tableN.Add(1)), seq: map[string]uint64{}}
	_, js := journaltest.Connect(t, natsURL)
	if layout == wire.LayoutPlain {
		j, err := journal.Open(ctx, js, "")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tablelayout.Set(ctx, j, f.table, layout); err != nil {
			t.Fatal(err)
		}
	}
	c, err := tj.Connect(ctx, natsURL, tj.WithIssuer("shop"),
		tj.WithPropagator(propagation.TraceContext{}))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	f.client = c
	apply := func(ctx context.Context, cmd *tj.Command) {
		t.Helper()
		o, err := c.Apply(ctx, cmd)
		var rej *tj.Rejection
		if err != nil && !errors.As(err, &rej) {
			t.Fatalf("apply %s: %v", cmd.ID(), err)
		}
		f.seq[cmd.ID()] = o.Seq
	}
	s := func(v string) tj.Value { return tj.String(v) }
	pk := "customer-42"
	apply(ctx, tj.NewCommand(f.table, pk).WithID("c1").Insert("order-7", tj.Entity{"status": s("new"), "total": tj.Int64(10)}))
	apply(ctx, tj.NewCommand(f.table, pk).WithID("c2").Merge("order-7", tj.Entity{"status": s("paid")}))
	tid, _ := trace.TraceIDFromHex(traceHex)
	sid, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	tctx := trace.ContextWithRemoteSpanContext(ctx, trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled}))
	apply(tctx, tj.NewCommand(f.table, pk).WithID("c3").Replace("order-7", tj.Entity{"status": s("shipped"), "total": tj.Int64(12)}))
	apply(ctx, tj.NewCommand(f.table, pk).WithID("c4").Insert("order-8", tj.Entity{"status": s("new")}).Insert("order-9", tj.Entity{"status": s("new")}))
	apply(ctx, tj.NewCommand(f.table, pk).WithID("c5").Insert("order-7", tj.Entity{"status": s("again")}))
	apply(ctx, tj.NewCommand(f.table, pk).WithID("c6").Delete("order-9"))
	apply(ctx, tj.NewCommand(f.table, "customer-7").WithID("d1").Insert("order-1", tj.Entity{"status": s("new")}))
	apply(ctx, tj.NewCommand(f.table, "customer-9").WithID("e1").Insert("p1", tj.Entity{"n": tj.Int64(1)}))
	apply(ctx, tj.NewCommand(f.table, "customer-9").WithID("e2").Merge("p1", tj.Entity{"n": tj.Int64(2)}))
	apply(ctx, tj.NewCommand(f.table, "customer-9").WithID("e3").Merge("p1", tj.Entity{"n": tj.Int64(3)}))

	f.js = js
	f.st = st
	f.rp, err = replay.New(ctx, replay.Config{Store: f.st, JetStream: js})
	if err != nil {
		t.Fatal(err)
	}
	// Prune customer-9 at e2: version 0 of p1 goes.
	prune, err := retention.NewPruner(f.rp).PlanPrune(ctx, retention.PruneConfig{Table: f.table, Partition: store.InPartition("customer-9"),
		Before: f.seq["e2"], Pace: time.Millisecond})
	if err == nil {
		_, err = prune.Apply(ctx)
	}
	if err != nil {
		t.Fatalf("prune: %v", err)
	}
	cfg.Replay = f.rp
	f.h, err = console.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var h http.Handler = f.h
	if cfg.Prefix != "" {
		mux := http.NewServeMux()
		mux.Handle(cfg.Prefix+"/", http.StripPrefix(cfg.Prefix, f.h))
		h = mux
	}
	f.srv = httptest.NewServer(h)
	t.Cleanup(f.srv.Close)
	return f
}
