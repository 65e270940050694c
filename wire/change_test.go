package wire

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/events/edm"
)

// TestChangeEventMarshal: a change event's bytes are what json.Marshal made
// of it, with or without images, whatever the keys and values hold. Every
// field is set in some case, so a field added to ChangeEvent and not to
// marshal fails here.
func TestChangeEventMarshal(t *testing.T) {
	img := func(e edm.Entity) json.RawMessage {
		b, err := events.MarshalEntityJSON(e)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	at := time.Date(2026, 11, 26, 2, 3, 4, 5, time.UTC)
	cases := []ChangeEvent{
		{},
		{Table: "Orders", PK: "p", RK: "r1", Op: ChangeCreate, Version: 0, Cmd: "c-1", Seq: 1, At: at,
			After: img(edm.Entity{"s": edm.String("<b>&\u2028 ü"), "n": edm.Int64(9007199254740993), "x": edm.Double(0.1)})},
		{Table: "T", PK: "p&<>\"", RK: "r\n😀", Op: ChangeUpdate, Version: 12, Cmd: "c\\2", Seq: 18446744073709551615, At: at,
			Before: img(edm.Entity{"b": edm.Binary([]byte("<>&"))}), After: img(edm.Entity{})},
		{Table: "T", PK: "p", RK: "r", Op: ChangeDelete, Version: 3, Cmd: "c", Seq: 9, At: at, Before: img(edm.Entity{"t": edm.DateTime(at)})},
		{Table: "T", PK: "p", Op: ChangeErase, Cmd: "e", Seq: 10, At: at, Partition: true},
	}
	set := make(map[string]bool)
	for _, ev := range cases {
		v := reflect.ValueOf(ev)
		for i := range v.NumField() {
			if !v.Field(i).IsZero() {
				set[v.Type().Field(i).Name] = true
			}
		}
	}
	for _, f := range reflect.VisibleFields(reflect.TypeOf(ChangeEvent{})) {
		if !set[f.Name] {
			t.Errorf("no case sets ChangeEvent.%s: add one, and encode it in marshal", f.Name)
		}
	}
	for _, ev := range cases {
		want, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		got, err := ev.marshal()
		if err != nil || string(got) != string(want) {
			t.Errorf("marshal = %s, %v\njson.Marshal = %s", got, err, want)
		}
	}
}
