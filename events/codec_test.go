package events_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/vmihailenco/msgpack/v5"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/events/rules"
	"github.com/tablejournal/tablejournal/wire"
)

// om is an ordered msgpack map for hand-built inputs: keys and values
// alternate. Values are om, []any, or anything msgpack encodes.
type om []any

// rawMP is msgpack written as is.
type rawMP []byte

func encodeMP(t testing.TB, enc *msgpack.Encoder, buf *bytes.Buffer, v any) {
	t.Helper()
	var err error
	switch v := v.(type) {
	case om:
		err = enc.EncodeMapLen(len(v) / 2)
		for _, x := range v {
			encodeMP(t, enc, buf, x)
		}
	case []any:
		err = enc.EncodeArrayLen(len(v))
		for _, x := range v {
			encodeMP(t, enc, buf, x)
		}
	case rawMP:
		buf.Write(v)
	default:
		err = enc.Encode(v)
	}
	if err != nil {
		t.Fatal(err)
	}
}

func mp(t testing.TB, v any) []byte {
	t.Helper()
	var buf bytes.Buffer
	encodeMP(t, msgpack.NewEncoder(&buf), &buf, v)
	return buf.Bytes()
}

// mpCommand is a valid msgpack command whose one upsert carries entity.
func mpCommand(entity om) om {
	return om{"id", "c1", "table", "things", "pk", "p", "ops", []any{om{"op", "upsert", "rk", "r", "entity", entity}}}
}

// jsonCommand is a valid JSON command whose one upsert carries entity.
func jsonCommand(entity string) string {
	return `{"id":"c1","table":"things","pk":"p","ops":[{"op":"upsert","rk":"r","entity":` + entity + `}]}`
}

func TestRoundTripAllTypes(t *testing.T) {
	want := golden["all-types"]
	m1, err := events.MarshalMsgpack(want)
	if err != nil {
		t.Fatal(err)
	}
	c1, err := events.UnmarshalMsgpack(m1)
	if err != nil {
		t.Fatal(err)
	}
	j, err := events.MarshalJSON(c1)
	if err != nil {
		t.Fatal(err)
	}
	c2, err := events.UnmarshalJSON(j)
	if err != nil {
		t.Fatal(err)
	}
	m2, err := events.MarshalMsgpack(c2)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(m1, m2) {
		t.Error("msgpack → JSON → msgpack changed the bytes")
	}
	for _, c := range []*events.Command{c1, c2} {
		if !c.Equal(want) {
			t.Fatalf("round trip changed the command:\n%#v\nwant\n%#v", c, want)
		}
		got := c.Ops[0].Entity
		for name, v := range want.Ops[0].Entity {
			if g := got[name]; g.Type != v.Type || !g.Equal(v) {
				t.Errorf("%s: got %#v, want %#v", name, g, v)
			}
		}
	}
	e := c2.Ops[0].Entity
	if e["I64"].Int != 9007199254740993 {
		t.Errorf("Int64 above 2^53 lost precision: %d", e["I64"].Int)
	}
	if ns := e["DT"].Time.Nanosecond(); ns != 123456700 {
		t.Errorf("DateTime lost its 100 ns: %d", ns)
	}
	if !math.Signbit(e["DNegZero"].Float) || e["DIntegral"].Type != edm.TypeDouble || !math.IsNaN(e["DNaN"].Float) {
		t.Error("Double -0, 12.0 or NaN did not survive")
	}
	if len(e["Bin64K"].Bytes) != events.MaxBinaryBytes || e["BinEmpty"].Bytes == nil && e["BinEmpty"].Type != edm.TypeBinary {
		t.Error("binary sizes did not survive")
	}
}

