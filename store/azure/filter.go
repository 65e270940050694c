package azure

import (
	"encoding/hex"
	"math"
	"strconv"
	"strings"

	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/store"
)

// buildFilter renders the OData $filter of a query: the partition, the
// RowKey range and those conditions the server evaluates exactly as
// store.MatchFilter does. Every page is filtered again with MatchFilter, so
// a condition left out only costs bandwidth; pushing one down whose server
// semantics differ could lose rows, and is never done:
//
//   - conditions on a property name that is not a valid identifier (it
//     cannot be written into a filter safely, and matches nothing anyway);
//   - NaN and ±Infinity, which have no portable OData literal;
//   - ordering (lt, le, gt, ge) on Boolean, Guid and Binary, whose server
//     order is not documented;
//   - with emulator workarounds on, every Int64 condition: Azurite compares
//     Int64 values as strings (Azure/Azurite#2385, so 9 > 13) and fails with
//     HTTP 500 when a row holds a non-numeric value in that property.
//
// All values are escaped: single quotes in strings are doubled, and typed
// values use their OData literal (123L, datetime'…', guid'…', X'…').
func buildFilter(q store.Query, emulator bool) string {
	var parts []string
	if !q.AllPartitions {
		parts = append(parts, "PartitionKey eq "+quote(q.PK))
	}
	if q.From != "" {
		parts = append(parts, "RowKey ge "+quote(q.From))
	}
	if q.To != "" {
		parts = append(parts, "RowKey lt "+quote(q.To))
	}
	for _, c := range q.Filter {
		if cond, ok := condFilter(c, emulator); ok {
			parts = append(parts, cond)
		}
	}
	return strings.Join(parts, " and ")
}

var cmpOps = map[store.Cmp]string{
	store.Eq: "eq", store.Ne: "ne", store.Lt: "lt", store.Le: "le", store.Gt: "gt", store.Ge: "ge",
}

// condFilter renders one condition, or reports false if it is left to the
// client (see buildFilter).
func condFilter(c store.Cond, emulator bool) (string, bool) {
	op, ok := cmpOps[c.Cmp]
	if !ok || store.ValidatePropertyName(c.Prop) != nil {
		return "", false
	}
	ordering := c.Cmp != store.Eq && c.Cmp != store.Ne
	v := c.Value
	switch v.Type {
	case edm.TypeBoolean, edm.TypeGuid, edm.TypeBinary:
		if ordering {
			return "", false
		}
	case edm.TypeInt64:
		if emulator {
			return "", false
		}
	case edm.TypeDouble:
		if math.IsNaN(v.Float) || math.IsInf(v.Float, 0) {
			return "", false
		}
	}
	lit, ok := literal(v)
	if !ok {
		return "", false
	}
	return c.Prop + " " + op + " " + lit, true
}

// quote renders s as an OData string literal.
func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// literal renders a value as an OData literal of its EDM type.
func literal(v edm.Value) (string, bool) {
	switch v.Type {
	case edm.TypeString:
		return quote(v.Str), true
	case edm.TypeBoolean:
		return strconv.FormatBool(v.Bool), true
	case edm.TypeInt32:
		return strconv.FormatInt(v.Int, 10), true
	case edm.TypeInt64:
		return strconv.FormatInt(v.Int, 10) + "L", true
	case edm.TypeDouble:
		return doubleLiteral(v.Float), true
	case edm.TypeDateTime:
		return "datetime'" + edm.FormatDateTime(v.Time) + "'", true
	case edm.TypeGuid:
		return "guid'" + v.Str + "'", true
	case edm.TypeBinary:
		return "X'" + hex.EncodeToString(v.Bytes) + "'", true
	}
	return "", false
}

// doubleLiteral renders a finite double so that the parser reads a Double,
// not an Int32: in plain decimal notation with a decimal point (5.0,
// 0.000001), never with an exponent. Azure accepts 1E+300 too, but Azurite's
// lexer reads a number only as -?[0-9]+(.[0-9]+)?L? and takes 1.0E+300 for a
// property name; the shortest plain decimal round-trips exactly everywhere.
func doubleLiteral(f float64) string {
	s := strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.Contains(s, ".") {
		s += ".0"
	}
	return s
}
