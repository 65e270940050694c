package events

import (
	"encoding/base64"
	"math"
	"strconv"
	"strings"

	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/events/rules"
)

// Both decoders first read each property value in its natural wire kind and
// only give it an EDM type once the whole entity is read, because an
// "@odata.type" annotation may come before or after its property. Two
// provisional types, never seen outside this file's callers, hold values
// whose type depends on the annotation.
const (
	// typeNumber is a JSON number (or a msgpack uint64 beyond int64),
	// its literal text in Str.
	typeNumber edm.Type = 0xF0 + iota
	// typeWideInt is a msgpack integer outside the Int32 range, in Int.
	typeWideInt
)

// base64Std is the only Binary text form: standard alphabet, padded, no
// stray bits.
var base64Std = base64.StdEncoding.Strict()

// annotation is one "name@odata.type": "Edm.X" pair of an entity.
type annotation struct {
	name string
	typ  edm.Type
}

// entityBuilder collects the properties and annotations of one entity and
// resolves them into typed values.
type entityBuilder struct {
	op      int // index of the operation, for error fields
	e       edm.Entity
	ann     []annotation
	pending []string // names of properties holding a provisional type
}

func (b *entityBuilder) reset(op, sizeHint int) {
	b.op = op
	b.e = make(edm.Entity, sizeHint)
	b.ann = b.ann[:0]
	b.pending = b.pending[:0]
}

func (b *entityBuilder) field(name string) string { return propertyPath(b.op, name).String() }

// add records one key of the entity object: a property in its natural
// kind, or an annotation when key ends in "@odata.type" (then v must be a
// String holding the type name).
func (b *entityBuilder) add(key string, v edm.Value) error {
	if name, ok := strings.CutSuffix(key, annotationSuffix); ok {
		return b.addAnnotation(name, v)
	}
	if _, dup := b.e[key]; dup {
		return rules.Errorf(b.field(key), rules.DuplicateField, "property given twice")
	}
	b.e[key] = v
	if v.Type == typeNumber || v.Type == typeWideInt {
		b.pending = append(b.pending, key)
	}
	return nil
}

func (b *entityBuilder) addAnnotation(name string, v edm.Value) error {
	if v.Type != edm.TypeString {
		return rules.Errorf(b.field(name+annotationSuffix), rules.BadAnnotation, "annotation is a %s, not a type name", kindName(v))
	}
	t, ok := edm.ParseType(v.Str)
	if !ok {
		return rules.Errorf(b.field(name+annotationSuffix), rules.UnknownType, "unknown type %q", v.Str)
	}
	return b.addAnnotationType(name, t)
}

// addAnnotationType records that property name has type t.
func (b *entityBuilder) addAnnotationType(name string, t edm.Type) error {
	for _, a := range b.ann {
		if a.name == name {
			return rules.Errorf(b.field(name+annotationSuffix), rules.DuplicateField, "annotation given twice")
		}
	}
	b.ann = append(b.ann, annotation{name, t})
	return nil
}

// finish applies the annotations and gives every unannotated value its
// natural type.
func (b *entityBuilder) finish() (edm.Entity, error) {
	for _, a := range b.ann {
		v, ok := b.e[a.name]
		if !ok {
			return nil, rules.Errorf(b.field(a.name+annotationSuffix), rules.BadAnnotation,
				"annotation %s for a property the entity does not have", a.typ)
		}
		w, err := convert(v, a.typ)
		if err != nil {
			err.Field = b.field(a.name)
			return nil, err
		}
		b.e[a.name] = w
	}
	for _, name := range b.pending {
		v := b.e[name]
		if v.Type != typeNumber && v.Type != typeWideInt {
			continue // annotated above
		}
		w, err := natural(v)
		if err != nil {
			err.Field = b.field(name)
			return nil, err
		}
		b.e[name] = w
	}
	return b.e, nil
}

// natural types an unannotated provisional value: an integer is an Int32,
// any other number a Double.
func natural(v edm.Value) (edm.Value, *rules.ValidationError) {
	if v.Type == typeNumber && !isIntegerLiteral(v.Str) {
		return parseDoubleValue(v.Str)
	}
	w, err := convert(v, edm.TypeInt32)
	if err != nil {
		err.Detail += "; annotate it as Edm.Int64"
	}
	return w, err
}

