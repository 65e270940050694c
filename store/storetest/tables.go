package storetest

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/store"
)

func testTables(t *testing.T, e *env) {
	a, b := TableName("sta"), TableName("stb")
	for _, name := range []string{b, a} {
		if err := e.s.CreateTable(e.ctx, name); err != nil {
			t.Fatalf("CreateTable(%s): %v", name, err)
		}
	}
	e.wantErr(e.s.CreateTable(e.ctx, a), store.ErrTableExists, "CreateTable twice")

	names, err := e.s.ListTables(e.ctx)
	if err != nil {
		t.Fatalf("ListTables: %v", err)
	}
	if !slices.IsSorted(names) {
		t.Errorf("ListTables is not sorted: %q", names)
	}
	if !slices.Contains(names, a) || !slices.Contains(names, b) {
		t.Fatalf("ListTables = %q, want it to hold %s and %s", names, a, b)
	}

	for _, name := range []string{a, b} {
		if err := e.s.DeleteTable(e.ctx, name); err != nil {
			t.Fatalf("DeleteTable(%s): %v", name, err)
		}
	}
	e.wantErr(e.s.DeleteTable(e.ctx, a), store.ErrTableNotFound, "DeleteTable twice")
	names, err = e.s.ListTables(e.ctx)
	if err != nil {
		t.Fatalf("ListTables: %v", err)
	}
	if slices.Contains(names, a) || slices.Contains(names, b) {
		t.Fatalf("ListTables = %q still holds deleted tables", names)
	}
	// A deleted table can be created again.
	if err := e.s.CreateTable(e.ctx, a); err != nil {
		t.Fatalf("CreateTable after DeleteTable: %v", err)
	}
	if err := e.s.DeleteTable(e.ctx, a); err != nil {
		t.Fatalf("DeleteTable: %v", err)
	}
}

// Azure table names are case-insensitive: one table, listed as created.
func testTableNamesCaseInsensitive(t *testing.T, e *env) {
	name := TableName("Case")
	if err := e.s.CreateTable(e.ctx, name); err != nil {
		t.Fatalf("CreateTable(%s): %v", name, err)
	}
	t.Cleanup(func() { _ = e.s.DeleteTable(e.ctx, name) })
	e.wantErr(e.s.CreateTable(e.ctx, strings.ToLower(name)), store.ErrTableExists, "CreateTable in other case")
	if !e.q.TableNamesCaseSensitive {
		e.mustTx(strings.ToUpper(name), "p", store.Op{Kind: store.Insert, RK: "r", Props: edm.Entity{"n": edm.Int32(1)}})
		e.get(strings.ToLower(name), "p", "r")
	}

	names, err := e.s.ListTables(e.ctx)
	if err != nil {
		t.Fatalf("ListTables: %v", err)
	}
	if !slices.Contains(names, name) {
		t.Fatalf("ListTables = %q, want %s as created", names, name)
	}
}

func testTableNamesInvalid(t *testing.T, e *env) {
	for _, name := range []string{"", "ab", "1abc", "ab-cd", "ab_cd", "abc d", "tables", "Tables", "ab\u00e9cd", strings.Repeat("a", 64)} {
		e.wantErr(e.s.CreateTable(e.ctx, name), store.ErrInvalid, "CreateTable("+name+")")
	}
	// The longest and shortest valid names.
	for _, name := range []string{TableName("x") + strings.Repeat("x", 63-17), fmt.Sprintf("z%02x", rand.IntN(256))} {
		err := e.s.CreateTable(e.ctx, name)
		if errors.Is(err, store.ErrTableExists) {
			continue // a 3-character name may be taken
		}
		if err != nil {
			t.Fatalf("CreateTable(%s): %v", name, err)
		}
		if err := e.s.DeleteTable(e.ctx, name); err != nil {
			t.Fatalf("DeleteTable(%s): %v", name, err)
		}
	}
}

// Ten goroutines create one table: exactly one succeeds.
func testTableCreateRace(t *testing.T, e *env) {
	name := TableName("race")
	t.Cleanup(func() { _ = e.s.DeleteTable(e.ctx, name) })
	errs := make([]error, 10)
	var wg sync.WaitGroup
	for i := range errs {
		wg.Go(func() { errs[i] = e.s.CreateTable(e.ctx, name) })
	}
	wg.Wait()
	created := 0
	for _, err := range errs {
		switch {
		case err == nil:
			created++
		case !errors.Is(err, store.ErrTableExists):
			t.Errorf("CreateTable: %v, want nil or ErrTableExists", err)
		}
	}
	if created != 1 {
		t.Fatalf("%d goroutines created the table, want exactly 1", created)
	}
}

func testDeleteTableDropsRows(t *testing.T, e *env) {
	name := e.table()
	e.fill(name, "p", rowKeys("r", 150), func(int) edm.Entity { return edm.Entity{"x": edm.Bool(true)} })
	if err := e.s.DeleteTable(e.ctx, name); err != nil {
		t.Fatalf("DeleteTable: %v", err)
	}
	_, err := e.s.Get(e.ctx, name, "p", "r00001")
	e.wantErr(err, store.ErrTableNotFound, "Get in a deleted table")
	_, err = e.s.Query(e.ctx, name, store.Query{AllPartitions: true})
	e.wantErr(err, store.ErrTableNotFound, "Query of a deleted table")
	err = e.tx(name, "p", store.Op{Kind: store.Upsert, RK: "r"})
	e.wantErr(err, store.ErrTableNotFound, "Transact in a deleted table")

	if err := e.s.CreateTable(e.ctx, name); err != nil {
		t.Fatalf("CreateTable again: %v", err)
	}
	if got := e.all(name, store.Query{AllPartitions: true}); len(got) != 0 {
		t.Fatalf("a re-created table holds %d rows of the deleted one", len(got))
	}
}

func testGetErrors(t *testing.T, e *env) {
	name := e.table()
	_, err := e.s.Get(e.ctx, name, "p", "r")
	e.wantErr(err, store.ErrNotFound, "Get of a missing row")
	_, err = e.s.Get(e.ctx, TableName("missing"), "p", "r")
	e.wantErr(err, store.ErrTableNotFound, "Get in a missing table")
	_, err = e.s.Get(e.ctx, name, "p", "a/b")
	e.wantErr(err, store.ErrInvalid, "Get of a key holding /")
	_, err = e.s.Get(e.ctx, name, "p\x01", "r")
	e.wantErr(err, store.ErrInvalid, "Get of a key holding a control character")
	_, err = e.s.Query(e.ctx, TableName("missing"), store.Query{PK: "p"})
	e.wantErr(err, store.ErrTableNotFound, "Query of a missing table")
	err = e.tx(TableName("missing"), "p", store.Op{Kind: store.Upsert, RK: "r"})
	e.wantErr(err, store.ErrTableNotFound, "Transact in a missing table")
}
