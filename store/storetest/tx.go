package storetest

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/store"
)

// A transaction in which one op fails writes nothing, wherever the failing
// op is and whatever the failure. Azurite had rollback bugs here
// (Azure/Azurite#1216, #1228, #1230); the suite proves rollback by comparing
// the whole table, etags included, before and after.
func testRollback(t *testing.T, e *env) {
	name := e.table()
	const n = 10
	rks := rowKeys("r", n)
	e.fill(name, "p", rks, func(i int) edm.Entity { return edm.Entity{"v": edm.Int32(0), "w": edm.Int32(0)} })
	first := e.snapshot(name)
	e.fill(name, "p", rks, func(i int) edm.Entity { return edm.Entity{"v": edm.Int32(1), "w": edm.Int32(1)} })
	current := e.snapshot(name)

	// Ten ops of every kind that would all succeed.
	good := func() []store.Op {
		ops := make([]store.Op, n)
		for i, rk := range rks {
			switch i % 5 {
			case 0:
				ops[i] = store.Op{Kind: store.Replace, RK: rk, Props: edm.Entity{"v": edm.Int32(2)}, IfMatch: current["p/"+rk].ETag}
			case 1:
				ops[i] = store.Op{Kind: store.Merge, RK: rk, Props: edm.Entity{"x": edm.Int32(2)}}
			case 2:
				ops[i] = store.Op{Kind: store.Delete, RK: rk}
			case 3:
				ops[i] = store.Op{Kind: store.Upsert, RK: "new" + rk, Props: edm.Entity{"v": edm.Int32(2)}}
			case 4:
				ops[i] = store.Op{Kind: store.UpsertMerge, RK: rk, Props: edm.Entity{"y": edm.Int32(2)}}
			}
		}
		return ops
	}
	// Each failure replaces the op at some position, on that op's row.
	failures := []struct {
		what string
		op   func(rk string) store.Op
		err  error
	}{
		{"insert of an existing row", func(rk string) store.Op { return store.Op{Kind: store.Insert, RK: rk} }, store.ErrExists},
		{"replace of a missing row", func(rk string) store.Op { return store.Op{Kind: store.Replace, RK: "missing" + rk} }, store.ErrNotFound},
		{"delete of a missing row", func(rk string) store.Op { return store.Op{Kind: store.Delete, RK: "missing" + rk} }, store.ErrNotFound},
		{"merge with a stale etag", func(rk string) store.Op {
			return store.Op{Kind: store.Merge, RK: rk, Props: edm.Entity{"z": edm.Int32(3)}, IfMatch: first["p/"+rk].ETag}
		}, store.ErrPrecondition},
		{"delete with a stale etag", func(rk string) store.Op {
			return store.Op{Kind: store.Delete, RK: rk, IfMatch: first["p/"+rk].ETag}
		}, store.ErrPrecondition},
	}
	for _, pos := range []int{0, n / 2, n - 1} {
		for _, f := range failures {
			what := fmt.Sprintf("%s at op %d", f.what, pos)
			ops := good()
			ops[pos] = f.op(rks[pos])
			e.wantTxErr(e.tx(name, "p", ops...), f.err, pos, ops[pos].RK, what)
			e.sameSnapshot(current, e.snapshot(name), "after a failed transaction ("+what+")")
		}
	}
	// The same ops without the failure apply, all of them.
	e.mustTx(name, "p", good()...)
	after := e.snapshot(name)
	if _, ok := after["p/"+rks[2]]; ok {
		t.Fatal("delete of the good transaction did not apply")
	}
	if _, ok := after["p/new"+rks[3]]; !ok {
		t.Fatal("upsert of the good transaction did not apply")
	}
	e.wantProps(edm.Entity{"v": edm.Int32(2)}, after["p/"+rks[0]].Props, "replace of the good transaction")
	e.wantProps(edm.Entity{"v": edm.Int32(1), "w": edm.Int32(1), "y": edm.Int32(2)}, after["p/"+rks[4]].Props, "upsertMerge of the good transaction")
}

