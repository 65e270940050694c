package events

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/events/rules"
	"github.com/vmihailenco/msgpack/v5"
	"github.com/vmihailenco/msgpack/v5/msgpcode"
)

// The erase command of SPEC §10: a journal message whose
// wire.HeaderCommand is wire.CommandErase removes one row, or one whole
// partition, from everything the system keeps. It names the key and
// carries no property values.

// Erase removes one logical row (RK set) or one whole partition (RK nil) of
// a table.
type Erase struct {
	ID    string
	Table string
	PK    string
	// RK names the row to erase; nil erases the whole partition. A pointer
	// to "" erases the row with the empty RowKey.
	RK *string
	// Issuer and IssuedAt are as in Command; optional.
	Issuer   string
	IssuedAt time.Time
}

// Partition reports whether e erases a whole partition.
func (e *Erase) Partition() bool { return e.RK == nil }

// Key describes the erased key for people: `orders/"customer-42"` or
// `orders/"customer-42"/"order-7"`.
func (e *Erase) Key() string {
	if e.RK == nil {
		return fmt.Sprintf("%s/%q", e.Table, e.PK)
	}
	return fmt.Sprintf("%s/%q/%q", e.Table, e.PK, *e.RK)
}

// Equal reports whether e and o are the same erase.
func (e *Erase) Equal(o *Erase) bool {
	if e == nil || o == nil {
		return e == o
	}
	if (e.RK == nil) != (o.RK == nil) || e.RK != nil && *e.RK != *o.RK {
		return false
	}
	return e.ID == o.ID && e.Table == o.Table && e.PK == o.PK && e.Issuer == o.Issuer && e.IssuedAt.Equal(o.IssuedAt)
}

// Validate checks the rules of SPEC §10, which are those of §2 for the
// fields an erase shares with a command, and returns nil or the first
// broken rule as a *rules.ValidationError wrapping rules.ErrInvalid.
func (e *Erase) Validate() error {
	if e == nil {
		return rules.Errorf("", rules.Malformed, "nil erase")
	}
	if err := validateID(e.ID); err != nil {
		return err
	}
	if err := validateTable(e.Table); err != nil {
		return err
	}
	if err := validateKey(topPath("pk"), e.PK, utf16Len(e.PK)); err != nil {
		return err
	}
	if e.RK != nil {
		if err := validateKey(topPath("rk"), *e.RK, versionKeyLen(*e.RK)); err != nil {
			return err
		}
	}
	if !utf8.ValidString(e.Issuer) {
		return rules.Errorf("issuer", rules.InvalidUTF8, "not valid UTF-8")
	}
	if n := utf8.RuneCountInString(e.Issuer); n > MaxIssuerLen {
		return rules.Errorf("issuer", rules.IssuerLength, "%d characters, at most %d", n, MaxIssuerLen)
	}
	_, err := e.issuedAt()
	if err != nil {
		return err
	}
	return nil
}

// issuedAt is the IssuedAt the wire carries: zero, or at 100 ns in UTC.
func (e *Erase) issuedAt() (time.Time, error) {
	if e.IssuedAt.IsZero() {
		return time.Time{}, nil
	}
	t := e.IssuedAt.UTC().Truncate(100 * time.Nanosecond)
	if err := checkDateTime(t); err != nil {
		err.Field = "issuedAt"
		return time.Time{}, err
	}
	return t, nil
}

// eraseFields are the fields of an erase, in wire order.
var eraseFields = []string{"id", "table", "pk", "rk", "issuer", "issuedAt"}

// fields returns e's wire fields in eraseFields order, omitting the
// optional ones it does not have, after checking that the wire can carry
// them exactly.
func (e *Erase) fields() ([][2]string, error) {
	if e == nil {
		return nil, rules.Errorf("", rules.Malformed, "nil erase")
	}
	at, err := e.issuedAt()
	if err != nil {
		return nil, err
	}
	fs := [][2]string{{"id", e.ID}, {"table", e.Table}, {"pk", e.PK}}
	if e.RK != nil {
		fs = append(fs, [2]string{"rk", *e.RK})
	}
	if e.Issuer != "" {
		fs = append(fs, [2]string{"issuer", e.Issuer})
	}
	if !at.IsZero() {
		fs = append(fs, [2]string{"issuedAt", edm.FormatDateTime(at)})
	}
	for _, f := range fs {
		if !utf8.ValidString(f[1]) {
			return nil, rules.Errorf(f[0], rules.InvalidUTF8, "not valid UTF-8")
		}
	}
	return fs, nil
}

// EncodeErase encodes e in the wire form named by contentType; "" means
// msgpack. Like Encode it checks only what the wire needs; call Validate
// for the rules.
func EncodeErase(e *Erase, contentType string) ([]byte, error) {
	ct, err := parseContentType(contentType)
	if err != nil {
		return nil, err
	}
	fs, err := e.fields()
	if err != nil {
		return nil, err
	}
	if ct == contentTypeJSON {
		b := []byte{'{'}
		for i, f := range fs {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, f[0])
			b = append(b, ':')
			b = appendJSONString(b, f[1])
		}
		return append(b, '}'), nil
	}
	var buf bytes.Buffer
	enc := msgpack.NewEncoder(&buf)
	if err := enc.EncodeMapLen(len(fs)); err != nil {
		return nil, err
	}
	for _, f := range fs {
		if err := enc.EncodeString(f[0]); err != nil {
			return nil, err
		}
		if err := enc.EncodeString(f[1]); err != nil {
			return nil, err
		}
	}
	return buf.Bytes(), nil
}

