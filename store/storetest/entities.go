package storetest

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/store"
)

// EdgeEntity holds every EDM type at its edges: Int64 beyond 2^53 and
// negative, DateTime to 100 ns and at both ends of Azure's range, NaN, ±Inf
// and -0, empty and 64 KiB Binary, non-ASCII strings.
func EdgeEntity() edm.Entity {
	guid, err := edm.Guid("0f8fad5b-d9cb-469f-a165-70867728950e")
	if err != nil {
		panic(err)
	}
	bin := make([]byte, 64<<10)
	r := rand.New(rand.NewPCG(7, 7))
	for i := range bin {
		bin[i] = byte(r.Uint32())
	}
	return edm.Entity{
		"Str":        edm.String("héllo, 世界 \U0001F600 ü\tq\"'<&>\\ \uFF5E"),
		"StrEmpty":   edm.String(""),
		"StrSpaces":  edm.String("  padded  "),
		"BoolTrue":   edm.Bool(true),
		"BoolFalse":  edm.Bool(false),
		"I32Zero":    edm.Int32(0),
		"I32Min":     edm.Int32(math.MinInt32),
		"I32Max":     edm.Int32(math.MaxInt32),
		"I64Above53": edm.Int64(1<<53 + 1),
		"I64Neg":     edm.Int64(-(1 << 53) - 3),
		"I64Min":     edm.Int64(math.MinInt64),
		"I64Max":     edm.Int64(math.MaxInt64),
		"I64Zero":    edm.Int64(0),
		"DblThird":   edm.Double(1.0 / 3),
		"DblNaN":     edm.Double(math.NaN()),
		"DblPosInf":  edm.Double(math.Inf(1)),
		"DblNegInf":  edm.Double(math.Inf(-1)),
		"DblNegZero": edm.Double(math.Copysign(0, -1)),
		"DblZero":    edm.Double(0),
		"DblTiny":    edm.Double(math.SmallestNonzeroFloat64),
		"DblMax":     edm.Double(math.MaxFloat64),
		"DblWhole":   edm.Double(3),
		"Dt100ns":    edm.DateTime(time.Date(2026, 11, 21, 10, 0, 0, 123456700, time.UTC)),
		"DtWhole":    edm.DateTime(time.Date(2000, 2, 29, 0, 0, 0, 0, time.UTC)),
		"DtMin":      edm.DateTime(time.Date(1601, 1, 1, 0, 0, 0, 0, time.UTC)),
		"DtMax":      edm.DateTime(time.Date(9999, 12, 31, 23, 59, 59, 999999900, time.UTC)),
		"Guid":       guid,
		"BinEmpty":   edm.Binary([]byte{}),
		"BinOne":     edm.Binary([]byte{0}),
		"Bin64K":     edm.Binary(bin),
		"Ünïcödé_1":  edm.String("property names may be non-ASCII identifiers"),
		"_v":         edm.Int64(7),
	}
}

func testTypesRoundTrip(t *testing.T, e *env) {
	name := e.table()
	written := EdgeEntity()
	want := written
	if e.q.NegativeZeroLost {
		want = written.Clone()
		want["DblNegZero"] = edm.Double(0)
	}
	e.mustTx(name, "p", store.Op{Kind: store.Insert, RK: "r", Props: written})

	got := e.get(name, "p", "r")
	e.wantProps(want, got.Props, "Get after Insert")
	if got.ETag == "" {
		t.Error("Get returned no etag")
	}
	if got.Timestamp.Year() < 2020 {
		t.Errorf("Get returned timestamp %v", got.Timestamp)
	}
	ents := e.all(name, store.Query{PK: "p"})
	if len(ents) != 1 {
		t.Fatalf("Query returned %d entities, want 1", len(ents))
	}
	e.wantProps(want, ents[0].Props, "Query after Insert")
	if ents[0].ETag != got.ETag {
		t.Errorf("Query etag %s differs from Get etag %s", ents[0].ETag, got.ETag)
	}

	// Each value alone, through Replace and Merge too: a value must not
	// depend on its neighbours to survive.
	for prop, v := range written {
		e.mustTx(name, "p", store.Op{Kind: store.Replace, RK: "r", Props: edm.Entity{prop: v}})
		e.wantProps(edm.Entity{prop: want[prop]}, e.get(name, "p", "r").Props, "Replace with "+prop)
	}
	e.mustTx(name, "p", store.Op{Kind: store.Merge, RK: "r", Props: written})
	e.wantProps(want, e.get(name, "p", "r").Props, "Merge of every type")

	// An empty entity is a row with no properties.
	e.mustTx(name, "p", store.Op{Kind: store.Insert, RK: "empty"})
	if got := e.get(name, "p", "empty"); len(got.Props) != 0 {
		t.Fatalf("empty entity came back with %d properties", len(got.Props))
	}
}