func testOpCountLimit(t *testing.T, e *env) {
	name := e.table()
	ops := func(n int) []store.Op {
		out := make([]store.Op, n)
		for i := range out {
			out[i] = store.Op{Kind: store.Upsert, RK: fmt.Sprintf("r%03d", i), Props: edm.Entity{"i": edm.Int32(int32(i))}}
		}
		return out
	}
	e.wantErr(e.tx(name, "p", ops(store.MaxOps+1)...), store.ErrTooLarge, "101 ops")
	if got := e.all(name, store.Query{AllPartitions: true}); len(got) != 0 {
		t.Fatalf("a refused transaction wrote %d rows", len(got))
	}
	e.mustTx(name, "p", ops(store.MaxOps)...)
	if got := e.all(name, store.Query{AllPartitions: true}); len(got) != store.MaxOps {
		t.Fatalf("100 ops wrote %d rows", len(got))
	}
	e.wantErr(e.tx(name, "p"), store.ErrInvalid, "an empty transaction")
}

// bigEntity returns n binary properties of 64 KiB: 15 of them are just
// under the 1 MiB entity limit, 16 over it.
func bigEntity(n int, seed byte) edm.Entity {
	ent := edm.Entity{}
	for i := range n {
		b := make([]byte, 64<<10)
		for j := range b {
			b[j] = byte(j) ^ seed ^ byte(i)
		}
		ent[fmt.Sprintf("bin%02d", i)] = edm.Binary(b)
	}
	return ent
}

func testTxBytesLimit(t *testing.T, e *env) {
	name := e.table()
	// Five entities of ~0.94 MiB: over 4 MiB together.
	var ops []store.Op
	for i := range 5 {
		ops = append(ops, store.Op{Kind: store.Insert, RK: fmt.Sprintf("r%d", i), Props: bigEntity(15, byte(i))})
	}
	e.wantErr(e.tx(name, "p", ops...), store.ErrTooLarge, "a transaction over 4 MiB")
	if got := e.all(name, store.Query{AllPartitions: true}); len(got) != 0 {
		t.Fatalf("a refused transaction wrote %d rows", len(got))
	}
	// Just under 4 MiB of strings (counted as UTF-16) in 100 ops applies.
	ops = ops[:0]
	text := strings.Repeat("x", 20000)
	for i := range store.MaxOps {
		ops = append(ops, store.Op{Kind: store.Insert, RK: fmt.Sprintf("s%03d", i), Props: edm.Entity{"text": edm.String(text)}})
	}
	total := 0
	for _, op := range ops {
		total += edm.EntitySize("p", op.RK, op.Props)
	}
	if total > store.MaxTxBytes || total < store.MaxTxBytes*9/10 {
		t.Fatalf("test bug: transaction of %d bytes", total)
	}
	e.mustTx(name, "p", ops...)
	if got := e.all(name, store.Query{AllPartitions: true}); len(got) != store.MaxOps {
		t.Fatalf("got %d rows, want %d", len(got), store.MaxOps)
	}
}

func testEntityBytesLimit(t *testing.T, e *env) {
	name := e.table()
	want := bigEntity(15, 1)
	if n := edm.EntitySize("p", "big", want); n > store.MaxEntityBytes || n < store.MaxEntityBytes*9/10 {
		t.Fatalf("test bug: entity of %d bytes", n)
	}
	e.mustTx(name, "p", store.Op{Kind: store.Insert, RK: "big", Props: want})
	e.wantProps(want, e.get(name, "p", "big").Props, "an entity just under 1 MiB")

	// Every write kind takes it, alone and beside other ops; the projector
	// writes a row and its version rows in one transaction.
	near := want
	if e.q.EntityLimitOnWire {
		near = bigEntity(11, 3)
	}
	for i, kind := range []store.OpKind{store.Insert, store.Upsert, store.UpsertMerge, store.Replace, store.Merge} {
		rk := fmt.Sprintf("kind%d", i)
		if kind == store.Replace || kind == store.Merge {
			e.mustTx(name, "p", store.Op{Kind: store.Insert, RK: rk, Props: edm.Entity{"bin00": edm.Int32(0)}})
		}
		e.mustTx(name, "p", store.Op{Kind: kind, RK: rk, Props: near}, store.Op{Kind: store.Upsert, RK: rk + "small"})
		e.wantProps(near, e.get(name, "p", rk).Props, kind.String()+" of an entity just under 1 MiB")
	}

	err := e.tx(name, "p",
		store.Op{Kind: store.Insert, RK: "ok", Props: edm.Entity{"a": edm.Int32(1)}},
		store.Op{Kind: store.Insert, RK: "over", Props: bigEntity(16, 2)})
	e.wantTxErr(err, store.ErrTooLarge, 1, "over", "an entity over 1 MiB")
	_, err = e.s.Get(e.ctx, name, "p", "ok")
	e.wantErr(err, store.ErrNotFound, "the other op of a refused transaction")

	// A Binary over 64 KiB, and a String over 64 KiB of UTF-16.
	err = e.tx(name, "p", store.Op{Kind: store.Upsert, RK: "v", Props: edm.Entity{"b": edm.Binary(make([]byte, 64<<10+1))}})
	e.wantTxErr(err, store.ErrTooLarge, 0, "v", "a binary over 64 KiB")
	err = e.tx(name, "p", store.Op{Kind: store.Upsert, RK: "v", Props: edm.Entity{"s": edm.String(strings.Repeat("é", 32<<10+1))}})
	e.wantTxErr(err, store.ErrTooLarge, 0, "v", "a string over 64 KiB")

	// A Merge that grows the row beyond 1 MiB.
	if !e.q.MergeLimitsUnchecked {
		err = e.tx(name, "p", store.Op{Kind: store.Merge, RK: "big", Props: edm.Entity{"more": edm.Binary(make([]byte, 64<<10))}})
		e.wantTxErr(err, store.ErrTooLarge, 0, "big", "a Merge beyond 1 MiB")
		e.wantProps(want, e.get(name, "p", "big").Props, "the row after a refused Merge")
	}
}

