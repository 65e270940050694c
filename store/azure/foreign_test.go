package azure

import (
	"encoding/json"
	"math"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"

	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/store"
)

// TestForeignWireForm reads rows that another program wrote through the
// Azure SDK, in the service's own JSON wire form, as the SDKs send it:
// Int64, DateTime, Guid and Binary annotated (aztables' EDMEntity), a
// whole-number Double annotated with an integer literal (as
// @azure/data-tables and .NET send {value: 3, type: "Double"}), and the
// plain JSON kinds unannotated. Each must come back as the type the writer
// meant: an adopted table (replay adopt) is read this way.
func TestForeignWireForm(t *testing.T) {
	s := newStore(t)
	name := table(t, s)
	cl, err := aztables.NewServiceClientFromConnectionString(srv.ConnectionString(), nil)
	if err != nil {
		t.Fatal(err)
	}
	tc := cl.NewClient(name)
	bin := []byte{0, 1, 2, 0xfe, 0xff}
	dt := time.Date(2026, 11, 21, 10, 0, 0, 123456700, time.UTC)

	// The SDK's own typed entity: what a Go service writes.
	typed := aztables.EDMEntity{
		Entity: aztables.Entity{PartitionKey: "p", RowKey: "sdk"},
		Properties: map[string]any{
			"Str":        "héllo 世界",
			"Empty":      "",
			"Yes":        true,
			"No":         false,
			"I32":        int32(math.MinInt32),
			"I64Above53": aztables.EDMInt64(1<<53 + 1),
			"I64Min":     aztables.EDMInt64(math.MinInt64),
			"Third":      1.0 / 3,
			"Dt":         aztables.EDMDateTime(dt),
			"Guid":       aztables.EDMGUID("0f8fad5b-d9cb-469f-a165-70867728950e"),
			"Bin":        aztables.EDMBinary(bin),
			"BinEmpty":   aztables.EDMBinary([]byte{}),
		},
	}
	body, err := json.Marshal(typed)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tc.AddEntity(bg, body, nil); err != nil {
		t.Fatal(err)
	}
	// Raw wire forms the SDKs of other languages send.
	raw := `{"PartitionKey":"p","RowKey":"wire",
		"Whole":3,"Whole@odata.type":"Edm.Double",
		"WholeDot":4.0,"WholeDot@odata.type":"Edm.Double",
		"Big":1e300,"Big@odata.type":"Edm.Double",
		"NaN":"NaN","NaN@odata.type":"Edm.Double",
		"Inf":"Infinity","Inf@odata.type":"Edm.Double",
		"Dt7":"2026-11-21T10:00:00.1234567Z","Dt7@odata.type":"Edm.DateTime",
		"DtWhole":"2000-02-29T00:00:00Z","DtWhole@odata.type":"Edm.DateTime",
		"I64":"-9007199254740993","I64@odata.type":"Edm.Int64",
		"I32":7,"I32Typed":8,"I32Typed@odata.type":"Edm.Int32",
		"GuidUpper":"0F8FAD5B-D9CB-469F-A165-70867728950E","GuidUpper@odata.type":"Edm.Guid",
		"Empty":""}`
	if _, err := tc.AddEntity(bg, []byte(raw), nil); err != nil {
		t.Fatal(err)
	}

	guid := mustGuid(t, "0f8fad5b-d9cb-469f-a165-70867728950e")
	want := map[string]edm.Entity{
		"sdk": {
			"Str": edm.String("héllo 世界"), "Empty": edm.String(""), "Yes": edm.Bool(true), "No": edm.Bool(false),
			"I32": edm.Int32(math.MinInt32), "I64Above53": edm.Int64(1<<53 + 1), "I64Min": edm.Int64(math.MinInt64),
			"Third": edm.Double(1.0 / 3), "Dt": edm.DateTime(dt), "Guid": guid,
			"Bin": edm.Binary(bin), "BinEmpty": edm.Binary([]byte{}),
		},
		"wire": {
			"Whole": edm.Double(3), "WholeDot": edm.Double(4), "Big": edm.Double(1e300),
			"NaN": edm.Double(math.NaN()), "Inf": edm.Double(math.Inf(1)),
			"Dt7": edm.DateTime(dt), "DtWhole": edm.DateTime(time.Date(2000, 2, 29, 0, 0, 0, 0, time.UTC)),
			"I64": edm.Int64(-(1 << 53) - 1), "I32": edm.Int32(7), "I32Typed": edm.Int32(8),
			"GuidUpper": guid, "Empty": edm.String(""),
		},
	}
	page, err := s.Query(bg, name, store.Query{PK: "p"})
	if err != nil {
		t.Fatal(err)
	}
	if len(page.Entities) != 2 {
		t.Fatalf("query: %d rows, want 2", len(page.Entities))
	}
	for _, got := range page.Entities {
		w := want[got.RK]
		if len(got.Props) != len(w) {
			t.Errorf("%s: %d properties %v, want %d", got.RK, len(got.Props), got.Props, len(w))
		}
		for prop, wv := range w {
			gv, ok := got.Props[prop]
			if !ok || !gv.Equal(wv) {
				t.Errorf("%s.%s = %v (%v), want %v (%v)", got.RK, prop, gv, gv.Type, wv, wv.Type)
			}
		}
	}
}
