package wire

import (
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// oddStrings need escaping by some rule of encoding/json.
var oddStrings = []string{
	"", "plain", `quo"te`, `back\slash`, "<tag>&amp;", "new\nline\r\t\b\f", "\x00\x1f\x7f",
	"Grüße 世界 🚀", "\u2028\u2029", "bad utf8 \xff\xfe", "\xed\xa0\x80", "trailing \xc3",
}

// TestAppendString: appendString writes every string as json.Marshal does.
func TestAppendString(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	all := append([]string{}, oddStrings...)
	for range 2000 {
		var sb strings.Builder
		for range r.IntN(12) {
			sb.WriteByte(byte(r.IntN(256)))
		}
		all = append(all, sb.String())
	}
	for _, s := range all {
		want, _ := json.Marshal(s)
		if got := appendString(nil, s); string(got) != string(want) {
			t.Errorf("appendString(%q) = %s, json.Marshal = %s", s, got, want)
		}
	}
}

// TestAppendTime: appendTime writes a time.Time as json.Marshal does, and fails where
// it fails.
func TestAppendTime(t *testing.T) {
	for _, tm := range []time.Time{
		{}, time.Unix(0, 0).UTC(), time.Date(2026, 11, 26, 2, 3, 4, 5, time.UTC),
		time.Date(2026, 11, 26, 2, 3, 4, 500_000_000, time.UTC), time.Date(9999, 12, 31, 23, 59, 59, 999_999_999, time.UTC),
		time.Date(2026, 1, 2, 3, 4, 5, 6, time.FixedZone("x", 5*3600+1800)),
	} {
		want, _ := json.Marshal(tm)
		got, err := appendTime(nil, tm)
		if err != nil || string(got) != string(want) {
			t.Errorf("appendTime(%v) = %s, %v; json.Marshal = %s", tm, got, err, want)
		}
	}
	if _, err := appendTime(nil, time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)); err == nil {
		t.Error("Time of the year 10000: no error; json.Marshal fails")
	}
}

// TestAppendRaw: appendRaw writes compact JSON as json.Marshal writes a RawMessage.
func TestAppendRaw(t *testing.T) {
	for _, raw := range []string{`{}`, `{"a":"<b>&c"}`, `{"x":1,"y":[true,null,"\u2028"]}`, `"` + "\u2028" + `"`, `{"n":"日本"}`} {
		want, err := json.Marshal(json.RawMessage(raw))
		if err != nil {
			t.Fatal(err)
		}
		if got := appendRaw(nil, []byte(raw)); string(got) != string(want) {
			t.Errorf("appendRaw(%s) = %s, json.Marshal = %s", raw, got, want)
		}
	}
}
