package decide

import (
	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/rows"
	"github.com/tablejournal/tablejournal/store"
	"github.com/tablejournal/tablejournal/wire"
)

// What a transaction costs against the store's limits: operations and the
// bytes of its request body (SPEC §4; Azure holds a transaction to 100
// operations and 4 MiB, an entity to 1 MiB).

// rowCost is the transaction cost of one row's writes in a batch: each
// added version row is one insert, and the tip is one op when it changed.
func rowCost(pk string, baseTip, tip *rows.Row, added []rows.Row) (ops, bytes int, err error) {
	for _, r := range added {
		sz, err := entityCost(pk, r)
		if err != nil {
			return 0, 0, err
		}
		ops++
		bytes += sz
	}
	switch {
	case tip != nil && tip != baseTip:
		sz, err := entityCost(pk, *tip)
		if err != nil {
			return 0, 0, err
		}
		ops++
		bytes += sz
	case tip == nil && baseTip != nil:
		ops++
		bytes += wireCost(edm.EntitySize(pk, rows.TipKey(baseTip.RK), nil), nil)
	}
	return ops, bytes, nil
}

func entityCost(pk string, r rows.Row) (int, error) {
	sz := encodedSize(pk, r)
	if sz > store.MaxEntityBytes {
		return 0, reject(wire.CodeTooLarge, wire.RuleEntityTooLarge, "version %d of %q would be %d bytes, over the %d-byte entity limit", r.Version, r.RK, sz, store.MaxEntityBytes)
	}
	// The system columns hold no Binary: the user's properties are all
	// wireCost counts beside the size.
	return wireCost(sz, r.Props), nil
}

// encodedSize is edm.EntitySize of r as stored (r.Encode() under
// r.StoreKey()) without building the entity, which was a map per row image
// priced, on the hot path, for a figure.
func encodedSize(pk string, r rows.Row) int {
	sys, cols := r.SystemColumns()
	for _, c := range sys[:cols] {
		if _, ok := r.Props[c.Name]; ok {
			// Not from a valid command (names beginning with '_' are
			// reserved): Encode overwrites it, so count what it stores.
			return edm.EntitySize(pk, r.StoreKey(), r.Encode())
		}
	}
	n := edm.EntitySize(pk, r.StoreKey(), r.Props)
	for _, c := range sys[:cols] {
		n += edm.PropertySize(c.Name, c.Value)
	}
	return n
}

// wireCost is events.WireCost: the one rule by which the projector prices
// a transaction and Validate refuses a command that cannot fit one.
func wireCost(size int, props edm.Entity) int { return events.WireCost(size, props) }
