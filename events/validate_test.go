package events_test

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/events/rules"
)

// validCommand is a valid command with one upsert, for the tests to break.
func validCommand() *events.Command {
	return &events.Command{
		ID:    "01JD3X9Q7ZBGN0V0W4Q6T8Y2KE",
		Table: "orders",
		PK:    "customer-42",
		Ops: []events.RowOp{{Op: events.OpUpsert, RK: "order-7", Entity: edm.Entity{
			"status": edm.String("shipped"),
		}}},
	}
}

// sizedEntity returns an entity of Binary properties whose EntitySize with
// pk and rk is exactly size.
func sizedEntity(t testing.TB, pk, rk string, size int) edm.Entity {
	t.Helper()
	const perProp = 8 + 2*4 + 4 // a 4-character name and a edm.Binary's length
	base := edm.EntitySize(pk, rk, nil)
	n := (size - base + perProp + events.MaxBinaryBytes - 1) / (perProp + events.MaxBinaryBytes)
	data := size - base - n*perProp
	blob := pattern(events.MaxBinaryBytes)
	e := edm.Entity{}
	for i := range n {
		k := data / n
		if i < data%n {
			k++
		}
		e[fmt.Sprintf("b%03d", i)] = edm.Binary(blob[:k])
	}
	if got := edm.EntitySize(pk, rk, e); got != size {
		t.Fatalf("sizedEntity: size %d, want %d", got, size)
	}
	return e
}

// props returns an entity of n Int32 properties.
func props(n int) edm.Entity {
	e := edm.Entity{}
	for i := range n {
		e[fmt.Sprintf("p%03d", i)] = edm.Int32(int32(i))
	}
	return e
}

// opsAtWireCost returns n upserts of Binary-filled entities whose
// events.WireCost totals the most it can without passing limit, and, with
// over, one byte more than that in the last entity: a command at, or just
// over, what one store transaction holds as the projector prices it.
func opsAtWireCost(t testing.TB, pk string, n, limit int, over bool) []events.RowOp {
	t.Helper()
	first := limit / (n + 1) // leaves the last entity room under MaxEntitySize
	ops := opsOfSizes(t, pk, slices.Repeat([]int{first}, n-1)...)
	cost := 0
	for _, op := range ops {
		cost += events.WireCost(edm.EntitySize(pk, op.RK, op.Entity), op.Entity)
	}
	rk := fmt.Sprintf("r%d", n-1)
	last := func(size int) events.RowOp {
		return events.RowOp{Op: events.OpUpsert, RK: rk, Entity: sizedEntity(t, pk, rk, size)}
	}
	size := sort.Search(events.MaxEntitySize+1, func(size int) bool {
		if size < edm.EntitySize(pk, rk, nil) {
			return false
		}
		op := last(size)
		return cost+events.WireCost(size, op.Entity) > limit
	}) - 1
	if over {
		size++
	}
	return append(ops, last(size))
}

// opsOfSizes returns upserts whose entities have the given sizes.
func opsOfSizes(t testing.TB, pk string, sizes ...int) []events.RowOp {
	ops := make([]events.RowOp, len(sizes))
	for i, s := range sizes {
		rk := fmt.Sprintf("r%d", i)
		ops[i] = events.RowOp{Op: events.OpUpsert, RK: rk, Entity: sizedEntity(t, pk, rk, s)}
	}
	return ops
}

