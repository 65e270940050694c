package rows

import (
	"errors"
	"math"
	"testing"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/store"
)

func TestVersionKeys(t *testing.T) {
	tests := []struct {
		rk  string
		seq uint64
		key string
	}{
		{"order-7", 1, "old:order-7:9223372036854775806"},
		{"order-7", 42, "old:order-7:9223372036854775765"},
		{"a:b", 3, "old:a%3Ab:9223372036854775804"},
		{"50%", 0, "old:50%25:9223372036854775807"},
		{"x", math.MaxInt64, "old:x:0000000000000000000"},
		{"x", math.MaxUint64, "old:x:0000000000000000000"}, // beyond MaxInt64 counts as MaxInt64
	}
	for _, tt := range tests {
		key := VersionKey(tt.rk, tt.seq)
		if key != tt.key {
			t.Errorf("VersionKey(%q, %d) = %q, want %q", tt.rk, tt.seq, key, tt.key)
		}
		rk, seq, tip, ok := ParseKey(key)
		if !ok || tip || rk != tt.rk || seq != min(tt.seq, math.MaxInt64) {
			t.Errorf("ParseKey(%q) = %q %d %v %v", key, rk, seq, tip, ok)
		}
		from, to := HistoryRange(tt.rk)
		if store.CompareKeys(key, from) < 0 || store.CompareKeys(key, to) >= 0 {
			t.Errorf("%q outside the history range %q..%q", key, from, to)
		}
	}
	// Newer sequences sort first; the history of "a" never holds "a:b".
	if store.CompareKeys(VersionKey("a", 10), VersionKey("a", 9)) >= 0 {
		t.Error("a newer version does not sort first")
	}
	if from, to := HistoryRange("a"); store.CompareKeys(VersionKey("a:b", 1), from) >= 0 && store.CompareKeys(VersionKey("a:b", 1), to) < 0 {
		t.Error("the history of a holds a row of a:b")
	}
	// HistoryAt(rk, S) starts at the version written by S, so its first
	// row is the newest written at or before S.
	for _, s := range []uint64{5, 6, 7} {
		from, _ := HistoryAt("a", s)
		if from != VersionKey("a", s) {
			t.Errorf("HistoryAt(a, %d) starts at %q", s, from)
		}
		if store.CompareKeys(VersionKey("a", 5), from) < 0 || store.CompareKeys(VersionKey("a", 8), from) >= 0 {
			t.Errorf("HistoryAt(a, %d): version 5 before the start or 8 after it", s)
		}
	}
	for _, bad := range []string{"old:a:123", "new:a", "old:a:922337203685477580x", "old:a"} {
		if _, _, _, ok := ParseKey(bad); ok {
			t.Errorf("ParseKey(%q) accepted", bad)
		}
	}
}

// A version row whose key does not carry its _seq (the layout keyed by
// version, before SPEC §4 keyed version rows by sequence) is refused with
// ErrLayout instead of being read as something it is not.
func TestDecodeRowRefusesOtherLayouts(t *testing.T) {
	row := Row{PK: "p", RK: "a", Version: 3, Cmd: "c", Seq: 40, Op: events.OpUpsert, Props: edm.Entity{"x": edm.Int32(1)}}
	good := store.Entity{PK: "p", RK: row.StoreKey(), Props: row.Encode()}
	got, err := DecodeRow(good)
	if err != nil || got.Version != 3 || got.Seq != 40 || got.Tip {
		t.Fatalf("DecodeRow of a version row: %+v, %v", got, err)
	}
	// A row another program wrote is also ErrForeignRow, naming its key; a
	// row of the version-keyed layout is the projector's own, not foreign.
	for _, c := range []struct {
		name    string
		e       store.Entity
		foreign bool
	}{
		{"keyed by version", store.Entity{PK: "p", RK: VersionKey("a", 3), Props: row.Encode()}, false},
		{"not a layout key", store.Entity{PK: "p", RK: "a", Props: row.Encode()}, true},
		{"no system columns", store.Entity{PK: "p", RK: TipKey("a"), Props: edm.Entity{"x": edm.Int32(1)}}, true},
		{"old: not in shape", store.Entity{PK: "p", RK: "old:a:12", Props: row.Encode()}, true},
	} {
		_, err := DecodeRow(c.e)
		if !errors.Is(err, ErrLayout) {
			t.Errorf("%s: %v, want ErrLayout", c.name, err)
		}
		var fe *ForeignRowError
		if errors.Is(err, ErrForeignRow) != c.foreign || errors.As(err, &fe) != c.foreign {
			t.Errorf("%s: %v; foreign row: %v, want %v", c.name, err, errors.Is(err, ErrForeignRow), c.foreign)
		} else if c.foreign && (fe.PK != "p" || fe.Key != c.e.RK) {
			t.Errorf("%s: the error names %q/%q, want p/%q", c.name, fe.PK, fe.Key, c.e.RK)
		}
	}
}
