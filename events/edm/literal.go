package edm

import (
	"encoding/base64"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

// DateTimeLayout is the RFC 3339 form with 100 ns precision that Azure
// Tables writes.
const DateTimeLayout = "2006-01-02T15:04:05.0000000Z"

// FormatDateTime renders t in UTC with exactly 7 fractional digits.
func FormatDateTime(t time.Time) string { return t.UTC().Format(DateTimeLayout) }

// ParseDateTime parses an RFC 3339 time with up to 7 fractional digits. A
// finer time is an error rather than silently truncated: Azure stores 100 ns.
func ParseDateTime(s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("not an RFC 3339 date-time: %q", s)
	}
	t = t.UTC() // the range is Azure's, in UTC: "1601-01-01T00:30:00+01:00" is out
	if t.Nanosecond()%100 != 0 {
		return time.Time{}, fmt.Errorf("date-time %q is finer than 100 ns", s)
	}
	if t.Year() < 1601 || t.Year() > 9999 {
		return time.Time{}, fmt.Errorf("date-time %q is outside years 1601..9999", s)
	}
	return t, nil
}

// ParseGuid checks the 8-4-4-4-12 hex form (optionally in braces) and
// returns it in canonical lowercase.
func ParseGuid(s string) (string, error) {
	t := strings.TrimSuffix(strings.TrimPrefix(s, "{"), "}")
	if len(t) != 36 {
		return "", fmt.Errorf("not a GUID: %q", s)
	}
	for i := 0; i < 36; i++ {
		c := t[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return "", fmt.Errorf("not a GUID: %q", s)
			}
			continue
		}
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f' || c >= 'A' && c <= 'F') {
			return "", fmt.Errorf("not a GUID: %q", s)
		}
	}
	return strings.ToLower(t), nil
}

// FormatDouble renders f the way Azure's JSON does: shortest decimal, or
// "NaN", "Infinity", "-Infinity".
func FormatDouble(f float64) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// ParseDouble is the inverse of FormatDouble.
func ParseDouble(s string) (float64, error) {
	switch s {
	case "NaN":
		return math.NaN(), nil
	case "Infinity", "INF":
		return math.Inf(1), nil
	case "-Infinity", "-INF":
		return math.Inf(-1), nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, fmt.Errorf("not a double: %q", s)
	}
	return f, nil
}

func encodeBase64(b []byte) string { return base64.StdEncoding.EncodeToString(b) }
