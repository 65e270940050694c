package storetest

import (
	"fmt"
	"slices"
	"testing"

	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/store"
)

// A RowKey that is a prefix of another must not leak into the other's range
// (SPEC §4: the histories of "a" and "a:b").
func testPrefixRanges(t *testing.T, e *env) {
	name := e.table()
	keys := []string{"a", "a:", "a:b", "a:b:c", "a:c", "a;", "ab", "b"}
	for _, pk := range []string{"p", "q"} {
		e.fill(name, pk, keys, func(int) edm.Entity { return nil })
	}
	cases := []struct {
		from, to string
		want     []string
	}{
		{"a:", "a;", []string{"a:", "a:b", "a:b:c", "a:c"}},
		{"a", "a:", []string{"a"}},
		{"a:b", "a:c", []string{"a:b", "a:b:c"}},
		{"a:b:", "a:b;", []string{"a:b:c"}},
		{"", "a:", []string{"a"}},
		{"ab", "", []string{"ab", "b"}},
		{"a;", "a;", nil},
		{"b", "a", nil},
		{"", "", keys},
	}
	for _, c := range cases {
		for _, limit := range []int{0, 1} {
			got := keysOf(e.all(name, store.Query{PK: "p", From: c.from, To: c.to, Limit: limit}))
			if !slices.Equal(got, c.want) {
				t.Errorf("partition p, [%q, %q), limit %d: got %q, want %q", c.from, c.to, limit, got, c.want)
			}
		}
		// Across the table the bounds apply within every partition.
		var want []string
		for _, pk := range []string{"p", "q"} {
			for _, rk := range c.want {
				want = append(want, pk+"/"+rk)
			}
		}
		var all []string
		for _, ent := range e.all(name, store.Query{AllPartitions: true, From: c.from, To: c.to, Limit: 2}) {
			all = append(all, ent.PK+"/"+ent.RK)
		}
		if !slices.Equal(all, want) {
			t.Errorf("whole table, [%q, %q): got %q, want %q", c.from, c.to, all, want)
		}
	}
}

func testQueryPartitionBounds(t *testing.T, e *env) {
	name := e.table()
	rks := rowKeys("k", 50)
	for _, pk := range []string{"a", "b", "c"} {
		e.fill(name, pk, rks, func(i int) edm.Entity { return edm.Entity{"i": edm.Int32(int32(i))} })
	}
	for _, limit := range []int{0, 1, 2, 7, 50} {
		got := e.all(name, store.Query{PK: "b", From: rks[10], To: rks[40], Limit: limit})
		if !slices.Equal(keysOf(got), rks[10:40]) {
			t.Fatalf("limit %d: got %q, want %q", limit, keysOf(got), rks[10:40])
		}
		for _, ent := range got {
			if ent.PK != "b" {
				t.Fatalf("limit %d: row of partition %q in a query of b", limit, ent.PK)
			}
		}
	}
	// A continuation token resumes where its page ended, with the same query.
	q := store.Query{PK: "b", From: rks[5], Limit: 3}
	p1, err := e.page(name, q)
	if err != nil || len(p1.Entities) != 3 || p1.Continuation == "" {
		t.Fatalf("first page: %d entities, continuation %q, err %v", len(p1.Entities), p1.Continuation, err)
	}
	q.Continuation = p1.Continuation
	p2, err := e.page(name, q)
	if err != nil {
		t.Fatalf("second page: %v", err)
	}
	if got := keysOf(p2.Entities); !slices.Equal(got, rks[8:11]) {
		t.Fatalf("second page: %q, want %q", got, rks[8:11])
	}
	// Repeating a page's query gives the same page.
	again, err := e.page(name, q)
	if err != nil || !slices.Equal(keysOf(again.Entities), keysOf(p2.Entities)) {
		t.Fatalf("repeated page differs: %q, err %v", keysOf(again.Entities), err)
	}
}

