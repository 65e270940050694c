package azure

import (
	"errors"
	"fmt"
	"math"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/store"
	"github.com/tablejournal/tablejournal/store/storetest"
)

// table creates a fresh table on the test Azurite, dropped at the end.
func table(t *testing.T, s *Store) string {
	t.Helper()
	name := fmt.Sprintf("t%d", time.Now().UnixNano())
	if err := s.CreateTable(bg, name); err != nil {
		t.Fatalf("CreateTable: %v", err)
	}
	t.Cleanup(func() { _ = s.DeleteTable(bg, name) })
	return name
}

func mustGuid(t *testing.T, s string) edm.Value {
	t.Helper()
	g, err := edm.Guid(s)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func TestRoundTripEDM(t *testing.T) {
	s := newStore(t)
	name := table(t, s)
	want := edm.Entity{
		"s":      edm.String("it's \"quoted\" ü 世界 \U0001F600"),
		"empty":  edm.String(""),
		"yes":    edm.Bool(true),
		"i32":    edm.Int32(math.MinInt32),
		"i32max": edm.Int32(math.MaxInt32),
		"i64":    edm.Int64(1<<53 + 1),
		"i64min": edm.Int64(math.MinInt64),
		"whole":  edm.Double(5), // must stay a Double, not become Int32 5
		"third":  edm.Double(1.0 / 3),
		"big":    edm.Double(1e300),
		"tiny":   edm.Double(math.SmallestNonzeroFloat64),
		"nan":    edm.Double(math.NaN()),
		"inf":    edm.Double(math.Inf(1)),
		"ninf":   edm.Double(math.Inf(-1)),
		"dt":     edm.DateTime(time.Date(2026, 11, 21, 10, 0, 0, 123456700, time.UTC)),
		"dtmin":  edm.DateTime(time.Date(1601, 1, 1, 0, 0, 0, 0, time.UTC)),
		"guid":   mustGuid(t, "0f8fad5b-d9cb-469f-a165-70867728950e"),
		"bin":    edm.Binary([]byte{0, 1, 2, 0xff}),
		"bin0":   edm.Binary([]byte{}),
	}
	if _, err := s.Transact(bg, name, "p", []store.Op{{Kind: store.Insert, RK: "r", Props: want}}); err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(bg, name, "p", "r")
	if err != nil {
		t.Fatal(err)
	}
	checkProps(t, "Get", want, got.Props)
	if got.ETag == "" || got.Timestamp.IsZero() {
		t.Errorf("Get: etag %q, timestamp %v", got.ETag, got.Timestamp)
	}
	page, err := s.Query(bg, name, store.Query{PK: "p"})
	if err != nil || len(page.Entities) != 1 {
		t.Fatalf("Query = %d entities, %v", len(page.Entities), err)
	}
	checkProps(t, "Query", want, page.Entities[0].Props)
	if page.Entities[0].ETag != got.ETag {
		t.Errorf("Query etag %q, Get etag %q", page.Entities[0].ETag, got.ETag)
	}
}

func checkProps(t *testing.T, what string, want, got edm.Entity) {
	t.Helper()
	for k, w := range want {
		if g, ok := got[k]; !ok || !g.Equal(w) {
			t.Errorf("%s: %s = %#v, want %#v", what, k, g, w)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("%s: unexpected property %s", what, k)
		}
	}
}

func TestErrorMapping(t *testing.T) {
	s := newStore(t)
	name := table(t, s)
	is := func(err, target error, what string) {
		t.Helper()
		if !errors.Is(err, target) {
			t.Errorf("%s: err = %v, want %v", what, err, target)
		}
	}
	is(s.CreateTable(bg, name), store.ErrTableExists, "CreateTable twice")
	is(s.DeleteTable(bg, "nosuchtable"), store.ErrTableNotFound, "DeleteTable missing")
	is(s.CreateTable(bg, "a-b"), store.ErrInvalid, "CreateTable bad name")
	_, err := s.Get(bg, name, "p", "missing")
	is(err, store.ErrNotFound, "Get missing row")
	_, err = s.Get(bg, "nosuchtable", "p", "r")
	is(err, store.ErrTableNotFound, "Get missing table")
	_, err = s.Query(bg, "nosuchtable", store.Query{AllPartitions: true})
	is(err, store.ErrTableNotFound, "Query missing table")
	_, err = s.Query(bg, name, store.Query{AllPartitions: true, Continuation: "garbage!"})
	is(err, store.ErrInvalid, "Query bad continuation")

	ins := func(rk string) store.Op {
		return store.Op{Kind: store.Insert, RK: rk, Props: edm.Entity{"n": edm.Int32(1)}}
	}
	if _, err := s.Transact(bg, name, "p", []store.Op{ins("a")}); err != nil {
		t.Fatal(err)
	}
	a, err := s.Get(bg, name, "p", "a")
	if err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		what  string
		ops   []store.Op
		index int
		want  error
	}{
		{"insert existing", []store.Op{ins("b"), ins("c"), ins("a")}, 2, store.ErrExists},
		{"replace missing", []store.Op{ins("b"), {Kind: store.Replace, RK: "zz", Props: edm.Entity{}}}, 1, store.ErrNotFound},
		{"merge missing", []store.Op{{Kind: store.Merge, RK: "zz", Props: edm.Entity{}}}, 0, store.ErrNotFound},
		{"delete missing", []store.Op{ins("b"), ins("c"), {Kind: store.Delete, RK: "zz"}}, 2, store.ErrNotFound},
		{"stale etag", []store.Op{ins("b"), {Kind: store.Replace, RK: "a", IfMatch: `W/"datetime'2000-01-01T00%3A00%3A00.0000000Z'"`}}, 1, store.ErrPrecondition},
	} {
		_, err := s.Transact(bg, name, "p", tc.ops)
		var te *store.TxError
		if !errors.As(err, &te) {
			t.Errorf("%s: err = %v, want a *store.TxError", tc.what, err)
			continue
		}
		if te.Index != tc.index || te.RK != tc.ops[tc.index].RK || !errors.Is(err, tc.want) {
			t.Errorf("%s: TxError{%d, %q, %v}, want index %d, %v", tc.what, te.Index, te.RK, te.Err, tc.index, tc.want)
		}
		if _, err := s.Get(bg, name, "p", "b"); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("%s: the transaction's other ops were applied (%v)", tc.what, err)
		}
	}
	// The current etag works; Replace and Delete take it.
	if _, err := s.Transact(bg, name, "p", []store.Op{{Kind: store.Replace, RK: "a", IfMatch: a.ETag, Props: edm.Entity{"n": edm.Int32(2)}}}); err != nil {
		t.Fatalf("Replace with current etag: %v", err)
	}
	_, err = s.Transact(bg, name, "p", []store.Op{{Kind: store.Delete, RK: "a", IfMatch: a.ETag}})
	is(err, store.ErrPrecondition, "Delete with the old etag")
	// A transaction that touches a missing table.
	_, err = s.Transact(bg, "nosuchtable", "p", []store.Op{ins("a")})
	is(err, store.ErrTableNotFound, "Transact missing table")
	// Refused before sending, by the shared validation.
	_, err = s.Transact(bg, name, "p", []store.Op{ins("x"), ins("x")})
	is(err, store.ErrInvalid, "row twice")
}

