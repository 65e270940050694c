package events

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/events/rules"
)

// Limits of SPEC §2 beside those in command.go.
const (
	// MaxIssuerLen is the most characters (runes) of Command.Issuer.
	MaxIssuerLen = 256
	// MaxMetaEntries is the most entries of Command.Meta.
	MaxMetaEntries = 64
	// MaxMetaKeyLen is the most bytes of a Meta key.
	MaxMetaKeyLen = 128
	// MaxMetaValueLen is the most bytes of a Meta value.
	MaxMetaValueLen = 1024

	// SystemColumnsReserve is what a stored row may weigh beyond
	// EntitySize(pk, rk, entity) of the command's entity, by Azure's
	// formula (see EntitySize), so that a valid entity still fits
	// MaxEntityBytes as a version row or tombstone:
	//
	//   - the six system columns at their largest, 407 bytes:
	//     _v Int64 (8+2·2+8), _cmd String of a MaxIDLen ID (8+2·4+2·128+4),
	//     _seq Int64 (8+2·4+8), _at DateTime (8+2·3+8),
	//     _op String "upsertMerge" (8+2·3+2·11+4), _deleted Boolean (8+2·8+1);
	//   - the growth of the RowKey into "old:" + escaped RK + ":" + 19
	//     digits, 1380 bytes: RowKeyOverhead characters, plus 2 for each
	//     ':' or '%' that escaping expands to 3, of which a RowKey that
	//     passes rules.KeyTooLong holds at most (MaxKeyUnits-RowKeyOverhead)/3,
	//     all in UTF-16.
	SystemColumnsReserve = systemColumnsBytes + versionKeyGrowthBytes
	// MaxEntitySize is the largest EntitySize a command's entity may have.
	MaxEntitySize = MaxEntityBytes - SystemColumnsReserve

	systemColumnsBytes = (8 + 2*2 + 8) + // _v
		(8 + 2*4 + 2*MaxIDLen + 4) + // _cmd
		(8 + 2*4 + 8) + // _seq
		(8 + 2*3 + 8) + // _at
		(8 + 2*3 + 2*len(OpUpsertMerge) + 4) + // _op
		(8 + 2*8 + 1) // _deleted
	versionKeyGrowthBytes = 2 * (RowKeyOverhead + 2*((MaxKeyUnits-RowKeyOverhead)/3))
)

// Validate checks every rule of SPEC §2 and returns nil or the first
// broken rule as a *rules.ValidationError wrapping rules.ErrInvalid. The writer calls
// it before publishing and the projector again before applying, since a
// command can come from any client.
//
// The result is deterministic: the same command always gives the same
// error (properties and meta keys are checked in name order), because a
// rejection reason is part of the projection.
//
// The same RowKey twice in one command is allowed: its operations apply in
// order. An empty PartitionKey or RowKey is allowed, as in Azure; the
// journal subject carries the empty PartitionKey as the token "=". IssuedAt is only checked
// to be zero or within years 1601..9999; the codecs carry it at 100 ns.
func (c *Command) Validate() error {
	if c == nil {
		return rules.Errorf("", rules.Malformed, "nil command")
	}
	if err := validateID(c.ID); err != nil {
		return err
	}
	if err := validateTable(c.Table); err != nil {
		return err
	}
	if err := validateKey(topPath("pk"), c.PK, utf16Len(c.PK)); err != nil {
		return err
	}
	if c.Prune != nil {
		if err := c.validatePrune(); err != nil {
			return err
		}
	} else if n := len(c.Ops); n < 1 || n > MaxOpsPerCommand {
		return rules.Errorf("ops", rules.OpsCount, "%d row operations, want 1..%d", n, MaxOpsPerCommand)
	}
	total := 0
	for i := range c.Ops {
		size, err := c.validateOp(i)
		if err != nil {
			return err
		}
		total += WireCost(size, c.Ops[i].Entity)
	}
	if total > MaxCommandBytes {
		return rules.Errorf("ops", rules.CommandTooLarge, "entities total %d bytes as a store transaction (Binary in base64, %d per operation), at most %d",
			total, OpWireOverhead, MaxCommandBytes)
	}
	if !utf8.ValidString(c.Issuer) {
		return rules.Errorf("issuer", rules.InvalidUTF8, "not valid UTF-8")
	}
	if n := utf8.RuneCountInString(c.Issuer); n > MaxIssuerLen {
		return rules.Errorf("issuer", rules.IssuerLength, "%d characters, at most %d", n, MaxIssuerLen)
	}
	if _, err := issuedAt(c); err != nil {
		return err // a non-nil *rules.ValidationError
	}
	return validateMeta(c.Meta)
}

