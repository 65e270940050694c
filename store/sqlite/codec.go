package sqlite

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/store"
)

// Keys are stored as BLOBs whose byte order is UTF-16 code unit order.

func encodeKey(k string) []byte {
	b := make([]byte, len(k)) // never nil: nil binds as NULL
	for i := 0; i < len(k); i++ {
		b[i] = store.UTF16OrderByte(k[i])
	}
	return b
}

func decodeKey(b []byte) string {
	out := make([]byte, len(b))
	for i, c := range b {
		out[i] = store.UTF16OrderByteInverse(c)
	}
	return string(out)
}

// Properties are stored as one BLOB: a format byte, then the binary EDM
// encoding of edm.AppendBinary (property count, then per property in
// name order: name, type byte, value).

const propsFormat = 1

var errCorrupt = errors.New("corrupt properties")

func encodeProps(props edm.Entity) []byte {
	size := 2
	for name, v := range props {
		size += len(name) + len(v.Str) + len(v.Bytes) + 12
	}
	return edm.AppendBinary(append(make([]byte, 0, size), propsFormat), props)
}

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// decodeProps decodes what encodeProps wrote.
func decodeProps(b []byte) (edm.Entity, error) {
	if len(b) == 0 || b[0] != propsFormat {
		return nil, fmt.Errorf("%w: unknown format", errCorrupt)
	}
	r := bytes.NewReader(b[1:])
	props, err := edm.ReadBinary(r)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errCorrupt, err)
	}
	if r.Len() != 0 {
		return nil, fmt.Errorf("%w: %d bytes after the properties", errCorrupt, r.Len())
	}
	return props, nil
}

// decoder reads from b; on a short read it sets err and returns zeros.
type decoder struct {
	b   []byte
	err bool
}

func (d *decoder) take(n int) []byte {
	if d.err || n < 0 || n > len(d.b) {
		d.err = true
		return make([]byte, 8) // enough for any fixed-size read
	}
	p := d.b[:n:n]
	d.b = d.b[n:]
	return p
}

func (d *decoder) uvarint() uint64 {
	v, n := binary.Uvarint(d.b)
	if n <= 0 {
		d.err = true
		return 0
	}
	d.b = d.b[n:]
	return v
}

func (d *decoder) bytes() []byte {
	n := d.uvarint()
	if n > uint64(len(d.b)) {
		d.err = true
		return nil
	}
	return d.take(int(n))
}

// A continuation token names the last (pk, rk) a page returned; the next
// page starts after it. It is opaque to callers: base64url of a format byte,
// the length of pk, pk and rk.

const tokenFormat = 1

func encodeToken(pk, rk string) string {
	b := []byte{tokenFormat}
	b = appendString(b, pk)
	b = append(b, rk...)
	return base64.RawURLEncoding.EncodeToString(b)
}

func decodeToken(tok string) (pk, rk string, err error) {
	b, err := base64.RawURLEncoding.DecodeString(tok)
	if err != nil || len(b) == 0 || b[0] != tokenFormat {
		return "", "", fmt.Errorf("continuation token %q: %w", tok, store.ErrInvalid)
	}
	d := decoder{b: b[1:]}
	pk = string(d.bytes())
	rk = string(d.b)
	if d.err || !utf8.ValidString(pk) || !utf8.ValidString(rk) {
		return "", "", fmt.Errorf("continuation token %q: %w", tok, store.ErrInvalid)
	}
	return pk, rk, nil
}

// ticks counts the store clock in 100 ns units since the Unix epoch.
type ticks int64

func ticksOf(t time.Time) ticks { return ticks(t.Unix())*1e7 + ticks(t.Nanosecond()/100) }

func (t ticks) time() time.Time {
	return time.Unix(int64(t/1e7), int64(t%1e7)*100).UTC()
}

// etag renders a version in the form Azure uses for its etags.
func (t ticks) etag() string {
	s := t.time().Format(edm.DateTimeLayout)
	// Azure percent-encodes the colons: W/"datetime'2026-11-21T10%3A00%3A00.1234567Z'".
	out := make([]byte, 0, len(s)+20)
	out = append(out, `W/"datetime'`...)
	for i := 0; i < len(s); i++ {
		if s[i] == ':' {
			out = append(out, "%3A"...)
		} else {
			out = append(out, s[i])
		}
	}
	return string(append(out, `'"`...))
}
