package storetest

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"strings"
	"testing"

	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/store"
)

// Quirks declares where a backend knowingly differs from Azure Tables. The
// zero value means none: the strict suite. Every field names the emulator
// issue that makes it necessary, so it can be removed once that is fixed.
type Quirks struct {
	// MergeLimitsUnchecked: a Merge whose result grows the row beyond 252
	// properties is accepted. Azure refuses it, but a backend cannot see
	// the merged row before sending the Merge, and Azurite does not cap the
	// number of properties at all (Azure/Azurite#1446).
	MergeLimitsUnchecked bool

	// TableNamesCaseSensitive: entity operations find a table only by the
	// case it was created in. Azure table names are case-insensitive;
	// Azurite made creation case-insensitive (Azure/Azurite#1355, fixed by
	// #1405) but its entity and batch handlers still look the table up by
	// its exact name and answer TableNotFound.
	TableNamesCaseSensitive bool

	// NegativeZeroLost: a Double -0 reads back as +0. Azurite keeps
	// entities as JavaScript values and serializes them with JSON.stringify,
	// which writes -0 as 0 (no Azurite issue filed; ECMA-262
	// Number::toString).
	NegativeZeroLost bool

	// EntityLimitOnWire: a write other than Insert is refused with
	// EntityTooLarge once the entity's JSON exceeds 1 MB, Binary counted as
	// base64, so about 0.75 MiB of binary is the most it can carry. Azure
	// counts Binary by its bytes (the entity-size formula of
	// edm.EntitySize). Observed with Azurite 3.37.0, whose Insert checks
	// the size as Azure does; no Azurite issue filed.
	EntityLimitOnWire bool

	// PagesUnordered: a page's rows come back in no particular order,
	// though pages follow each other in key order. Cosmos DB for Table
	// does not sort query results (MicrosoftDocs/azure-docs#19489); the
	// suite sorts each page before checking it, as store.All does. Shuffle
	// produces it on demand.
	PagesUnordered bool
}

// Run runs the conformance suite against the backend that newStore opens.
// newStore is called once per subtest and may return the same store each
// time; the backend closes it in t.Cleanup.
func Run(t *testing.T, newStore func(t *testing.T) store.Store, q Quirks) {
	tests := []struct {
		name string
		fn   func(t *testing.T, e *env)
	}{
		{"Tables", testTables},
		{"TableNamesCaseInsensitive", testTableNamesCaseInsensitive},
		{"TableNamesInvalid", testTableNamesInvalid},
		{"TableCreateRace", testTableCreateRace},
		{"DeleteTableDropsRows", testDeleteTableDropsRows},
		{"GetErrors", testGetErrors},
		{"TypesRoundTrip", testTypesRoundTrip},
		{"KeyOrder", testKeyOrder},
		{"PrefixRanges", testPrefixRanges},
		{"QueryPartitionBounds", testQueryPartitionBounds},
		{"QueryWholeTable", testQueryWholeTable},
		{"QueryErrors", testQueryErrors},
		{"Least", testLeast},
		{"Filter", testFilter},
		{"FilterDeepMatch", testFilterDeepMatch},
		{"Paging", testPaging},
		{"InsertExisting", testInsertExisting},
		{"MissingRow", testMissingRow},
		{"ETags", testETags},
		{"TransactETags", testTransactETags},
		{"MergeAndReplace", testMergeAndReplace},
		{"Upserts", testUpserts},
		{"Rollback", testRollback},
		{"OpCountLimit", testOpCountLimit},
		{"TxBytesLimit", testTxBytesLimit},
		{"EntityBytesLimit", testEntityBytesLimit},
		{"PropertyCountLimit", testPropertyCountLimit},
		{"MergedPropertyCountLimit", testMergedPropertyCountLimit},
		{"InvalidTx", testInvalidTx},
		{"KeyLimits", testKeyLimits},
		{"PartitionIsolation", testPartitionIsolation},
		{"EmptyPartitionKey", testEmptyPartitionKey},
		{"Partitions", testPartitions},
		{"ConcurrentPartitions", testConcurrentPartitions},
		{"ConcurrentConditionalWrites", testConcurrentConditionalWrites},
		{"CanceledContext", testCanceledContext},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tc.fn(t, &env{t: t, s: newStore(t), q: q, ctx: context.Background()})
		})
	}
}

// env is what a subtest works with: the store, the quirks and helpers that
// fail the test on unexpected errors.
type env struct {
	t   *testing.T
	s   store.Store
	q   Quirks
	ctx context.Context
}