func validateID(id string) error {
	if id == "" {
		return rules.Errorf("id", rules.IDRequired, "the command ID is empty")
	}
	if len(id) > MaxIDLen {
		return rules.Errorf("id", rules.IDLength, "%d bytes, at most %d", len(id), MaxIDLen)
	}
	for i := 0; i < len(id); i++ {
		if c := id[i]; !isAlnum(c) && c != '.' && c != '_' && c != ':' && c != '-' {
			return rules.Errorf("id", rules.IDCharset, "contains %q at byte %d; want [A-Za-z0-9._:-]", c, i)
		}
	}
	return nil
}

func validateTable(t string) error {
	ok := len(t) >= 3 && len(t) <= 63 && isLetter(t[0])
	for i := 1; ok && i < len(t); i++ {
		ok = isAlnum(t[i])
	}
	if !ok {
		return rules.Errorf("table", rules.TableName, "%q does not match ^[A-Za-z][A-Za-z0-9]{2,62}$", t)
	}
	if strings.EqualFold(t, "tables") {
		return rules.Errorf("table", rules.TableName, "%q is reserved by Azure", t)
	}
	return nil
}

// validateKey checks a PartitionKey or RowKey whose stored length is
// stored UTF-16 code units: Azure measures its 1 KiB key limit in UTF-16.
func validateKey(p path, key string, stored int) error {
	for i, r := range key {
		switch {
		case r == utf8.RuneError && !strings.HasPrefix(key[i:], "\uFFFD"):
			return p.fail(rules.InvalidUTF8, "not valid UTF-8 at byte %d", i)
		case r == '/' || r == '\\' || r == '#' || r == '?':
			return p.fail(rules.KeyForbiddenChar, "contains %q at byte %d", r, i)
		case r <= 0x1F || r >= 0x7F && r <= 0x9F:
			return p.fail(rules.KeyControlChar, "contains control character %U at byte %d", r, i)
		}
	}
	if stored > MaxKeyUnits {
		if stored != utf16Len(key) {
			return p.fail(rules.KeyTooLong, "%d UTF-16 code units once escaped for versioning (':' and '%%' take 3), at most %d (Azure's 1 KiB less the version suffix)",
				stored-RowKeyOverhead, MaxKeyUnits-RowKeyOverhead)
		}
		return p.fail(rules.KeyTooLong, "%d UTF-16 code units, at most %d (Azure's 1 KiB)", stored, MaxKeyUnits)
	}
	return nil
}

// versionKeyLen is the length of the longest stored RowKey of rk, its
// version rows' "old:" + escaped rk + ":" + 19 digits.
func versionKeyLen(rk string) int {
	return utf16Len(rk) + 2*strings.Count(rk, ":") + 2*strings.Count(rk, "%") + RowKeyOverhead
}

// validateOp checks one row operation and returns its entity's size.
func (c *Command) validateOp(i int) (int, error) {
	op := &c.Ops[i]
	if !op.Op.Valid() {
		return 0, opPath(i, "op").fail(rules.UnknownOp,
			"unknown operation %q; want insert, replace, merge, upsert, upsertMerge or delete", op.Op)
	}
	if err := validateKey(opPath(i, "rk"), op.RK, versionKeyLen(op.RK)); err != nil {
		return 0, err
	}
	if op.IfVersion != nil {
		if *op.IfVersion < 0 {
			return 0, opPath(i, "ifVersion").fail(rules.IfVersionNegative, "ifVersion %d is negative", *op.IfVersion)
		}
		if op.Op == OpInsert {
			return 0, opPath(i, "ifVersion").fail(rules.InsertIfVersion, "an insert cannot carry ifVersion: it already means the row must not exist")
		}
	}
	switch {
	case op.Op == OpDelete && len(op.Entity) > 0:
		return 0, entityPath(i).fail(rules.DeleteEntity, "a delete carries no properties, got %d", len(op.Entity))
	case op.Op != OpDelete && op.Entity == nil:
		return 0, entityPath(i).fail(rules.EntityRequired, "%s needs an entity (an empty one is fine)", op.Op)
	}
	if n := len(op.Entity); n > MaxProperties {
		return 0, entityPath(i).fail(rules.TooManyProperties, "%d properties, at most %d", n, MaxProperties)
	}
	for name, v := range op.Entity {
		if checkProperty(name, v) != nil {
			return 0, firstBadProperty(i, op.Entity)
		}
	}
	size := edm.EntitySize(c.PK, op.RK, op.Entity)
	if size > MaxEntitySize {
		return 0, entityPath(i).fail(rules.EntityTooLarge, "%d bytes, at most %d (%d minus %d for system columns)",
			size, MaxEntitySize, MaxEntityBytes, SystemColumnsReserve)
	}
	return size, nil
}