func manyProps(n int, prefix string) edm.Entity {
	ent := make(edm.Entity, n)
	for i := range n {
		ent[fmt.Sprintf("%s%03d", prefix, i)] = edm.Int32(int32(i))
	}
	return ent
}

func testPropertyCountLimit(t *testing.T, e *env) {
	name := e.table()
	want := manyProps(store.MaxProperties, "p")
	e.mustTx(name, "p", store.Op{Kind: store.Insert, RK: "max", Props: want})
	e.wantProps(want, e.get(name, "p", "max").Props, "252 properties")

	err := e.tx(name, "p", store.Op{Kind: store.Insert, RK: "over", Props: manyProps(store.MaxProperties+1, "p")})
	e.wantTxErr(err, store.ErrTooLarge, 0, "over", "253 properties")
	_, err = e.s.Get(e.ctx, name, "p", "over")
	e.wantErr(err, store.ErrNotFound, "Get of a refused row")
}

func testMergedPropertyCountLimit(t *testing.T, e *env) {
	if e.q.MergeLimitsUnchecked {
		t.Skip("Quirks.MergeLimitsUnchecked")
	}
	name := e.table()
	e.mustTx(name, "p", store.Op{Kind: store.Insert, RK: "r", Props: manyProps(200, "a")})
	for _, kind := range []store.OpKind{store.Merge, store.UpsertMerge} {
		err := e.tx(name, "p", store.Op{Kind: kind, RK: "r", Props: manyProps(53, "b")})
		e.wantTxErr(err, store.ErrTooLarge, 0, "r", kind.String()+" to 253 properties")
	}
	e.mustTx(name, "p", store.Op{Kind: store.Merge, RK: "r", Props: manyProps(52, "b")})
	if got := e.get(name, "p", "r"); len(got.Props) != store.MaxProperties {
		t.Fatalf("merged row has %d properties, want %d", len(got.Props), store.MaxProperties)
	}
}