func testQueryWholeTable(t *testing.T, e *env) {
	name := e.table()
	pks := []string{"b", "a", "a:", "c", "ab"}
	var want []string
	for _, pk := range pks {
		e.fill(name, pk, rowKeys("r", 30), func(int) edm.Entity { return nil })
	}
	sorted := slices.Clone(pks)
	sortKeys(sorted)
	for _, pk := range sorted {
		for _, rk := range rowKeys("r", 30) {
			want = append(want, pk+"/"+rk)
		}
	}
	for _, limit := range []int{0, 1, 29, 31, 1000} {
		var got []string
		for _, ent := range e.all(name, store.Query{AllPartitions: true, Limit: limit}) {
			got = append(got, ent.PK+"/"+ent.RK)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("limit %d: %d rows, want %d in (pk, rk) order", limit, len(got), len(want))
		}
	}
}

func testQueryErrors(t *testing.T, e *env) {
	name := e.table()
	e.fill(name, "p", rowKeys("r", 5), func(int) edm.Entity { return nil })
	_, err := e.s.Query(e.ctx, name, store.Query{AllPartitions: true, Limit: -1})
	e.wantErr(err, store.ErrInvalid, "negative limit")
	_, err = e.s.Query(e.ctx, name, store.Query{AllPartitions: true, Continuation: "this is not a token"})
	e.wantErr(err, store.ErrInvalid, "a continuation token the store did not issue")
	_, err = e.s.Query(e.ctx, name, store.Query{AllPartitions: true, Filter: []store.Cond{{Prop: "x", Cmp: 0, Value: edm.Int32(1)}}})
	e.wantErr(err, store.ErrInvalid, "unknown comparison")
	// A limit beyond the page size is capped, not refused.
	p, err := e.page(name, store.Query{AllPartitions: true, Limit: 5000})
	if err != nil || len(p.Entities) != 5 {
		t.Fatalf("limit 5000: %d entities, err %v", len(p.Entities), err)
	}
}

func testFilter(t *testing.T, e *env) {
	name := e.table()
	const n = 30
	rks := rowKeys("r", n+2)
	props := func(i int) edm.Entity {
		switch i {
		case n: // lacks every filtered property
			return edm.Entity{"other": edm.Int64(5)}
		case n + 1: // the same names with other types
			return edm.Entity{"n": edm.Int32(5), "s": edm.Int64(5), "b": edm.String("true")}
		}
		return edm.Entity{
			"n": edm.Int64(int64(i) - 10), // -10..19
			"s": edm.String(fmt.Sprintf("s%02d", i)),
			"b": edm.Bool(i%3 == 0),
		}
	}
	e.fill(name, "p", rks, props)
	e.fill(name, "q", rks, props)

	type pred func(i int) bool
	cases := []struct {
		what  string
		conds []store.Cond
		want  pred
	}{
		{"n eq 5L", []store.Cond{{Prop: "n", Cmp: store.Eq, Value: edm.Int64(5)}}, func(i int) bool { return i == 15 }},
		{"n ne 5L", []store.Cond{{Prop: "n", Cmp: store.Ne, Value: edm.Int64(5)}}, func(i int) bool { return i != 15 && i < n }},
		{"n lt 0L", []store.Cond{{Prop: "n", Cmp: store.Lt, Value: edm.Int64(0)}}, func(i int) bool { return i < 10 }},
		{"n le 0L", []store.Cond{{Prop: "n", Cmp: store.Le, Value: edm.Int64(0)}}, func(i int) bool { return i <= 10 }},
		{"n gt 15L", []store.Cond{{Prop: "n", Cmp: store.Gt, Value: edm.Int64(15)}}, func(i int) bool { return i > 25 && i < n }},
		{"n ge -10L and n lt -8L", []store.Cond{{Prop: "n", Cmp: store.Ge, Value: edm.Int64(-10)}, {Prop: "n", Cmp: store.Lt, Value: edm.Int64(-8)}}, func(i int) bool { return i < 2 }},
		{"n eq 5 (Int32)", []store.Cond{{Prop: "n", Cmp: store.Eq, Value: edm.Int32(5)}}, func(i int) bool { return i == n+1 }},
		{"s eq 's07'", []store.Cond{{Prop: "s", Cmp: store.Eq, Value: edm.String("s07")}}, func(i int) bool { return i == 7 }},
		{"s ge 's25'", []store.Cond{{Prop: "s", Cmp: store.Ge, Value: edm.String("s25")}}, func(i int) bool { return i >= 25 && i < n }},
		{"s lt 'S'", []store.Cond{{Prop: "s", Cmp: store.Lt, Value: edm.String("S")}}, func(int) bool { return false }},
		{"b eq true", []store.Cond{{Prop: "b", Cmp: store.Eq, Value: edm.Bool(true)}}, func(i int) bool { return i%3 == 0 && i < n }},
		{"b ne true", []store.Cond{{Prop: "b", Cmp: store.Ne, Value: edm.Bool(true)}}, func(i int) bool { return i%3 != 0 && i < n }},
		{"b eq true and n ge 0L and s le 's20'", []store.Cond{
			{Prop: "b", Cmp: store.Eq, Value: edm.Bool(true)},
			{Prop: "n", Cmp: store.Ge, Value: edm.Int64(0)},
			{Prop: "s", Cmp: store.Le, Value: edm.String("s20")},
		}, func(i int) bool { return i%3 == 0 && i >= 10 && i <= 20 }},
		{"missing ne 1L", []store.Cond{{Prop: "missing", Cmp: store.Ne, Value: edm.Int64(1)}}, func(int) bool { return false }},
	}
	for _, c := range cases {
		var want []string
		for i, rk := range rks {
			if c.want(i) {
				want = append(want, rk)
			}
		}
		for _, limit := range []int{0, 1, 4} {
			got := keysOf(e.all(name, store.Query{PK: "p", Filter: c.conds, Limit: limit}))
			if !slices.Equal(got, want) {
				t.Fatalf("%s, limit %d: got %q, want %q", c.what, limit, got, want)
			}
		}
		if got := e.all(name, store.Query{AllPartitions: true, Filter: c.conds, Limit: 3}); len(got) != 2*len(want) {
			t.Fatalf("%s over the table: %d rows, want %d", c.what, len(got), 2*len(want))
		}
	}
}