// Keys that need escaping in URLs and in OData key literals, through every
// operation.
func TestOddKeys(t *testing.T) {
	s := newStore(t)
	name := table(t, s)
	for _, pk := range []string{"p", "it's", "''", "%41 +&=;,$@!*()", "ü é 世界"} {
		for _, rk := range []string{"r", "o'neil", "'", "%", "%25", "a b", "x''y", "ü"} {
			props := func(n int32) edm.Entity { return edm.Entity{"n": edm.Int32(n)} }
			steps := []store.Op{
				{Kind: store.Insert, RK: rk, Props: props(1)},
				{Kind: store.Replace, RK: rk, Props: props(2)},
				{Kind: store.Merge, RK: rk, Props: edm.Entity{"m": edm.Bool(true)}},
				{Kind: store.Upsert, RK: rk, Props: props(4)},
				{Kind: store.UpsertMerge, RK: rk, Props: edm.Entity{"m": edm.Bool(false)}},
			}
			for _, op := range steps {
				if _, err := s.Transact(bg, name, pk, []store.Op{op}); err != nil {
					t.Fatalf("(%q, %q) %v: %v", pk, rk, op.Kind, err)
				}
			}
			got, err := s.Get(bg, name, pk, rk)
			if err != nil {
				t.Fatalf("Get(%q, %q): %v", pk, rk, err)
			}
			checkProps(t, fmt.Sprintf("(%q, %q)", pk, rk), edm.Entity{"n": edm.Int32(4), "m": edm.Bool(false)}, got.Props)
			if got.PK != pk || got.RK != rk {
				t.Errorf("Get(%q, %q) returned keys (%q, %q)", pk, rk, got.PK, got.RK)
			}
			page, err := s.Query(bg, name, store.Query{PK: pk, From: rk, To: rk + "\x7e"})
			if err != nil || len(page.Entities) == 0 || page.Entities[0].RK != rk {
				t.Fatalf("Query(%q from %q) = %v, %v", pk, rk, page.Entities, err)
			}
			if _, err := s.Transact(bg, name, pk, []store.Op{{Kind: store.Delete, RK: rk}}); err != nil {
				t.Fatalf("(%q, %q) delete: %v", pk, rk, err)
			}
			if _, err := s.Get(bg, name, pk, rk); !errors.Is(err, store.ErrNotFound) {
				t.Fatalf("Get after delete: %v", err)
			}
		}
	}
}

