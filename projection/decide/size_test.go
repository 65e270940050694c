package decide

import (
	"testing"
	"time"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/rows"
)

// TestEncodedSize: the size of a row as stored, computed without building
// its entity, is edm.EntitySize of what Encode stores, for tips,
// version rows and tombstones, with multi-byte names and values, and for
// properties named like a system column (which Encode overwrites).
func TestEncodedSize(t *testing.T) {
	at := time.Date(2026, 11, 26, 1, 2, 3, 4, time.UTC)
	props := edm.Entity{
		"status": edm.String("shipped"), "ünïcode😀": edm.String("日本語😀"),
		"blob": edm.Binary([]byte{1, 2, 3, 4, 5}), "n": edm.Int32(7), "big": edm.Int64(1 << 40),
		"ok": edm.Bool(true), "when": edm.DateTime(at), "x": edm.Double(1.5),
	}
	tests := []struct {
		name string
		row  rows.Row
	}{
		{"tip", rows.Row{PK: "p", RK: "r1", Version: 3, Cmd: "c-1", Seq: 42, At: at, Op: events.OpUpsert, Tip: true, Props: props}},
		{"version row", rows.Row{PK: "p", RK: "r1", Version: 2, Cmd: "c-0", Seq: 41, At: at, Op: events.OpMerge, Props: props}},
		{"tombstone", rows.Row{PK: "p", RK: "r😀", Version: 4, Cmd: "c-2", Seq: 43, At: at, Op: events.OpDelete, Deleted: true, Props: props}},
		{"empty", rows.Row{PK: "p", RK: "r", Tip: true}},
		{"a property named like a system column", rows.Row{PK: "p", RK: "r", Cmd: "c", Seq: 1, Op: events.OpUpsert, Tip: true,
			Props: edm.Entity{rows.ColCmd: edm.String("a much longer value than the command id"), rows.ColDeleted: edm.Bool(true)}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, pk := range []string{"p", "pärtition"} {
				want := edm.EntitySize(pk, tt.row.StoreKey(), tt.row.Encode())
				if got := encodedSize(pk, tt.row); got != want {
					t.Errorf("pk %q: encodedSize = %d, EntitySize(Encode()) = %d", pk, got, want)
				}
			}
		})
	}
}
