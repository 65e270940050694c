package decide

import "github.com/tablejournal/tablejournal/wire"

// PriorFrom picks from an ID's outcomes the one that decides the message at
// seq: the newest earlier one that applied or was a duplicate, else none.
func PriorFrom(all []wire.Outcome, seq uint64) Prior {
	var best Prior
	for _, o := range all {
		if o.Seq < seq && o.Seq > best.Seq && (o.Status == wire.StatusApplied || o.Status == wire.StatusDuplicate) {
			best = Prior{Seq: o.Seq, Status: o.Status, Digest: o.Digest}
		}
	}
	return best
}
