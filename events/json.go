package events

import (
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/tablejournal/tablejournal/events/edm"
)

// MarshalJSON encodes c in the JSON form of SPEC §2: fields in the order
// id, table, pk, ops, issuer, issuedAt, meta (the last three omitted when
// empty), properties and meta keys sorted by name, and an "@odata.type"
// annotation after every value that needs one to decode to the same type
// (Int64, DateTime, Guid, Binary, and Doubles that are integral or not
// finite). See Encode for what it checks.
func MarshalJSON(c *Command) ([]byte, error) {
	at, err := checkWire(c)
	if err != nil {
		return nil, err
	}
	w := jsonWriter{b: make([]byte, 0, 256)}
	w.raw(`{"id":`)
	w.str(c.ID)
	w.raw(`,"table":`)
	w.str(c.Table)
	w.raw(`,"pk":`)
	w.str(c.PK)
	w.raw(`,"ops":[`)
	for i := range c.Ops {
		if i > 0 {
			w.raw(",")
		}
		w.op(&c.Ops[i])
	}
	w.raw("]")
	if c.Prune != nil {
		w.b = appendPruneJSON(w.b, c.Prune)
	}
	if c.Issuer != "" {
		w.raw(`,"issuer":`)
		w.str(c.Issuer)
	}
	if !at.IsZero() {
		w.raw(`,"issuedAt":`)
		w.str(edm.FormatDateTime(at))
	}
	if len(c.Meta) > 0 {
		w.raw(`,"meta":{`)
		for i, k := range appendSortedKeys(nil, c.Meta) {
			if i > 0 {
				w.raw(",")
			}
			w.str(k)
			w.raw(":")
			w.str(c.Meta[k])
		}
		w.raw("}")
	}
	w.raw("}")
	return w.b, nil
}

type jsonWriter struct{ b []byte }

func (w *jsonWriter) raw(s string) { w.b = append(w.b, s...) }

func (w *jsonWriter) str(s string) { w.b = appendJSONString(w.b, s) }

func (w *jsonWriter) op(op *RowOp) {
	w.raw(`{"op":`)
	w.str(string(op.Op))
	w.raw(`,"rk":`)
	w.str(op.RK)
	if op.Entity != nil {
		w.raw(`,"entity":{`)
		for i, name := range appendSortedKeys(nil, op.Entity) {
			if i > 0 {
				w.raw(",")
			}
			w.property(name, op.Entity[name])
		}
		w.raw("}")
	}
	if op.IfVersion != nil {
		w.raw(`,"ifVersion":`)
		w.b = strconv.AppendInt(w.b, *op.IfVersion, 10)
	}
	w.raw("}")
}

// property writes "name":value and, where needed, the annotation.
func (w *jsonWriter) property(name string, v edm.Value) {
	w.str(name)
	w.raw(":")
	annotate := true
	switch v.Type {
	case edm.TypeString:
		w.str(v.Str)
		annotate = false
	case edm.TypeBoolean:
		w.b = strconv.AppendBool(w.b, v.Bool)
		annotate = false
	case edm.TypeInt32:
		w.b = strconv.AppendInt(w.b, v.Int, 10)
		annotate = false
	case edm.TypeInt64:
		w.b = append(w.b, '"')
		w.b = strconv.AppendInt(w.b, v.Int, 10)
		w.b = append(w.b, '"')
	case edm.TypeDouble:
		if math.IsNaN(v.Float) || math.IsInf(v.Float, 0) {
			w.str(edm.FormatDouble(v.Float))
			break
		}
		start := len(w.b)
		w.b = strconv.AppendFloat(w.b, v.Float, 'g', -1, 64)
		// Only a literal with a fraction or exponent reads back as a
		// Double without annotation; "12" and "-0" would be Int32.
		annotate = isIntegerLiteral(string(w.b[start:]))
	case edm.TypeDateTime:
		w.str(edm.FormatDateTime(v.Time))
	case edm.TypeGuid:
		w.str(v.Str)
	case edm.TypeBinary:
		w.b = append(w.b, '"')
		w.b = base64Std.AppendEncode(w.b, v.Bytes)
		w.b = append(w.b, '"')
	}
	if annotate {
		w.raw(",")
		w.str(name)
		w.b = append(w.b[:len(w.b)-1], annotationSuffix+`":"`...)
		w.b = append(w.b, v.Type.String()...)
		w.raw(`"`)
	}
}

// appendJSONString appends s, valid UTF-8, as a JSON string. It escapes
// only what JSON requires, plus U+2028 and U+2029 for JavaScript readers;
// HTML characters and non-ASCII text are written as they are.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xF])
			start = i + size
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