// firstBadProperty finds, in name order, the property that fails.
func firstBadProperty(i int, e edm.Entity) error {
	for _, name := range appendSortedKeys(nil, e) {
		if err := checkProperty(name, e[name]); err != nil {
			err.Field = propertyPath(i, name).String()
			return err
		}
	}
	return nil
}

// systemNames are the property names Azure keeps for itself.
var systemNames = map[string]bool{"PartitionKey": true, "RowKey": true, "Timestamp": true, "odata.etag": true}

// checkProperty checks a property name and its value.
func checkProperty(name string, v edm.Value) *rules.ValidationError {
	if err := checkPropertyName(name); err != nil {
		return err
	}
	if err := checkValue(v); err != nil {
		return err
	}
	switch {
	case v.Type == edm.TypeString && 2*utf16Len(v.Str) > MaxBinaryBytes:
		return rules.Errorf("", rules.StringTooLong, "%d UTF-16 characters, at most %d", utf16Len(v.Str), MaxBinaryBytes/2)
	case v.Type == edm.TypeBinary && len(v.Bytes) > MaxBinaryBytes:
		return rules.Errorf("", rules.BinaryTooLong, "%d bytes, at most %d", len(v.Bytes), MaxBinaryBytes)
	}
	return nil
}

func checkPropertyName(name string) *rules.ValidationError {
	switch {
	case name == "":
		return rules.Errorf("", rules.PropertyName, "empty property name")
	case !utf8.ValidString(name):
		return rules.Errorf("", rules.InvalidUTF8, "property name is not valid UTF-8")
	case name[0] == '_':
		return rules.Errorf("", rules.PropertyReserved, "names beginning with '_' are reserved for system columns")
	case systemNames[name]:
		return rules.Errorf("", rules.PropertySystem, "%s is a system property of Azure Tables", name)
	}
	for i, r := range name {
		if !isIdentRune(r, i == 0) {
			return rules.Errorf("", rules.PropertyName, "not a C# identifier: %q at byte %d", r, i)
		}
	}
	if n := utf16Len(name); n > MaxPropertyNameLen {
		return rules.Errorf("", rules.PropertyNameLength, "%d characters, at most %d", n, MaxPropertyNameLen)
	}
	return nil
}

// isIdentRune reports whether r may appear in a C# identifier: a letter
// (Unicode categories L and Nl) or '_' first; then also decimal digits,
// connectors and combining marks.
func isIdentRune(r rune, first bool) bool {
	if r == '_' || unicode.IsLetter(r) || unicode.Is(unicode.Nl, r) {
		return true
	}
	return !first && (unicode.IsDigit(r) || unicode.In(r, unicode.Pc, unicode.Mn, unicode.Mc))
}

func validateMeta(m map[string]string) error {
	if len(m) > MaxMetaEntries {
		return rules.Errorf("meta", rules.MetaCount, "%d entries, at most %d", len(m), MaxMetaEntries)
	}
	for k, v := range m {
		if checkMeta(k, v) != nil {
			for _, k := range appendSortedKeys(nil, m) {
				if err := checkMeta(k, m[k]); err != nil {
					err.Field = metaPath(k).String()
					return err
				}
			}
		}
	}
	return nil
}

func checkMeta(k, v string) *rules.ValidationError {
	switch {
	case !utf8.ValidString(k) || !utf8.ValidString(v):
		return rules.Errorf("", rules.InvalidUTF8, "not valid UTF-8")
	case k == "":
		return rules.Errorf("", rules.MetaKey, "empty meta key")
	case len(k) > MaxMetaKeyLen:
		return rules.Errorf("", rules.MetaKey, "key of %d bytes, at most %d", len(k), MaxMetaKeyLen)
	case strings.ContainsFunc(k, unicode.IsControl):
		return rules.Errorf("", rules.MetaKey, "key holds a control character")
	case len(v) > MaxMetaValueLen:
		return rules.Errorf("", rules.MetaValue, "value of %d bytes, at most %d", len(v), MaxMetaValueLen)
	}
	return nil
}

func isLetter(c byte) bool { return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' }
func isAlnum(c byte) bool  { return isLetter(c) || c >= '0' && c <= '9' }

// ValidateTable checks a table name against the rule of SPEC §2
// (rules.TableName): what a command's table must be, and what a table the
// projector derives from one (a plain table's history table) must be too.
func ValidateTable(t string) error { return validateTable(t) }
