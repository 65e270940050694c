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
// an absent property and an unknown type are errors. Unknown fields of the
// command and of its operations are ignored, for forward compatibility; a
// null field is the same as an absent one. Every error is a
// *ValidationError wrapping ErrInvalid. See Decode.
func UnmarshalJSON(data []byte) (*Command, error) {
	if !utf8.Valid(data) {
		return nil, invalid("", RuleMalformed, "input is not valid UTF-8")
	}
	d := jsonDecoder{dec: json.NewDecoder(bytes.NewReader(data))}
	d.dec.UseNumber()
	c, err := d.command()
	if err != nil {
		return nil, err
	}
	if _, err := d.dec.Token(); err != io.EOF {
		return nil, invalid("", RuleMalformed, "data after the command object at byte %d", d.dec.InputOffset())
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
	if err := d.open("", "command"); err != nil {
		return nil, err
	}
	c := new(Command)
	var seen uint
	for d.dec.More() {
		key, err := d.key("")
		if err != nil {
			return nil, err
		}
		var bit uint
		switch key {
		case "id":
			bit = fieldID
			c.ID, err = d.str(key)
		case "table":
			bit = fieldTable
			c.Table, err = d.str(key)
		case "pk":
			bit = fieldPK
			c.PK, err = d.str(key)
		case "ops":
			bit = fieldOps
			c.Ops, err = d.ops()
		case "issuer":
			bit = fieldIssuer
			c.Issuer, err = d.str(key)
		case "issuedAt":
			bit = fieldIssuedAt
			var s string
			if s, err = d.str(key); err == nil && s != "" {
				if c.IssuedAt, err = ParseDateTime(s); err != nil {
					err = invalid(key, RuleBadDateTime, "%v", err)
				}
			}
		case "meta":
			bit = fieldMeta
			c.Meta, err = d.meta()
		default:
			err = d.skip(key)
		}
		if err != nil {
			return nil, err
		}
		if seen&bit != 0 {
			return nil, invalid(key, RuleDuplicateField, "field given twice")
		}
		seen |= bit
	}
	return c, d.close("")
}

func (d *jsonDecoder) ops() ([]RowOp, error) {
	tok, err := d.token("ops")
	if tok == nil || err != nil {
		return nil, err
	}
	if tok != json.Delim('[') {
		return nil, invalid("ops", RuleMalformed, "ops is not an array")
	}
	ops := []RowOp{}
	for d.dec.More() {
		op, err := d.op(len(ops))
		if err != nil {
			return nil, err
		}
		ops = append(ops, op)
	}
	return ops, d.close("ops")
}

func (d *jsonDecoder) op(i int) (RowOp, error) {
	var op RowOp
	field := func(name string) string { return fmt.Sprintf("ops[%d].%s", i, name) }
	if err := d.open(fmt.Sprintf("ops[%d]", i), "row operation"); err != nil {
		return op, err
	}
	var seen uint
	for d.dec.More() {
		key, err := d.key(fmt.Sprintf("ops[%d]", i))
		if err != nil {
			return op, err
		}
		var bit uint
		switch key {
		case "op":
			bit = fieldOp
			var s string
			s, err = d.str(field(key))
			op.Op = OpKind(s)
		case "rk":
			bit = fieldRK
			op.RK, err = d.str(field(key))
		case "entity":
			bit = fieldEntity
			op.Entity, err = d.entity(i)
		case "ifVersion":
			bit = fieldIfVersion
			op.IfVersion, err = d.ifVersion(field(key))
		default:
			err = d.skip(field(key))
		}
		if err != nil {
			return op, err
		}
		if seen&bit != 0 {
			return op, invalid(field(key), RuleDuplicateField, "field given twice")
		}
		seen |= bit
	}
	return op, d.close(fmt.Sprintf("ops[%d]", i))
}

func (d *jsonDecoder) ifVersion(field string) (*int64, error) {
	tok, err := d.token(field)
	if tok == nil || err != nil {
		return nil, err
	}
	n, ok := tok.(json.Number)
	if !ok || !isIntegerLiteral(string(n)) {
		return nil, invalid(field, RuleMalformed, "ifVersion is not an integer")
	}
	v, err := strconv.ParseInt(string(n), 10, 64)
	if err != nil {
		return nil, invalid(field, RuleMalformed, "ifVersion %s is out of range", n)
	}
	return &v, nil
}

func (d *jsonDecoder) entity(i int) (Entity, error) {
	field := fmt.Sprintf("ops[%d].entity", i)
	tok, err := d.token(field)
	if tok == nil || err != nil {
		return nil, err
	}
	if tok != json.Delim('{') {
		return nil, invalid(field, RuleMalformed, "entity is not an object")
	}
	d.b.reset(i, 8)
	for d.dec.More() {
		key, err := d.key(field)
		if err != nil {
			return nil, err
		}
		tok, err := d.token(entityField(i, key))
		if err != nil {
			return nil, err
		}
		var v Value
		switch t := tok.(type) {
		case string:
			v = String(t)
		case bool:
			v = Bool(t)
		case json.Number:
			v = Value{Type: typeNumber, Str: string(t)}
		case nil:
			if strings.HasSuffix(key, annotationSuffix) {
				return nil, invalid(entityField(i, key), RuleBadAnnotation, "annotation is null, not a type name")
			}
			return nil, invalid(entityField(i, key), RuleMalformed, "null is not a property value")
		default:
			return nil, invalid(entityField(i, key), RuleMalformed, "an object or array is not a property value")
		}
		if err := d.b.add(key, v); err != nil {
			return nil, err
		}
	}
	if err := d.close(field); err != nil {
		return nil, err
	}
	return d.b.finish()
}

func (d *jsonDecoder) meta() (map[string]string, error) {
	tok, err := d.token("meta")
	if tok == nil || err != nil {
		return nil, err
	}
	if tok != json.Delim('{') {
		return nil, invalid("meta", RuleMalformed, "meta is not an object")
	}
	m := map[string]string{}
	for d.dec.More() {
		key, err := d.key("meta")
		if err != nil {
			return nil, err
		}
		field := fmt.Sprintf("meta[%q]", key)
		tok, err := d.token(field)
		if err != nil {
			return nil, err
		}
		s, ok := tok.(string)
		if !ok {
			return nil, invalid(field, RuleMalformed, "meta value is not a string")
		}
		if _, dup := m[key]; dup {
			return nil, invalid(field, RuleDuplicateField, "meta key given twice")
		}
		m[key] = s
	}
	return m, d.close("meta")
}

// token reads the next token; the end of input is an error.
func (d *jsonDecoder) token(field string) (json.Token, error) {
	tok, err := d.dec.Token()
	if err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	if err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			err = fmt.Errorf("%w (at byte %d)", err, se.Offset)
		}
		return nil, malformed(field, err)
	}
	return tok, nil
}

