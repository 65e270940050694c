package writercmd

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/tablejournal/tablejournal/events/edm"
)

func TestParseSet(t *testing.T) {
	t.Parallel()
	files := map[string][]byte{"blob.bin": {0, 1, 2, 0xff}, "empty": {}}
	readFile := func(p string) ([]byte, error) {
		if b, ok := files[p]; ok {
			return b, nil
		}
		return nil, errors.New("open " + p + ": no such file")
	}
	guid, _ := edm.Guid("0f8fad5b-d9cb-469f-a165-70867728950e")
	tests := []struct {
		arg  string
		name string
		want edm.Value
	}{
		{"s=hello", "s", edm.String("hello")},
		{"s=", "s", edm.String("")},
		{"s=a=b:c", "s", edm.String("a=b:c")},
		{"s:string=x:y=z", "s", edm.String("x:y=z")},
		{"b:bool=true", "b", edm.Bool(true)},
		{"b:Boolean=FALSE", "b", edm.Bool(false)},
		{"i:int32=-2147483648", "i", edm.Int32(math.MinInt32)},
		{"i:int=2147483647", "i", edm.Int32(math.MaxInt32)},
		{"n:int64=9007199254740993", "n", edm.Int64(9007199254740993)},
		{"n:Edm.Int64=-9223372036854775808", "n", edm.Int64(math.MinInt64)},
		{"d:double=12.5", "d", edm.Double(12.5)},
		{"d:double=12", "d", edm.Double(12)},
		{"d:double=-0", "d", edm.Double(math.Copysign(0, -1))},
		{"d:double=NaN", "d", edm.Double(math.NaN())},
		{"d:double=-Infinity", "d", edm.Double(math.Inf(-1))},
		{"t:datetime=2026-11-21T10:00:00.1234567Z", "t", edm.DateTime(time.Date(2026, 11, 21, 10, 0, 0, 123456700, time.UTC))},
		{"t:datetime=2026-11-21T11:00:00+01:00", "t", edm.DateTime(time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC))},
		{"g:guid={0F8FAD5B-D9CB-469F-A165-70867728950E}", "g", guid},
		{"x:binary=AAEC/w==", "x", edm.Binary([]byte{0, 1, 2, 0xff})},
		{"x:binary=", "x", edm.Binary([]byte{})},
		{"x:binary=@blob.bin", "x", edm.Binary([]byte{0, 1, 2, 0xff})},
		{"x:binary=@empty", "x", edm.Binary([]byte{})},
	}
	for _, tt := range tests {
		name, v, err := parseSet(tt.arg, readFile)
		if err != nil {
			t.Errorf("parseSet(%q): %v", tt.arg, err)
			continue
		}
		if name != tt.name || !v.Equal(tt.want) {
			t.Errorf("parseSet(%q) = %s %#v, want %s %#v", tt.arg, name, v, tt.name, tt.want)
		}
	}

	bad := []struct{ arg, want string }{
		{"noequals", "no '='"},
		{"=v", "no property name"},
		{"q:int65=3", `unknown type "int65": want one of string, bool`},
		{"q:=3", `unknown type ""`},
		{"b:bool=yes", "not a bool"},
		{"i:int32=2147483648", "not an int32"},
		{"i:int32=1.0", "not an int32"},
		{"n:int64=9223372036854775808", "not an int64"},
		{"n:int64=", "not an int64"},
		{"d:double=abc", "not a double"},
		{"t:datetime=yesterday", "not a datetime"},
		{"t:datetime=2026-11-21T10:00:00.123456789Z", "finer than 100 ns"},
		{"g:guid=xyz", "not a GUID"},
		{"x:binary=AAEC/w", "not a binary"},
		{"x:binary=!!!!", "not a binary"},
		{"x:binary=@missing", "no such file"},
	}
	for _, tt := range bad {
		_, _, err := parseSet(tt.arg, readFile)
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("parseSet(%q) error = %v, want one containing %q", tt.arg, err, tt.want)
		}
	}
}