// TestUnmarshalJSONAzureForms decodes entity values the way Azure and
// other clients write them.
func TestUnmarshalJSONAzureForms(t *testing.T) {
	for _, tc := range []struct {
		name   string
		entity string
		want   edm.Value
	}{
		{"untyped string", `{"v":"x"}`, edm.String("x")},
		{"untyped bool", `{"v":true}`, edm.Bool(true)},
		{"untyped integer", `{"v":-12}`, edm.Int32(-12)},
		{"untyped -0 is an integer", `{"v":-0}`, edm.Int32(0)},
		{"untyped fraction", `{"v":1.0}`, edm.Double(1)},
		{"untyped exponent", `{"v":1e2}`, edm.Double(100)},
		{"untyped tiny", `{"v":1e-400}`, edm.Double(0)},
		{"annotation first", `{"v@odata.type":"Edm.Int64","v":"-9223372036854775808"}`, edm.Int64(math.MinInt64)},
		{"Int64 as number", `{"v":9007199254740993,"v@odata.type":"Edm.Int64"}`, edm.Int64(9007199254740993)},
		{"Int32 explicit", `{"v":7,"v@odata.type":"Edm.Int32"}`, edm.Int32(7)},
		{"String explicit", `{"v":"7","v@odata.type":"Edm.String"}`, edm.String("7")},
		{"Boolean explicit", `{"v":false,"v@odata.type":"Edm.Boolean"}`, edm.Bool(false)},
		{"Double integral", `{"v":12,"v@odata.type":"Edm.Double"}`, edm.Double(12)},
		{"Double NaN", `{"v":"NaN","v@odata.type":"Edm.Double"}`, edm.Double(math.NaN())},
		{"Double -Infinity", `{"v":"-Infinity","v@odata.type":"Edm.Double"}`, edm.Double(math.Inf(-1))},
		{"Double as string", `{"v":"-0.5","v@odata.type":"Edm.Double"}`, edm.Double(-0.5)},
		{"DateTime offset, no fraction", `{"v":"2026-11-21T11:00:00+01:00","v@odata.type":"Edm.DateTime"}`,
			edm.DateTime(time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC))},
		{"DateTime 100 ns", `{"v":"2026-11-21T10:00:00.0000001Z","v@odata.type":"Edm.DateTime"}`,
			edm.DateTime(time.Date(2026, 11, 21, 10, 0, 0, 100, time.UTC))},
		{"Guid braces upper", `{"v":"{C9DA6455-213D-42C9-9A79-3E9149A57833}","v@odata.type":"Edm.Guid"}`,
			mustGuid("c9da6455-213d-42c9-9a79-3e9149a57833")},
		{"Binary", `{"v":"AAEC","v@odata.type":"Edm.Binary"}`, edm.Binary([]byte{0, 1, 2})},
		{"Binary empty", `{"v":"","v@odata.type":"Edm.Binary"}`, edm.Binary([]byte{})},
		{"escaped key", `{"\u0076":"x"}`, edm.String("x")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := events.UnmarshalJSON([]byte(jsonCommand(tc.entity)))
			if err != nil {
				t.Fatal(err)
			}
			got := c.Ops[0].Entity["v"]
			if got.Type != tc.want.Type || !got.Equal(tc.want) {
				t.Errorf("got %#v, want %#v", got, tc.want)
			}
			if len(c.Ops[0].Entity) != 1 {
				t.Errorf("entity has %d properties, want 1", len(c.Ops[0].Entity))
			}
		})
	}
}