func testInvalidTx(t *testing.T, e *env) {
	name := e.table()
	ok := edm.Entity{"a": edm.Int32(1)}
	cases := []struct {
		what string
		pk   string
		ops  []store.Op
		bad  int // index of the bad op, -1 if the whole transaction is
	}{
		{"the same row twice", "p", []store.Op{{Kind: store.Upsert, RK: "a", Props: ok}, {Kind: store.Upsert, RK: "b", Props: ok}, {Kind: store.Delete, RK: "a"}}, 2},
		{"an unknown op kind", "p", []store.Op{{Kind: 0, RK: "a"}}, 0},
		{"an etag on Insert", "p", []store.Op{{Kind: store.Insert, RK: "a", IfMatch: `W/"x"`}}, 0},
		{"a property name starting with a digit", "p", []store.Op{{Kind: store.Upsert, RK: "a", Props: edm.Entity{"1a": edm.Int32(1)}}}, 0},
		{"a property name with a dash", "p", []store.Op{{Kind: store.Upsert, RK: "a", Props: edm.Entity{"a-b": edm.Int32(1)}}}, 0},
		{"an empty property name", "p", []store.Op{{Kind: store.Upsert, RK: "a", Props: edm.Entity{"": edm.Int32(1)}}}, 0},
		{"a 256-character property name", "p", []store.Op{{Kind: store.Upsert, RK: "a", Props: edm.Entity{strings.Repeat("n", 256): edm.Int32(1)}}}, 0},
		{"the property name RowKey", "p", []store.Op{{Kind: store.Upsert, RK: "a", Props: edm.Entity{"RowKey": edm.String("x")}}}, 0},
		{"an Int32 out of range", "p", []store.Op{{Kind: store.Upsert, RK: "a", Props: edm.Entity{"n": {Type: edm.TypeInt32, Int: 1 << 31}}}}, 0},
		{"a malformed Guid", "p", []store.Op{{Kind: store.Upsert, RK: "a", Props: edm.Entity{"g": {Type: edm.TypeGuid, Str: "not-a-guid"}}}}, 0},
		{"a DateTime before 1601", "p", []store.Op{{Kind: store.Upsert, RK: "a", Props: edm.Entity{"d": {Type: edm.TypeDateTime}}}}, 0},
		{"a string that is not UTF-8", "p", []store.Op{{Kind: store.Upsert, RK: "a", Props: edm.Entity{"s": edm.String("\xff")}}}, 0},
		{"an unknown type", "p", []store.Op{{Kind: store.Upsert, RK: "a", Props: edm.Entity{"x": {Type: 42}}}}, 0},
		{"a partition key with a slash", "a/b", []store.Op{{Kind: store.Upsert, RK: "a"}}, -1},
	}
	for _, bad := range []string{"a/b", `a\b`, "a#b", "a?b", "a\tb", "a\nb", "\x00", "a\x7fb", "a\u0085b", "a\u009fb", "\xff"} {
		cases = append(cases, struct {
			what string
			pk   string
			ops  []store.Op
			bad  int
		}{fmt.Sprintf("row key %+q", bad), "p", []store.Op{{Kind: store.Upsert, RK: "ok", Props: ok}, {Kind: store.Upsert, RK: bad}}, 1})
	}
	for _, c := range cases {
		err := e.tx(name, c.pk, c.ops...)
		if c.bad >= 0 {
			e.wantTxErr(err, store.ErrInvalid, c.bad, c.ops[c.bad].RK, c.what)
		} else {
			e.wantErr(err, store.ErrInvalid, c.what)
		}
	}
	if got := e.all(name, store.Query{AllPartitions: true}); len(got) != 0 {
		t.Fatalf("refused transactions wrote %d rows", len(got))
	}
}

// Keys may be 1 KiB of UTF-16: 512 code units, 256 characters above U+FFFF.
func testKeyLimits(t *testing.T, e *env) {
	name := e.table()
	long := strings.Repeat("k", store.MaxKeyUTF16)
	wide := strings.Repeat("\U0001F600", store.MaxKeyUTF16/2)
	for _, k := range []string{long, wide, strings.Repeat("é", store.MaxKeyUTF16)} {
		e.mustTx(name, k, store.Op{Kind: store.Insert, RK: k, Props: edm.Entity{"a": edm.Int32(1)}})
		e.get(name, k, k)
	}
	for _, k := range []string{long + "k", wide + "k", strings.Repeat("日", store.MaxKeyUTF16+1)} {
		e.wantTxErr(e.tx(name, "p", store.Op{Kind: store.Insert, RK: k}), store.ErrTooLarge, 0, k, "a row key over 1 KiB")
		e.wantErr(e.tx(name, k, store.Op{Kind: store.Insert, RK: "r"}), store.ErrTooLarge, "a partition key over 1 KiB")
	}
}

