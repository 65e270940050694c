package storetest

import (
	"errors"
	"slices"
	"testing"

	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/store"
)

// testEmptyPartitionKey: the empty PartitionKey is a partition like any
// other, as in Azure. A query of it reads it alone; only AllPartitions
// reads every partition, and it cannot be combined with a PK.
func testEmptyPartitionKey(t *testing.T, e *env) {
	name := e.table()
	props := func(pk string) edm.Entity { return edm.Entity{"pk": edm.String(pk)} }
	e.fill(name, "", []string{"", "r1", "r2", "r3"}, func(int) edm.Entity { return props("") })
	e.fill(name, " ", []string{"r1"}, func(int) edm.Entity { return props(" ") })
	e.fill(name, "a", []string{"", "r1"}, func(int) edm.Entity { return props("a") })

	for _, limit := range []int{0, 1} {
		got := e.all(name, store.Query{PK: "", Limit: limit})
		if len(got) != 4 {
			t.Fatalf("partition \"\", limit %d: %d rows, want 4", limit, len(got))
		}
		for _, ent := range got {
			if ent.PK != "" || ent.Props["pk"].Str != "" {
				t.Fatalf("partition \"\" returned a row of partition %q", ent.PK)
			}
		}
	}
	if got := keysOf(e.all(name, store.Query{PK: "", From: "r1", To: "r3"})); !slices.Equal(got, []string{"r1", "r2"}) {
		t.Fatalf("range r1..r3 of partition \"\": %q", got)
	}
	if got := e.all(name, store.Query{AllPartitions: true}); len(got) != 7 || got[0].PK != "" || got[4].PK != " " || got[6].PK != "a" {
		t.Fatalf("every partition: %d rows %+v, want 7 starting with partition \"\"", len(got), got)
	}
	e.get(name, "", "")
	e.get(name, "", "r2")
	e.mustTx(name, "", store.Op{Kind: store.Delete, RK: "r2"}, store.Op{Kind: store.Merge, RK: "r1", Props: edm.Entity{"x": edm.Int32(1)}})
	if got := keysOf(e.all(name, store.Query{PK: ""})); !slices.Equal(got, []string{"", "r1", "r3"}) {
		t.Fatalf("partition \"\" after a transaction: %q", got)
	}
	_, err := e.s.Query(e.ctx, name, store.Query{PK: "a", AllPartitions: true})
	e.wantErr(err, store.ErrInvalid, "a query of every partition that names one")
}

// testPartitions: the store lists each partition that holds a row once,
// in key order, the empty key included, however many rows it holds.
func testPartitions(t *testing.T, e *env) {
	pl := e.s
	list := func(table string) ([]string, error) {
		var pks []string
		err := pl.Partitions(e.ctx, table, func(pk string) error {
			pks = append(pks, pk)
			return nil
		})
		return pks, err
	}
	_, err := list(TableName("missing"))
	e.wantErr(err, store.ErrTableNotFound, "Partitions of a missing table")

	name := e.table()
	if got, err := list(name); err != nil || len(got) != 0 {
		t.Fatalf("Partitions of an empty table: %q, %v", got, err)
	}
	pks := append([]string{""}, OrderKeys...)
	for _, pk := range pks {
		e.mustTx(name, pk, store.Op{Kind: store.Upsert, RK: "r", Props: edm.Entity{}})
	}
	e.fill(name, "a", rowKeys("many", 150), func(int) edm.Entity { return edm.Entity{} })
	e.mustTx(name, "gone", store.Op{Kind: store.Insert, RK: "r", Props: edm.Entity{}})
	e.mustTx(name, "gone", store.Op{Kind: store.Delete, RK: "r"})
	want := append([]string(nil), pks...)
	sortKeys(want)
	got, err := list(name)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("Partitions:\n got %+q\nwant %+q", got, want)
	}

	stop := errors.New("stop")
	n := 0
	err = pl.Partitions(e.ctx, name, func(string) error {
		if n++; n == 3 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || n != 3 {
		t.Fatalf("Partitions with fn failing at the third: %v after %d", err, n)
	}
}