// OrderKeys are keys whose order is easy to get wrong: prefixes of each
// other, separators, spaces, characters that OData and URLs escape, and
// non-ASCII, including the range where UTF-16 and UTF-8 orders differ.
var OrderKeys = []string{
	"a", "a:b", "a;", "ab", "a b", "a:", "a:b:c", "A", "Z", "z", "0", "9", "-", "~", " ", "  ",
	"o'neil", "it''s", "a&b=c+d", "100%", "50%25", "a.b", "a,b", "(x)", "[y]", "{z}", "$x", "@y", "*",
	"é", "e\u0301", "ä", "日本", "日", "\u00a0", "\uE000", "\uFF5E", "\uFFFD", "\U0001F600", "\U00010000", "a\U0001F600", "a\uFF5E",
}

func testKeyOrder(t *testing.T, e *env) {
	name := e.table()
	want := append([]string(nil), OrderKeys...)
	sortKeys(want)
	// The one place UTF-16 order differs from UTF-8 byte order.
	if store.CompareKeys("\U0001F600", "\uFF5E") >= 0 {
		t.Fatal("CompareKeys: U+1F600 must sort before U+FF5E (UTF-16 order)")
	}

	e.fill(name, "p", OrderKeys, func(i int) edm.Entity { return edm.Entity{"i": edm.Int32(int32(i))} })
	// Paging by 1 puts a continuation token on every key: tokens must carry
	// any key exactly (Azurite failed on non-ASCII ones, Azure/Azurite#1214).
	for _, limit := range []int{0, 1, 3} {
		got := keysOf(e.all(name, store.Query{PK: "p", Limit: limit}))
		if !slices.Equal(got, want) {
			t.Fatalf("RowKey order, limit %d:\n got %+q\nwant %+q", limit, got, want)
		}
	}
	for i, rk := range OrderKeys {
		ent := e.get(name, "p", rk)
		if ent.Props["i"].Int != int64(i) {
			t.Fatalf("Get(%+q) returned the row of %+q", rk, OrderKeys[ent.Props["i"].Int])
		}
	}

	// The same keys as PartitionKeys, over the whole table.
	for i, pk := range OrderKeys {
		e.mustTx(name, pk, store.Op{Kind: store.Upsert, RK: "r", Props: edm.Entity{"i": edm.Int32(int32(i))}})
	}
	for _, limit := range []int{0, 1} {
		var pks []string
		for _, ent := range e.all(name, store.Query{AllPartitions: true, From: "r", To: "r ", Limit: limit}) {
			pks = append(pks, ent.PK)
		}
		if !slices.Equal(pks, want) {
			t.Fatalf("PartitionKey order, limit %d:\n got %+q\nwant %+q", limit, pks, want)
		}
	}
	for i, pk := range OrderKeys {
		if got := e.all(name, store.Query{PK: pk}); len(got) != 1 || got[0].Props["i"].Int != int64(i) {
			t.Fatalf("Query of partition %+q returned %d rows", pk, len(got))
		}
	}
}

func sortKeys(keys []string) {
	for i := 1; i < len(keys); i++ {
		for j := i; j > 0 && store.CompareKeys(keys[j-1], keys[j]) > 0; j-- {
			keys[j-1], keys[j] = keys[j], keys[j-1]
		}
	}
}

func testInsertExisting(t *testing.T, e *env) {
	name := e.table()
	e.mustTx(name, "p", store.Op{Kind: store.Insert, RK: "r", Props: edm.Entity{"v": edm.Int32(1)}})
	err := e.tx(name, "p", store.Op{Kind: store.Insert, RK: "r", Props: edm.Entity{"v": edm.Int32(2)}})
	e.wantTxErr(err, store.ErrExists, 0, "r", "Insert of an existing row")
	e.wantProps(edm.Entity{"v": edm.Int32(1)}, e.get(name, "p", "r").Props, "row after a failed Insert")
}