func TestUnmarshalJSONNulls(t *testing.T) {
	in := `{"id":"c1","table":"things","pk":"p","issuer":null,"issuedAt":null,"meta":null,
		"ops":[{"op":"delete","rk":"r","entity":null,"ifVersion":null}]}`
	c, err := events.UnmarshalJSON([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	want := &events.Command{ID: "c1", Table: "things", PK: "p", Ops: []events.RowOp{{Op: events.OpDelete, RK: "r"}}}
	if !c.Equal(want) || c.Ops[0].Entity != nil || c.Ops[0].IfVersion != nil {
		t.Errorf("got %#v", c)
	}
}

// TestUnknownFieldsAndRK: both codecs refuse a field a command or an
// operation does not have, in any spelling, naming it and where it is, and
// an operation without "rk"; "rk": "" is the empty RowKey. Ignored, a
// misspelled "ifVersion" applied a guarded replace unguarded and a
// misspelled "rk" wrote the row with the empty RowKey.
func TestUnknownFieldsAndRK(t *testing.T) {
	base := func(op om, top ...any) om {
		c := om{"id", "c1", "table", "things", "pk", "p", "ops", []any{op}}
		return append(c, top...)
	}
	replace := func(extra ...any) om {
		return append(om{"op", "replace", "rk", "r", "entity", om{"a", "x"}}, extra...)
	}
	for _, tc := range []struct {
		name   string
		cmd    om
		rule   rules.Rule // "" for valid
		field  string
		detail string // a part of the message
	}{
		{"ifversion lowercase", base(replace("ifversion", 0)), rules.UnknownField, "ops[0]", `unknown field "ifversion"`},
		{"ifVerison misspelled", base(replace("ifVerison", 0)), rules.UnknownField, "ops[0]", `unknown field "ifVerison"`},
		{"IfVersion capitalised", base(replace("IfVersion", 0)), rules.UnknownField, "ops[0]", `did you mean "ifVersion"`},
		{"RK capitalised", base(om{"op", "upsert", "RK", "x", "entity", om{}}), rules.UnknownField, "ops[0]", `unknown field "RK"`},
		{"extra in op", base(append(replace(), "extra", true)), rules.UnknownField, "ops[0]", `unknown field "extra"`},
		{"extra in command", base(replace(), "extra", true), rules.UnknownField, "", `unknown field "extra"`},
		{"Meta capitalised", base(replace(), "Meta", om{}), rules.UnknownField, "", `did you mean "meta"`},
		{"nested unknown", base(replace(), "future", om{"a", []any{1, 2, om{"b", nil}}}), rules.UnknownField, "", `"future"`},
		{"no rk", base(om{"op", "delete"}), rules.RKRequired, "ops[0].rk", `"rk": ""`},
		{"rk null", base(om{"op", "delete", "rk", nil}), rules.RKRequired, "ops[0].rk", ""},
		{"no rk in the second op", om{"id", "c1", "table", "things", "pk", "p", "ops", []any{om{"op", "delete", "rk", "a"}, om{"op", "delete"}}},
			rules.RKRequired, "ops[1].rk", ""},
		{"empty rk given", base(om{"op", "delete", "rk", ""}), "", "", ""},
		{"ifVersion spelled right", base(replace("ifVersion", 0)), "", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j, err := json.Marshal(jsonOf(tc.cmd))
			if err != nil {
				t.Fatal(err)
			}
			for codec, in := range map[string][]byte{"json": j, "msgpack": mp(t, tc.cmd)} {
				var c *events.Command
				if codec == "json" {
					c, err = events.UnmarshalJSON(in)
				} else {
					c, err = events.UnmarshalMsgpack(in)
				}
				if tc.rule == "" {
					if err != nil {
						t.Errorf("%s: %v", codec, err)
					}
					continue
				}
				ve := wantRule(t, err, tc.rule)
				if c != nil {
					t.Errorf("%s: got a command with the error", codec)
				}
				if ve.Field != tc.field || !strings.Contains(ve.Error(), tc.detail) {
					t.Errorf("%s: %q (field %q), want field %q and %q", codec, ve.Error(), ve.Field, tc.field, tc.detail)
				}
			}
		})
	}
}

// jsonOf turns an om (ordered map) into a value encoding/json writes with
// the same keys, in the same order.
func jsonOf(v any) any {
	switch v := v.(type) {
	case om:
		var b strings.Builder
		b.WriteString("{")
		for i := 0; i < len(v); i += 2 {
			if i > 0 {
				b.WriteString(",")
			}
			k, _ := json.Marshal(v[i])
			val, _ := json.Marshal(jsonOf(v[i+1]))
			b.Write(k)
			b.WriteString(":")
			b.Write(val)
		}
		b.WriteString("}")
		return json.RawMessage(b.String())
	case []any:
		out := make([]any, len(v))
		for i, x := range v {
			out[i] = jsonOf(x)
		}
		return out
	}
	return v
}

// TestUnmarshalMsgpackTolerant decodes the other forms a non-Go client may
// send: strings for Int64, Binary and Double, ints and float32 for Double,
// an unannotated bin.
func TestUnmarshalMsgpackTolerant(t *testing.T) {
	for _, tc := range []struct {
		name string
		in   om
		want edm.Value
	}{
		{"Int64 native", om{"v", int64(1) << 60, "v@odata.type", "Edm.Int64"}, edm.Int64(1 << 60)},
		{"Int64 small native", om{"v@odata.type", "Edm.Int64", "v", 3}, edm.Int64(3)},
		{"Int64 as str", om{"v", "9007199254740993", "v@odata.type", "Edm.Int64"}, edm.Int64(9007199254740993)},
		{"Int64 as uint64", om{"v", uint64(math.MaxInt64), "v@odata.type", "Edm.Int64"}, edm.Int64(math.MaxInt64)},
		{"Binary as str", om{"v", "AAEC", "v@odata.type", "Edm.Binary"}, edm.Binary([]byte{0, 1, 2})},
		{"Binary unannotated", om{"v", []byte{9}}, edm.Binary([]byte{9})},
		{"Double as str", om{"v", "Infinity", "v@odata.type", "Edm.Double"}, edm.Double(math.Inf(1))},
		{"Double as int", om{"v", 12, "v@odata.type", "Edm.Double"}, edm.Double(12)},
		{"Double as float32", om{"v", float32(0.5)}, edm.Double(0.5)},
		{"Double uint64 beyond int64", om{"v", uint64(math.MaxUint64), "v@odata.type", "Edm.Double"}, edm.Double(math.MaxUint64)},
		{"Int32 from uint8", om{"v", uint8(200)}, edm.Int32(200)},
		{"DateTime", om{"v", "2026-11-21T10:00:00.1234567Z", "v@odata.type", "Edm.DateTime"},
			edm.DateTime(mustTime("2026-11-21T10:00:00.1234567Z"))},
		{"Guid", om{"v", "C9DA6455-213D-42C9-9A79-3E9149A57833", "v@odata.type", "Edm.Guid"},
			mustGuid("c9da6455-213d-42c9-9a79-3e9149a57833")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := events.UnmarshalMsgpack(mp(t, mpCommand(tc.in)))
			if err != nil {
				t.Fatal(err)
			}
			got := c.Ops[0].Entity["v"]
			if got.Type != tc.want.Type || !got.Equal(tc.want) {
				t.Errorf("got %#v, want %#v", got, tc.want)
			}
		})
	}
}

