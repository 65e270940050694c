package events

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/events/rules"
)

// UnmarshalJSON decodes a command from the JSON form of SPEC §2.
//
// Entity values follow the Azure Tables OData minimal-metadata rules: an
// unannotated string is a String, a boolean a Boolean, an integer an Int32
// (outside the Int32 range it is an error: annotate it as Edm.Int64) and a
// number with a fraction or exponent a Double. "name@odata.type"
// annotations, before or after their property, give the other types:
// Edm.Int64 (a decimal string or an integer), Edm.DateTime (RFC 3339, at
// most 7 fractional digits), Edm.Guid, Edm.Binary (standard base64),
// Edm.Double (a number, or "NaN", "Infinity", "-Infinity"), and Edm.String,
// Edm.Boolean, Edm.Int32 for their own kinds.
//
// The decoder is strict: the input must be valid UTF-8 holding one JSON
// object; a duplicated field, property, annotation or meta key, a nested
// or null property value, a literal that does not parse, an annotation for
// an absent property and an unknown type are errors. So is a field the
// command or an operation does not have (rules.UnknownField; names are
// case-sensitive) and an operation without "rk" (rules.RKRequired: the empty
// RowKey is written "rk": ""). A null field is the same as an absent one.
// Every error is a *rules.ValidationError wrapping rules.ErrInvalid. See Decode.
func UnmarshalJSON(data []byte) (*Command, error) {
	if !utf8.Valid(data) {
		return nil, rules.Errorf("", rules.Malformed, "input is not valid UTF-8")
	}
	d := jsonDecoder{dec: json.NewDecoder(bytes.NewReader(data))}
	d.dec.UseNumber()
	c, err := d.command()
	if err != nil {
		return nil, err
	}
	if _, err := d.dec.Token(); err != io.EOF {
		return nil, rules.Errorf("", rules.Malformed, "data after the command object at byte %d", d.dec.InputOffset())
	}
	return c, nil
}

type jsonDecoder struct {
	dec *json.Decoder
	b   entityBuilder
}

// Bits of the command and operation fields, to find duplicates.
const (
	fieldID = 1 << iota
	fieldTable
	fieldPK
	fieldOps
	fieldIssuer
	fieldIssuedAt
	fieldMeta
)

const (
	fieldOp = 1 << iota
	fieldRK
	fieldEntity
	fieldIfVersion
)

func (d *jsonDecoder) command() (*Command, error) {
	if err := d.open(topPath(""), "command"); err != nil {
		return nil, err
	}
	c := new(Command)
	var seen uint
	for d.dec.More() {
		key, err := d.key(topPath(""))
		if err != nil {
			return nil, err
		}
		p := topPath(key)
		var bit uint
		switch key {
		case "id":
			bit = fieldID
			c.ID, err = d.str(p)
		case "table":
			bit = fieldTable
			c.Table, err = d.str(p)
		case "pk":
			bit = fieldPK
			c.PK, err = d.str(p)
		case "ops":
			bit = fieldOps
			c.Ops, err = d.ops()
		case "issuer":
			bit = fieldIssuer
			c.Issuer, err = d.str(p)
		case "issuedAt":
			bit = fieldIssuedAt
			var s string
			if s, err = d.str(p); err == nil && s != "" {
				if c.IssuedAt, err = edm.ParseDateTime(s); err != nil {
					err = p.fail(rules.BadDateTime, "%v", err)
				}
			}
		case "meta":
			bit = fieldMeta
			c.Meta, err = d.meta()
		case "prune":
			bit = fieldPrune
			c.Prune, err = d.prune()
		default:
			err = unknownField(topPath(""), key, commandFields)
		}
		if err != nil {
			return nil, err
		}
		if seen&bit != 0 {
			return nil, p.fail(rules.DuplicateField, "field given twice")
		}
		seen |= bit
	}
	return c, d.close(topPath(""))
}

func (d *jsonDecoder) ops() ([]RowOp, error) {
	p := topPath("ops")
	tok, err := d.token(p)
	if tok == nil || err != nil {
		return nil, err
	}
	if tok != json.Delim('[') {
		return nil, p.fail(rules.Malformed, "ops is not an array")
	}
	ops := []RowOp{}
	for d.dec.More() {
		op, err := d.op(len(ops))
		if err != nil {
			return nil, err
		}
		ops = append(ops, op)
	}
	return ops, d.close(p)
}

func (d *jsonDecoder) op(i int) (RowOp, error) {
	var op RowOp
	if err := d.open(opPath(i, ""), "row operation"); err != nil {
		return op, err
	}
	var seen uint
	hasRK := false
	for d.dec.More() {
		key, err := d.key(opPath(i, ""))
		if err != nil {
			return op, err
		}
		p := opPath(i, key)
		var bit uint
		switch key {
		case "op":
			bit = fieldOp
			var s string
			s, err = d.str(p)
			op.Op = OpKind(s)
		case "rk":
			bit = fieldRK
			op.RK, hasRK, err = d.nullableStr(p)
		case "entity":
			bit = fieldEntity
			op.Entity, err = d.entity(i)
		case "ifVersion":
			bit = fieldIfVersion
			op.IfVersion, err = d.ifVersion(p)
		default:
			err = unknownField(opPath(i, ""), key, opFields)
		}
		if err != nil {
			return op, err
		}
		if seen&bit != 0 {
			return op, p.fail(rules.DuplicateField, "field given twice")
		}
		seen |= bit
	}
	if err := d.close(opPath(i, "")); err != nil {
		return op, err
	}
	if !hasRK {
		return op, missingRK(i)
	}
	return op, nil
}