func testMissingRow(t *testing.T, e *env) {
	name := e.table()
	props := edm.Entity{"v": edm.Int32(1)}
	for _, op := range []store.Op{
		{Kind: store.Replace, RK: "r", Props: props},
		{Kind: store.Merge, RK: "r", Props: props},
		{Kind: store.Delete, RK: "r"},
		{Kind: store.Replace, RK: "r", Props: props, IfMatch: "*"},
		{Kind: store.Delete, RK: "r", IfMatch: "*"},
	} {
		e.wantTxErr(e.tx(name, "p", op), store.ErrNotFound, 0, "r", op.Kind.String()+" of a missing row")
	}
	if got := e.all(name, store.Query{AllPartitions: true}); len(got) != 0 {
		t.Fatalf("failed writes left %d rows", len(got))
	}
}

func testETags(t *testing.T, e *env) {
	name := e.table()
	e.mustTx(name, "p", store.Op{Kind: store.Insert, RK: "r", Props: edm.Entity{"v": edm.Int32(1), "keep": edm.Bool(true)}})
	first := e.get(name, "p", "r")

	// A write with the current etag applies and changes the etag.
	e.mustTx(name, "p", store.Op{Kind: store.Replace, RK: "r", Props: edm.Entity{"v": edm.Int32(2)}, IfMatch: first.ETag})
	second := e.get(name, "p", "r")
	if second.ETag == first.ETag {
		t.Fatalf("etag %s did not change on Replace", first.ETag)
	}
	if second.Timestamp.Before(first.Timestamp) {
		t.Errorf("timestamp went back from %v to %v", first.Timestamp, second.Timestamp)
	}

	// The first etag is stale now: every conditional write fails and
	// changes nothing.
	stale := []store.Op{
		{Kind: store.Replace, RK: "r", Props: edm.Entity{"v": edm.Int32(3)}, IfMatch: first.ETag},
		{Kind: store.Merge, RK: "r", Props: edm.Entity{"v": edm.Int32(3)}, IfMatch: first.ETag},
		{Kind: store.Delete, RK: "r", IfMatch: first.ETag},
	}
	for _, op := range stale {
		e.wantTxErr(e.tx(name, "p", op), store.ErrPrecondition, 0, "r", op.Kind.String()+" with a stale etag")
	}
	if got := e.get(name, "p", "r"); got.ETag != second.ETag || !sameEntity(got.Props, second.Props) {
		t.Fatalf("failed conditional writes changed the row")
	}

	// Merge with the current etag; then Delete with the new one.
	e.mustTx(name, "p", store.Op{Kind: store.Merge, RK: "r", Props: edm.Entity{"w": edm.Int32(4)}, IfMatch: second.ETag})
	third := e.get(name, "p", "r")
	if third.ETag == second.ETag || third.ETag == first.ETag {
		t.Fatalf("etag did not change on Merge")
	}
	e.wantTxErr(e.tx(name, "p", store.Op{Kind: store.Delete, RK: "r", IfMatch: second.ETag}), store.ErrPrecondition, 0, "r", "Delete with a stale etag")
	e.mustTx(name, "p", store.Op{Kind: store.Delete, RK: "r", IfMatch: third.ETag})
	_, err := e.s.Get(e.ctx, name, "p", "r")
	e.wantErr(err, store.ErrNotFound, "Get after Delete")

	// A re-inserted row never gets an etag it had before.
	e.mustTx(name, "p", store.Op{Kind: store.Insert, RK: "r", Props: edm.Entity{"v": edm.Int32(1), "keep": edm.Bool(true)}})
	fourth := e.get(name, "p", "r")
	for _, old := range []string{first.ETag, second.ETag, third.ETag} {
		if fourth.ETag == old {
			t.Fatalf("re-inserted row reuses etag %s", old)
		}
	}
	e.wantTxErr(e.tx(name, "p", store.Op{Kind: store.Replace, RK: "r", IfMatch: first.ETag}), store.ErrPrecondition, 0, "r", "Replace of a re-inserted row with its first etag")

	// "*" and "" mean any version.
	e.mustTx(name, "p", store.Op{Kind: store.Replace, RK: "r", Props: edm.Entity{"v": edm.Int32(5)}, IfMatch: "*"})
	e.mustTx(name, "p", store.Op{Kind: store.Merge, RK: "r", Props: edm.Entity{"v": edm.Int32(6)}, IfMatch: ""})
	e.mustTx(name, "p", store.Op{Kind: store.Delete, RK: "r", IfMatch: "*"})
}

