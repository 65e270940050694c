package rows

import (
	"testing"

	"github.com/tablejournal/tablejournal/events/edm"
)

// TestHorizonTotal: a fence carries the rows every prune removed beside
// the last prune's; a fence written before the total reads as the last
// prune's count.
func TestHorizonTotal(t *testing.T) {
	props := edm.Entity{}
	Horizon{Seq: 9, Cmd: "p5", Removed: 900, Total: 4900}.Put(props)
	if h := HorizonOf(props); h != (Horizon{Seq: 9, Cmd: "p5", Removed: 900, Total: 4900}) {
		t.Errorf("read back %+v", h)
	}
	delete(props, ColPruneTotal)
	if h := HorizonOf(props); h.Total != 900 {
		t.Errorf("a fence without %s: total %d, want its %s 900", ColPruneTotal, h.Total, ColPruneRemoved)
	}
}
