package events

import (
	"strconv"
	"strings"

	"github.com/tablejournal/tablejournal/events/rules"
)

// path locates a value in a command, as rules.ValidationError.Field names it.
// It is a small value so that decoding and validating can carry it
// everywhere and only format it for an error.
type path struct {
	kind pathKind
	op   int    // the operation, for pathOp and pathProperty
	name string // the field, property or meta key
}

type pathKind uint8

const (
	pathTop      pathKind = iota // name: "id", "ops", ... or "" for the whole input
	pathOp                       // ops[op], or ops[op].name when name is set
	pathEntity                   // ops[op].entity
	pathProperty                 // ops[op].entity["name"]
	pathMeta                     // meta["name"]
)

func topPath(name string) path              { return path{kind: pathTop, name: name} }
func opPath(op int, name string) path       { return path{kind: pathOp, op: op, name: name} }
func entityPath(op int) path                { return path{kind: pathEntity, op: op} }
func propertyPath(op int, name string) path { return path{kind: pathProperty, op: op, name: name} }
func metaPath(key string) path              { return path{kind: pathMeta, name: key} }
func (p path) fail(r rules.Rule, format string, args ...any) *rules.ValidationError {
	return rules.Errorf(p.String(), r, format, args...)
}

// String formats p: "pk", "ops[3].rk", `ops[3].entity["qty"]`, `meta["k"]`.
func (p path) String() string {
	var b strings.Builder
	switch p.kind {
	case pathTop:
		return p.name
	case pathMeta:
		b.WriteString("meta[")
		b.WriteString(strconv.Quote(p.name))
		b.WriteString("]")
		return b.String()
	}
	b.WriteString("ops[")
	b.WriteString(strconv.Itoa(p.op))
	b.WriteString("]")
	switch p.kind {
	case pathOp:
		if p.name != "" {
			b.WriteString(".")
			b.WriteString(p.name)
		}
	case pathEntity:
		b.WriteString(".entity")
	case pathProperty:
		b.WriteString(".entity[")
		b.WriteString(strconv.Quote(p.name))
		b.WriteString("]")
	}
	return b.String()
}

// The fields of a command and of a row operation, as both codecs name them.
var (
	commandFields = []string{"id", "table", "pk", "ops", "issuer", "issuedAt", "meta", "prune"}
	opFields      = []string{"op", "rk", "entity", "ifVersion"}
)

// unknownField is the error for a field named key in the object at p, which
// has only the fields known. A key that differs from a known one only in
// case says which one it resembles.
func unknownField(p path, key string, known []string) *rules.ValidationError {
	for _, k := range known {
		if strings.EqualFold(k, key) {
			return p.fail(rules.UnknownField, "unknown field %q: field names are case-sensitive; did you mean %q?", key, k)
		}
	}
	in := "the command"
	if p.kind == pathOp {
		in = "a row operation"
	}
	return p.fail(rules.UnknownField, "unknown field %q; %s has only %s", key, in, strings.Join(known, ", "))
}

// missingRK is the error for operation i without "rk".
func missingRK(i int) *rules.ValidationError {
	return opPath(i, "rk").fail(rules.RKRequired, `no "rk": every row operation names its RowKey; write "rk": "" for the empty one`)
}