func TestValidateRejects(t *testing.T) {
	setEntity := func(name string, v edm.Value) func(*events.Command) {
		return func(c *events.Command) { c.Ops[0].Entity[name] = v }
	}
	setPK := func(pk string) func(*events.Command) { return func(c *events.Command) { c.PK = pk } }
	setRK := func(rk string) func(*events.Command) { return func(c *events.Command) { c.Ops[0].RK = rk } }
	setTable := func(s string) func(*events.Command) { return func(c *events.Command) { c.Table = s } }
	deleteOp := events.RowOp{Op: events.OpDelete, RK: "x"}

	for _, tc := range []struct {
		name  string
		mod   func(*events.Command)
		rule  rules.Rule
		field string
	}{
		{"missing ID", func(c *events.Command) { c.ID = "" }, rules.IDRequired, "id"},
		{"ID too long", func(c *events.Command) { c.ID = strings.Repeat("a", events.MaxIDLen+1) }, rules.IDLength, "id"},
		{"ID with space", func(c *events.Command) { c.ID = "a b" }, rules.IDCharset, "id"},
		{"ID with slash", func(c *events.Command) { c.ID = "a/b" }, rules.IDCharset, "id"},
		{"table starts with digit", setTable("1orders"), rules.TableName, "table"},
		{"table too short", setTable("ab"), rules.TableName, "table"},
		{"table with dash", setTable("my-orders"), rules.TableName, "table"},
		{"table too long", setTable("a" + strings.Repeat("b", 63)), rules.TableName, "table"},
		{"table non-ASCII", setTable("tablé"), rules.TableName, "table"},
		{"table reserved", setTable("Tables"), rules.TableName, "table"},
		{"pk with /", setPK("a/b"), rules.KeyForbiddenChar, "pk"},
		{"pk with \\", setPK(`a\b`), rules.KeyForbiddenChar, "pk"},
		{"pk with #", setPK("a#b"), rules.KeyForbiddenChar, "pk"},
		{"pk with ?", setPK("a?b"), rules.KeyForbiddenChar, "pk"},
		{"rk with /", setRK("a/b"), rules.KeyForbiddenChar, "ops[0].rk"},
		{"rk with \\", setRK(`a\b`), rules.KeyForbiddenChar, "ops[0].rk"},
		{"rk with #", setRK("a#b"), rules.KeyForbiddenChar, "ops[0].rk"},
		{"rk with ?", setRK("a?b"), rules.KeyForbiddenChar, "ops[0].rk"},
		{"pk with NUL", setPK("a\x00"), rules.KeyControlChar, "pk"},
		{"pk with tab", setPK("a\tb"), rules.KeyControlChar, "pk"},
		{"rk with DEL", setRK("a\x7f"), rules.KeyControlChar, "ops[0].rk"},
		{"rk with U+0085", setRK("a\u0085"), rules.KeyControlChar, "ops[0].rk"},
		{"rk with U+009F", setRK("\u009f"), rules.KeyControlChar, "ops[0].rk"},
		{"pk invalid UTF-8", setPK("a\xffb"), rules.InvalidUTF8, "pk"},
		{"rk invalid UTF-8", setRK("\xed\xa0\x80"), rules.InvalidUTF8, "ops[0].rk"},
		{"pk 1 KiB + 1", setPK(strings.Repeat("p", events.MaxKeyBytes+1)), rules.KeyTooLong, "pk"},
		{"pk 1 KiB + 1 in UTF-16", setPK(strings.Repeat("p", events.MaxKeyUnits+1)), rules.KeyTooLong, "pk"},
		{"pk 1 KiB + 1 non-BMP", setPK(strings.Repeat("😀", events.MaxKeyUnits/2) + "a"), rules.KeyTooLong, "pk"},
		{"rk 1 KiB + 1", setRK(strings.Repeat("r", events.MaxKeyBytes+1)), rules.KeyTooLong, "ops[0].rk"},
		{"rk too long for version rows", setRK(strings.Repeat("r", events.MaxKeyUnits-events.RowKeyOverhead+1)), rules.KeyTooLong, "ops[0].rk"},
		{"rk too long once escaped", setRK(strings.Repeat("r", 998) + ":"), rules.KeyTooLong, "ops[0].rk"},
		{"rk of % too long once escaped", setRK(strings.Repeat("%", 334)), rules.KeyTooLong, "ops[0].rk"},
		{"no ops", func(c *events.Command) { c.Ops = nil }, rules.OpsCount, "ops"},
		{"too many ops", func(c *events.Command) {
			for len(c.Ops) <= events.MaxOpsPerCommand {
				c.Ops = append(c.Ops, deleteOp)
			}
		}, rules.OpsCount, "ops"},
		{"unknown op", func(c *events.Command) { c.Ops[0].Op = "upsert2" }, rules.UnknownOp, "ops[0].op"},
		{"empty op", func(c *events.Command) { c.Ops[0].Op = "" }, rules.UnknownOp, "ops[0].op"},
		{"op in wrong case", func(c *events.Command) { c.Ops[0].Op = "Upsert" }, rules.UnknownOp, "ops[0].op"},
		{"delete with entity", func(c *events.Command) { c.Ops[0].Op = events.OpDelete }, rules.DeleteEntity, "ops[0].entity"},
		{"upsert without entity", func(c *events.Command) { c.Ops[0].Entity = nil }, rules.EntityRequired, "ops[0].entity"},
		{"insert with ifVersion", func(c *events.Command) {
			c.Ops[0].Op = events.OpInsert
			c.Ops[0].IfVersion = ptr(0)
		}, rules.InsertIfVersion, "ops[0].ifVersion"},
		{"negative ifVersion", func(c *events.Command) { c.Ops[0].IfVersion = ptr(-1) }, rules.IfVersionNegative, "ops[0].ifVersion"},
		{"reserved property _x", setEntity("_x", edm.Int32(1)), rules.PropertyReserved, `ops[0].entity["_x"]`},
		{"reserved property _v", setEntity("_v", edm.Int64(1)), rules.PropertyReserved, `ops[0].entity["_v"]`},
		{"property PartitionKey", setEntity("PartitionKey", edm.String("p")), rules.PropertySystem, `ops[0].entity["PartitionKey"]`},
		{"property RowKey", setEntity("RowKey", edm.String("p")), rules.PropertySystem, ""},
		{"property Timestamp", setEntity("Timestamp", edm.DateTime(time.Now())), rules.PropertySystem, ""},
		{"property odata.etag", setEntity("odata.etag", edm.String("W/1")), rules.PropertySystem, ""},
		{"property starts with digit", setEntity("1abc", edm.Int32(1)), rules.PropertyName, `ops[0].entity["1abc"]`},
		{"property with dash", setEntity("a-b", edm.Int32(1)), rules.PropertyName, ""},
		{"property with space", setEntity("a b", edm.Int32(1)), rules.PropertyName, ""},
		{"property with dot", setEntity("a.b", edm.Int32(1)), rules.PropertyName, ""},
		{"property with @", setEntity("a@b", edm.Int32(1)), rules.PropertyName, ""},
		{"property empty", setEntity("", edm.Int32(1)), rules.PropertyName, `ops[0].entity[""]`},
		{"property 256 chars", setEntity(strings.Repeat("n", 256), edm.Int32(1)), rules.PropertyNameLength, ""},
		{"property invalid UTF-8", setEntity("a\xff", edm.Int32(1)), rules.InvalidUTF8, ""},
		{"253 properties", func(c *events.Command) { c.Ops[0].Entity = props(253) }, rules.TooManyProperties, "ops[0].entity"},
		{"MaxProperties + 1", func(c *events.Command) { c.Ops[0].Entity = props(events.MaxProperties + 1) }, rules.TooManyProperties, "ops[0].entity"},
		{"entity 1 MiB + 1", func(c *events.Command) {
			c.Ops[0].Entity = sizedEntity(t, c.PK, c.Ops[0].RK, events.MaxEntityBytes+1)
		}, rules.EntityTooLarge, "ops[0].entity"},
		{"entity 1 byte over the reserve", func(c *events.Command) {
			c.Ops[0].Entity = sizedEntity(t, c.PK, c.Ops[0].RK, events.MaxEntitySize+1)
		}, rules.EntityTooLarge, "ops[0].entity"},
		{"command 4 MiB + 1", func(c *events.Command) {
			c.Ops = opsOfSizes(t, c.PK, 838861, 838861, 838861, 838861, 838861)
		}, rules.CommandTooLarge, "ops"},
		// Four Binary entities of 1 MB: 4 MB as EntitySize counts them, but
		// a store transaction of 5.3 MB in base64, which the projector
		// rejected as too large after they were published.
		{"four 1 MB Binary entities", func(c *events.Command) {
			c.Ops = opsOfSizes(t, c.PK, 1_000_000, 1_000_000, 1_000_000, 1_000_000)
		}, rules.CommandTooLarge, "ops"},
		{"one byte over a transaction", func(c *events.Command) {
			c.Ops = opsAtWireCost(t, c.PK, 5, events.MaxCommandBytes, true)
		}, rules.CommandTooLarge, "ops"},
		{"String 32 K + 1 UTF-16", setEntity("s", edm.String(strings.Repeat("x", events.MaxBinaryBytes/2+1))), rules.StringTooLong, `ops[0].entity["s"]`},
		{"String of surrogate pairs", setEntity("s", edm.String(strings.Repeat("🚀", events.MaxBinaryBytes/4+1))), rules.StringTooLong, ""},
		{"String invalid UTF-8", setEntity("s", edm.String("\xc3")), rules.InvalidUTF8, `ops[0].entity["s"]`},
		{"Binary 64 KiB + 1", setEntity("b", edm.Binary(make([]byte, events.MaxBinaryBytes+1))), rules.BinaryTooLong, `ops[0].entity["b"]`},
		{"Int32 above range", setEntity("i", edm.Value{Type: edm.TypeInt32, Int: math.MaxInt32 + 1}), rules.BadInt32, `ops[0].entity["i"]`},
		{"Int32 below range", setEntity("i", edm.Value{Type: edm.TypeInt32, Int: math.MinInt32 - 1}), rules.BadInt32, ""},
		{"DateTime year 1600", setEntity("d", edm.DateTime(time.Date(1600, 12, 31, 23, 59, 59, 0, time.UTC))), rules.BadDateTime, `ops[0].entity["d"]`},
		{"DateTime year 10000", setEntity("d", edm.DateTime(time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC))), rules.BadDateTime, ""},
		{"DateTime zero", setEntity("d", edm.Value{Type: edm.TypeDateTime}), rules.BadDateTime, ""},
		{"DateTime 1 ns", setEntity("d", edm.Value{Type: edm.TypeDateTime, Time: time.Date(2026, 1, 1, 0, 0, 0, 1, time.UTC)}), rules.BadDateTime, ""},
		{"Guid upper case", setEntity("g", edm.Value{Type: edm.TypeGuid, Str: "C9DA6455-213D-42C9-9A79-3E9149A57833"}), rules.BadGuid, `ops[0].entity["g"]`},
		{"Guid garbage", setEntity("g", edm.Value{Type: edm.TypeGuid, Str: "x"}), rules.BadGuid, ""},
		{"unknown type", setEntity("u", edm.Value{Type: 42}), rules.UnknownType, `ops[0].entity["u"]`},
		{"zero Value", setEntity("z", edm.Value{}), rules.ZeroValue, `ops[0].entity["z"]`},
		{"failed Guid", setEntity("g", func() edm.Value { g, _ := edm.Guid("zzz"); return g }()), rules.ZeroValue, `ops[0].entity["g"]`},
		{"issuer too long", func(c *events.Command) { c.Issuer = strings.Repeat("é", events.MaxIssuerLen+1) }, rules.IssuerLength, "issuer"},
		{"issuer invalid UTF-8", func(c *events.Command) { c.Issuer = "\xff" }, rules.InvalidUTF8, "issuer"},
		{"issuedAt year 1500", func(c *events.Command) { c.IssuedAt = time.Date(1500, 1, 1, 0, 0, 0, 0, time.UTC) }, rules.BadDateTime, "issuedAt"},
		{"meta 65 entries", func(c *events.Command) {
			c.Meta = map[string]string{}
			for i := range events.MaxMetaEntries + 1 {
				c.Meta[fmt.Sprint("k", i)] = "v"
			}
		}, rules.MetaCount, "meta"},
		{"meta empty key", func(c *events.Command) { c.Meta = map[string]string{"": "v"} }, rules.MetaKey, `meta[""]`},
		{"meta key too long", func(c *events.Command) { c.Meta = map[string]string{strings.Repeat("k", 129): "v"} }, rules.MetaKey, ""},
		{"meta key with newline", func(c *events.Command) { c.Meta = map[string]string{"a\nb": "v"} }, rules.MetaKey, `meta["a\nb"]`},
		{"meta value too long", func(c *events.Command) { c.Meta = map[string]string{"k": strings.Repeat("v", 1025)} }, rules.MetaValue, `meta["k"]`},
		{"meta invalid UTF-8", func(c *events.Command) { c.Meta = map[string]string{"k": "\xff"} }, rules.InvalidUTF8, `meta["k"]`},
		{"bad op among good ones", func(c *events.Command) {
			c.Ops = append(c.Ops, deleteOp, events.RowOp{Op: events.OpMerge, RK: "y", Entity: edm.Entity{"_bad": edm.Bool(true)}})
		}, rules.PropertyReserved, `ops[2].entity["_bad"]`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := validCommand()
			tc.mod(c)
			ve := wantRule(t, c.Validate(), tc.rule)
			if tc.field != "" && ve.Field != tc.field {
				t.Errorf("field %q, want %q", ve.Field, tc.field)
			}
		})
	}
}

