package store

import (
	"bytes"
	"cmp"

	"github.com/tablejournal/tablejournal/events/edm"
)

// MatchFilter reports whether props satisfy every condition, with the
// semantics of an OData filter in Azure Tables:
//
//   - a condition on a property the entity lacks does not match (not even Ne);
//   - the property and the value must have the same EDM type (an Int32
//     property never equals an Int64 value), else the condition does not match;
//   - strings and Guids compare ordinally by UTF-16 code units (CompareKeys),
//     Binary bytewise, Boolean false < true, DateTime by instant;
//   - Doubles compare as IEEE 754 numbers: NaN matches only Ne, and -0 == 0.
func MatchFilter(props edm.Entity, conds []Cond) bool {
	for _, c := range conds {
		if !matchCond(props, c) {
			return false
		}
	}
	return true
}

func matchCond(props edm.Entity, c Cond) bool {
	v, ok := props[c.Prop]
	if !ok || v.Type != c.Value.Type {
		return false
	}
	if v.Type == edm.TypeDouble && (v.Float != v.Float || c.Value.Float != c.Value.Float) {
		return c.Cmp == Ne // NaN is unordered
	}
	r, ok := compareValues(v, c.Value)
	if !ok {
		return false
	}
	switch c.Cmp {
	case Eq:
		return r == 0
	case Ne:
		return r != 0
	case Lt:
		return r < 0
	case Le:
		return r <= 0
	case Gt:
		return r > 0
	case Ge:
		return r >= 0
	}
	return false
}

// compareValues compares two values of the same type.
func compareValues(a, b edm.Value) (int, bool) {
	switch a.Type {
	case edm.TypeString, edm.TypeGuid:
		return CompareKeys(a.Str, b.Str), true
	case edm.TypeBoolean:
		return cmpBool(a.Bool, b.Bool), true
	case edm.TypeInt32, edm.TypeInt64:
		return cmp.Compare(a.Int, b.Int), true
	case edm.TypeDouble:
		return cmp.Compare(a.Float, b.Float), true
	case edm.TypeDateTime:
		return a.Time.Compare(b.Time), true
	case edm.TypeBinary:
		return bytes.Compare(a.Bytes, b.Bytes), true
	}
	return 0, false
}

func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case b:
		return -1
	}
	return 1
}
