package store

import (
	"fmt"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/events/edm"
)

// Validation shared by the backends, so that they refuse exactly what Azure
// Tables refuses, and refuse it the same way, before any I/O. Azurite is
// laxer than Azure in several of these rules; checking here makes the
// backends agree regardless.

const (
	// MaxKeyUTF16 is the longest PartitionKey or RowKey in UTF-16 code
	// units: Azure's limit is 1 KiB of UTF-16, so 512 units (a character
	// above U+FFFF takes two).
	MaxKeyUTF16 = events.MaxKeyBytes / 2
	// maxValueBytes is the largest String (in UTF-16) or Binary value.
	maxValueBytes = events.MaxBinaryBytes
	// maxPropertyNameLen is the longest property name in UTF-16 code units.
	maxPropertyNameLen = events.MaxPropertyNameLen
)

// ValidTableName reports whether name is a valid Azure table name:
// ^[A-Za-z][A-Za-z0-9]{2,62}$ and not the reserved name "tables". Table
// names are case-insensitive: "Orders" and "orders" are one table.
func ValidTableName(name string) bool {
	if len(name) < 3 || len(name) > 63 {
		return false
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		letter := c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z'
		if !letter && (i == 0 || c < '0' || c > '9') {
			return false
		}
	}
	return !equalFoldASCII(name, "tables")
}

func equalFoldASCII(a, b string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := 0; i < len(a); i++ {
		x, y := a[i]|0x20, b[i]|0x20
		if x != y {
			return false
		}
	}
	return true
}

// ValidateTableName returns an error wrapping ErrInvalid if name is not a
// valid table name.
func ValidateTableName(name string) error {
	if !ValidTableName(name) {
		return fmt.Errorf("table name %q: %w", name, ErrInvalid)
	}
	return nil
}

// ValidateKey checks a PartitionKey or RowKey: valid UTF-8, at most
// MaxKeyUTF16 UTF-16 code units (ErrTooLarge), and none of / \ # ? nor the
// control characters U+0000..U+001F and U+007F..U+009F (ErrInvalid). An empty
// key is valid, as in Azure.
func ValidateKey(key string) error {
	if !utf8.ValidString(key) {
		return fmt.Errorf("key %q is not valid UTF-8: %w", key, ErrInvalid)
	}
	for _, r := range key {
		switch {
		case r == '/' || r == '\\' || r == '#' || r == '?':
			return fmt.Errorf("key %q holds %q: %w", key, r, ErrInvalid)
		case r <= 0x1F || r >= 0x7F && r <= 0x9F:
			return fmt.Errorf("key %q holds control character %U: %w", key, r, ErrInvalid)
		}
	}
	if n := utf16Len(key); n > MaxKeyUTF16 {
		return fmt.Errorf("key of %d UTF-16 code units, limit %d: %w", n, MaxKeyUTF16, ErrTooLarge)
	}
	return nil
}

// ValidatePropertyName checks a property name: a C# identifier (a letter or
// "_" followed by letters, digits, "_" and combining marks) of at most 255
// characters, and not one of the system properties PartitionKey, RowKey,
// Timestamp.
func ValidatePropertyName(name string) error {
	if name == "" {
		return fmt.Errorf("empty property name: %w", ErrInvalid)
	}
	if !utf8.ValidString(name) {
		return fmt.Errorf("property name %q is not valid UTF-8: %w", name, ErrInvalid)
	}
	if n := utf16Len(name); n > maxPropertyNameLen {
		return fmt.Errorf("property name of %d characters, limit %d: %w", n, maxPropertyNameLen, ErrInvalid)
	}
	for i, r := range name {
		ok := r == '_' || unicode.IsLetter(r) || unicode.Is(unicode.Nl, r)
		if i > 0 {
			ok = ok || unicode.IsDigit(r) || unicode.In(r, unicode.Mn, unicode.Mc, unicode.Pc, unicode.Cf)
		}
		if !ok {
			return fmt.Errorf("property name %q is not an identifier: %w", name, ErrInvalid)
		}
	}
	switch name {
	case "PartitionKey", "RowKey", "Timestamp":
		return fmt.Errorf("property name %q is a system property: %w", name, ErrInvalid)
	}
	return nil
}