// TestValidateLiteralsThroughJSON: literals that do not parse are refused
// when decoding, with the same kind of error Validate gives.
func TestValidateLiteralsThroughJSON(t *testing.T) {
	for _, tc := range []struct {
		name, entity string
		rule         rules.Rule
	}{
		{"bad Int64", `{"n":"0x10","n@odata.type":"Edm.Int64"}`, rules.BadInt64},
		{"bad Guid", `{"g":"c9da6455-213d-42c9-9a79-3e9149a5783","g@odata.type":"Edm.Guid"}`, rules.BadGuid},
		{"bad DateTime", `{"d":"2026-02-30T00:00:00Z","d@odata.type":"Edm.DateTime"}`, rules.BadDateTime},
		{"bad Binary", `{"b":"AA==AA==","b@odata.type":"Edm.Binary"}`, rules.BadBinary},
		{"bad Double", `{"x":"1,5","x@odata.type":"Edm.Double"}`, rules.BadDouble},
		{"wrong @odata.type", `{"x":"abc","x@odata.type":"Edm.Boolean"}`, rules.BadAnnotation},
		{"unknown @odata.type", `{"x":"abc","x@odata.type":"Edm.Time"}`, rules.UnknownType},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := events.UnmarshalJSON([]byte(jsonCommand(tc.entity)))
			wantRule(t, err, tc.rule)
		})
	}
}