// The empty PartitionKey is a key like any other: every operation works
// (the SDK refuses it in batch URLs; batchkeys.go works around that).
func TestEmptyPartitionKey(t *testing.T) {
	s := newStore(t)
	name := table(t, s)
	for _, rk := range []string{"r", "", "it's"} {
		steps := []store.Op{
			{Kind: store.Insert, RK: rk, Props: edm.Entity{"n": edm.Int32(1)}},
			{Kind: store.Replace, RK: rk, Props: edm.Entity{"n": edm.Int32(2)}},
			{Kind: store.Merge, RK: rk, Props: edm.Entity{"m": edm.Int32(3)}},
			{Kind: store.Upsert, RK: rk, Props: edm.Entity{"n": edm.Int32(4)}},
			{Kind: store.UpsertMerge, RK: rk, Props: edm.Entity{"m": edm.Int32(5)}},
		}
		for _, op := range steps {
			if _, err := s.Transact(bg, name, "", []store.Op{op}); err != nil {
				t.Fatalf("rk %q: %v: %v", rk, op.Kind, err)
			}
		}
		got, err := s.Get(bg, name, "", rk)
		if err != nil || got.PK != "" || got.RK != rk {
			t.Fatalf("Get(\"\", %q) = %+v, %v", rk, got, err)
		}
		checkProps(t, "empty partition", edm.Entity{"n": edm.Int32(4), "m": edm.Int32(5)}, got.Props)
		if _, err := s.Transact(bg, name, "", []store.Op{{Kind: store.Delete, RK: rk, IfMatch: got.ETag}}); err != nil {
			t.Fatalf("rk %q: delete: %v", rk, err)
		}
		if _, err := s.Get(bg, name, "", rk); !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("Get after delete = %v", err)
		}
	}
	// Several ops of one transaction, each with a placeholder, and a
	// failure among them still names the right op.
	_, err := s.Transact(bg, name, "", []store.Op{
		{Kind: store.Upsert, RK: "a'", Props: edm.Entity{}},
		{Kind: store.Upsert, RK: "b'", Props: edm.Entity{}},
		{Kind: store.Delete, RK: "c'"},
	})
	var te *store.TxError
	if !errors.As(err, &te) || te.Index != 2 || !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("delete of a missing row = %v, want TxError at 2 wrapping ErrNotFound", err)
	}
}