// DecodeErase decodes an erase from the wire form named by contentType;
// "" means msgpack. Any bad input is a *rules.ValidationError wrapping
// rules.ErrInvalid: a field that is not a string is rules.Malformed, a field an
// erase does not have (ops, entity, meta, …) rules.UnknownField, the same
// field twice rules.DuplicateField. It does not check the rules: a caller
// that accepts erases calls Validate on the result.
func DecodeErase(data []byte, contentType string) (*Erase, error) {
	ct, err := parseContentType(contentType)
	if err != nil {
		return nil, err
	}
	var next func() (key, val string, more bool, err error)
	if ct == contentTypeJSON {
		next, err = jsonFields(data)
	} else {
		next, err = msgpackFields(data)
	}
	if err != nil {
		return nil, err
	}
	e := new(Erase)
	seen := make(map[string]bool, len(eraseFields))
	for {
		key, val, more, err := next()
		if err != nil {
			return nil, err
		}
		if !more {
			break
		}
		if !slices.Contains(eraseFields, key) {
			return nil, eraseUnknownField(key)
		}
		if seen[key] {
			return nil, rules.Errorf(key, rules.DuplicateField, "field given twice")
		}
		seen[key] = true
		if !utf8.ValidString(val) {
			return nil, rules.Errorf(key, rules.InvalidUTF8, "not valid UTF-8")
		}
		switch key {
		case "id":
			e.ID = val
		case "table":
			e.Table = val
		case "pk":
			e.PK = val
		case "rk":
			rk := val
			e.RK = &rk
		case "issuer":
			e.Issuer = val
		case "issuedAt":
			if val != "" {
				if e.IssuedAt, err = edm.ParseDateTime(val); err != nil {
					return nil, rules.Errorf(key, rules.BadDateTime, "%v", err)
				}
			}
		}
	}
	return e, nil
}

func eraseUnknownField(key string) *rules.ValidationError {
	for _, k := range eraseFields {
		if strings.EqualFold(k, key) {
			return rules.Errorf("", rules.UnknownField, "unknown field %q: field names are case-sensitive; did you mean %q?", key, k)
		}
	}
	return rules.Errorf("", rules.UnknownField, "unknown field %q; an erase has only %s and no property values", key, strings.Join(eraseFields, ", "))
}

// jsonFields iterates over the string fields of one JSON object that is
// all of data.
func jsonFields(data []byte) (func() (string, string, bool, error), error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	tok, err := dec.Token()
	if err != nil {
		return nil, rules.MalformedInput("", err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, rules.Errorf("", rules.Malformed, "an erase is a JSON object")
	}
	done := false
	return func() (string, string, bool, error) {
		if done {
			return "", "", false, nil
		}
		if !dec.More() {
			if _, err := dec.Token(); err != nil { // '}'
				return "", "", false, rules.MalformedInput("", err)
			}
			if _, err := dec.Token(); !errors.Is(err, io.EOF) {
				return "", "", false, rules.Errorf("", rules.Malformed, "data after the erase's object")
			}
			done = true
			return "", "", false, nil
		}
		kt, err := dec.Token()
		if err != nil {
			return "", "", false, rules.MalformedInput("", err)
		}
		key, _ := kt.(string)
		vt, err := dec.Token()
		if err != nil {
			return "", "", false, rules.MalformedInput(key, err)
		}
		val, ok := vt.(string)
		if !ok {
			if slices.Contains(eraseFields, key) {
				return "", "", false, rules.Errorf(key, rules.Malformed, "want a string")
			}
			return "", "", false, eraseUnknownField(key)
		}
		return key, val, true, nil
	}, nil
}

// msgpackFields iterates over the string fields of one msgpack map that is
// all of data.
func msgpackFields(data []byte) (func() (string, string, bool, error), error) {
	r := bytes.NewReader(data)
	dec := msgpack.NewDecoder(r)
	n, err := dec.DecodeMapLen()
	if err != nil {
		return nil, rules.MalformedInput("", err)
	}
	if n < 0 {
		return nil, rules.Errorf("", rules.Malformed, "an erase is a msgpack map, not nil")
	}
	i := 0
	str := func(field string) (string, error) {
		c, err := dec.PeekCode()
		if err != nil {
			return "", rules.MalformedInput(field, err)
		}
		if !msgpcode.IsString(c) {
			return "", rules.Errorf(field, rules.Malformed, "want a string")
		}
		s, err := dec.DecodeString()
		if err != nil {
			return "", rules.MalformedInput(field, err)
		}
		return s, nil
	}
	return func() (string, string, bool, error) {
		if i == n {
			if r.Len() > 0 {
				return "", "", false, rules.Errorf("", rules.Malformed, "data after the erase's map")
			}
			return "", "", false, nil
		}
		i++
		key, err := str("")
		if err != nil {
			return "", "", false, err
		}
		if !slices.Contains(eraseFields, key) {
			return "", "", false, eraseUnknownField(key)
		}
		val, err := str(key)
		if err != nil {
			return "", "", false, err
		}
		return key, val, true, nil
	}, nil
}