func (d *jsonDecoder) ifVersion(p path) (*int64, error) {
	tok, err := d.token(p)
	if tok == nil || err != nil {
		return nil, err
	}
	n, ok := tok.(json.Number)
	if !ok || !isIntegerLiteral(string(n)) {
		return nil, p.fail(rules.Malformed, "ifVersion is not an integer")
	}
	v, err := strconv.ParseInt(string(n), 10, 64)
	if err != nil {
		return nil, p.fail(rules.Malformed, "ifVersion %s is out of range", n)
	}
	return &v, nil
}

func (d *jsonDecoder) entity(i int) (edm.Entity, error) {
	p := entityPath(i)
	tok, err := d.token(p)
	if tok == nil || err != nil {
		return nil, err
	}
	if tok != json.Delim('{') {
		return nil, p.fail(rules.Malformed, "entity is not an object")
	}
	d.b.reset(i, 8)
	for d.dec.More() {
		key, err := d.key(p)
		if err != nil {
			return nil, err
		}
		kp := propertyPath(i, key)
		tok, err := d.token(kp)
		if err != nil {
			return nil, err
		}
		var v edm.Value
		switch t := tok.(type) {
		case string:
			v = edm.String(t)
		case bool:
			v = edm.Bool(t)
		case json.Number:
			v = edm.Value{Type: typeNumber, Str: string(t)}
		case nil:
			if strings.HasSuffix(key, annotationSuffix) {
				return nil, kp.fail(rules.BadAnnotation, "annotation is null, not a type name")
			}
			return nil, kp.fail(rules.Malformed, "null is not a property value")
		default:
			return nil, kp.fail(rules.Malformed, "an object or array is not a property value")
		}
		if err := d.b.add(key, v); err != nil {
			return nil, err
		}
	}
	if err := d.close(p); err != nil {
		return nil, err
	}
	return d.b.finish()
}

func (d *jsonDecoder) meta() (map[string]string, error) {
	p := topPath("meta")
	tok, err := d.token(p)
	if tok == nil || err != nil {
		return nil, err
	}
	if tok != json.Delim('{') {
		return nil, p.fail(rules.Malformed, "meta is not an object")
	}
	m := map[string]string{}
	for d.dec.More() {
		key, err := d.key(p)
		if err != nil {
			return nil, err
		}
		kp := metaPath(key)
		tok, err := d.token(kp)
		if err != nil {
			return nil, err
		}
		s, ok := tok.(string)
		if !ok {
			return nil, kp.fail(rules.Malformed, "meta value is not a string")
		}
		if _, dup := m[key]; dup {
			return nil, kp.fail(rules.DuplicateField, "meta key given twice")
		}
		m[key] = s
	}
	return m, d.close(p)
}

// token reads the next token; the end of input is an error.
func (d *jsonDecoder) token(p path) (json.Token, error) {
	tok, err := d.dec.Token()
	if err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			err = fmt.Errorf("%w (at byte %d)", err, se.Offset)
		}
		return nil, rules.MalformedInput(p.String(), err)
	}
	return tok, nil
}

// str reads a string or null (as "").
func (d *jsonDecoder) str(p path) (string, error) {
	s, _, err := d.nullableStr(p)
	return s, err
}

// nullableStr reads a string (ok) or null (not ok, "").
func (d *jsonDecoder) nullableStr(p path) (s string, ok bool, err error) {
	tok, err := d.token(p)
	if err != nil {
		return "", false, err
	}
	switch t := tok.(type) {
	case string:
		return t, true, nil
	case nil:
		return "", false, nil
	}
	return "", false, p.fail(rules.Malformed, "not a string")
}

// key reads an object key.
func (d *jsonDecoder) key(p path) (string, error) {
	tok, err := d.token(p)
	if err != nil {
		return "", err
	}
	s, ok := tok.(string)
	if !ok {
		return "", p.fail(rules.Malformed, "object key is not a string")
	}
	return s, nil
}

func (d *jsonDecoder) open(p path, what string) error {
	tok, err := d.token(p)
	if err != nil {
		return err
	}
	if tok != json.Delim('{') {
		return p.fail(rules.Malformed, "a %s is a JSON object", what)
	}
	return nil
}

// close reads the '}' or ']' that ends an object or array.
func (d *jsonDecoder) close(p path) error {
	tok, err := d.token(p)
	if err == nil && tok != json.Delim('}') && tok != json.Delim(']') {
		err = p.fail(rules.Malformed, "unterminated object or array")
	}
	return err
}
