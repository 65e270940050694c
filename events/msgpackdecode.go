package events

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/vmihailenco/msgpack/v5"
	"github.com/vmihailenco/msgpack/v5/msgpcode"
)

// UnmarshalMsgpack decodes a command from the MessagePack form (see
// MarshalMsgpack). It reads values natively and is tolerant where a
// non-Go client may differ: an Int64 may also come as a decimal str, a
// Binary as a base64 str, a Double as an int or a str ("NaN",
// "Infinity", "-Infinity" or a decimal); an unannotated bin is a Binary.
// It is strict otherwise, with the same rules as UnmarshalJSON: one map,
// nothing after it, str map keys, valid UTF-8, no duplicates. Every error
// is a *ValidationError wrapping ErrInvalid. See Decode.
func UnmarshalMsgpack(data []byte) (*Command, error) {
	d := mpDecoders.Get().(*mpDecoder)
	defer d.release()
	d.r.Reset(data)
	c, err := d.command()
	if err != nil {
		return nil, err
	}
	if d.r.Len() != 0 {
		return nil, invalid("", RuleMalformed, "%d bytes after the command map", d.r.Len())
	}
	return c, nil
}

// mpDecoder is a pooled msgpack decoder reading from its own bytes.Reader,
// which the library reads unbuffered.
type mpDecoder struct {
	r      bytes.Reader
	dec    *msgpack.Decoder
	b      entityBuilder
	keyBuf []byte
}

var mpDecoders = sync.Pool{New: func() any {
	d := new(mpDecoder)
	d.dec = msgpack.NewDecoder(&d.r)
	return d
}}

func (d *mpDecoder) release() {
	d.r.Reset(nil)
	d.b.e = nil
	clear(d.b.ann)
	clear(d.b.pending)
	mpDecoders.Put(d)
}

// maxSkipDepth bounds the nesting of an unknown field's value, so that no
// input can exhaust the stack.
const maxSkipDepth = 32

func (d *mpDecoder) command() (*Command, error) {
	n, err := d.mapLen("", "command")
	if err != nil {
		return nil, err
	}
	c := new(Command)
	var seen uint
	for range n {
		key, err := d.key("")
		if err != nil {
			return nil, err
		}
		var bit uint
		switch string(key) {
		case "id":
			bit = fieldID
			c.ID, err = d.str("id")
		case "table":
			bit = fieldTable
			c.Table, err = d.str("table")
		case "pk":
			bit = fieldPK
			c.PK, err = d.str("pk")
		case "ops":
			bit = fieldOps
			c.Ops, err = d.ops()
		case "issuer":
			bit = fieldIssuer
			c.Issuer, err = d.str("issuer")
		case "issuedAt":
			bit = fieldIssuedAt
			var s string
			if s, err = d.str("issuedAt"); err == nil && s != "" {
				if c.IssuedAt, err = ParseDateTime(s); err != nil {
					err = invalid("issuedAt", RuleBadDateTime, "%v", err)
				}
			}
		case "meta":
			bit = fieldMeta
			c.Meta, err = d.meta()
		default:
			err = d.skip(string(key), 0)
		}
		if err != nil {
			return nil, err
		}
		if seen&bit != 0 {
			return nil, invalid(string(key), RuleDuplicateField, "field given twice")
		}
		seen |= bit
	}
	return c, nil
}

func (d *mpDecoder) ops() ([]RowOp, error) {
	c, err := d.peek("ops")
	if err != nil || c == msgpcode.Nil {
		return nil, d.nilOr(err)
	}
	if !isArray(c) {
		return nil, invalid("ops", RuleMalformed, "ops is not an array")
	}
	n, err := d.dec.DecodeArrayLen()
	if err != nil {
		return nil, malformed("ops", err)
	}
	if n > d.r.Len() {
		return nil, invalid("ops", RuleMalformed, "array of %d exceeds the input", n)
	}
	// Grow as the ops arrive: a lying header must not make a huge slice.
	ops := make([]RowOp, 0, min(n, MaxOpsPerCommand))
	for i := range n {
		ops = append(ops, RowOp{})
		if err := d.op(i, &ops[i]); err != nil {
			return nil, err
		}
	}
	return ops, nil
}

