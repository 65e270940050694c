package events

import (
	"bytes"
	"slices"
	"sync"

	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/vmihailenco/msgpack/v5"
)

// MarshalMsgpack encodes c in the MessagePack form: the fields and names of
// the JSON form, with values in their native msgpack kinds. String is str,
// Boolean bool, Int32 int, Double float64; Int64 is an int, DateTime and
// Guid a str, Binary a bin, each followed by its "name@odata.type"
// annotation. The output is deterministic (properties and meta keys sorted).
// See Encode for what it checks.
func MarshalMsgpack(c *Command) ([]byte, error) {
	at, err := checkWire(c)
	if err != nil {
		return nil, err
	}
	e := mpEncoders.Get().(*mpEncoder)
	defer e.release()

	n := 4
	if c.Prune != nil {
		n++
	}
	if c.Issuer != "" {
		n++
	}
	if !at.IsZero() {
		n++
	}
	if len(c.Meta) > 0 {
		n++
	}
	e.mapLen(n)
	e.str("id")
	e.str(c.ID)
	e.str("table")
	e.str(c.Table)
	e.str("pk")
	e.str(c.PK)
	e.str("ops")
	e.err(e.enc.EncodeArrayLen(len(c.Ops)))
	for i := range c.Ops {
		e.op(&c.Ops[i])
	}
	if c.Prune != nil {
		e.prune(c.Prune)
	}
	if c.Issuer != "" {
		e.str("issuer")
		e.str(c.Issuer)
	}
	if !at.IsZero() {
		e.str("issuedAt")
		e.str(edm.FormatDateTime(at))
	}
	if len(c.Meta) > 0 {
		e.str("meta")
		e.mapLen(len(c.Meta))
		e.keys = appendSortedKeys(e.keys[:0], c.Meta)
		for _, k := range e.keys {
			e.str(k)
			e.str(c.Meta[k])
		}
	}
	if e.failed != nil {
		return nil, e.failed
	}
	return bytes.Clone(e.buf.Bytes()), nil
}

// mpEncoder is a pooled msgpack encoder writing into its own buffer.
type mpEncoder struct {
	buf    bytes.Buffer
	enc    *msgpack.Encoder
	keys   []string
	failed error // the first write error; bytes.Buffer never fails
}

var mpEncoders = sync.Pool{New: func() any {
	e := new(mpEncoder)
	e.enc = msgpack.NewEncoder(&e.buf)
	return e
}}

func (e *mpEncoder) release() {
	if e.buf.Cap() > 4*MaxCommandBytes {
		return // let a huge buffer go
	}
	e.buf.Reset()
	clear(e.keys)
	e.keys = e.keys[:0]
	e.failed = nil
	mpEncoders.Put(e)
}

func (e *mpEncoder) err(err error) {
	if err != nil && e.failed == nil {
		e.failed = err
	}
}

func (e *mpEncoder) str(s string) { e.err(e.enc.EncodeString(s)) }
func (e *mpEncoder) mapLen(n int) { e.err(e.enc.EncodeMapLen(n)) }

// strHeader writes the header of a str of n bytes, for a string written
// in pieces.
func (e *mpEncoder) strHeader(n int) {
	switch {
	case n < 32:
		e.buf.WriteByte(0xa0 | byte(n))
	case n < 1<<8:
		e.buf.Write([]byte{0xd9, byte(n)})
	case n < 1<<16:
		e.buf.Write([]byte{0xda, byte(n >> 8), byte(n)})
	default:
		e.buf.Write([]byte{0xdb, byte(n >> 24), byte(n >> 16), byte(n >> 8), byte(n)})
	}
}

func (e *mpEncoder) op(op *RowOp) {
	n := 2
	if op.Entity != nil {
		n++
	}
	if op.IfVersion != nil {
		n++
	}
	e.mapLen(n)
	e.str("op")
	e.str(string(op.Op))
	e.str("rk")
	e.str(op.RK)
	if op.Entity != nil {
		e.str("entity")
		e.entity(op.Entity)
	}
	if op.IfVersion != nil {
		e.str("ifVersion")
		e.err(e.enc.EncodeInt(*op.IfVersion))
	}
}

func (e *mpEncoder) entity(ent edm.Entity) {
	n := len(ent)
	for _, v := range ent {
		if mpAnnotated(v.Type) {
			n++
		}
	}
	e.mapLen(n)
	e.keys = appendSortedKeys(e.keys[:0], ent)
	for _, name := range e.keys {
		v := ent[name]
		e.str(name)
		switch v.Type {
		case edm.TypeString, edm.TypeGuid:
			e.str(v.Str)
		case edm.TypeBoolean:
			e.err(e.enc.EncodeBool(v.Bool))
		case edm.TypeInt32, edm.TypeInt64:
			e.err(e.enc.EncodeInt(v.Int))
		case edm.TypeDouble:
			e.err(e.enc.EncodeFloat64(v.Float))
		case edm.TypeDateTime:
			e.str(edm.FormatDateTime(v.Time))
		case edm.TypeBinary:
			// EncodeBytes writes nil for a nil slice: write the length.
			e.err(e.enc.EncodeBytesLen(len(v.Bytes)))
			e.buf.Write(v.Bytes)
		}
		if mpAnnotated(v.Type) {
			e.strHeader(len(name) + len(annotationSuffix))
			e.buf.WriteString(name)
			e.buf.WriteString(annotationSuffix)
			e.str(v.Type.String())
		}
	}
}

// mpAnnotated reports whether msgpack needs an annotation for type t: the
// native kind of every other type says it.
func mpAnnotated(t edm.Type) bool {
	switch t {
	case edm.TypeInt64, edm.TypeDateTime, edm.TypeGuid, edm.TypeBinary:
		return true
	}
	return false
}

// appendSortedKeys appends the keys of m to keys, sorted.
func appendSortedKeys[M ~map[string]V, V any](keys []string, m M) []string {
	keys = slices.Grow(keys, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
