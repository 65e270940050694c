package events

import "github.com/tablejournal/tablejournal/events/edm"

// OpWireOverhead is what one operation adds to a store transaction's
// request body beyond its entity: the multipart boundary and the
// operation's headers.
const OpWireOverhead = 512

// WireCost is an entity's share of a store transaction's request body,
// which is what Azure holds to 4 MiB (MaxCommandBytes): its EntitySize
// (size), Binary values a third larger since they travel in base64, and
// OpWireOverhead. The projector prices its transactions with it, and
// Validate a command's entities, so that a command whose new rows alone
// cannot fit one transaction is refused before it is published rather
// than rejected by the projector.
func WireCost(size int, props edm.Entity) int {
	for _, v := range props {
		if v.Type == edm.TypeBinary {
			size += (len(v.Bytes) + 2) / 3
		}
	}
	return size + OpWireOverhead
}
