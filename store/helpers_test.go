package store_test

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
	"unicode/utf16"

	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/store"
)

// utf16Compare is the reference order: UTF-16 code units, compared as
// .NET's string.CompareOrdinal and JavaScript's < do.
func utf16Compare(a, b string) int {
	return slices.Compare(utf16.Encode([]rune(a)), utf16.Encode([]rune(b)))
}

func TestCompareKeysIsUTF16Order(t *testing.T) {
	alphabet := []rune{'a', 'b', ':', ';', ' ', 'é', 'ÿ', 'Ā', '日', '\uD7FF', '\uE000', '\uFF5E', '\uFFFD', '\U00010000', '\U0001F600', '\U0010FFFF'}
	r := rand.New(rand.NewPCG(1, 2))
	word := func() string {
		var sb strings.Builder
		for range r.IntN(5) {
			sb.WriteRune(alphabet[r.IntN(len(alphabet))])
		}
		return sb.String()
	}
	for range 20000 {
		a, b := word(), word()
		if got, want := store.CompareKeys(a, b), utf16Compare(a, b); got != want {
			t.Fatalf("CompareKeys(%+q, %+q) = %d, want %d", a, b, got, want)
		}
	}
	// The one place where UTF-16 and UTF-8 orders differ.
	if store.CompareKeys("\U0001F600", "\uFF5E") >= 0 {
		t.Error("a character above U+FFFF must sort before U+FF5E")
	}
	for c := range 256 {
		if store.UTF16OrderByteInverse(store.UTF16OrderByte(byte(c))) != byte(c) {
			t.Fatalf("UTF16OrderByte is not inverted at %#x", c)
		}
	}
}

func TestValidateTx(t *testing.T) {
	ok := edm.Entity{"n": edm.Int64(1)}
	big := func(n int) edm.Entity {
		e := edm.Entity{}
		for i := range n {
			e["p"+strings.Repeat("x", i%3)+string(rune('a'+i%26))+string(rune('a'+i/26%26))] = edm.Binary(make([]byte, 64<<10))
		}
		return e
	}
	props := func(n int) edm.Entity {
		e := edm.Entity{}
		for i := range n {
			e["p"+fmt.Sprintf("%03d", i)] = edm.Bool(true)
		}
		return e
	}
	cases := []struct {
		name string
		pk   string
		ops  []store.Op
		want error
		idx  int // expected TxError index, -1 for none
	}{
		{"ok", "p", []store.Op{{Kind: store.Insert, RK: "a", Props: ok}}, nil, -1},
		{"empty", "p", nil, store.ErrInvalid, -1},
		{"101 ops", "p", make([]store.Op, 101), store.ErrTooLarge, -1},
		{"bad pk", "p/q", []store.Op{{Kind: store.Insert, RK: "a"}}, store.ErrInvalid, -1},
		{"bad rk", "p", []store.Op{{Kind: store.Insert, RK: "a"}, {Kind: store.Insert, RK: "a#"}}, store.ErrInvalid, 1},
		{"control rk", "p", []store.Op{{Kind: store.Insert, RK: "a\u0085"}}, store.ErrInvalid, 0},
		{"long rk", "p", []store.Op{{Kind: store.Insert, RK: strings.Repeat("x", 513)}}, store.ErrTooLarge, 0},
		{"512 rk", "p", []store.Op{{Kind: store.Insert, RK: strings.Repeat("x", 512)}}, nil, -1},
		{"256 surrogate pairs", "p", []store.Op{{Kind: store.Insert, RK: strings.Repeat("\U0001F600", 257)}}, store.ErrTooLarge, 0},
		{"twice", "p", []store.Op{{Kind: store.Upsert, RK: "a"}, {Kind: store.Delete, RK: "b"}, {Kind: store.Delete, RK: "a"}}, store.ErrInvalid, 2},
		{"unknown kind", "p", []store.Op{{Kind: 99, RK: "a"}}, store.ErrInvalid, 0},
		{"ifmatch on insert", "p", []store.Op{{Kind: store.Insert, RK: "a", IfMatch: "x"}}, store.ErrInvalid, 0},
		{"bad name", "p", []store.Op{{Kind: store.Insert, RK: "a", Props: edm.Entity{"1a": edm.Bool(true)}}}, store.ErrInvalid, 0},
		{"system name", "p", []store.Op{{Kind: store.Insert, RK: "a", Props: edm.Entity{"RowKey": edm.Bool(true)}}}, store.ErrInvalid, 0},
		{"underscore name", "p", []store.Op{{Kind: store.Insert, RK: "a", Props: edm.Entity{"_v": edm.Bool(true)}}}, nil, -1},
		{"int32 range", "p", []store.Op{{Kind: store.Insert, RK: "a", Props: edm.Entity{"n": {Type: edm.TypeInt32, Int: math.MaxInt32 + 1}}}}, store.ErrInvalid, 0},
		{"guid", "p", []store.Op{{Kind: store.Insert, RK: "a", Props: edm.Entity{"g": {Type: edm.TypeGuid, Str: "nope"}}}}, store.ErrInvalid, 0},
		{"year 1", "p", []store.Op{{Kind: store.Insert, RK: "a", Props: edm.Entity{"d": edm.DateTime(time.Time{})}}}, store.ErrInvalid, 0},
		{"big binary", "p", []store.Op{{Kind: store.Insert, RK: "a", Props: edm.Entity{"b": edm.Binary(make([]byte, 64<<10+1))}}}, store.ErrTooLarge, 0},
		{"252 props", "p", []store.Op{{Kind: store.Insert, RK: "a", Props: props(252)}}, nil, -1},
		{"253 props", "p", []store.Op{{Kind: store.Insert, RK: "a", Props: props(253)}}, store.ErrTooLarge, 0},
		{"15 binaries", "p", []store.Op{{Kind: store.Insert, RK: "a", Props: big(15)}}, nil, -1},
		{"16 binaries", "p", []store.Op{{Kind: store.Insert, RK: "a", Props: big(16)}}, store.ErrTooLarge, 0},
		{"5 MiB", "p", []store.Op{
			{Kind: store.Insert, RK: "a", Props: big(15)}, {Kind: store.Insert, RK: "b", Props: big(15)},
			{Kind: store.Insert, RK: "c", Props: big(15)}, {Kind: store.Insert, RK: "d", Props: big(15)},
			{Kind: store.Insert, RK: "e", Props: big(15)},
		}, store.ErrTooLarge, -1},
	}
	for i := range cases[2].ops {
		cases[2].ops[i] = store.Op{Kind: store.Delete, RK: strconv.Itoa(i)}
	}
	for _, c := range cases {
		err := store.ValidateTx(c.pk, c.ops)
		if !errors.Is(err, c.want) || (c.want == nil) != (err == nil) {
			t.Errorf("%s: err = %v, want %v", c.name, err, c.want)
			continue
		}
		var te *store.TxError
		if isTx := errors.As(err, &te); isTx != (c.idx >= 0) || isTx && te.Index != c.idx {
			t.Errorf("%s: err = %#v, want TxError index %d", c.name, err, c.idx)
		}
	}
}