func (d *mpDecoder) op(i int, op *RowOp) error {
	n, err := d.mapLen(fmt.Sprintf("ops[%d]", i), "row operation")
	if err != nil {
		return err
	}
	field := func(name string) string { return fmt.Sprintf("ops[%d].%s", i, name) }
	var seen uint
	for range n {
		key, err := d.key(fmt.Sprintf("ops[%d]", i))
		if err != nil {
			return err
		}
		var bit uint
		switch string(key) {
		case "op":
			bit = fieldOp
			var s string
			s, err = d.str(field("op"))
			op.Op = OpKind(s)
		case "rk":
			bit = fieldRK
			op.RK, err = d.str(field("rk"))
		case "entity":
			bit = fieldEntity
			op.Entity, err = d.entity(i)
		case "ifVersion":
			bit = fieldIfVersion
			op.IfVersion, err = d.ifVersion(field("ifVersion"))
		default:
			err = d.skip(field(string(key)), 0)
		}
		if err != nil {
			return err
		}
		if seen&bit != 0 {
			return invalid(field(string(key)), RuleDuplicateField, "field given twice")
		}
		seen |= bit
	}
	return nil
}

func (d *mpDecoder) ifVersion(field string) (*int64, error) {
	c, err := d.peek(field)
	if err != nil || c == msgpcode.Nil {
		return nil, d.nilOr(err)
	}
	if !isInt(c) {
		return nil, invalid(field, RuleMalformed, "ifVersion is not an integer")
	}
	v, wide, err := d.int(field)
	if err != nil {
		return nil, err
	}
	if wide != "" {
		return nil, invalid(field, RuleMalformed, "ifVersion %s is out of range", wide)
	}
	return &v, nil
}

func (d *mpDecoder) entity(i int) (Entity, error) {
	field := fmt.Sprintf("ops[%d].entity", i)
	c, err := d.peek(field)
	if err != nil || c == msgpcode.Nil {
		return nil, d.nilOr(err)
	}
	n, err := d.mapLen(field, "entity")
	if err != nil {
		return nil, err
	}
	d.b.reset(i, min(n, MaxStoreProperties))
	for range n {
		k, err := d.key(field)
		if err != nil {
			return nil, err
		}
		key := string(k)
		v, err := d.value(entityField(i, key), strings.HasSuffix(key, annotationSuffix))
		if err != nil {
			return nil, err
		}
		if err := d.b.add(key, v); err != nil {
			return nil, err
		}
	}
	return d.b.finish()
}

// value reads a property value (or an annotation) in its native kind.
func (d *mpDecoder) value(field string, annotation bool) (Value, error) {
	c, err := d.peek(field)
	if err != nil {
		return Value{}, err
	}
	switch {
	case msgpcode.IsString(c):
		s, err := d.str(field)
		return String(s), err
	case c == msgpcode.False || c == msgpcode.True:
		b, err := d.dec.DecodeBool()
		return Bool(b), d.wrap(field, err)
	case isInt(c):
		n, wide, err := d.int(field)
		switch {
		case err != nil:
			return Value{}, err
		case wide != "":
			return Value{Type: typeNumber, Str: wide}, nil
		case n < math.MinInt32 || n > math.MaxInt32:
			return Value{Type: typeWideInt, Int: n}, nil
		}
		return Int32(int32(n)), nil
	case c == msgpcode.Float || c == msgpcode.Double:
		f, err := d.dec.DecodeFloat64()
		return Double(f), d.wrap(field, err)
	case msgpcode.IsBin(c):
		b, err := d.dec.DecodeBytes()
		return Binary(b), d.wrap(field, err)
	case annotation:
		return Value{}, invalid(field, RuleBadAnnotation, "annotation is not a type name")
	case c == msgpcode.Nil:
		return Value{}, invalid(field, RuleMalformed, "nil is not a property value")
	}
	return Value{}, invalid(field, RuleMalformed, "a map, array or extension is not a property value")
}

// int reads any msgpack integer. A uint64 beyond int64 comes back as its
// decimal text in wide.
func (d *mpDecoder) int(field string) (n int64, wide string, err error) {
	c, _ := d.dec.PeekCode()
	if c == msgpcode.Uint64 {
		u, err := d.dec.DecodeUint64()
		if err != nil {
			return 0, "", d.wrap(field, err)
		}
		if u > math.MaxInt64 {
			return 0, strconv.FormatUint(u, 10), nil
		}
		return int64(u), "", nil
	}
	n, err = d.dec.DecodeInt64()
	return n, "", d.wrap(field, err)
}

func (d *mpDecoder) meta() (map[string]string, error) {
	c, err := d.peek("meta")
	if err != nil || c == msgpcode.Nil {
		return nil, d.nilOr(err)
	}
	n, err := d.mapLen("meta", "meta")
	if err != nil {
		return nil, err
	}
	m := make(map[string]string, min(n, 64))
	for range n {
		k, err := d.key("meta")
		if err != nil {
			return nil, err
		}
		key := string(k)
		field := fmt.Sprintf("meta[%q]", key)
		c, err := d.peek(field)
		if err != nil {
			return nil, err
		}
		if !msgpcode.IsString(c) {
			return nil, invalid(field, RuleMalformed, "meta value is not a string")
		}
		v, err := d.str(field)
		if err != nil {
			return nil, err
		}
		if _, dup := m[key]; dup {
			return nil, invalid(field, RuleDuplicateField, "meta key given twice")
		}
		m[key] = v
	}
	return m, nil
}

