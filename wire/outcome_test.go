package wire

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/tablejournal/tablejournal/events"
)

// TestOutcomeMarshal: an outcome's bytes are what json.Marshal made of it,
// whatever fields are set: the wire format does not change with the
// encoder. Every field of Outcome is set in some case, so a field added to
// the type and not to marshal fails here (prune's Pruned once did).
func TestOutcomeMarshal(t *testing.T) {
	at := time.Date(2026, 11, 26, 2, 3, 4, 5, time.UTC)
	cases := []Outcome{
		{},
		{ID: "c-1", Seq: 42, Table: "Orders", PK: "p", Status: StatusApplied, At: at,
			Rows: []RowVersion{{RK: "r1", Version: 0, Op: events.OpUpsert}, {RK: "r<2>", Version: 7, Op: events.OpDelete, Deleted: true}}},
		{ID: "c-2", Seq: 18446744073709551615, Table: "T", PK: "ü&\n", Status: StatusRejected, At: at,
			Reason: `row "x" does not exist <here>`, Code: CodeNotFound, Rule: "some-rule"},
		{ID: "bad\xff", Status: StatusDuplicate, Reason: "\u2028", Rows: []RowVersion{}, At: at.In(time.FixedZone("x", 3600))},
		{ID: "prune-1", Seq: 9, Table: "T", PK: "p", Status: StatusApplied, Pruned: 99, At: at},
		{ID: "erase-1", Seq: 10, Table: "T", PK: "p", Status: StatusApplied, Erased: 42, At: at},
		{ID: "d", Seq: 10, Table: "T", PK: "p", Status: StatusApplied, Digest: "0123456789abcdef0123456789abcdef", At: at},
	}
	set := make(map[string]bool)
	for _, o := range cases {
		v := reflect.ValueOf(o)
		for i := range v.NumField() {
			if !v.Field(i).IsZero() {
				set[v.Type().Field(i).Name] = true
			}
		}
	}
	for _, f := range reflect.VisibleFields(reflect.TypeOf(Outcome{})) {
		if !set[f.Name] {
			t.Errorf("no case sets Outcome.%s: add one, and encode it in marshal", f.Name)
		}
	}
	for _, o := range cases {
		want, err := json.Marshal(o)
		if err != nil {
			t.Fatal(err)
		}
		got, err := o.marshal()
		if err != nil || string(got) != string(want) {
			t.Errorf("marshal = %s, %v\njson.Marshal = %s", got, err, want)
		}
	}
}