// wantRule checks that err is a *rules.ValidationError of rule wrapping
// rules.ErrInvalid.
func wantRule(t *testing.T, err error, rule rules.Rule) *rules.ValidationError {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want rule %s", rule)
	}
	var ve *rules.ValidationError
	if !errors.As(err, &ve) {
		t.Fatalf("error %v (%T) is not a *rules.ValidationError", err, err)
	}
	if !errors.Is(err, rules.ErrInvalid) {
		t.Errorf("error %v does not wrap rules.ErrInvalid", err)
	}
	if ve.Rule != rule {
		t.Errorf("rule %s (%v), want %s", ve.Rule, err, rule)
	}
	return ve
}

func TestUnmarshalJSONErrors(t *testing.T) {
	entity := func(e string) string { return jsonCommand(e) }
	for _, tc := range []struct {
		name, in string
		rule     rules.Rule
		field    string
	}{
		{"Int64 not decimal", entity(`{"n":"12x","n@odata.type":"Edm.Int64"}`), rules.BadInt64, `ops[0].entity["n"]`},
		{"Int64 with plus", entity(`{"n":"+12","n@odata.type":"Edm.Int64"}`), rules.BadInt64, `ops[0].entity["n"]`},
		{"Int64 overflow", entity(`{"n":"9223372036854775808","n@odata.type":"Edm.Int64"}`), rules.BadInt64, ""},
		{"Int64 fraction", entity(`{"n":1.5,"n@odata.type":"Edm.Int64"}`), rules.BadInt64, ""},
		{"Guid", entity(`{"g":"not-a-guid","g@odata.type":"Edm.Guid"}`), rules.BadGuid, `ops[0].entity["g"]`},
		{"DateTime month 13", entity(`{"d":"2026-13-01T00:00:00Z","d@odata.type":"Edm.DateTime"}`), rules.BadDateTime, ""},
		{"DateTime 8 digits", entity(`{"d":"2026-11-21T10:00:00.12345678Z","d@odata.type":"Edm.DateTime"}`), rules.BadDateTime, ""},
		{"DateTime year 1600", entity(`{"d":"1600-12-31T23:59:59Z","d@odata.type":"Edm.DateTime"}`), rules.BadDateTime, ""},
		{"DateTime before 1601 in UTC", entity(`{"d":"1601-01-01T00:30:00+01:00","d@odata.type":"Edm.DateTime"}`), rules.BadDateTime, ""},
		{"DateTime no zone", entity(`{"d":"2026-11-21T10:00:00","d@odata.type":"Edm.DateTime"}`), rules.BadDateTime, ""},
		{"Binary bad char", entity(`{"b":"!!!!","b@odata.type":"Edm.Binary"}`), rules.BadBinary, `ops[0].entity["b"]`},
		{"Binary unpadded", entity(`{"b":"AAE","b@odata.type":"Edm.Binary"}`), rules.BadBinary, ""},
		{"Binary newline", entity(`{"b":"AAEC\nAAEC","b@odata.type":"Edm.Binary"}`), rules.BadBinary, ""},
		{"Double word", entity(`{"x":"abc","x@odata.type":"Edm.Double"}`), rules.BadDouble, ""},
		{"Double inf lower", entity(`{"x":"inf","x@odata.type":"Edm.Double"}`), rules.BadDouble, ""},
		{"Double overflow", entity(`{"x":1e400}`), rules.BadDouble, `ops[0].entity["x"]`},
		{"Int32 overflow unannotated", entity(`{"x":2147483648}`), rules.BadInt32, `ops[0].entity["x"]`},
		{"Int32 fraction", entity(`{"x":1.5,"x@odata.type":"Edm.Int32"}`), rules.BadInt32, ""},
		{"Int32 as string", entity(`{"x":"1","x@odata.type":"Edm.Int32"}`), rules.BadAnnotation, ""},
		{"Int64 on boolean", entity(`{"x":true,"x@odata.type":"Edm.Int64"}`), rules.BadAnnotation, `ops[0].entity["x"]`},
		{"Guid on number", entity(`{"x":5,"x@odata.type":"Edm.Guid"}`), rules.BadAnnotation, ""},
		{"Boolean on string", entity(`{"x":"true","x@odata.type":"Edm.Boolean"}`), rules.BadAnnotation, ""},
		{"annotation for absent property", entity(`{"x@odata.type":"Edm.Int64"}`), rules.BadAnnotation, `ops[0].entity["x@odata.type"]`},
		{"annotation not a string", entity(`{"x":1,"x@odata.type":5}`), rules.BadAnnotation, ""},
		{"annotation null", entity(`{"x":1,"x@odata.type":null}`), rules.BadAnnotation, ""},
		{"unknown type", entity(`{"x":"1","x@odata.type":"Edm.Decimal"}`), rules.UnknownType, ""},
		{"type name case", entity(`{"x":"1","x@odata.type":"edm.int64"}`), rules.UnknownType, ""},
		{"duplicate property", entity(`{"x":1,"x":2}`), rules.DuplicateField, `ops[0].entity["x"]`},
		{"duplicate property escaped", entity(`{"x":1,"\u0078":2}`), rules.DuplicateField, ""},
		{"duplicate annotation", entity(`{"x":"1","x@odata.type":"Edm.Int64","x@odata.type":"Edm.Int64"}`), rules.DuplicateField, ""},
		{"duplicate field", `{"id":"a","id":"b","table":"things","pk":"p","ops":[]}`, rules.DuplicateField, "id"},
		{"duplicate op field", `{"id":"a","table":"things","pk":"p","ops":[{"op":"delete","op":"delete","rk":""}]}`, rules.DuplicateField, "ops[0].op"},
		{"duplicate meta key", `{"id":"a","meta":{"k":"1","k":"2"}}`, rules.DuplicateField, `meta["k"]`},
		{"null property", entity(`{"x":null}`), rules.Malformed, `ops[0].entity["x"]`},
		{"nested property", entity(`{"x":{"y":1}}`), rules.Malformed, ""},
		{"array property", entity(`{"x":[1]}`), rules.Malformed, ""},
		{"entity not object", entity(`[]`), rules.Malformed, "ops[0].entity"},
		{"not JSON", `{"id":`, rules.Malformed, ""},
		{"syntax error", `{"id" "x"}`, rules.Malformed, ""},
		{"trailing comma", `{"id":"x",}`, rules.Malformed, ""},
		{"empty", ``, rules.Malformed, ""},
		{"top-level array", `[]`, rules.Malformed, ""},
		{"trailing data", `{"id":"x"} {}`, rules.Malformed, ""},
		{"invalid UTF-8", "{\"id\":\"\xff\"}", rules.Malformed, ""},
		{"id not a string", `{"id":5}`, rules.Malformed, "id"},
		{"ops not an array", `{"ops":{}}`, rules.Malformed, "ops"},
		{"op not an object", `{"ops":[1]}`, rules.Malformed, "ops[0]"},
		{"ifVersion fraction", `{"ops":[{"op":"merge","ifVersion":1.5}]}`, rules.Malformed, "ops[0].ifVersion"},
		{"ifVersion string", `{"ops":[{"op":"merge","ifVersion":"1"}]}`, rules.Malformed, ""},
		{"ifVersion overflow", `{"ops":[{"op":"merge","ifVersion":9223372036854775808}]}`, rules.Malformed, ""},
		{"meta value not a string", `{"meta":{"k":1}}`, rules.Malformed, `meta["k"]`},
		{"issuedAt bad", `{"issuedAt":"yesterday"}`, rules.BadDateTime, "issuedAt"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := events.UnmarshalJSON([]byte(tc.in))
			if c != nil {
				t.Errorf("got a command with the error")
			}
			ve := wantRule(t, err, tc.rule)
			if tc.field != "" && ve.Field != tc.field {
				t.Errorf("field %q, want %q", ve.Field, tc.field)
			}
		})
	}
}