// validateValue checks that v is a value Azure stores and returns exactly:
// a known type, an Int32 in range, a canonical Guid, a DateTime in years
// 1601..9999 with 100 ns precision, valid UTF-8 strings (ErrInvalid); a
// String or Binary of at most 64 KiB (ErrTooLarge).
func validateValue(v edm.Value) error {
	switch v.Type {
	case edm.TypeString:
		if !utf8.ValidString(v.Str) {
			return fmt.Errorf("string is not valid UTF-8: %w", ErrInvalid)
		}
		if n := utf16Len(v.Str) * 2; n > maxValueBytes {
			return fmt.Errorf("string of %d UTF-16 bytes, limit %d: %w", n, maxValueBytes, ErrTooLarge)
		}
	case edm.TypeBinary:
		if n := len(v.Bytes); n > maxValueBytes {
			return fmt.Errorf("binary of %d bytes, limit %d: %w", n, maxValueBytes, ErrTooLarge)
		}
	case edm.TypeInt32:
		if v.Int < -1<<31 || v.Int > 1<<31-1 {
			return fmt.Errorf("Int32 %d out of range: %w", v.Int, ErrInvalid)
		}
	case edm.TypeGuid:
		if g, err := edm.ParseGuid(v.Str); err != nil || g != v.Str {
			return fmt.Errorf("guid %q is not in canonical form: %w", v.Str, ErrInvalid)
		}
	case edm.TypeDateTime:
		t := v.Time.UTC()
		if t.Year() < 1601 || t.Year() > 9999 {
			return fmt.Errorf("DateTime %v outside years 1601..9999: %w", t, ErrInvalid)
		}
		if t.Nanosecond()%100 != 0 {
			return fmt.Errorf("DateTime %v is finer than 100 ns: %w", t, ErrInvalid)
		}
	case edm.TypeBoolean, edm.TypeInt64, edm.TypeDouble:
	default:
		return fmt.Errorf("unknown type %v: %w", v.Type, ErrInvalid)
	}
	return nil
}

// validateProps checks every property name and value of props, without
// the limits on the whole entity.
func validateProps(props edm.Entity) error {
	for name, v := range props {
		if err := ValidatePropertyName(name); err != nil {
			return err
		}
		if err := validateValue(v); err != nil {
			return fmt.Errorf("property %s: %w", name, err)
		}
	}
	return nil
}

// CheckEntityLimits checks the limits on a whole entity: at most
// MaxProperties properties and at most MaxEntityBytes by edm.EntitySize.
// Backends also apply it to the result of a Merge.
func CheckEntityLimits(pk, rk string, props edm.Entity) error {
	if len(props) > MaxProperties {
		return fmt.Errorf("%d properties, limit %d: %w", len(props), MaxProperties, ErrTooLarge)
	}
	if n := edm.EntitySize(pk, rk, props); n > MaxEntityBytes {
		return fmt.Errorf("entity of %d bytes, limit %d: %w", n, MaxEntityBytes, ErrTooLarge)
	}
	return nil
}

// ValidateTx checks a transaction before it is sent: 1..MaxOps operations
// (ErrInvalid, ErrTooLarge), a valid partition key, and per operation a known
// kind, a valid RowKey not used by an earlier operation, IfMatch only on
// Replace, Merge and Delete, and a valid entity (its keys, at most
// MaxProperties properties and edm.EntitySize at most MaxEntityBytes, every
// property name and value); then the sum of the entities' sizes at most MaxTxBytes (ErrTooLarge). An error that
// is one operation's fault is a *TxError naming it.
func ValidateTx(pk string, ops []Op) error {
	switch {
	case len(ops) == 0:
		return fmt.Errorf("empty transaction: %w", ErrInvalid)
	case len(ops) > MaxOps:
		return fmt.Errorf("%d operations, limit %d: %w", len(ops), MaxOps, ErrTooLarge)
	}
	if err := ValidateKey(pk); err != nil {
		return fmt.Errorf("partition key: %w", err)
	}
	seen := make(map[string]struct{}, len(ops))
	total := 0
	for i, op := range ops {
		if err := validateOp(pk, op, seen); err != nil {
			return &TxError{Index: i, RK: op.RK, Err: err}
		}
		total += edm.EntitySize(pk, op.RK, op.Props)
	}
	if total > MaxTxBytes {
		return fmt.Errorf("transaction of %d bytes, limit %d: %w", total, MaxTxBytes, ErrTooLarge)
	}
	return nil
}