func TestFilterOnAzurite(t *testing.T) {
	s := newStore(t)
	name := table(t, s)
	rows := []edm.Entity{
		{"x": edm.String("it's")},
		{"x": edm.Int64(9)},
		{"x": edm.Int64(13)},
		{"x": edm.Int32(9)},
		{"x": edm.Double(9)},
		{"x": edm.DateTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))},
		{"y": edm.Bool(true)},
	}
	var ops []store.Op
	for i, props := range rows {
		ops = append(ops, store.Op{Kind: store.Insert, RK: fmt.Sprint(i), Props: props})
	}
	if _, err := s.Transact(bg, name, "p", ops); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		cond store.Cond
		want string
	}{
		{store.Cond{Prop: "x", Cmp: store.Eq, Value: edm.String("it's")}, "0"},
		{store.Cond{Prop: "x", Cmp: store.Lt, Value: edm.Int64(10)}, "1"}, // Azurite alone would compare "9" < "10" as strings
		{store.Cond{Prop: "x", Cmp: store.Ge, Value: edm.Int64(9)}, "1,2"},
		{store.Cond{Prop: "x", Cmp: store.Eq, Value: edm.Int32(9)}, "3"},
		{store.Cond{Prop: "x", Cmp: store.Eq, Value: edm.Double(9)}, "4"},
		{store.Cond{Prop: "x", Cmp: store.Ne, Value: edm.Double(math.NaN())}, "4"},
		{store.Cond{Prop: "x", Cmp: store.Lt, Value: edm.Double(1e300)}, "4"},
		{store.Cond{Prop: "x", Cmp: store.Gt, Value: edm.Double(8.5)}, "4"},
		{store.Cond{Prop: "x", Cmp: store.Lt, Value: edm.DateTime(time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC))}, "5"},
		{store.Cond{Prop: "x", Cmp: store.Ne, Value: edm.String("a")}, "0"},
		{store.Cond{Prop: "y", Cmp: store.Eq, Value: edm.Bool(true)}, "6"},
		{store.Cond{Prop: "x eq 1 or y", Cmp: store.Eq, Value: edm.Bool(true)}, ""},
	} {
		var got []string
		err := store.All(bg, s, name, store.Query{PK: "p", Filter: []store.Cond{tc.cond}}, func(e store.Entity) error {
			got = append(got, e.RK)
			return nil
		})
		if err != nil {
			t.Errorf("%+v: %v", tc.cond, err)
			continue
		}
		if g := strings.Join(got, ","); g != tc.want {
			t.Errorf("%s %v %#v: got rows %q, want %q", tc.cond.Prop, tc.cond.Cmp, tc.cond.Value, g, tc.want)
		}
	}
}