func testMergeAndReplace(t *testing.T, e *env) {
	name := e.table()
	e.mustTx(name, "p", store.Op{Kind: store.Insert, RK: "r", Props: edm.Entity{"a": edm.Int32(1), "b": edm.String("x")}})

	e.mustTx(name, "p", store.Op{Kind: store.Merge, RK: "r", Props: edm.Entity{"b": edm.Int64(2), "c": edm.Bool(true)}})
	e.wantProps(edm.Entity{"a": edm.Int32(1), "b": edm.Int64(2), "c": edm.Bool(true)},
		e.get(name, "p", "r").Props, "Merge keeps other properties and may change a type")

	e.mustTx(name, "p", store.Op{Kind: store.Replace, RK: "r", Props: edm.Entity{"d": edm.Double(1.5)}})
	e.wantProps(edm.Entity{"d": edm.Double(1.5)}, e.get(name, "p", "r").Props, "Replace drops other properties")

	e.mustTx(name, "p", store.Op{Kind: store.Merge, RK: "r"})
	e.wantProps(edm.Entity{"d": edm.Double(1.5)}, e.get(name, "p", "r").Props, "an empty Merge keeps every property")
}

func testUpserts(t *testing.T, e *env) {
	name := e.table()
	e.mustTx(name, "p",
		store.Op{Kind: store.Upsert, RK: "u", Props: edm.Entity{"a": edm.Int32(1), "b": edm.Int32(1)}},
		store.Op{Kind: store.UpsertMerge, RK: "m", Props: edm.Entity{"a": edm.Int32(1), "b": edm.Int32(1)}},
	)
	e.wantProps(edm.Entity{"a": edm.Int32(1), "b": edm.Int32(1)}, e.get(name, "p", "u").Props, "Upsert inserts")
	e.wantProps(edm.Entity{"a": edm.Int32(1), "b": edm.Int32(1)}, e.get(name, "p", "m").Props, "UpsertMerge inserts")

	e.mustTx(name, "p",
		store.Op{Kind: store.Upsert, RK: "u", Props: edm.Entity{"c": edm.Int32(2)}},
		store.Op{Kind: store.UpsertMerge, RK: "m", Props: edm.Entity{"b": edm.Int32(2), "c": edm.Int32(2)}},
	)
	e.wantProps(edm.Entity{"c": edm.Int32(2)}, e.get(name, "p", "u").Props, "Upsert replaces")
	e.wantProps(edm.Entity{"a": edm.Int32(1), "b": edm.Int32(2), "c": edm.Int32(2)}, e.get(name, "p", "m").Props, "UpsertMerge merges")
}

// Rows of one RowKey in different partitions are different rows: a
// transaction touches its own partition only. (Store.Transact takes one
// partition key, so a transaction spanning partitions, which Azurite accepts
// (Azure/Azurite#1215), cannot even be expressed.)
func testPartitionIsolation(t *testing.T, e *env) {
	name := e.table()
	e.mustTx(name, "p2", store.Op{Kind: store.Insert, RK: "r", Props: edm.Entity{"pk": edm.String("p2")}})

	e.wantTxErr(e.tx(name, "p1", store.Op{Kind: store.Delete, RK: "r"}), store.ErrNotFound, 0, "r", "Delete in another partition")
	e.wantTxErr(e.tx(name, "p1", store.Op{Kind: store.Replace, RK: "r"}), store.ErrNotFound, 0, "r", "Replace in another partition")
	e.mustTx(name, "p1", store.Op{Kind: store.Insert, RK: "r", Props: edm.Entity{"pk": edm.String("p1")}})
	e.mustTx(name, "p1", store.Op{Kind: store.Merge, RK: "r", Props: edm.Entity{"x": edm.Bool(true)}})

	e.wantProps(edm.Entity{"pk": edm.String("p2")}, e.get(name, "p2", "r").Props, "row of p2")
	e.wantProps(edm.Entity{"pk": edm.String("p1"), "x": edm.Bool(true)}, e.get(name, "p1", "r").Props, "row of p1")
	e.mustTx(name, "p1", store.Op{Kind: store.Delete, RK: "r"})
	e.get(name, "p2", "r")
	if got := e.all(name, store.Query{PK: "p"}); len(got) != 0 {
		t.Fatalf("partition %q (a prefix of p1, p2) holds %d rows", "p", len(got))
	}
}