func TestUnmarshalMsgpackErrors(t *testing.T) {
	valid := mp(t, mpCommand(om{"v", 1}))
	deep := bytes.Repeat([]byte{0x91}, 10000) // 10000 nested one-element arrays
	for _, tc := range []struct {
		name string
		in   []byte
		rule rules.Rule
	}{
		{"empty", nil, rules.Malformed},
		{"not a map", mp(t, []any{1}), rules.Malformed},
		{"trailing bytes", append(append([]byte{}, valid...), 0xc0), rules.Malformed},
		{"truncated", valid[:len(valid)-1], rules.Malformed},
		{"lying map length", []byte{0xdf, 0xff, 0xff, 0xff, 0xff}, rules.Malformed},
		{"lying array length", mp(t, om{"ops", rawMP{0xdd, 0xff, 0xff, 0xff, 0xff}}), rules.Malformed},
		{"lying str length", []byte{0x81, 0xa2, 'i', 'd', 0xdb, 0xff, 0xff, 0xff, 0xff}, rules.Malformed},
		{"int key", mp(t, om{1, "x"}), rules.Malformed},
		{"deep unknown field", mp(t, om{"future", rawMP(append(deep, 0xc0))}), rules.UnknownField},
		{"id not a str", mp(t, om{"id", []byte("x")}), rules.Malformed},
		{"invalid UTF-8 str", mp(t, om{"id", "\xff"}), rules.InvalidUTF8},
		{"invalid UTF-8 key", mp(t, om{"\xff", "x"}), rules.InvalidUTF8},
		{"duplicate field", mp(t, om{"id", "a", "id", "a"}), rules.DuplicateField},
		{"nil property", mp(t, mpCommand(om{"v", nil})), rules.Malformed},
		{"map property", mp(t, mpCommand(om{"v", om{}})), rules.Malformed},
		{"ext property", mp(t, mpCommand(om{"v", time.Unix(0, 0)})), rules.Malformed},
		{"wide int unannotated", mp(t, mpCommand(om{"v", int64(1) << 40})), rules.BadInt32},
		{"huge uint unannotated", mp(t, mpCommand(om{"v", uint64(math.MaxUint64)})), rules.BadInt32},
		{"huge uint as Int64", mp(t, mpCommand(om{"v", uint64(math.MaxUint64), "v@odata.type", "Edm.Int64"})), rules.BadInt64},
		{"wide int as Int32", mp(t, mpCommand(om{"v", int64(1) << 40, "v@odata.type", "Edm.Int32"})), rules.BadInt32},
		{"float as Int64", mp(t, mpCommand(om{"v", 1.5, "v@odata.type", "Edm.Int64"})), rules.BadAnnotation},
		{"bin as Guid", mp(t, mpCommand(om{"v", []byte{1}, "v@odata.type", "Edm.Guid"})), rules.BadAnnotation},
		{"annotation nil", mp(t, mpCommand(om{"v", 1, "v@odata.type", nil})), rules.BadAnnotation},
		{"annotation absent", mp(t, mpCommand(om{"v@odata.type", "Edm.Guid"})), rules.BadAnnotation},
		{"unknown type", mp(t, mpCommand(om{"v", 1, "v@odata.type", "Edm.Single"})), rules.UnknownType},
		{"bad datetime", mp(t, mpCommand(om{"v", "now", "v@odata.type", "Edm.DateTime"})), rules.BadDateTime},
		{"bad base64", mp(t, mpCommand(om{"v", "%%", "v@odata.type", "Edm.Binary"})), rules.BadBinary},
		{"ifVersion beyond int64", mp(t, om{"ops", []any{om{"ifVersion", uint64(math.MaxUint64)}}}), rules.Malformed},
		{"ifVersion str", mp(t, om{"ops", []any{om{"ifVersion", "1"}}}), rules.Malformed},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := events.UnmarshalMsgpack(tc.in)
			if c != nil {
				t.Errorf("got a command with the error")
			}
			wantRule(t, err, tc.rule)
		})
	}
}