// A filter that matches one row deep in the range: following the
// continuations (through empty pages, on a store that pages like Azure)
// finds it, and nothing after it.
func testFilterDeepMatch(t *testing.T, e *env) {
	name := e.table()
	rks := rowKeys("r", 1250)
	hits := map[int]bool{1249: true}
	e.fill(name, "p", rks, func(i int) edm.Entity { return edm.Entity{"hit": edm.Bool(hits[i])} })
	hit := []store.Cond{{Prop: "hit", Cmp: store.Eq, Value: edm.Bool(true)}}

	for _, q := range []store.Query{{PK: "p", Filter: hit, Limit: 1}, {AllPartitions: true, Filter: hit, Limit: 1}, {PK: "p", Filter: hit}} {
		p, err := e.page(name, q)
		if err != nil {
			t.Fatalf("Query: %v", err)
		}
		if got := keysOf(p.Entities); !slices.Equal(got, []string{rks[1249]}) {
			t.Fatalf("first entity of %+v: %q, want the deep match %s", q, got, rks[1249])
		}
		if p.Continuation != "" {
			q.Continuation = p.Continuation
			if rest := e.all(name, q); len(rest) != 0 {
				t.Fatalf("after the only match: %q", keysOf(rest))
			}
		}
		q.Continuation = ""
		if got, ok, err := store.First(e.ctx, e.s, name, q); err != nil || !ok || got.RK != rks[1249] {
			t.Fatalf("store.First(%+v) = %q %v %v", q, got.RK, ok, err)
		}
	}

	// No match at all: no entity, and the end.
	none := []store.Cond{{Prop: "hit", Cmp: store.Eq, Value: edm.String("true")}}
	if got := e.all(name, store.Query{PK: "p", Filter: none, Limit: 1}); len(got) != 0 {
		t.Fatalf("no match: %q", keysOf(got))
	}
	if _, ok, err := store.First(e.ctx, e.s, name, store.Query{PK: "p", Filter: none, Limit: 1}); ok || err != nil {
		t.Fatalf("store.First of no match: %v %v", ok, err)
	}

	// Scattered matches, two per page.
	e.fill(name, "p", []string{rks[3], rks[600], rks[1100]}, func(int) edm.Entity { return edm.Entity{"hit": edm.Bool(true)} })
	got := keysOf(e.all(name, store.Query{PK: "p", Filter: hit, Limit: 2}))
	if want := []string{rks[3], rks[600], rks[1100], rks[1249]}; !slices.Equal(got, want) {
		t.Fatalf("scattered matches: %q, want %q", got, want)
	}
}