func TestBadKeyNeverInError(t *testing.T) {
	const key = "c2VjcmV0LWtleS10aGF0LW11c3QtbmV2ZXItbGVhay0xMjM0NTY3ODkwYWJjZGVm" // base64, not the dev key
	cs := "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=" + key +
		";TableEndpoint=" + srv.Endpoint() + ";"
	s, err := New(Config{ConnectionString: cs, MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	errs := []error{s.CreateTable(bg, "secrettest")}
	_, err = s.Get(bg, "secrettest", "p", "r")
	errs = append(errs, err)
	_, err = s.Transact(bg, "secrettest", "p", []store.Op{{Kind: store.Insert, RK: "r"}})
	errs = append(errs, err)
	for _, err := range errs {
		noSecret(t, err, key)
	}
}

func TestSASNeverInError(t *testing.T) {
	const sig = "c2lnbmF0dXJlLXRoYXQtbXVzdC1ub3QtbGVhaw%3D%3D"
	sas := "sv=2019-02-02&ss=t&srt=sco&sp=rwdlacu&se=2099-01-01T00:00:00Z&sig=" + sig
	// A closed port: the error is a transport error quoting the URL.
	s, err := New(Config{Endpoint: "http://127.0.0.1:1/devstoreaccount1", SAS: sas, MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Get(bg, "sastest", "p", "r")
	if err == nil {
		t.Fatal("Get on a closed port succeeded")
	}
	if !errors.Is(err, store.ErrBusy) {
		t.Errorf("connection refused: err = %v, want ErrBusy", err)
	}
	noSecret(t, err, sig)
	// Azurite refuses the bad signature: a service error.
	s, err = New(Config{Endpoint: srv.Endpoint(), SAS: sas, MaxRetries: -1})
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Get(bg, "sastest", "p", "r")
	if err == nil {
		t.Fatal("Get with a bad SAS succeeded")
	}
	noSecret(t, err, sig)
	_, err = s.Transact(bg, "sastest", "p", []store.Op{{Kind: store.Insert, RK: "r"}})
	noSecret(t, err, sig)
}

// noSecret fails if the secret, raw or unescaped, appears in err or in
// any error of its chain.
func noSecret(t *testing.T, err error, secret string) {
	t.Helper()
	if err == nil {
		t.Fatal("no error")
	}
	plain, _ := url.QueryUnescape(secret)
	var walk func(error)
	walk = func(e error) {
		for _, text := range []string{e.Error(), fmt.Sprintf("%+v", e), fmt.Sprintf("%#v", e)} {
			if strings.Contains(text, secret) || strings.Contains(text, plain) {
				t.Errorf("error (%T) contains a secret: %s", e, text)
			}
		}
		switch u := e.(type) {
		case interface{ Unwrap() []error }:
			for _, c := range u.Unwrap() {
				walk(c)
			}
		case interface{ Unwrap() error }:
			if c := u.Unwrap(); c != nil {
				walk(c)
			}
		}
	}
	walk(err)
}

// TestCosmosPartitions: with Cosmos set, the store lists partitions in a
// form that does not rely on the service's order, and lists the same ones
// in the same order as the skip scan; and it refuses a transaction beyond
// Cosmos DB for Table's limits before sending it.
func TestCosmosPartitions(t *testing.T) {
	plain := newStore(t)
	cosmos, err := New(Config{ConnectionString: srv.ConnectionString(), Cosmos: true})
	if err != nil {
		t.Fatal(err)
	}
	if cosmos.Limits().Service == "" || plain.Limits().Service != "" {
		t.Fatalf("limits: cosmos %+v, plain %+v", cosmos.Limits(), plain.Limits())
	}
	table := storetest.TableName("cosmosparts")
	if err := plain.CreateTable(bg, table); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { plain.DeleteTable(bg, table) })
	for _, pk := range []string{"m", "", "a", "it's", "z", "b"} {
		if _, err := plain.Transact(bg, table, pk, []store.Op{{Kind: store.Upsert, RK: "r", Props: edm.Entity{}}}); err != nil {
			t.Fatal(err)
		}
	}
	list := func(s *Store) []string {
		var pks []string
		if err := s.Partitions(bg, table, func(pk string) error { pks = append(pks, pk); return nil }); err != nil {
			t.Fatal(err)
		}
		return pks
	}
	want := []string{"", "a", "b", "it's", "m", "z"}
	for _, s := range []*Store{plain, cosmos} {
		if got := list(s); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("cosmos %v: partitions %q, want %q", s == cosmos, got, want)
		}
	}
	long := strings.Repeat("k", 256)
	_, err = cosmos.Transact(bg, table, "p", []store.Op{{Kind: store.Upsert, RK: long, Props: edm.Entity{}}})
	var te *store.TxError
	if !errors.Is(err, store.ErrInvalid) || !errors.As(err, &te) || te.Index != 0 {
		t.Errorf("a 256-byte row key on Cosmos: %v", err)
	}
	if _, err := plain.Transact(bg, table, "p", []store.Op{{Kind: store.Upsert, RK: long, Props: edm.Entity{}}}); err != nil {
		t.Errorf("a 256-byte row key on Azure: %v", err)
	}
	_, err = cosmos.Transact(bg, table, "p", []store.Op{{Kind: store.Upsert, RK: "x", Props: edm.Entity{"etag": edm.Int32(1)}}})
	if !errors.Is(err, store.ErrInvalid) {
		t.Errorf("a property Cosmos reserves: %v", err)
	}
}