// TestEncodeDecodeContentTypes: the content types the contract names
// (wire's constants, which package events keeps its own copy of) select the
// form they name, and a bad one is refused naming wire's header.
func TestEncodeDecodeContentTypes(t *testing.T) {
	c := golden["spec-example"]
	for _, ct := range []string{"", wire.ContentTypeMsgpack, wire.ContentTypeJSON, "application/json; charset=utf-8", "Application/MsgPack"} {
		data, err := events.Encode(c, ct)
		if err != nil {
			t.Fatalf("Encode %q: %v", ct, err)
		}
		if strings.HasPrefix(strings.ToLower(ct), "application/json") != (data[0] == '{') {
			t.Errorf("Encode %q wrote the wrong form: %q", ct, data[:8])
		}
		got, err := events.Decode(data, ct)
		if err != nil {
			t.Fatalf("Decode %q: %v", ct, err)
		}
		if !got.Equal(c) {
			t.Errorf("Decode %q: not equal", ct)
		}
	}
	_, err := events.Encode(c, "text/plain")
	wantRule(t, err, rules.ContentType)
	if ve := (*rules.ValidationError)(nil); !errors.As(err, &ve) || ve.Field != wire.HeaderContentType {
		t.Errorf("Encode text/plain: %v, want an error on field %s", err, wire.HeaderContentType)
	}
	_, err = events.Decode([]byte("{}"), "application/xml")
	wantRule(t, err, rules.ContentType)
}