func testConcurrentPartitions(t *testing.T, e *env) {
	name := e.table()
	const workers, txs, per = 8, 10, 10
	var wg sync.WaitGroup
	errs := make(chan error, workers*txs)
	for w := range workers {
		wg.Go(func() {
			pk := fmt.Sprintf("w%d", w)
			for x := range txs {
				ops := make([]store.Op, per)
				for i := range ops {
					ops[i] = store.Op{Kind: store.Insert, RK: fmt.Sprintf("r%02d-%02d", x, i), Props: edm.Entity{"w": edm.Int32(int32(w))}}
				}
				if _, err := e.s.Transact(e.ctx, name, pk, ops); err != nil {
					errs <- fmt.Errorf("worker %d tx %d: %w", w, x, err)
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if got := e.all(name, store.Query{AllPartitions: true}); len(got) != workers*txs*per {
		t.Fatalf("%d rows, want %d", len(got), workers*txs*per)
	}
}

// Writers racing with one etag: exactly one wins.
func testConcurrentConditionalWrites(t *testing.T, e *env) {
	name := e.table()
	e.mustTx(name, "p", store.Op{Kind: store.Insert, RK: "r", Props: edm.Entity{"winner": edm.Int32(-1)}})
	etag := e.get(name, "p", "r").ETag
	const n = 8
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			_, errs[i] = e.s.Transact(e.ctx, name, "p", []store.Op{{Kind: store.Replace, RK: "r", Props: edm.Entity{"winner": edm.Int32(int32(i))}, IfMatch: etag}})
		})
	}
	wg.Wait()
	winner := -1
	for i, err := range errs {
		switch {
		case err == nil:
			if winner >= 0 {
				t.Fatalf("writers %d and %d both won", winner, i)
			}
			winner = i
		case !errors.Is(err, store.ErrPrecondition):
			t.Fatalf("writer %d: %v, want nil or ErrPrecondition", i, err)
		}
	}
	if winner < 0 {
		t.Fatal("no writer won")
	}
	if got := e.get(name, "p", "r").Props["winner"].Int; got != int64(winner) {
		t.Fatalf("row holds writer %d, but writer %d won", got, winner)
	}
}

func testCanceledContext(t *testing.T, e *env) {
	name := e.table()
	ctx, cancel := context.WithCancel(e.ctx)
	cancel()
	if _, err := e.s.Transact(ctx, name, "p", []store.Op{{Kind: store.Insert, RK: "r"}}); err == nil {
		t.Fatal("Transact with a canceled context succeeded")
	}
	if _, err := e.s.Get(ctx, name, "p", "r"); err == nil {
		t.Fatal("Get with a canceled context succeeded")
	}
	if got := e.all(name, store.Query{AllPartitions: true}); len(got) != 0 {
		t.Fatalf("a canceled transaction wrote %d rows", len(got))
	}
}

// testTransactETags: every backend reports the etag of each entity a
// transaction writes (store.Store.Transact), as Azure's $batch response
// does, so a writer can make its next write conditional without reading
// back; the etags are those the entities then have, a delete reports none,
// and a reported etag is good for the next conditional write.
func testTransactETags(t *testing.T, e *env) {
	table := e.table()
	e.mustTx(table, "it's",
		store.Op{Kind: store.Insert, RK: "b", Props: edm.Entity{}},
		store.Op{Kind: store.Insert, RK: "c", Props: edm.Entity{}},
		store.Op{Kind: store.Insert, RK: "f", Props: edm.Entity{}})
	ops := []store.Op{
		{Kind: store.Insert, RK: "a", Props: edm.Entity{"x": edm.Int32(1)}},
		{Kind: store.Replace, RK: "b", Props: edm.Entity{"x": edm.Int32(2)}},
		{Kind: store.Delete, RK: "c"},
		{Kind: store.Upsert, RK: "d", Props: edm.Entity{}},
		{Kind: store.UpsertMerge, RK: "e", Props: edm.Entity{}},
		{Kind: store.Merge, RK: "f", Props: edm.Entity{"y": edm.Bool(true)}},
	}
	etags, err := e.s.Transact(e.ctx, table, "it's", ops)
	if err != nil || len(etags) != len(ops) {
		t.Fatalf("Transact: %q, %v", etags, err)
	}
	checkETags(t, ops, etags)
	for i, op := range ops {
		if op.Kind == store.Delete {
			if etags[i] != "" {
				t.Errorf("delete of %s reported etag %q", op.RK, etags[i])
			}
			continue
		}
		got := e.get(table, "it's", op.RK)
		if got.ETag != etags[i] || got.ETag == "" {
			t.Errorf("%s %s: reported etag %q, stored %q", op.Kind, op.RK, etags[i], got.ETag)
		}
	}
	if err := e.tx(table, "it's", store.Op{Kind: store.Replace, RK: "a", Props: edm.Entity{}, IfMatch: etags[0]}); err != nil {
		t.Fatalf("replace on the reported etag: %v", err)
	}
	// A failed transaction reports nothing.
	if etags, err := e.s.Transact(e.ctx, table, "it's", []store.Op{{Kind: store.Insert, RK: "a", Props: edm.Entity{}}}); err == nil || etags != nil {
		t.Errorf("insert of an existing row: %q, %v; want an error and no etags", etags, err)
	}
}
