package decide

import (
	"errors"
	"testing"

	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/rows"
	"github.com/tablejournal/tablejournal/store"
)

// A fence row the projector did not write is a foreign row naming its
// partition and key (the driver holds the partition); the projector's own
// reads back.
func TestDecodeFenceForeign(t *testing.T) {
	own := Fence{}.Op(Fence{Exists: true, Seq: 7, Cmd: "c7"})
	f, err := DecodeFence(store.Entity{PK: "p", RK: rows.FenceKey, Props: own.Props, ETag: "e"})
	if err != nil || f.Seq != 7 || f.Cmd != "c7" || f.ETag != "e" {
		t.Fatalf("DecodeFence of the projector's fence: %v, %v", f, err)
	}
	for name, props := range map[string]edm.Entity{
		"another program's":    {"status": edm.String("legacy")},
		"_seq of another type": {rows.ColSeq: edm.String("7"), rows.ColCmd: edm.String("c7"), rows.ColAt: own.Props[rows.ColAt]},
	} {
		_, err := DecodeFence(store.Entity{PK: "cust-0", RK: rows.FenceKey, Props: props})
		var fe *rows.ForeignRowError
		if !errors.Is(err, rows.ErrForeignRow) || !errors.As(err, &fe) || fe.PK != "cust-0" || fe.Key != rows.FenceKey {
			t.Errorf("%s: %v, want a foreign row cust-0/fence", name, err)
		}
	}
}
