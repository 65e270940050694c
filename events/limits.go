package events

import (
	"strings"

	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/events/rules"
)

// Limits are the limits of a table service beyond SPEC §2, where it is
// tighter than Azure Tables (which Validate checks). The zero value adds
// nothing: Azure Tables, Azurite and the embedded store.
//
// A broken limit is reported as the rule Azure's own limit of the same kind
// is (rules.KeyTooLong, rules.CommandTooLarge, rules.PropertySystem), so that a
// caller tells them apart by Detail only.
type Limits struct {
	// Service names the service in messages, as "Cosmos DB for Table".
	Service string
	// MaxRowKeyBytes bounds the UTF-8 bytes of every RowKey the projector
	// stores for a command's RowKey: its version rows' "old:" + escaped
	// RowKey + ":" + 19 digits, the longest. If zero, only Azure's limit.
	MaxRowKeyBytes int
	// MaxTxBytes bounds one transaction, measured as Azure's limit
	// (EntitySize of every entity): a command's entities together, and the
	// projector's transactions. If zero, MaxCommandBytes.
	MaxTxBytes int
	// ReservedProperties are property names the service refuses, compared
	// without regard to case.
	ReservedProperties []string
}

// CosmosLimits are the limits of Azure Cosmos DB for Table that are
// tighter than Azure Tables', from Microsoft's "Frequently asked questions
// about Azure Cosmos DB for Table" (learn.microsoft.com/azure/cosmos-db/
// table/faq): "Row keys can only be up to 255 bytes", "Batches can only
// have up to 2 MBs", and "Azure Cosmos DB reserves the entity property
// names ID, rid, etag, and ResourceId". See docs/cosmos.md.
var CosmosLimits = Limits{
	Service:            "Cosmos DB for Table",
	MaxRowKeyBytes:     255,
	MaxTxBytes:         2 << 20,
	ReservedProperties: []string{"ID", "rid", "etag", "ResourceId"},
}

// TxBytes is the limit on one transaction: MaxTxBytes, or MaxCommandBytes.
func (l Limits) TxBytes() int {
	if l.MaxTxBytes > 0 {
		return min(l.MaxTxBytes, MaxCommandBytes)
	}
	return MaxCommandBytes
}

// StoredRowKeyBytes is the UTF-8 length of the longest RowKey stored for
// rk: that of its version rows, "old:" + escaped rk + ":" + 19 digits
// (SPEC §4; ':' and '%' are escaped in 3 bytes).
func StoredRowKeyBytes(rk string) int {
	return len(rk) + 2*strings.Count(rk, ":") + 2*strings.Count(rk, "%") + RowKeyOverhead
}

// Reserved reports whether the service refuses the property name.
func (l Limits) Reserved(name string) bool {
	for _, r := range l.ReservedProperties {
		if strings.EqualFold(r, name) {
			return true
		}
	}
	return false
}

// Validate checks every rule of SPEC §2 (Command.Validate), then the
// limits of l, and returns nil or the first broken rule as a
// *rules.ValidationError wrapping rules.ErrInvalid. The writer and the projector call
// it with the limits of the table service the commands go to.
func (l Limits) Validate(c *Command) error {
	if err := c.Validate(); err != nil {
		return err
	}
	return l.Check(c)
}

// Check checks the limits of l alone on a command that passed Validate.
// With the zero Limits it checks nothing.
func (l Limits) Check(c *Command) error {
	if l.MaxRowKeyBytes == 0 && l.MaxTxBytes == 0 && len(l.ReservedProperties) == 0 {
		return nil
	}
	total := 0
	for i, op := range c.Ops {
		if l.MaxRowKeyBytes > 0 {
			if n := StoredRowKeyBytes(op.RK); n > l.MaxRowKeyBytes {
				return opPath(i, "rk").fail(rules.KeyTooLong, "%d bytes of UTF-8 once versioned (%d of the row key, ':' and '%%' taking 3), at most %d (%s: row keys up to %d bytes)",
					n, n-RowKeyOverhead, l.MaxRowKeyBytes, l.Service, l.MaxRowKeyBytes)
			}
		}
		for _, name := range appendSortedKeys(nil, op.Entity) {
			if l.Reserved(name) {
				return propertyPath(i, name).fail(rules.PropertySystem, "%s is a property name %s reserves", name, l.Service)
			}
		}
		total += WireCost(edm.EntitySize(c.PK, op.RK, op.Entity), op.Entity)
	}
	if total > l.TxBytes() {
		return topPath("ops").fail(rules.CommandTooLarge, "entities total %d bytes as a store transaction, at most %d (%s: batches up to %d bytes)",
			total, l.TxBytes(), l.Service, l.TxBytes())
	}
	return nil
}
