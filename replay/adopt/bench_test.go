package adopt_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/replay/adopt"
	"github.com/tablejournal/tablejournal/replay/replaytest"
	"github.com/tablejournal/tablejournal/store"
)

// BenchmarkAdopt adopts b.N rows in b.N/100 partitions (run it with
// -benchtime=10000x) and, in the same run, copies the same rows with the
// store alone (aztables underneath on Azurite): read each partition and
// write it back in transactions of 100, 8 partitions at once, as a backup
// tool would. The copy is the floor; adopt-vs-copy is the share of its
// speed adoption keeps, with the journal, the projector and the layout in
// between.
func BenchmarkAdopt(b *testing.B) {
	for _, bk := range backends() {
		b.Run(bk.name, func(b *testing.B) {
			st := bk.open(b)
			e, a := env(b, st)
			ctx := e.Ctx
			table, copied, into := replaytest.UniqueTable("src"), replaytest.UniqueTable("copy"), replaytest.UniqueTable("adopted")
			seed(b, ctx, st, table, b.N)

			b.ResetTimer()
			start := time.Now()
			if err := copyTable(ctx, st, table, copied); err != nil {
				b.Fatal(err)
			}
			copyTime := time.Since(start)
			start = time.Now()
			p, err := a.Plan(ctx, adopt.Config{Table: table, Into: into})
			if err != nil {
				b.Fatal(err)
			}
			if err := p.Apply(ctx); err != nil {
				b.Fatal(err)
			}
			adoptTime := time.Since(start)
			b.Logf("read %s, publish %s, wait %s", p.Read, p.Result.Publish, p.Result.Wait)
			b.StopTimer()
			if p.Upserts != b.N {
				b.Fatalf("%s", p.Summary())
			}
			b.ReportMetric(float64(b.N)/adoptTime.Seconds(), "adopt-rows/s")
			b.ReportMetric(float64(b.N)/copyTime.Seconds(), "copy-rows/s")
			b.ReportMetric(copyTime.Seconds()/adoptTime.Seconds(), "adopt-vs-copy")
		})
	}
}

// seed writes n rows in n/100 partitions, 100 to a transaction.
func seed(b *testing.B, ctx context.Context, st store.Store, table string, n int) {
	b.Helper()
	if err := st.CreateTable(ctx, table); err != nil {
		b.Fatal(err)
	}
	parts := max(1, n/100)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(8)
	for p := range parts {
		g.Go(func() error {
			var ops []store.Op
			for i := p; i < n; i += parts {
				ops = append(ops, store.Op{Kind: store.Insert, RK: fmt.Sprintf("r%07d", i), Props: edm.Entity{
					"n": edm.Int64(1<<53 + int64(i)), "price": edm.Double(float64(i)), "status": edm.String("shipped"),
					"at": edm.DateTime(time.Date(2026, 11, 29, 0, 0, 0, i*100, time.UTC)),
				}})
			}
			return transactAll(gctx, st, table, fmt.Sprintf("p%05d", p), ops)
		})
	}
	if err := g.Wait(); err != nil {
		b.Fatal(err)
	}
}

func transactAll(ctx context.Context, st store.Store, table, pk string, ops []store.Op) error {
	for len(ops) > 0 {
		k := min(len(ops), store.MaxOps)
		if _, err := st.Transact(ctx, table, pk, ops[:k]); err != nil {
			return err
		}
		ops = ops[k:]
	}
	return nil
}

// copyTable copies every row of table into a new table to, partition by
// partition, 8 at once.
func copyTable(ctx context.Context, st store.Store, table, to string) error {
	if err := st.CreateTable(ctx, to); err != nil {
		return err
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(8)
	err := st.Partitions(ctx, table, func(pk string) error {
		g.Go(func() error {
			var ops []store.Op
			if err := store.All(gctx, st, table, store.Query{PK: pk}, func(e store.Entity) error {
				ops = append(ops, store.Op{Kind: store.Insert, RK: e.RK, Props: e.Props})
				return nil
			}); err != nil {
				return err
			}
			return transactAll(gctx, st, to, pk, ops)
		})
		return nil
	})
	return errors.Join(err, g.Wait())
}
