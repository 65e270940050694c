package projectiontest

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/store"
)

// benchTableSeq names tables uniquely on an Azurite shared by a test binary
// (and across -count runs).
var benchTableSeq atomic.Int64

// BenchTable creates a table with a new name in st and deletes it when the
// benchmark ends.
func BenchTable(b testing.TB, st store.Store, prefix string) string {
	b.Helper()
	name := fmt.Sprintf("Bench%s%d", prefix, benchTableSeq.Add(1))
	if err := st.CreateTable(context.Background(), name); err != nil {
		b.Fatalf("CreateTable: %v", err)
	}
	b.Cleanup(func() { _ = st.DeleteTable(context.Background(), name) })
	return name
}

// BenchRK is the RowKey of row i of the projection benchmarks.
func BenchRK(i int) string { return fmt.Sprintf("row-%09d", i) }

// BenchUpsert is a single-row upsert of row i with the user properties of
// storetest.BenchEntity, so that projected rows and a raw writer's rows are
// alike.
func BenchUpsert(id, table, pk string, i int) *events.Command {
	return &events.Command{ID: id, Table: table, PK: pk, Issuer: "bench", Ops: []events.RowOp{{
		Op: events.OpUpsert, RK: BenchRK(i), Entity: edm.Entity{
			"status": edm.String("shipped"),
			"total":  edm.Double(12.5 + float64(i)),
			"qty":    edm.Int64(9007199254740993),
		},
	}}}
}