// skip reads past the value of an unknown field, to a bounded depth.
func (d *mpDecoder) skip(field string, depth int) error {
	c, err := d.peek(field)
	if err != nil {
		return err
	}
	var n int
	switch {
	case isMap(c):
		if n, err = d.dec.DecodeMapLen(); err == nil {
			n *= 2
		}
	case isArray(c):
		n, err = d.dec.DecodeArrayLen()
	default:
		return d.wrap(field, d.dec.Skip())
	}
	if err != nil {
		return malformed(field, err)
	}
	if depth >= maxSkipDepth {
		return invalid(field, RuleMalformed, "nested deeper than %d", maxSkipDepth)
	}
	if n > d.r.Len() {
		return invalid(field, RuleMalformed, "container of %d values exceeds the input", n)
	}
	for range n {
		if err := d.skip(field, depth+1); err != nil {
			return err
		}
	}
	return nil
}

// mapLen reads the header of a map that must be there.
func (d *mpDecoder) mapLen(field, what string) (int, error) {
	c, err := d.peek(field)
	if err != nil {
		return 0, err
	}
	if !isMap(c) {
		return 0, invalid(field, RuleMalformed, "a %s is a map", what)
	}
	n, err := d.dec.DecodeMapLen()
	if err != nil {
		return 0, malformed(field, err)
	}
	if 2*n > d.r.Len() {
		return 0, invalid(field, RuleMalformed, "map of %d entries exceeds the input", n)
	}
	return n, nil
}

// key reads a map key, a str, into a buffer valid until the next call.
func (d *mpDecoder) key(field string) ([]byte, error) {
	c, err := d.peek(field)
	if err != nil {
		return nil, err
	}
	if !msgpcode.IsString(c) {
		return nil, invalid(field, RuleMalformed, "map key is not a string")
	}
	n, err := d.dec.DecodeBytesLen()
	if err != nil {
		return nil, malformed(field, err)
	}
	if n > d.r.Len() {
		return nil, malformed(field, io.ErrUnexpectedEOF)
	}
	d.keyBuf = slices.Grow(d.keyBuf[:0], n)[:n]
	if err := d.dec.ReadFull(d.keyBuf); err != nil {
		return nil, malformed(field, err)
	}
	if !utf8.Valid(d.keyBuf) {
		return nil, invalid(field, RuleInvalidUTF8, "map key is not valid UTF-8")
	}
	return d.keyBuf, nil
}

// str reads a str, or nil as "".
func (d *mpDecoder) str(field string) (string, error) {
	c, err := d.peek(field)
	if err != nil {
		return "", err
	}
	if c == msgpcode.Nil {
		return "", d.wrap(field, d.dec.DecodeNil())
	}
	if !msgpcode.IsString(c) {
		return "", invalid(field, RuleMalformed, "%s is not a string", field)
	}
	s, err := d.dec.DecodeString()
	if err != nil {
		return "", malformed(field, err)
	}
	if !utf8.ValidString(s) {
		return "", invalid(field, RuleInvalidUTF8, "not valid UTF-8")
	}
	return s, nil
}

// peek returns the code of the next value; the end of input is an error.
func (d *mpDecoder) peek(field string) (byte, error) {
	c, err := d.dec.PeekCode()
	if err != nil {
		return 0, d.wrap(field, err)
	}
	return c, nil
}

// nilOr consumes a nil when err is nil.
func (d *mpDecoder) nilOr(err error) error {
	if err != nil {
		return err
	}
	return d.wrap("", d.dec.DecodeNil())
}

// wrap turns a library error into a RuleMalformed *ValidationError.
func (d *mpDecoder) wrap(field string, err error) error {
	if err == nil {
		return nil
	}
	var ve *ValidationError
	if errors.As(err, &ve) {
		return err
	}
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return malformed(field, err)
}

func isMap(c byte) bool {
	return msgpcode.IsFixedMap(c) || c == msgpcode.Map16 || c == msgpcode.Map32
}

func isArray(c byte) bool {
	return msgpcode.IsFixedArray(c) || c == msgpcode.Array16 || c == msgpcode.Array32
}

func isInt(c byte) bool {
	return msgpcode.IsFixedNum(c) || c >= msgpcode.Uint8 && c <= msgpcode.Int64
}
