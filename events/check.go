package events

import (
	"math"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/events/rules"
)

// checkValue checks what both wire forms need to carry v exactly and what
// Azure accepts for its type; not the size limits. The error has no Field:
// the caller sets it.
func checkValue(v edm.Value) *rules.ValidationError {
	switch v.Type {
	case 0:
		return rules.Errorf("", rules.ZeroValue, "a zero Value, which has no type (did a constructor such as Guid fail?); an empty string is String(\"\")")
	case edm.TypeString:
		if !utf8.ValidString(v.Str) {
			return rules.Errorf("", rules.InvalidUTF8, "String value is not valid UTF-8")
		}
	case edm.TypeInt32:
		if v.Int < math.MinInt32 || v.Int > math.MaxInt32 {
			return rules.Errorf("", rules.BadInt32, "%d is out of the Int32 range", v.Int)
		}
	case edm.TypeDateTime:
		return checkDateTime(v.Time)
	case edm.TypeGuid:
		if g, err := edm.ParseGuid(v.Str); err != nil || g != v.Str {
			return rules.Errorf("", rules.BadGuid, "%q is not a GUID in canonical lowercase 8-4-4-4-12 form", v.Str)
		}
	case edm.TypeBoolean, edm.TypeInt64, edm.TypeDouble, edm.TypeBinary:
	default:
		return rules.Errorf("", rules.UnknownType, "unknown type %s", v.Type)
	}
	return nil
}

// checkDateTime checks Azure's DateTime range and precision.
func checkDateTime(t time.Time) *rules.ValidationError {
	u := t.UTC()
	if y := u.Year(); y < 1601 || y > 9999 {
		return rules.Errorf("", rules.BadDateTime, "%s is outside years 1601..9999", u.Format(time.RFC3339Nano))
	}
	if u.Nanosecond()%100 != 0 {
		return rules.Errorf("", rules.BadDateTime, "%s is finer than 100 ns", u.Format(time.RFC3339Nano))
	}
	return nil
}

// issuedAt is the IssuedAt the wire carries: zero, or at 100 ns in UTC.
func issuedAt(c *Command) (time.Time, *rules.ValidationError) {
	if c.IssuedAt.IsZero() {
		return time.Time{}, nil
	}
	t := c.IssuedAt.UTC().Truncate(100 * time.Nanosecond)
	if err := checkDateTime(t); err != nil {
		err.Field = "issuedAt"
		return time.Time{}, err
	}
	return t, nil
}

// checkWire checks that both wire forms can carry c exactly, so that
// decoding an encoded command always gives back an Equal one, and returns
// the IssuedAt to write.
func checkWire(c *Command) (time.Time, error) {
	if c == nil {
		return time.Time{}, rules.Errorf("", rules.Malformed, "nil command")
	}
	for _, f := range [...]struct{ name, s string }{{"id", c.ID}, {"table", c.Table}, {"pk", c.PK}, {"issuer", c.Issuer}} {
		if !utf8.ValidString(f.s) {
			return time.Time{}, rules.Errorf(f.name, rules.InvalidUTF8, "not valid UTF-8")
		}
	}
	for i := range c.Ops {
		op := &c.Ops[i]
		if !utf8.ValidString(string(op.Op)) {
			return time.Time{}, opPath(i, "op").fail(rules.InvalidUTF8, "not valid UTF-8")
		}
		if !utf8.ValidString(op.RK) {
			return time.Time{}, opPath(i, "rk").fail(rules.InvalidUTF8, "not valid UTF-8")
		}
		for name, v := range op.Entity {
			if err := checkWireProperty(name, v); err != nil {
				err.Field = propertyPath(i, name).String()
				return time.Time{}, err
			}
		}
	}
	for k, v := range c.Meta {
		if !utf8.ValidString(k) || !utf8.ValidString(v) {
			return time.Time{}, metaPath(k).fail(rules.InvalidUTF8, "not valid UTF-8")
		}
	}
	at, err := issuedAt(c)
	if err != nil {
		return time.Time{}, err
	}
	return at, nil
}

func checkWireProperty(name string, v edm.Value) *rules.ValidationError {
	if !utf8.ValidString(name) {
		return rules.Errorf("", rules.InvalidUTF8, "property name is not valid UTF-8")
	}
	if strings.HasSuffix(name, annotationSuffix) {
		return rules.Errorf("", rules.PropertyName, "a property name cannot end in %q", annotationSuffix)
	}
	return checkValue(v)
}