// str reads a string or null (as "").
func (d *jsonDecoder) str(field string) (string, error) {
	tok, err := d.token(field)
	if err != nil {
		return "", err
	}
	switch t := tok.(type) {
	case string:
		return t, nil
	case nil:
		return "", nil
	}
	return "", invalid(field, RuleMalformed, "%s is not a string", field)
}

// key reads an object key.
func (d *jsonDecoder) key(field string) (string, error) {
	tok, err := d.token(field)
	if err != nil {
		return "", err
	}
	s, ok := tok.(string)
	if !ok {
		return "", invalid(field, RuleMalformed, "object key is not a string")
	}
	return s, nil
}

func (d *jsonDecoder) open(field, what string) error {
	tok, err := d.token(field)
	if err != nil {
		return err
	}
	if tok != json.Delim('{') {
		return invalid(field, RuleMalformed, "a %s is a JSON object", what)
	}
	return nil
}

// close reads the '}' or ']' that ends an object or array.
func (d *jsonDecoder) close(field string) error {
	tok, err := d.token(field)
	if err == nil && tok != json.Delim('}') && tok != json.Delim(']') {
		err = invalid(field, RuleMalformed, "unterminated object or array")
	}
	return err
}

// skip reads past the value of an unknown field.
func (d *jsonDecoder) skip(field string) error {
	var raw json.RawMessage
	if err := d.dec.Decode(&raw); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return malformed(field, err)
	}
	return nil
}
