package edm

import (
	"bytes"
	"fmt"
	"math"
	"time"

	"github.com/tablejournal/tablejournal/events/rules"
)

// Type is one of the eight EDM types an Azure Table property can hold.
type Type uint8

// The eight EDM types. The zero Type is none of them: it is the type of the
// zero Value (what a constructor that failed, such as Guid, returns), which
// Validate refuses (rule zero-value) so that it is never written as an empty
// String by mistake; build an empty string with String("").
const (
	TypeString Type = iota + 1
	TypeBoolean
	TypeInt32
	TypeInt64
	TypeDouble
	TypeDateTime
	TypeGuid
	TypeBinary
)

var typeNames = [...]string{
	0:            "no type (a zero Value)",
	TypeString:   "Edm.String",
	TypeBoolean:  "Edm.Boolean",
	TypeInt32:    "Edm.Int32",
	TypeInt64:    "Edm.Int64",
	TypeDouble:   "Edm.Double",
	TypeDateTime: "Edm.DateTime",
	TypeGuid:     "Edm.Guid",
	TypeBinary:   "Edm.Binary",
}

// String returns the OData name of the type, such as "Edm.Int64".
func (t Type) String() string {
	if int(t) < len(typeNames) {
		return typeNames[t]
	}
	return fmt.Sprintf("Edm.Unknown(%d)", uint8(t))
}

// ParseType returns the Type named by an OData type name such as "Edm.Int64".
func ParseType(name string) (Type, bool) {
	for i, n := range typeNames {
		if i > 0 && n == name {
			return Type(i), true
		}
	}
	return 0, false
}

// Value is one typed property value. Exactly the field that belongs to Type
// is meaningful:
//
//	TypeString   Str
//	TypeBoolean  Bool
//	TypeInt32    Int (within int32 range)
//	TypeInt64    Int
//	TypeDouble   Float (NaN and ±Inf allowed, as in Azure)
//	TypeDateTime Time (UTC, 100 ns precision)
//	TypeGuid     Str (canonical lowercase 8-4-4-4-12 form)
//	TypeBinary   Bytes (at most 64 KiB)
type Value struct {
	Type  Type
	Str   string
	Bool  bool
	Int   int64
	Float float64
	Time  time.Time
	Bytes []byte
}

// Constructors for each EDM type.
func String(s string) Value  { return Value{Type: TypeString, Str: s} }
func Bool(b bool) Value      { return Value{Type: TypeBoolean, Bool: b} }
func Int32(i int32) Value    { return Value{Type: TypeInt32, Int: int64(i)} }
func Int64(i int64) Value    { return Value{Type: TypeInt64, Int: i} }
func Double(f float64) Value { return Value{Type: TypeDouble, Float: f} }
func Binary(b []byte) Value  { return Value{Type: TypeBinary, Bytes: b} }
func DateTime(t time.Time) Value {
	return Value{Type: TypeDateTime, Time: t.UTC().Truncate(100 * time.Nanosecond)}
}

// Guid returns a Guid value from its textual form; see ParseGuid. Its
// error is a *rules.ValidationError (rule bad-guid) wrapping rules.ErrInvalid;
// the value returned with it is the zero Value, so that publishing it
// anyway is refused (rule zero-value).
func Guid(s string) (Value, error) {
	g, err := ParseGuid(s)
	if err != nil {
		return Value{}, rules.Errorf("", rules.BadGuid, "%v", err)
	}
	return Value{Type: TypeGuid, Str: g}, nil
}

// Equal reports whether two values have the same type and the same value.
// Doubles compare by bit pattern, so 0 differs from -0, and any NaN equals
// any NaN (JSON has one NaN, so payloads cannot round-trip), which is what
// "round-trips exactly" means.
func (v Value) Equal(o Value) bool {
	if v.Type != o.Type {
		return false
	}
	switch v.Type {
	case TypeString, TypeGuid:
		return v.Str == o.Str
	case TypeBoolean:
		return v.Bool == o.Bool
	case TypeInt32, TypeInt64:
		return v.Int == o.Int
	case TypeDouble:
		if math.IsNaN(v.Float) {
			return math.IsNaN(o.Float)
		}
		return math.Float64bits(v.Float) == math.Float64bits(o.Float)
	case TypeDateTime:
		return v.Time.Equal(o.Time)
	case TypeBinary:
		return bytes.Equal(v.Bytes, o.Bytes)
	}
	return false
}

// GoString renders the value with its type, for test failures and CLI output.
func (v Value) GoString() string { return v.Type.String() + "(" + v.Text() + ")" }

// Text renders the value as text without its type: the same literal the JSON
// codec writes (Int64 in decimal, DateTime in RFC 3339 with 7 fractional
// digits, Binary in base64).
func (v Value) Text() string {
	switch v.Type {
	case TypeString, TypeGuid:
		return v.Str
	case TypeBoolean:
		if v.Bool {
			return "true"
		}
		return "false"
	case TypeInt32, TypeInt64:
		return fmt.Sprint(v.Int)
	case TypeDouble:
		return FormatDouble(v.Float)
	case TypeDateTime:
		return FormatDateTime(v.Time)
	case TypeBinary:
		return encodeBase64(v.Bytes)
	}
	return ""
}

// Entity is the set of properties of one row, without its keys: the
// payload of a command's row operation (RowOp.Props), in the command layer.
// It is one of three notions of a row, one per layer: this one is what a
// command carries; store.Entity is what a table store holds (keys, an
// Entity of properties, with the layout's system columns among them, and
// the store's etag and timestamp); rows.Row is a store.Entity read by the
// versioned layout of SPEC §4 (one version of a logical row, its system
// columns decoded and its user properties, an Entity, apart).
type Entity map[string]Value

// Equal reports whether two entities hold the same properties with equal
// values.
func (e Entity) Equal(o Entity) bool {
	if len(e) != len(o) {
		return false
	}
	for k, v := range e {
		w, ok := o[k]
		if !ok || !v.Equal(w) {
			return false
		}
	}
	return true
}

// Clone returns a copy of e that shares no map with it.
func (e Entity) Clone() Entity {
	c := make(Entity, len(e))
	for k, v := range e {
		c[k] = v
	}
	return c
}
