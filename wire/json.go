package wire

import (
	"bytes"
	"encoding/json"
	"strconv"
	"time"
)

// appendString appends s as json.Marshal writes a string: HTML characters,
// control characters, U+2028, U+2029 and invalid UTF-8 escaped. Plain
// printable ASCII, the common case, is copied; anything else takes
// json.Marshal's own path.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			enc, _ := json.Marshal(s) // a string always marshals
			return append(b, enc...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// appendKey appends "name": for a name that needs no escaping.
func appendKey(b []byte, name string) []byte {
	b = append(b, '"')
	b = append(b, name...)
	return append(b, '"', ':')
}

// appendInt appends v.
func appendInt(b []byte, v int64) []byte { return strconv.AppendInt(b, v, 10) }

// appendUint appends v.
func appendUint(b []byte, v uint64) []byte { return strconv.AppendUint(b, v, 10) }

// appendTime appends t as json.Marshal writes a time.Time (RFC 3339 with
// nanoseconds, quoted), or fails as it does (a year outside 0–9999).
func appendTime(b []byte, t time.Time) ([]byte, error) {
	if y := t.Year(); y < 0 || y > 9999 {
		_, err := json.Marshal(t)
		return b, err
	}
	b = append(b, '"')
	b = t.AppendFormat(b, time.RFC3339Nano)
	return append(b, '"'), nil
}

// appendRaw appends raw, compact JSON (a json.RawMessage of this process's own
// making) as json.Marshal writes a RawMessage field: with '<', '>' and '&'
// escaped (and U+2028, U+2029, which compact JSON from this module already
// escapes).
func appendRaw(b []byte, raw []byte) []byte {
	if !bytes.ContainsAny(raw, "<>&\u2028\u2029") {
		return append(b, raw...)
	}
	var buf bytes.Buffer
	json.HTMLEscape(&buf, raw)
	return append(b, buf.Bytes()...)
}
