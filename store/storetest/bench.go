package storetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/store"
)

// Bench runs the store benchmarks against the backend that newStore opens
// (once per sub-benchmark). Each reports entities/s:
//
//	Tx100    transactions of 100 upserted entities in one partition
//	Single   transactions of one upserted entity
//	Get      point reads of existing rows
//	Scan10k  reads of a whole 10,000-entity partition, page by page
//
// The entities look like the projector's rows: five system columns and
// three user properties, about 200 bytes.
func Bench(b *testing.B, newStore func(b *testing.B) store.Store) {
	b.Run("Tx100", func(b *testing.B) { benchTx(b, newStore(b), store.MaxOps) })
	b.Run("Single", func(b *testing.B) { benchTx(b, newStore(b), 1) })
	b.Run("Get", func(b *testing.B) { benchGet(b, newStore(b)) })
	b.Run("Scan10k", func(b *testing.B) { benchScan(b, newStore(b), 10000) })
}

// BenchEntity is a typical projected row.
func BenchEntity(i int) edm.Entity {
	return edm.Entity{
		"_v":     edm.Int64(int64(i)),
		"_cmd":   edm.String(fmt.Sprintf("01JD3X9Q7ZBGN0V0W4Q6T8%04d", i%10000)),
		"_seq":   edm.Int64(int64(1000000 + i)),
		"_at":    edm.DateTime(time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC).Add(time.Duration(i) * time.Millisecond)),
		"_op":    edm.String("upsert"),
		"status": edm.String("shipped"),
		"total":  edm.Double(12.5 + float64(i)),
		"qty":    edm.Int64(9007199254740993),
	}
}

func benchTable(b *testing.B, s store.Store) string {
	b.Helper()
	name := TableName("bench")
	ctx := context.Background()
	if err := s.CreateTable(ctx, name); err != nil {
		b.Fatalf("CreateTable: %v", err)
	}
	b.Cleanup(func() { _ = s.DeleteTable(ctx, name) })
	return name
}

func benchTx(b *testing.B, s store.Store, per int) {
	ctx := context.Background()
	name := benchTable(b, s)
	ops := make([]store.Op, per)
	b.ResetTimer()
	n := 0
	for b.Loop() {
		for i := range ops {
			ops[i] = store.Op{Kind: store.Upsert, RK: fmt.Sprintf("tip:row-%09d", n), Props: BenchEntity(n)}
			n++
		}
		if _, err := s.Transact(ctx, name, fmt.Sprintf("pk-%d", n/10000), ops); err != nil {
			b.Fatalf("Transact: %v", err)
		}
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "entities/s")
}

func seed(b *testing.B, s store.Store, name, pk string, n int) {
	b.Helper()
	ctx := context.Background()
	for start := 0; start < n; start += store.MaxOps {
		var ops []store.Op
		for i := start; i < min(n, start+store.MaxOps); i++ {
			ops = append(ops, store.Op{Kind: store.Upsert, RK: fmt.Sprintf("tip:row-%09d", i), Props: BenchEntity(i)})
		}
		if _, err := s.Transact(ctx, name, pk, ops); err != nil {
			b.Fatalf("Transact: %v", err)
		}
	}
}

func benchGet(b *testing.B, s store.Store) {
	ctx := context.Background()
	name := benchTable(b, s)
	const rows = 1000
	seed(b, s, name, "p", rows)
	b.ResetTimer()
	n := 0
	for b.Loop() {
		if _, err := s.Get(ctx, name, "p", fmt.Sprintf("tip:row-%09d", (n*7919)%rows)); err != nil {
			b.Fatalf("Get: %v", err)
		}
		n++
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "entities/s")
}

func benchScan(b *testing.B, s store.Store, rows int) {
	ctx := context.Background()
	name := benchTable(b, s)
	seed(b, s, name, "p", rows)
	b.ResetTimer()
	n := 0
	for b.Loop() {
		err := store.All(ctx, s, name, store.Query{PK: "p"}, func(store.Entity) error { n++; return nil })
		if err != nil {
			b.Fatalf("Query: %v", err)
		}
	}
	if n%rows != 0 {
		b.Fatalf("scanned %d entities, not a multiple of %d", n, rows)
	}
	b.ReportMetric(float64(n)/b.Elapsed().Seconds(), "entities/s")
}