// TestEncodeRejectsWhatCannotRoundTrip: the encoders refuse a value they
// could not carry exactly, rather than write something that decodes to a
// different command.
func TestEncodeRejectsWhatCannotRoundTrip(t *testing.T) {
	for _, tc := range []struct {
		name string
		mod  func(c *events.Command)
		rule rules.Rule
	}{
		{"DateTime finer than 100 ns", func(c *events.Command) {
			c.Ops[0].Entity["v"] = edm.Value{Type: edm.TypeDateTime, Time: time.Date(2026, 1, 1, 0, 0, 0, 1, time.UTC)}
		}, rules.BadDateTime},
		{"DateTime zero", func(c *events.Command) {
			c.Ops[0].Entity["v"] = edm.Value{Type: edm.TypeDateTime}
		}, rules.BadDateTime},
		{"Int32 out of range", func(c *events.Command) {
			c.Ops[0].Entity["v"] = edm.Value{Type: edm.TypeInt32, Int: 1 << 31}
		}, rules.BadInt32},
		{"Guid not canonical", func(c *events.Command) {
			c.Ops[0].Entity["v"] = edm.Value{Type: edm.TypeGuid, Str: "C9DA6455-213D-42C9-9A79-3E9149A57833"}
		}, rules.BadGuid},
		{"unknown type", func(c *events.Command) { c.Ops[0].Entity["v"] = edm.Value{Type: 99} }, rules.UnknownType},
		{"invalid UTF-8 value", func(c *events.Command) { c.Ops[0].Entity["v"] = edm.String("\xff") }, rules.InvalidUTF8},
		{"invalid UTF-8 name", func(c *events.Command) { c.Ops[0].Entity["\xff"] = edm.String("") }, rules.InvalidUTF8},
		{"annotation-like name", func(c *events.Command) { c.Ops[0].Entity["v@odata.type"] = edm.String("") }, rules.PropertyName},
		{"invalid UTF-8 pk", func(c *events.Command) { c.PK = "\xff" }, rules.InvalidUTF8},
		{"invalid UTF-8 meta", func(c *events.Command) { c.Meta = map[string]string{"k": "\xff"} }, rules.InvalidUTF8},
		{"issuedAt year 1", func(c *events.Command) { c.IssuedAt = time.Date(1, 1, 1, 0, 0, 0, 1, time.UTC) }, rules.BadDateTime},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &events.Command{ID: "c", Table: "things", PK: "p", Ops: []events.RowOp{{Op: events.OpUpsert, RK: "r", Entity: edm.Entity{}}}}
			tc.mod(c)
			for _, codec := range codecs {
				_, err := codec.marshal(c)
				wantRule(t, err, tc.rule)
			}
		})
	}
	if _, err := events.MarshalJSON(nil); err == nil {
		t.Error("MarshalJSON(nil) succeeded")
	}
}

