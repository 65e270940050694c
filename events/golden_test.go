package events_test

import (
	"bytes"
	"flag"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/events/edm"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

func ptr(v int64) *int64 { return &v }

func mustTime(s string) time.Time {
	t, err := edm.ParseDateTime(s)
	if err != nil {
		panic(err)
	}
	return t
}

func mustGuid(s string) edm.Value {
	v, err := edm.Guid(s)
	if err != nil {
		panic(err)
	}
	return v
}

// pattern is n deterministic bytes covering every byte value.
func pattern(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(i*7 + i>>8)
	}
	return b
}

// golden are the commands of testdata/<name>.json and .msgpack.
var golden = map[string]*events.Command{
	// The example of SPEC §2.
	"spec-example": {
		ID:    "01JD3X9Q7ZBGN0V0W4Q6T8Y2KE",
		Table: "orders",
		PK:    "customer-42",
		Ops: []events.RowOp{
			{Op: events.OpUpsert, RK: "order-7", Entity: edm.Entity{
				"status": edm.String("shipped"),
				"total":  edm.Double(12.5),
				"qty":    edm.Int64(9007199254740993),
			}},
			{Op: events.OpDelete, RK: "order-6", IfVersion: ptr(3)},
		},
		Issuer:   "billing-svc",
		IssuedAt: mustTime("2026-11-21T10:00:00.1234567Z"),
		Meta:     map[string]string{"correlationId": "c-991"},
	},
	// Every EDM type, at its edges.
	"all-types": {
		ID:    "all-types-1",
		Table: "Edm8Types",
		PK:    "Grüße, 世界 🚀",
		Ops: []events.RowOp{{Op: events.OpInsert, RK: "Ωmega", Entity: edm.Entity{
			"Str":       edm.String("Grüße, 世界 🚀 \"quoted\" \\ \n\t\u2028 <&>"),
			"StrEmpty":  edm.String(""),
			"StrDigits": edm.String("12"),
			"BoolTrue":  edm.Bool(true),
			"BoolFalse": edm.Bool(false),
			"I32":       edm.Int32(42),
			"I32Min":    edm.Int32(math.MinInt32),
			"I32Max":    edm.Int32(math.MaxInt32),
			"I64":       edm.Int64(9007199254740993),
			"I64Min":    edm.Int64(math.MinInt64),
			"I64Small":  edm.Int64(7),
			"D":         edm.Double(12.5),
			"DIntegral": edm.Double(12),
			"DNegZero":  edm.Double(math.Copysign(0, -1)),
			"DNaN":      edm.Double(math.NaN()),
			"DInf":      edm.Double(math.Inf(1)),
			"DNegInf":   edm.Double(math.Inf(-1)),
			"DHuge":     edm.Double(1e300),
			"DTiny":     edm.Double(5e-324),
			"DT":        edm.DateTime(mustTime("2026-11-21T10:00:00.1234567Z")),
			"DTMin":     edm.DateTime(mustTime("1601-01-01T00:00:00Z")),
			"DTMax":     edm.DateTime(mustTime("9999-12-31T23:59:59.9999999Z")),
			"G":         mustGuid("c9da6455-213d-42c9-9a79-3e9149a57833"),
			"BinEmpty":  edm.Binary([]byte{}),
			"Bin":       edm.Binary([]byte{0, 1, 2, 0xfe, 0xff}),
			"Bin64K":    edm.Binary(pattern(events.MaxBinaryBytes)),
			"Ünïcödé名前": edm.String("non-ASCII property name"),
		}}},
	},
	// Several operations: every kind, the same RowKey twice, an empty
	// entity, ifVersion on updates and delete, and meta.
	"multi-op": {
		ID:    "cmd:2026-11-21.7_a",
		Table: "inventory",
		PK:    "warehouse-7",
		Ops: []events.RowOp{
			{Op: events.OpInsert, RK: "sku-1", Entity: edm.Entity{"qty": edm.Int32(5)}},
			{Op: events.OpReplace, RK: "sku-2", Entity: edm.Entity{}, IfVersion: ptr(0)},
			{Op: events.OpMerge, RK: "sku-3", Entity: edm.Entity{"qty": edm.Int32(-1)}, IfVersion: ptr(12)},
			{Op: events.OpUpsert, RK: "a:b%c", Entity: edm.Entity{"note": edm.String("escaped key")}},
			{Op: events.OpUpsertMerge, RK: "sku-1", Entity: edm.Entity{"qty": edm.Int32(6)}},
			{Op: events.OpDelete, RK: "sku-4", IfVersion: ptr(math.MaxInt64)},
			{Op: events.OpDelete, RK: ""},
		},
		Meta: map[string]string{"correlationId": "c-1", "undoOf": "cmd-0", "ünïcode": "✓"},
	},
	// The least a command can be.
	"minimal": {
		ID:    "x",
		Table: "abc",
		PK:    "p",
		Ops:   []events.RowOp{{Op: events.OpDelete, RK: "r"}},
	},
}

var codecs = []struct {
	ext       string
	marshal   func(*events.Command) ([]byte, error)
	unmarshal func([]byte) (*events.Command, error)
}{
	{".json", events.MarshalJSON, events.UnmarshalJSON},
	{".msgpack", events.MarshalMsgpack, events.UnmarshalMsgpack},
}

func TestGolden(t *testing.T) {
	for name, want := range golden {
		if err := want.Validate(); err != nil {
			t.Errorf("%s: golden command is invalid: %v", name, err)
		}
		for _, codec := range codecs {
			t.Run(name+codec.ext, func(t *testing.T) {
				path := filepath.Join("testdata", name+codec.ext)
				enc, err := codec.marshal(want)
				if err != nil {
					t.Fatalf("marshal: %v", err)
				}
				if *update {
					if err := os.WriteFile(path, enc, 0o644); err != nil {
						t.Fatal(err)
					}
				}
				data, err := os.ReadFile(path)
				if err != nil {
					t.Fatalf("%v (run go test ./events -run TestGolden -update to write it)", err)
				}
				got, err := codec.unmarshal(data)
				if err != nil {
					t.Fatalf("unmarshal %s: %v", path, err)
				}
				if !got.Equal(want) {
					t.Errorf("%s decodes to\n%#v\nwant\n%#v", path, got, want)
				}
				if !bytes.Equal(enc, data) {
					t.Errorf("re-encoding %s differs from the file (run with -update if the change is intended)", path)
				}
			})
		}
	}
}

// TestGoldenCrossCodec decodes each JSON fixture and encodes it as msgpack,
// and the other way round: both must give the other fixture byte for byte.
func TestGoldenCrossCodec(t *testing.T) {
	for name := range golden {
		j, err := os.ReadFile(filepath.Join("testdata", name+".json"))
		if err != nil {
			t.Fatal(err)
		}
		m, err := os.ReadFile(filepath.Join("testdata", name+".msgpack"))
		if err != nil {
			t.Fatal(err)
		}
		fromJSON, err := events.UnmarshalJSON(j)
		if err != nil {
			t.Fatal(err)
		}
		fromMsgpack, err := events.UnmarshalMsgpack(m)
		if err != nil {
			t.Fatal(err)
		}
		if got, _ := events.MarshalMsgpack(fromJSON); !bytes.Equal(got, m) {
			t.Errorf("%s: JSON → msgpack differs from the msgpack fixture", name)
		}
		if got, _ := events.MarshalJSON(fromMsgpack); !bytes.Equal(got, j) {
			t.Errorf("%s: msgpack → JSON differs from the JSON fixture", name)
		}
	}
}