func TestValidateAccepts(t *testing.T) {
	for _, tc := range []struct {
		name string
		mod  func(*events.Command)
	}{
		{"as is", func(*events.Command) {}},
		{"same RK twice", func(c *events.Command) {
			c.Ops = append(c.Ops, c.Ops[0], events.RowOp{Op: events.OpDelete, RK: c.Ops[0].RK})
		}},
		{"empty entity", func(c *events.Command) { c.Ops[0].Entity = edm.Entity{} }},
		{"delete with empty entity", func(c *events.Command) { c.Ops[0] = events.RowOp{Op: events.OpDelete, Entity: edm.Entity{}} }},
		{"empty RK", func(c *events.Command) { c.Ops[0].RK = "" }},
		{"empty PK, as Azure allows", func(c *events.Command) { c.PK = "" }},
		{"ifVersion 0 on merge", func(c *events.Command) { c.Ops[0].Op, c.Ops[0].IfVersion = events.OpMerge, ptr(0) }},
		{"ifVersion on delete", func(c *events.Command) {
			c.Ops[0] = events.RowOp{Op: events.OpDelete, RK: "r", IfVersion: ptr(math.MaxInt64)}
		}},
		{"ID at most", func(c *events.Command) { c.ID = strings.Repeat("aZ9._:-", 19)[:events.MaxIDLen] }},
		{"table at most", func(c *events.Command) { c.Table = "T" + strings.Repeat("0", 62) }},
		{"table shortest", func(c *events.Command) { c.Table = "a1B" }},
		{"pk 1 KiB", func(c *events.Command) { c.PK = strings.Repeat("p", events.MaxKeyUnits) }},
		{"pk 1 KiB non-ASCII", func(c *events.Command) { c.PK = strings.Repeat("é", events.MaxKeyUnits) }},
		{"pk non-ASCII, U+00A0 and U+FFFD", func(c *events.Command) { c.PK = "Grüße\u00a0世界\uFFFD🚀" }},
		{"rk longest", func(c *events.Command) { c.Ops[0].RK = strings.Repeat("r", events.MaxKeyUnits-events.RowKeyOverhead) }},
		{"rk longest escaped", func(c *events.Command) {
			c.Ops[0].RK = strings.Repeat("r", events.MaxKeyUnits-events.RowKeyOverhead-3) + ":"
		}},
		{"MaxOpsPerCommand ops", func(c *events.Command) {
			for len(c.Ops) < events.MaxOpsPerCommand {
				c.Ops = append(c.Ops, events.RowOp{Op: events.OpDelete, RK: fmt.Sprint(len(c.Ops))})
			}
		}},
		{"MaxProperties properties", func(c *events.Command) { c.Ops[0].Entity = props(events.MaxProperties) }},
		{"property names", func(c *events.Command) {
			for _, n := range []string{"a", "a1", "a_b", "Ünïcödé名前", "ǅx", "xⅫ", "a\u0301", strings.Repeat("n", events.MaxPropertyNameLen)} {
				c.Ops[0].Entity[n] = edm.Int32(1)
			}
		}},
		{"entity at most", func(c *events.Command) {
			c.Ops[0].Entity = sizedEntity(t, c.PK, c.Ops[0].RK, events.MaxEntitySize)
		}},
		{"command at most", func(c *events.Command) {
			c.Ops = opsAtWireCost(t, c.PK, 5, events.MaxCommandBytes, false)
		}},
		{"String 32 K UTF-16", func(c *events.Command) {
			c.Ops[0].Entity["s"] = edm.String(strings.Repeat("🚀", events.MaxBinaryBytes/4))
		}},
		{"Binary 64 KiB", func(c *events.Command) { c.Ops[0].Entity["b"] = edm.Binary(make([]byte, events.MaxBinaryBytes)) }},
		{"issuedAt with ns", func(c *events.Command) { c.IssuedAt = time.Date(2026, 1, 1, 0, 0, 0, 1, time.UTC) }},
		{"issuer at most", func(c *events.Command) { c.Issuer = strings.Repeat("é", events.MaxIssuerLen) }},
		{"meta at most", func(c *events.Command) {
			c.Meta = map[string]string{}
			for i := range events.MaxMetaEntries {
				c.Meta[fmt.Sprintf("%0128d", i)] = strings.Repeat("v", events.MaxMetaValueLen)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := validCommand()
			tc.mod(c)
			if err := c.Validate(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestValidationErrorText(t *testing.T) {
	c := validCommand()
	for i := 0; i < 3; i++ {
		c.Ops = append(c.Ops, events.RowOp{Op: events.OpDelete, RK: fmt.Sprint(i)})
	}
	c.Ops[3].RK = "order-7#"
	const want = `ops[3].rk: rule key-forbidden-char: contains '#' at byte 7`
	if err := c.Validate(); err == nil || err.Error() != want {
		t.Errorf("got %v, want %s", err, want)
	}
}

// TestValidateDeterministic: with several bad properties the same one is
// reported every time, because a rejection reason is part of the
// projection.
func TestValidateDeterministic(t *testing.T) {
	c := validCommand()
	for _, n := range []string{"_z", "_a", "b-c", "_m", "9", "x y"} {
		c.Ops[0].Entity[n] = edm.Int32(1)
	}
	c.Meta = map[string]string{"": "x", "b": strings.Repeat("v", 2000)}
	first := c.Validate().Error()
	if !strings.Contains(first, `["9"]`) {
		t.Errorf("first bad property by name order is %q, got %s", "9", first)
	}
	for range 50 {
		if got := c.Validate().Error(); got != first {
			t.Fatalf("Validate gave %s, then %s", first, got)
		}
	}
}

func TestSystemColumnsReserve(t *testing.T) {
	// The system columns at their largest, by the same formula.
	sys := edm.Entity{
		"_v":       edm.Int64(math.MaxInt64),
		"_cmd":     edm.String(strings.Repeat("c", events.MaxIDLen)),
		"_seq":     edm.Int64(math.MaxInt64),
		"_at":      edm.DateTime(time.Now()),
		"_op":      edm.String(string(events.OpUpsertMerge)),
		"_deleted": edm.Bool(true),
	}
	if len(sys) != events.SystemColumns {
		t.Fatalf("test knows %d system columns, events.SystemColumns is %d", len(sys), events.SystemColumns)
	}
	sysBytes := edm.EntitySize("", "", sys) - edm.EntitySize("", "", nil)
	// The worst version RowKey: as many ':' as fit, each escaped to 3.
	rk := strings.Repeat(":", (events.MaxKeyUnits-events.RowKeyOverhead)/3)
	if err := (&events.Command{ID: "c", Table: "abc", PK: "p", Ops: []events.RowOp{{Op: events.OpDelete, RK: rk}}}).Validate(); err != nil {
		t.Fatalf("worst RowKey is invalid: %v", err)
	}
	stored := "old:" + strings.Repeat("%3A", len(rk)) + ":" + strings.Repeat("9", 19)
	keyGrowth := edm.EntitySize("", stored, nil) - edm.EntitySize("", rk, nil)
	if got := sysBytes + keyGrowth; got != events.SystemColumnsReserve {
		t.Errorf("system columns %d + key growth %d = %d, SystemColumnsReserve is %d", sysBytes, keyGrowth, got, events.SystemColumnsReserve)
	}
}