func TestValidTableName(t *testing.T) {
	for name, want := range map[string]bool{
		"abc": true, "A12": true, strings.Repeat("a", 63): true,
		"ab": false, "1abc": false, "ab-c": false, strings.Repeat("a", 64): false, "tables": false, "Tables": false, "": false,
	} {
		if got := store.ValidTableName(name); got != want {
			t.Errorf("ValidTableName(%q) = %v, want %v", name, got, want)
		}
	}
}

func TestMatchFilter(t *testing.T) {
	at := time.Date(2026, 1, 2, 3, 4, 5, 600, time.UTC)
	props := edm.Entity{
		"n": edm.Int64(10), "i": edm.Int32(10), "s": edm.String("b"), "t": edm.Bool(true),
		"d": edm.Double(1.5), "nan": edm.Double(math.NaN()), "z": edm.Double(math.Copysign(0, -1)),
		"at": edm.DateTime(at), "bin": edm.Binary([]byte{1, 2}),
	}
	cases := []struct {
		c    store.Cond
		want bool
	}{
		{store.Cond{Prop: "n", Cmp: store.Eq, Value: edm.Int64(10)}, true},
		{store.Cond{Prop: "n", Cmp: store.Eq, Value: edm.Int32(10)}, false}, // type must match
		{store.Cond{Prop: "i", Cmp: store.Eq, Value: edm.Int32(10)}, true},
		{store.Cond{Prop: "n", Cmp: store.Lt, Value: edm.Int64(11)}, true},
		{store.Cond{Prop: "n", Cmp: store.Gt, Value: edm.Int64(10)}, false},
		{store.Cond{Prop: "n", Cmp: store.Ge, Value: edm.Int64(10)}, true},
		{store.Cond{Prop: "n", Cmp: store.Ne, Value: edm.Int64(10)}, false},
		{store.Cond{Prop: "missing", Cmp: store.Ne, Value: edm.Int64(10)}, false},
		{store.Cond{Prop: "s", Cmp: store.Gt, Value: edm.String("a")}, true},
		{store.Cond{Prop: "s", Cmp: store.Le, Value: edm.String("B")}, false}, // ordinal: 'B' < 'b'
		{store.Cond{Prop: "t", Cmp: store.Eq, Value: edm.Bool(true)}, true},
		{store.Cond{Prop: "t", Cmp: store.Gt, Value: edm.Bool(false)}, true},
		{store.Cond{Prop: "d", Cmp: store.Le, Value: edm.Double(1.5)}, true},
		{store.Cond{Prop: "nan", Cmp: store.Eq, Value: edm.Double(math.NaN())}, false},
		{store.Cond{Prop: "nan", Cmp: store.Ne, Value: edm.Double(1)}, true},
		{store.Cond{Prop: "z", Cmp: store.Eq, Value: edm.Double(0)}, true},
		{store.Cond{Prop: "at", Cmp: store.Eq, Value: edm.DateTime(at)}, true},
		{store.Cond{Prop: "at", Cmp: store.Lt, Value: edm.DateTime(at.Add(100))}, true},
		{store.Cond{Prop: "bin", Cmp: store.Gt, Value: edm.Binary([]byte{1})}, true},
	}
	for _, c := range cases {
		if got := store.MatchFilter(props, []store.Cond{c.c}); got != c.want {
			t.Errorf("%s %d %#v: got %v, want %v", c.c.Prop, c.c.Cmp, c.c.Value, got, c.want)
		}
	}
	both := []store.Cond{{Prop: "n", Cmp: store.Ge, Value: edm.Int64(5)}, {Prop: "s", Cmp: store.Eq, Value: edm.String("x")}}
	if store.MatchFilter(props, both) {
		t.Error("conditions must all match")
	}
	if !store.MatchFilter(props, nil) {
		t.Error("no condition matches everything")
	}
}