// convert gives a value read in its wire kind the annotated type t. A kind
// that cannot hold t is rules.BadAnnotation; a literal that does not parse
// breaks the rule of t.
func convert(v edm.Value, t edm.Type) (edm.Value, *rules.ValidationError) {
	switch t {
	case edm.TypeString, edm.TypeBoolean:
		if v.Type == t {
			return v, nil
		}
	case edm.TypeInt32:
		switch v.Type {
		case edm.TypeInt32:
			return v, nil
		case typeWideInt:
			return edm.Value{}, rules.Errorf("", rules.BadInt32, "%d is out of the Int32 range", v.Int)
		case typeNumber:
			n, err := strconv.ParseInt(v.Str, 10, 32)
			if err != nil || !isIntegerLiteral(v.Str) {
				return edm.Value{}, rules.Errorf("", rules.BadInt32, "%s is not an Int32", v.Str)
			}
			return edm.Int32(int32(n)), nil
		}
	case edm.TypeInt64:
		switch v.Type {
		case edm.TypeInt32, typeWideInt:
			return edm.Int64(v.Int), nil
		case typeNumber, edm.TypeString:
			if !isIntegerLiteral(v.Str) {
				return edm.Value{}, rules.Errorf("", rules.BadInt64, "%q is not a decimal integer", v.Str)
			}
			n, err := strconv.ParseInt(v.Str, 10, 64)
			if err != nil {
				return edm.Value{}, rules.Errorf("", rules.BadInt64, "%s is out of the Int64 range", v.Str)
			}
			return edm.Int64(n), nil
		}
	case edm.TypeDouble:
		if w, ok, err := toDouble(v); ok {
			return w, err
		}
	case edm.TypeDateTime:
		if v.Type == edm.TypeString {
			tm, err := edm.ParseDateTime(v.Str)
			if err != nil {
				return edm.Value{}, rules.Errorf("", rules.BadDateTime, "%v", err)
			}
			return edm.Value{Type: edm.TypeDateTime, Time: tm}, nil
		}
	case edm.TypeGuid:
		if v.Type == edm.TypeString {
			g, err := edm.ParseGuid(v.Str)
			if err != nil {
				return edm.Value{}, rules.Errorf("", rules.BadGuid, "%v", err)
			}
			return edm.Value{Type: edm.TypeGuid, Str: g}, nil
		}
	case edm.TypeBinary:
		switch v.Type {
		case edm.TypeBinary:
			return v, nil
		case edm.TypeString:
			b, err := base64Std.DecodeString(v.Str)
			if err != nil || strings.ContainsAny(v.Str, "\r\n") {
				return edm.Value{}, rules.Errorf("", rules.BadBinary, "not standard padded base64")
			}
			return edm.Binary(b), nil
		}
	}
	return edm.Value{}, rules.Errorf("", rules.BadAnnotation, "%s annotation on a %s value", t, kindName(v))
}

// toDouble gives v the type Double; ok is false for a kind that cannot
// hold a Double.
func toDouble(v edm.Value) (edm.Value, bool, *rules.ValidationError) {
	switch v.Type {
	case edm.TypeDouble:
		return v, true, nil
	case edm.TypeInt32, typeWideInt:
		return edm.Double(float64(v.Int)), true, nil
	case typeNumber:
		w, err := parseDoubleValue(v.Str)
		return w, true, err
	case edm.TypeString:
		switch v.Str {
		case "NaN":
			return edm.Double(math.NaN()), true, nil
		case "Infinity":
			return edm.Double(math.Inf(1)), true, nil
		case "-Infinity":
			return edm.Double(math.Inf(-1)), true, nil
		}
		if !isNumberLiteral(v.Str) {
			return edm.Value{}, true, rules.Errorf("", rules.BadDouble, "%q is not a number, NaN, Infinity or -Infinity", v.Str)
		}
		w, err := parseDoubleValue(v.Str)
		return w, true, err
	}
	return edm.Value{}, false, nil
}

// parseDoubleValue parses a number literal that isNumberLiteral accepts.
func parseDoubleValue(s string) (edm.Value, *rules.ValidationError) {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return edm.Value{}, rules.Errorf("", rules.BadDouble, "%s is out of the Double range", s)
	}
	return edm.Double(f), nil
}

// kindName names the wire kind of a value read before typing.
func kindName(v edm.Value) string {
	switch v.Type {
	case edm.TypeString:
		return "string"
	case edm.TypeBoolean:
		return "boolean"
	case edm.TypeInt32, typeWideInt:
		return "integer"
	case typeNumber:
		return "number"
	case edm.TypeDouble:
		return "float"
	case edm.TypeBinary:
		return "binary"
	}
	return v.Type.String()
}

// isIntegerLiteral reports whether s is -?[0-9]+.
func isIntegerLiteral(s string) bool {
	s = strings.TrimPrefix(s, "-")
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// isNumberLiteral reports whether s is a JSON number:
// -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
func isNumberLiteral(s string) bool {
	i := 0
	digits := func() int {
		j := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		return i - j
	}
	if i < len(s) && s[i] == '-' {
		i++
	}
	start := i
	if n := digits(); n == 0 || n > 1 && s[start] == '0' {
		return false
	}
	if i < len(s) && s[i] == '.' {
		i++
		if digits() == 0 {
			return false
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if digits() == 0 {
			return false
		}
	}
	return i == len(s)
}
