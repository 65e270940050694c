package events

import (
	"bytes"
	"errors"
	"io"
	"math"
	"slices"
	"strconv"
	"sync"
	"unicode/utf8"

	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/events/rules"
	"github.com/vmihailenco/msgpack/v5"
	"github.com/vmihailenco/msgpack/v5/msgpcode"
)

// UnmarshalMsgpack decodes a command from the MessagePack form (see
// MarshalMsgpack). It reads values natively and is tolerant where a
// non-Go client may differ: an Int64 may also come as a decimal str, a
// Binary as a base64 str, a Double as an int or a str ("NaN",
// "Infinity", "-Infinity" or a decimal); an unannotated bin is a Binary.
// It is strict otherwise, with the same rules as UnmarshalJSON: one map,
// nothing after it, str map keys, valid UTF-8, no duplicates, no unknown
// fields, "rk" in every operation. Every error is a *rules.ValidationError
// wrapping rules.ErrInvalid. See Decode.
func UnmarshalMsgpack(data []byte) (*Command, error) {
	d := mpDecoders.Get().(*mpDecoder)
	defer d.release()
	d.r.Reset(data)
	c, err := d.command()
	if err != nil {
		return nil, err
	}
	if d.r.Len() != 0 {
		return nil, rules.Errorf("", rules.Malformed, "%d bytes after the command map", d.r.Len())
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

func (d *mpDecoder) command() (*Command, error) {
	n, err := d.mapLen(topPath(""), "command")
	if err != nil {
		return nil, err
	}
	c := new(Command)
	var seen uint
	for range n {
		k, err := d.key(topPath(""))
		if err != nil {
			return nil, err
		}
		var bit uint
		p := topPath("")
		switch string(k) {
		case "id":
			bit, p = fieldID, topPath("id")
			c.ID, err = d.str(p)
		case "table":
			bit, p = fieldTable, topPath("table")
			c.Table, err = d.str(p)
		case "pk":
			bit, p = fieldPK, topPath("pk")
			c.PK, err = d.str(p)
		case "ops":
			bit, p = fieldOps, topPath("ops")
			c.Ops, err = d.ops()
		case "issuer":
			bit, p = fieldIssuer, topPath("issuer")
			c.Issuer, err = d.str(p)
		case "issuedAt":
			bit, p = fieldIssuedAt, topPath("issuedAt")
			var s string
			if s, err = d.str(p); err == nil && s != "" {
				if c.IssuedAt, err = edm.ParseDateTime(s); err != nil {
					err = p.fail(rules.BadDateTime, "%v", err)
				}
			}
		case "meta":
			bit, p = fieldMeta, topPath("meta")
			c.Meta, err = d.meta()
		case "prune":
			bit, p = fieldPrune, topPath("prune")
			c.Prune, err = d.prune()
		default:
			err = unknownField(topPath(""), string(k), commandFields)
		}
		if err != nil {
			return nil, err
		}
		if seen&bit != 0 {
			return nil, p.fail(rules.DuplicateField, "field given twice")
		}
		seen |= bit
	}
	return c, nil
}

func (d *mpDecoder) ops() ([]RowOp, error) {
	p := topPath("ops")
	c, err := d.peek(p)
	if err != nil || c == msgpcode.Nil {
		return nil, d.nilOr(err)
	}
	if !isArray(c) {
		return nil, p.fail(rules.Malformed, "ops is not an array")
	}
	n, err := d.dec.DecodeArrayLen()
	if err != nil {
		return nil, rules.MalformedInput(p.String(), err)
	}
	if n > d.r.Len() {
		return nil, p.fail(rules.Malformed, "array of %d exceeds the input", n)
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
	n, err := d.mapLen(opPath(i, ""), "row operation")
	if err != nil {
		return err
	}
	var seen uint
	hasRK := false
	for range n {
		k, err := d.key(opPath(i, ""))
		if err != nil {
			return err
		}
		var bit uint
		p := opPath(i, "")
		switch string(k) {
		case "op":
			bit, p = fieldOp, opPath(i, "op")
			op.Op, err = d.opKind(p)
		case "rk":
			bit, p = fieldRK, opPath(i, "rk")
			op.RK, hasRK, err = d.nullableStr(p)
		case "entity":
			bit, p = fieldEntity, opPath(i, "entity")
			op.Entity, err = d.entity(i)
		case "ifVersion":
			bit, p = fieldIfVersion, opPath(i, "ifVersion")
			op.IfVersion, err = d.ifVersion(p)
		default:
			err = unknownField(opPath(i, ""), string(k), opFields)
		}
		if err != nil {
			return err
		}
		if seen&bit != 0 {
			return p.fail(rules.DuplicateField, "field given twice")
		}
		seen |= bit
	}
	if !hasRK {
		return missingRK(i)
	}
	return nil
}

// opKind reads an operation name, without allocating for the known ones.
func (d *mpDecoder) opKind(p path) (OpKind, error) {
	c, err := d.peek(p)
	if err != nil || c == msgpcode.Nil {
		return "", d.nilOr(err)
	}
	b, err := d.strBytes(p)
	if err != nil {
		return "", err
	}
	for _, k := range [...]OpKind{OpInsert, OpReplace, OpMerge, OpUpsert, OpUpsertMerge, OpDelete} {
		if string(b) == string(k) {
			return k, nil
		}
	}
	return OpKind(b), nil
}

func (d *mpDecoder) ifVersion(p path) (*int64, error) {
	c, err := d.peek(p)
	if err != nil || c == msgpcode.Nil {
		return nil, d.nilOr(err)
	}
	if !isInt(c) {
		return nil, p.fail(rules.Malformed, "ifVersion is not an integer")
	}
	v, wide, err := d.int(p)
	if err != nil {
		return nil, err
	}
	if wide != "" {
		return nil, p.fail(rules.Malformed, "ifVersion %s is out of range", wide)
	}
	return &v, nil
}

func (d *mpDecoder) entity(i int) (edm.Entity, error) {
	p := entityPath(i)
	c, err := d.peek(p)
	if err != nil || c == msgpcode.Nil {
		return nil, d.nilOr(err)
	}
	n, err := d.mapLen(p, "entity")
	if err != nil {
		return nil, err
	}
	d.b.reset(i, min(n, MaxStoreProperties))
	for range n {
		k, err := d.key(p)
		if err != nil {
			return nil, err
		}
		if name, ok := bytes.CutSuffix(k, []byte(annotationSuffix)); ok {
			err = d.annotation(string(name))
		} else {
			key := string(k)
			var v edm.Value
			if v, err = d.value(propertyPath(i, key)); err == nil {
				err = d.b.add(key, v)
			}
		}
		if err != nil {
			return nil, err
		}
	}
	return d.b.finish()
}

// annotation reads the type name of property name.
func (d *mpDecoder) annotation(name string) error {
	p := propertyPath(d.b.op, name+annotationSuffix)
	c, err := d.peek(p)
	if err != nil {
		return err
	}
	if !msgpcode.IsString(c) {
		return p.fail(rules.BadAnnotation, "annotation is not a type name")
	}
	b, err := d.strBytes(p)
	if err != nil {
		return err
	}
	for t := edm.TypeString; t <= edm.TypeBinary; t++ {
		if string(b) == t.String() {
			return d.b.addAnnotationType(name, t)
		}
	}
	return p.fail(rules.UnknownType, "unknown type %q", b)
}

// value reads a property value in its native kind.
func (d *mpDecoder) value(p path) (edm.Value, error) {
	c, err := d.peek(p)
	if err != nil {
		return edm.Value{}, err
	}
	switch {
	case msgpcode.IsString(c):
		s, err := d.str(p)
		return edm.String(s), err
	case c == msgpcode.False || c == msgpcode.True:
		b, err := d.dec.DecodeBool()
		return edm.Bool(b), d.wrap(p, err)
	case isInt(c):
		n, wide, err := d.int(p)
		switch {
		case err != nil:
			return edm.Value{}, err
		case wide != "":
			return edm.Value{Type: typeNumber, Str: wide}, nil
		case n < math.MinInt32 || n > math.MaxInt32:
			return edm.Value{Type: typeWideInt, Int: n}, nil
		}
		return edm.Int32(int32(n)), nil
	case c == msgpcode.Float || c == msgpcode.Double:
		f, err := d.dec.DecodeFloat64()
		return edm.Double(f), d.wrap(p, err)
	case msgpcode.IsBin(c):
		b, err := d.dec.DecodeBytes()
		return edm.Binary(b), d.wrap(p, err)
	case c == msgpcode.Nil:
		return edm.Value{}, p.fail(rules.Malformed, "nil is not a property value")
	}
	return edm.Value{}, p.fail(rules.Malformed, "a map, array or extension is not a property value")
}

// int reads any msgpack integer. A uint64 beyond int64 comes back as its
// decimal text in wide.
func (d *mpDecoder) int(p path) (n int64, wide string, err error) {
	c, _ := d.dec.PeekCode()
	if c == msgpcode.Uint64 {
		u, err := d.dec.DecodeUint64()
		if err != nil {
			return 0, "", d.wrap(p, err)
		}
		if u > math.MaxInt64 {
			return 0, strconv.FormatUint(u, 10), nil
		}
		return int64(u), "", nil
	}
	n, err = d.dec.DecodeInt64()
	return n, "", d.wrap(p, err)
}

func (d *mpDecoder) meta() (map[string]string, error) {
	p := topPath("meta")
	c, err := d.peek(p)
	if err != nil || c == msgpcode.Nil {
		return nil, d.nilOr(err)
	}
	n, err := d.mapLen(p, "meta")
	if err != nil {
		return nil, err
	}
	m := make(map[string]string, min(n, MaxMetaEntries))
	for range n {
		k, err := d.key(p)
		if err != nil {
			return nil, err
		}
		key := string(k)
		kp := metaPath(key)
		c, err := d.peek(kp)
		if err != nil {
			return nil, err
		}
		if !msgpcode.IsString(c) {
			return nil, kp.fail(rules.Malformed, "meta value is not a string")
		}
		v, err := d.str(kp)
		if err != nil {
			return nil, err
		}
		if _, dup := m[key]; dup {
			return nil, kp.fail(rules.DuplicateField, "meta key given twice")
		}
		m[key] = v
	}
	return m, nil
}

// mapLen reads the header of a map that must be there.
func (d *mpDecoder) mapLen(p path, what string) (int, error) {
	c, err := d.peek(p)
	if err != nil {
		return 0, err
	}
	if !isMap(c) {
		return 0, p.fail(rules.Malformed, "a %s is a map", what)
	}
	n, err := d.dec.DecodeMapLen()
	if err != nil {
		return 0, rules.MalformedInput(p.String(), err)
	}
	if 2*n > d.r.Len() {
		return 0, p.fail(rules.Malformed, "map of %d entries exceeds the input", n)
	}
	return n, nil
}

// key reads a map key, a str, into a buffer valid until the next read.
func (d *mpDecoder) key(p path) ([]byte, error) {
	c, err := d.peek(p)
	if err != nil {
		return nil, err
	}
	if !msgpcode.IsString(c) {
		return nil, p.fail(rules.Malformed, "map key is not a string")
	}
	return d.strBytes(p)
}

// strBytes reads a str into a buffer valid until the next read.
func (d *mpDecoder) strBytes(p path) ([]byte, error) {
	if c, err := d.peek(p); err != nil {
		return nil, err
	} else if !msgpcode.IsString(c) {
		return nil, p.fail(rules.Malformed, "not a string")
	}
	n, err := d.dec.DecodeBytesLen()
	if err != nil {
		return nil, rules.MalformedInput(p.String(), err)
	}
	if n > d.r.Len() {
		return nil, rules.MalformedInput(p.String(), io.ErrUnexpectedEOF)
	}
	d.keyBuf = slices.Grow(d.keyBuf[:0], n)[:n]
	if err := d.dec.ReadFull(d.keyBuf); err != nil {
		return nil, rules.MalformedInput(p.String(), err)
	}
	if !utf8.Valid(d.keyBuf) {
		return nil, p.fail(rules.InvalidUTF8, "not valid UTF-8")
	}
	return d.keyBuf, nil
}

// str reads a str, or nil as "".
func (d *mpDecoder) str(p path) (string, error) {
	s, _, err := d.nullableStr(p)
	return s, err
}

// nullableStr reads a str (ok) or nil (not ok, "").
func (d *mpDecoder) nullableStr(p path) (s string, ok bool, err error) {
	c, err := d.peek(p)
	if err != nil {
		return "", false, err
	}
	if c == msgpcode.Nil {
		return "", false, d.wrap(p, d.dec.DecodeNil())
	}
	if !msgpcode.IsString(c) {
		return "", false, p.fail(rules.Malformed, "not a string")
	}
	s, err = d.dec.DecodeString()
	if err != nil {
		return "", false, rules.MalformedInput(p.String(), err)
	}
	if !utf8.ValidString(s) {
		return "", false, p.fail(rules.InvalidUTF8, "not valid UTF-8")
	}
	return s, true, nil
}

// peek returns the code of the next value; the end of input is an error.
func (d *mpDecoder) peek(p path) (byte, error) {
	c, err := d.dec.PeekCode()
	if err != nil {
		return 0, d.wrap(p, err)
	}
	return c, nil
}

// nilOr consumes a nil when err is nil.
func (d *mpDecoder) nilOr(err error) error {
	if err != nil {
		return err
	}
	return d.wrap(topPath(""), d.dec.DecodeNil())
}

// wrap turns a library error into a rules.Malformed *rules.ValidationError.
func (d *mpDecoder) wrap(p path, err error) error {
	if err == nil {
		return nil
	}
	var ve *rules.ValidationError
	if errors.As(err, &ve) {
		return err
	}
	return rules.MalformedInput(p.String(), err)
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