// TableName returns a fresh valid table name: prefix plus a random suffix.
func TableName(prefix string) string {
	return fmt.Sprintf("%s%016x", prefix, rand.Uint64())
}

// table creates a fresh table and deletes it when the test ends.
func (e *env) table() string {
	e.t.Helper()
	name := TableName("st")
	if err := e.s.CreateTable(e.ctx, name); err != nil {
		e.t.Fatalf("CreateTable(%s): %v", name, err)
	}
	e.t.Cleanup(func() {
		err := e.s.DeleteTable(context.WithoutCancel(e.ctx), name)
		if err != nil && !errors.Is(err, store.ErrTableNotFound) {
			e.t.Errorf("cleanup: DeleteTable(%s): %v", name, err)
		}
	})
	return name
}

// tx runs a transaction and checks what every successful one returns: one
// etag per op, "" for a Delete and not for any other (testTransactETags
// checks they are the stored ones).
func (e *env) tx(table, pk string, ops ...store.Op) error {
	e.t.Helper()
	etags, err := e.s.Transact(e.ctx, table, pk, ops)
	if err != nil {
		if etags != nil {
			e.t.Errorf("a failed transaction returned etags %q", etags)
		}
		return err
	}
	checkETags(e.t, ops, etags)
	return nil
}

// checkETags checks the etags of a successful transaction of ops: one per
// op, "" for a Delete only.
func checkETags(t testing.TB, ops []store.Op, etags []string) {
	t.Helper()
	if len(etags) != len(ops) {
		t.Errorf("Transact of %d ops returned %d etags", len(ops), len(etags))
		return
	}
	for i, op := range ops {
		if (etags[i] == "") != (op.Kind == store.Delete) {
			t.Errorf("Transact: op %d (%s %q) returned etag %q", i, op.Kind, op.RK, etags[i])
		}
	}
}

func (e *env) mustTx(table, pk string, ops ...store.Op) {
	e.t.Helper()
	if err := e.tx(table, pk, ops...); err != nil {
		e.t.Fatalf("Transact(%s, %q): %v", table, pk, err)
	}
}

// fill upserts rows of one partition in transactions of at most 100.
func (e *env) fill(table, pk string, rks []string, props func(i int) edm.Entity) {
	e.t.Helper()
	for start := 0; start < len(rks); start += store.MaxOps {
		end := min(start+store.MaxOps, len(rks))
		ops := make([]store.Op, 0, end-start)
		for i := start; i < end; i++ {
			ops = append(ops, store.Op{Kind: store.Upsert, RK: rks[i], Props: props(i)})
		}
		e.mustTx(table, pk, ops...)
	}
}

func (e *env) get(table, pk, rk string) store.Entity {
	e.t.Helper()
	ent, err := e.s.Get(e.ctx, table, pk, rk)
	if err != nil {
		e.t.Fatalf("Get(%s, %q, %q): %v", table, pk, rk, err)
	}
	if ent.PK != pk || ent.RK != rk {
		e.t.Fatalf("Get(%s, %q, %q) returned keys (%q, %q)", table, pk, rk, ent.PK, ent.RK)
	}
	return ent
}

// page returns the first page of q that holds an entity, following
// continuation tokens through empty pages (a store that pages like Azure
// may answer one), or the last page when none does.
func (e *env) page(table string, q store.Query) (store.Page, error) {
	for pages := 0; ; pages++ {
		p, err := e.s.Query(e.ctx, table, q)
		if err != nil || len(p.Entities) > 0 || p.Continuation == "" {
			if e.q.PagesUnordered {
				store.SortEntities(p.Entities)
			}
			return p, err
		}
		if pages > 100000 {
			e.t.Fatal("query does not end")
		}
		q.Continuation = p.Continuation
	}
}

// all reads every entity q selects, checking that each page respects the
// limit and that keys strictly ascend. A page may be empty while the range
// goes on, as on Azure.
func (e *env) all(table string, q store.Query) []store.Entity {
	e.t.Helper()
	var out []store.Entity
	limit := store.PageSize(q.Limit)
	for pages := 0; ; pages++ {
		p, err := e.s.Query(e.ctx, table, q)
		if err != nil {
			e.t.Fatalf("Query(%s, %+v) page %d: %v", table, q, pages, err)
		}
		if len(p.Entities) > limit {
			e.t.Fatalf("page %d holds %d entities, limit %d", pages, len(p.Entities), limit)
		}
		if e.q.PagesUnordered {
			store.SortEntities(p.Entities)
		}
		out = append(out, p.Entities...)
		if p.Continuation == "" {
			break
		}
		if pages > 100000 {
			e.t.Fatal("query does not end")
		}
		q.Continuation = p.Continuation
	}
	for i := 1; i < len(out); i++ {
		if store.CompareEntities(out[i-1], out[i]) >= 0 {
			e.t.Fatalf("results out of order or repeated at %d: (%q, %q) then (%q, %q)",
				i, out[i-1].PK, out[i-1].RK, out[i].PK, out[i].RK)
		}
	}
	return out
}