func TestIssuedAtTruncatedTo100ns(t *testing.T) {
	at := time.Date(2026, 11, 21, 10, 0, 0, 123456789, time.FixedZone("X", 3600))
	c := &events.Command{ID: "c", Table: "things", PK: "p", Ops: []events.RowOp{{Op: events.OpDelete}}, IssuedAt: at}
	for _, codec := range codecs {
		data, err := codec.marshal(c)
		if err != nil {
			t.Fatal(err)
		}
		got, err := codec.unmarshal(data)
		if err != nil {
			t.Fatal(err)
		}
		if want := at.Truncate(100); !got.IssuedAt.Equal(want) || got.IssuedAt.Location() != time.UTC {
			t.Errorf("%s: IssuedAt %v, want %v in UTC", codec.ext, got.IssuedAt, want)
		}
	}
}

func TestCommandEqual(t *testing.T) {
	base := func() *events.Command {
		return &events.Command{ID: "c", Table: "things", PK: "p", Ops: []events.RowOp{
			{Op: events.OpUpsert, RK: "a", Entity: edm.Entity{"x": edm.Int32(1)}},
			{Op: events.OpDelete, RK: "b", IfVersion: ptr(2)},
		}}
	}
	a := base()
	if !a.Equal(base()) || !a.Equal(a) {
		t.Error("equal commands differ")
	}
	var nilCmd *events.Command
	if !nilCmd.Equal(nil) || a.Equal(nil) || nilCmd.Equal(a) {
		t.Error("nil handling")
	}
	b := base()
	b.Meta = map[string]string{}
	b.Ops[1].Entity = edm.Entity{}
	if !a.Equal(b) {
		t.Error("nil and empty Meta or Entity differ")
	}
	for name, mod := range map[string]func(*events.Command){
		"id":             func(c *events.Command) { c.ID = "d" },
		"value type":     func(c *events.Command) { c.Ops[0].Entity["x"] = edm.Int64(1) },
		"ifVersion nil":  func(c *events.Command) { c.Ops[1].IfVersion = nil },
		"ifVersion":      func(c *events.Command) { c.Ops[1].IfVersion = ptr(3) },
		"op order":       func(c *events.Command) { c.Ops[0], c.Ops[1] = c.Ops[1], c.Ops[0] },
		"meta":           func(c *events.Command) { c.Meta = map[string]string{"k": ""} },
		"issuedAt":       func(c *events.Command) { c.IssuedAt = time.Unix(1, 0) },
		"fewer ops":      func(c *events.Command) { c.Ops = c.Ops[:1] },
		"extra property": func(c *events.Command) { c.Ops[0].Entity["y"] = edm.Int32(1) },
	} {
		c := base()
		mod(c)
		if a.Equal(c) || c.Equal(a) {
			t.Errorf("%s: different commands are Equal", name)
		}
	}
}
