package rules

import (
	"errors"
	"fmt"
	"io"
)

// ErrInvalid is wrapped by every error that a bad command produces, whether
// it is found while decoding (a bad literal, a wrong annotation, malformed
// input) or by Validate (a broken limit of SPEC §2). Check it with
// errors.Is; the *ValidationError it comes in says where and why.
var ErrInvalid = errors.New("invalid command")

// Rule names one check a command can fail. Rules are stable strings: they
// are recorded in rejected outcomes and tested by callers, so never rename
// one.
type Rule string

// Rules checked by Validate, one per limit of SPEC §2.
const (
	IDRequired = Rule("id-required") // the command ID is empty
	IDLength   = Rule("id-length")   // the command ID is longer than MaxIDLen bytes
	IDCharset  = Rule("id-charset")  // the command ID has a byte outside [A-Za-z0-9._:-]

	TableName = Rule("table-name") // the table name does not match ^[A-Za-z][A-Za-z0-9]{2,62}$ or is "tables"

	KeyTooLong       = Rule("key-too-long")       // PK over MaxKeyBytes, or RK over it once versioned
	KeyForbiddenChar = Rule("key-forbidden-char") // a key holds '/', '\\', '#' or '?'
	KeyControlChar   = Rule("key-control-char")   // a key holds U+0000–U+001F or U+007F–U+009F

	OpsCount          = Rule("ops-count")           // not 1..MaxOpsPerCommand row operations
	UnknownOp         = Rule("unknown-op")          // op is not one of the six OpKinds
	DeleteEntity      = Rule("delete-entity")       // a delete carries properties
	EntityRequired    = Rule("entity-required")     // a non-delete op has no entity (an empty one is fine)
	InsertIfVersion   = Rule("insert-if-version")   // an insert carries ifVersion, which it cannot mean
	IfVersionNegative = Rule("if-version-negative") // ifVersion is negative

	PropertyName       = Rule("property-name")        // not a C# identifier
	PropertyNameLength = Rule("property-name-length") // longer than MaxPropertyNameLen UTF-16 units
	PropertyReserved   = Rule("property-reserved")    // begins with '_', reserved for system columns
	PropertySystem     = Rule("property-system")      // PartitionKey, RowKey, Timestamp or odata.etag
	TooManyProperties  = Rule("too-many-properties")  // more than MaxProperties properties
	EntityTooLarge     = Rule("entity-too-large")     // EntitySize over MaxEntityBytes - SystemColumnsReserve
	StringTooLong      = Rule("string-too-long")      // a String value over MaxBinaryBytes in UTF-16
	BinaryTooLong      = Rule("binary-too-long")      // a Binary value over MaxBinaryBytes
	CommandTooLarge    = Rule("command-too-large")    // all entities together over MaxCommandBytes

	IssuerLength = Rule("issuer-too-long") // issuer over MaxIssuerLen characters
	MetaCount    = Rule("meta-count")      // more than MaxMetaEntries meta entries
	MetaKey      = Rule("meta-key")        // a meta key empty, over MaxMetaKeyLen bytes or with control characters
	MetaValue    = Rule("meta-value")      // a meta value over MaxMetaValueLen bytes

	InvalidUTF8 = Rule("invalid-utf8") // a key, name, string value, issuer or meta entry is not valid UTF-8
)

// Rules of the Go command builder (package tablejournal's Command), which
// a command on the wire cannot break: Publish refuses such a command with
// them, and nothing is published.
const (
	// IfVersionWithoutOp: IfVersion called before any operation, so
	// it guards nothing. It guards the operation added last: call it after
	// the operation.
	IfVersionWithoutOp = Rule("if-version-without-op")
	// IfVersionTwice: IfVersion called twice on one operation (or
	// --if-version given twice), so which guard was meant is unknown.
	IfVersionTwice = Rule("if-version-twice")
)