// wantErr fails the test unless err wraps target.
func (e *env) wantErr(err, target error, what string) {
	e.t.Helper()
	if !errors.Is(err, target) {
		e.t.Fatalf("%s: err = %v, want %v", what, err, target)
	}
}

// wantTxErr fails the test unless err is a *TxError at index wrapping target.
func (e *env) wantTxErr(err, target error, index int, rk, what string) {
	e.t.Helper()
	e.wantErr(err, target, what)
	var te *store.TxError
	if !errors.As(err, &te) {
		e.t.Fatalf("%s: err = %v, want a *store.TxError", what, err)
	}
	if te.Index != index || te.RK != rk {
		e.t.Fatalf("%s: TxError names op %d (rk %q), want op %d (rk %q)", what, te.Index, te.RK, index, rk)
	}
}

// snapshot reads a whole table as a map from "pk/rk" to entity.
func (e *env) snapshot(table string) map[string]store.Entity {
	e.t.Helper()
	m := make(map[string]store.Entity)
	for _, ent := range e.all(table, store.Query{AllPartitions: true}) {
		m[ent.PK+"/"+ent.RK] = ent
	}
	return m
}

// sameSnapshot fails the test unless two snapshots hold the same rows with
// the same properties and etags.
func (e *env) sameSnapshot(want, got map[string]store.Entity, what string) {
	e.t.Helper()
	for k, w := range want {
		g, ok := got[k]
		switch {
		case !ok:
			e.t.Fatalf("%s: row %s vanished", what, k)
		case g.ETag != w.ETag:
			e.t.Fatalf("%s: row %s changed etag %s -> %s", what, k, w.ETag, g.ETag)
		case !sameEntity(w.Props, g.Props):
			e.t.Fatalf("%s: row %s changed:\n%s", what, k, diffProps(w.Props, g.Props))
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			e.t.Fatalf("%s: row %s appeared", what, k)
		}
	}
}

func (e *env) wantProps(want, got edm.Entity, what string) {
	e.t.Helper()
	if !sameEntity(want, got) {
		e.t.Fatalf("%s:\n%s", what, diffProps(want, got))
	}
}

// sameValue is Value.Equal, except that any two NaNs are equal: a NaN's
// payload does not survive every wire format.
func sameValue(a, b edm.Value) bool {
	if a.Type == edm.TypeDouble && b.Type == edm.TypeDouble && math.IsNaN(a.Float) && math.IsNaN(b.Float) {
		return true
	}
	return a.Equal(b)
}

func sameEntity(a, b edm.Entity) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		w, ok := b[k]
		if !ok || !sameValue(v, w) {
			return false
		}
	}
	return true
}

func diffProps(want, got edm.Entity) string {
	var lines []string
	for k, w := range want {
		g, ok := got[k]
		switch {
		case !ok:
			lines = append(lines, fmt.Sprintf("  %s: missing, want %s", k, short(w)))
		case !sameValue(w, g):
			lines = append(lines, fmt.Sprintf("  %s: got %s, want %s", k, short(g), short(w)))
		}
	}
	for k, g := range got {
		if _, ok := want[k]; !ok {
			lines = append(lines, fmt.Sprintf("  %s: unexpected %s", k, short(g)))
		}
	}
	sort.Strings(lines)
	return strings.Join(lines, "\n")
}

// short renders a value for a failure message, eliding long ones.
func short(v edm.Value) string {
	s := v.GoString()
	if len(s) > 80 {
		s = fmt.Sprintf("%s…(%d chars)", s[:60], len(s))
	}
	return s
}

func keysOf(ents []store.Entity) []string {
	out := make([]string, len(ents))
	for i, ent := range ents {
		out[i] = ent.RK
	}
	return out
}

func rowKeys(prefix string, n int) []string {
	rks := make([]string, n)
	for i := range rks {
		rks[i] = fmt.Sprintf("%s%05d", prefix, i)
	}
	return rks
}