// ValidateTxLimits checks a transaction that passed ValidateTx against the
// tighter limits of a service (events.Limits; the zero value checks
// nothing): each stored RowKey at most l.MaxRowKeyBytes of UTF-8 and no
// property l reserves (a *TxError naming the op, wrapping ErrInvalid), the
// entities at most l.TxBytes() together (ErrTooLarge).
func ValidateTxLimits(pk string, ops []Op, l events.Limits) error {
	if l.MaxRowKeyBytes == 0 && l.MaxTxBytes == 0 && len(l.ReservedProperties) == 0 {
		return nil
	}
	total := 0
	for i, op := range ops {
		if l.MaxRowKeyBytes > 0 && len(op.RK) > l.MaxRowKeyBytes {
			return &TxError{Index: i, RK: op.RK, Err: fmt.Errorf("row key of %d bytes, %s's limit %d: %w", len(op.RK), l.Service, l.MaxRowKeyBytes, ErrInvalid)}
		}
		for name := range op.Props {
			if l.Reserved(name) {
				return &TxError{Index: i, RK: op.RK, Err: fmt.Errorf("property %s is reserved by %s: %w", name, l.Service, ErrInvalid)}
			}
		}
		total += edm.EntitySize(pk, op.RK, op.Props)
	}
	if total > l.TxBytes() {
		return fmt.Errorf("transaction of %d bytes, %s's limit %d: %w", total, l.Service, l.TxBytes(), ErrTooLarge)
	}
	return nil
}

func validateOp(pk string, op Op, seen map[string]struct{}) error {
	if err := ValidateKey(op.RK); err != nil {
		return fmt.Errorf("row key: %w", err)
	}
	if _, dup := seen[op.RK]; dup {
		return fmt.Errorf("row written twice in one transaction: %w", ErrInvalid)
	}
	seen[op.RK] = struct{}{}
	switch op.Kind {
	case Insert, Upsert, UpsertMerge:
		if op.IfMatch != "" && op.IfMatch != "*" {
			return fmt.Errorf("%v takes no etag condition: %w", op.Kind, ErrInvalid)
		}
	case Replace, Merge:
	case Delete:
		if len(op.Props) > 0 {
			return fmt.Errorf("delete carries properties: %w", ErrInvalid)
		}
		return nil
	default:
		return fmt.Errorf("unknown operation %d: %w", op.Kind, ErrInvalid)
	}
	if err := validateProps(op.Props); err != nil {
		return err
	}
	return CheckEntityLimits(pk, op.RK, op.Props)
}

// PageSize returns the page size a query asks for: limit, or
// DefaultPageSize when limit is 0 or above it (Azure's $top is at most 1000).
func PageSize(limit int) int {
	if limit <= 0 || limit > DefaultPageSize {
		return DefaultPageSize
	}
	return limit
}

// ValidateQuery checks a query: a non-negative Limit, no PK with
// AllPartitions, valid keys in PK, From and To, and conditions with a
// property name, a known operator and a valid value (ErrInvalid).
func ValidateQuery(q Query) error {
	if q.Limit < 0 {
		return fmt.Errorf("negative limit %d: %w", q.Limit, ErrInvalid)
	}
	if q.AllPartitions && q.PK != "" {
		return fmt.Errorf("query of every partition names partition %q: %w", q.PK, ErrInvalid)
	}
	for _, k := range []string{q.PK, q.From, q.To} {
		if err := ValidateKey(k); err != nil {
			return fmt.Errorf("query bound: %w", err)
		}
	}
	for _, c := range q.Filter {
		if c.Prop == "" {
			return fmt.Errorf("condition without a property: %w", ErrInvalid)
		}
		if c.Cmp < Eq || c.Cmp > Ge {
			return fmt.Errorf("condition on %s: unknown operator %d: %w", c.Prop, c.Cmp, ErrInvalid)
		}
		if err := validateValue(c.Value); err != nil {
			return fmt.Errorf("condition on %s: %w", c.Prop, err)
		}
	}
	return nil
}

func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		n += utf16.RuneLen(r)
	}
	return n
}