// Rules about a single typed value. Validate checks them on values built in
// Go; the decoders report them for literals that do not parse.
const (
	BadInt32    = Rule("bad-int32")    // outside the Int32 range, or not an integer
	BadInt64    = Rule("bad-int64")    // not a decimal Int64 literal
	BadDouble   = Rule("bad-double")   // not a number, "NaN", "Infinity" or "-Infinity", or out of range
	BadDateTime = Rule("bad-datetime") // not RFC 3339, finer than 100 ns, or outside years 1601..9999
	BadGuid     = Rule("bad-guid")     // not a GUID; Validate also wants the canonical lowercase form
	BadBinary   = Rule("bad-binary")   // not standard padded base64
	UnknownType = Rule("unknown-type") // an @odata.type that is not one of the eight EDM types
	// ZeroValue: a value built in Go with no type, the zero edm.Value
	// (what a failed constructor such as Guid returns), never written as
	// an empty String. The wire cannot carry one.
	ZeroValue = Rule("zero-value")
)

// Rules reported by the decoders only.
const (
	// BadAnnotation: an @odata.type annotation that is not a string, that
	// names a property the entity does not have, or whose type does not fit
	// the kind of its value (Edm.Guid on a number).
	BadAnnotation = Rule("bad-annotation")
	// DuplicateField: the same field, meta key, property or annotation
	// twice in one object.
	DuplicateField = Rule("duplicate-field")
	// Malformed: the input is not well-formed JSON or msgpack, or a
	// field holds the wrong kind of value.
	Malformed = Rule("malformed")
	// UnknownField: a field that a command or a row operation does not
	// have. Field names are case-sensitive: "IfVersion" and "ifversion"
	// are not "ifVersion". Ignoring them would apply a guarded replace
	// unguarded, or write a misspelled "rk" to the empty RowKey.
	UnknownField = Rule("unknown-field")
	// RKRequired: a row operation without "rk" (or with "rk": null). The
	// empty RowKey, which Azure allows, is given explicitly: "rk": "".
	RKRequired = Rule("rk-required")
	// ContentType: a content type other than ContentTypeJSON or
	// ContentTypeMsgpack.
	ContentType = Rule("content-type")
	// SchemaVersion: a HeaderSchema value this package does not know.
	SchemaVersion = Rule("schema-version")
)

// ValidationError says which field of a command broke which rule. It wraps
// ErrInvalid (and, for a malformed input, the parser's own error).
type ValidationError struct {
	// Field locates the offending value, in the JSON field names:
	// "pk", "ops[3].rk", `ops[3].entity["qty"]`, `meta["k"]`. It is empty
	// when the input as a whole is at fault.
	Field string
	// Rule is the check that failed.
	Rule Rule
	// Detail says what exactly is wrong, for people.
	Detail string

	cause error
}

// Error reads like `ops[3].rk: rule key-forbidden-char: contains '#' at byte 7`.
func (e *ValidationError) Error() string {
	if e.Field == "" {
		return fmt.Sprintf("rule %s: %s", e.Rule, e.Detail)
	}
	return fmt.Sprintf("%s: rule %s: %s", e.Field, e.Rule, e.Detail)
}

// Unwrap returns ErrInvalid and, when there is one, the underlying parser
// error.
func (e *ValidationError) Unwrap() []error {
	if e.cause != nil {
		return []error{ErrInvalid, e.cause}
	}
	return []error{ErrInvalid}
}

// Errorf builds a *ValidationError of field and rule r, its Detail
// formatted.
func Errorf(field string, r Rule, format string, args ...any) *ValidationError {
	return &ValidationError{Field: field, Rule: r, Detail: fmt.Sprintf(format, args...)}
}

// MalformedInput builds a Malformed error caused by a parser error, which
// it wraps. Input that ends early is io.ErrUnexpectedEOF, whatever the
// parser said.
func MalformedInput(field string, cause error) *ValidationError {
	if cause == io.EOF {
		cause = io.ErrUnexpectedEOF
	}
	return &ValidationError{Field: field, Rule: Malformed, Detail: cause.Error(), cause: cause}
}

// UnknownCommand: a wire.HeaderCommand header value other than
// wire.CommandPlain and wire.CommandErase.
const UnknownCommand = Rule("unknown-command")

// Rules of prune commands. PruneFuture is checked by the projector,
// which alone knows the command's own journal sequence.
const (
	PruneOps     = Rule("prune-ops")            // a prune command carries row operations
	PruneHorizon = Rule("prune-horizon")        // the horizon is 0 or above events.MaxPruneHorizon
	PruneFuture  = Rule("prune-horizon-future") // the horizon is not below the prune command's own sequence
)