// More than 1,000 entities, read in pages: none missing, none twice.
func testPaging(t *testing.T, e *env) {
	name := e.table()
	const parts, per = 3, 900
	for p := range parts {
		e.fill(name, fmt.Sprintf("p%d", p), rowKeys("r", per), func(i int) edm.Entity {
			return edm.Entity{"i": edm.Int32(int32(i))}
		})
	}
	for _, limit := range []int{0, 1000, 333, 1} {
		if limit == 1 {
			got := e.all(name, store.Query{PK: "p1", From: rowKeys("r", per)[per-20], Limit: limit})
			if len(got) != 20 {
				t.Fatalf("limit 1: %d rows, want 20", len(got))
			}
			continue
		}
		got := e.all(name, store.Query{AllPartitions: true, Limit: limit}) // checks order and no repeats
		if len(got) != parts*per {
			t.Fatalf("limit %d: %d rows, want %d", limit, len(got), parts*per)
		}
		seen := make(map[string]bool, len(got))
		for _, ent := range got {
			seen[ent.PK+"/"+ent.RK] = true
		}
		for p := range parts {
			for _, rk := range rowKeys("r", per) {
				if k := fmt.Sprintf("p%d/%s", p, rk); !seen[k] {
					t.Fatalf("limit %d: row %s missing", limit, k)
				}
			}
		}
		inPart := e.all(name, store.Query{PK: "p2", Limit: limit})
		if len(inPart) != per {
			t.Fatalf("limit %d, partition p2: %d rows, want %d", limit, len(inPart), per)
		}
	}
	// store.All follows continuation for the caller.
	n := 0
	err := store.All(e.ctx, e.s, name, store.Query{AllPartitions: true, Limit: 500}, func(store.Entity) error { n++; return nil })
	if err != nil || n != parts*per {
		t.Fatalf("store.All: %d rows, err %v", n, err)
	}
}

// testLeast: store.Least finds the entity with the least key of a range,
// through pages in any order (also through Shuffle with Scatter, where a
// page of one row is any row of the range), and nothing in an empty range.
func testLeast(t *testing.T, e *env) {
	name := e.table()
	rks := rowKeys("r", 250)
	e.fill(name, "p", rks, func(int) edm.Entity { return nil })
	for _, s := range []store.Store{e.s, &Shuffle{Store: e.s, Seed: 1, Scatter: true}} {
		leastOf(t, e, s, name, rks)
	}
	_, _, err := store.Least(e.ctx, e.s, name, store.Query{AllPartitions: true})
	e.wantErr(err, store.ErrInvalid, "Least of every partition")
}

func leastOf(t *testing.T, e *env, s store.Store, name string, rks []string) {
	for _, r := range []struct{ from, to, want string }{
		{"", "", rks[0]}, {rks[17], "", rks[17]}, {rks[17] + " ", rks[200], rks[18]}, {rks[249], "s", rks[249]}, {"s", "", ""}, {"a", rks[0], ""},
	} {
		got, ok, err := store.Least(e.ctx, s, name, store.Query{PK: "p", From: r.from, To: r.to, Limit: 7})
		if err != nil || ok != (r.want != "") || got.RK != r.want {
			t.Fatalf("%T: Least of [%q, %q): %q %v %v, want %q", s, r.from, r.to, got.RK, ok, err, r.want)
		}
	}
}
