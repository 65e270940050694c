package events_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/events/edm"
)

// fillEntity returns an entity of strings of ch (one character) whose
// EntitySize with pk and rk is as close to budget as whole characters
// allow.
func fillEntity(pk, rk, ch string, budget int) edm.Entity {
	e := edm.Entity{}
	for i := 0; ; i++ {
		name := fmt.Sprintf("p%03d", i)
		room := budget - edm.EntitySize(pk, rk, e) - (8 + 2*len(name) + 4)
		per := 2 * utf16Units(ch) // what edm.EntitySize counts per ch
		n := min(room, events.MaxBinaryBytes) / per
		if n <= 0 || len(e) == events.MaxProperties {
			return e
		}
		e[name] = edm.String(strings.Repeat(ch, n))
	}
}

func utf16Units(ch string) int {
	n := 0
	for _, r := range ch {
		n++
		if r > 0xFFFF {
			n++
		}
	}
	return n
}

// manyProps is an entity of n one-letter-named DateTimes: the most
// annotation per byte EntitySize counts.
func manyProps(n int) edm.Entity {
	e := edm.Entity{}
	at := edm.DateTime(time.Date(2026, 11, 21, 10, 0, 0, 123456700, time.UTC))
	for i := range n {
		e[fmt.Sprintf("a%d", i)] = at
	}
	return e
}

// The worst cases of each codec stay within MaxMsgpackCommandBytes and
// MaxEntityJSONBytes: the bounds a NATS server's max_payload is checked
// against (journal.MinMaxPayload).
func TestEncodedSizeBounds(t *testing.T) {
	for _, ch := range []string{"€", "\x01", "<", "\U0001F600", "a"} {
		t.Run(fmt.Sprintf("%q", ch), func(t *testing.T) {
			var ops []events.RowOp
			total := 0
			for i := 0; total < events.MaxCommandBytes-64; i++ {
				rk := fmt.Sprintf("r%d", i)
				ent := fillEntity("p", rk, ch, min(events.MaxEntitySize, events.MaxCommandBytes-total-events.OpWireOverhead))
				total += events.WireCost(edm.EntitySize("p", rk, ent), ent)
				ops = append(ops, events.RowOp{Op: events.OpUpsert, RK: rk, Entity: ent})
			}
			meta := map[string]string{}
			for i := range events.MaxMetaEntries {
				meta[fmt.Sprintf("%0128d", i)] = strings.Repeat("€", events.MaxMetaValueLen/3)
			}
			c := &events.Command{ID: strings.Repeat("i", events.MaxIDLen), Table: "orders", PK: "p", Ops: ops, Meta: meta}
			if err := c.Validate(); err != nil {
				t.Fatal(err)
			}
			m, err := events.MarshalMsgpack(c)
			if err != nil {
				t.Fatal(err)
			}
			if len(m) > events.MaxMsgpackCommandBytes {
				t.Errorf("msgpack of a %d-byte command: %d bytes, bound %d", total, len(m), events.MaxMsgpackCommandBytes)
			}
			one := fillEntity("p", "r", ch, events.MaxEntitySize)
			checkEntityJSON(t, one)
			t.Logf("command %d bytes: msgpack %.2f MiB; entity JSON %.2f MiB", total, float64(len(m))/(1<<20), float64(entityJSONLen(t, one))/(1<<20))
		})
	}
	t.Run("annotations", func(t *testing.T) {
		var ops []events.RowOp
		for i := range events.MaxOpsPerCommand {
			ops = append(ops, events.RowOp{Op: events.OpUpsert, RK: strings.Repeat("€", 150) + fmt.Sprint(i), Entity: manyProps(events.MaxProperties)})
		}
		c := &events.Command{ID: "x", Table: "orders", PK: "p", Ops: ops}
		if err := c.Validate(); err != nil {
			t.Fatal(err)
		}
		m, _ := events.MarshalMsgpack(c)
		if len(m) > events.MaxMsgpackCommandBytes {
			t.Errorf("msgpack: %d bytes, bound %d", len(m), events.MaxMsgpackCommandBytes)
		}
		checkEntityJSON(t, manyProps(events.MaxProperties))
	})
}

func entityJSONLen(t *testing.T, e edm.Entity) int {
	t.Helper()
	j, err := events.MarshalEntityJSON(e)
	if err != nil {
		t.Fatal(err)
	}
	// encoding/json re-escapes it inside a change event.
	again, err := json.Marshal(json.RawMessage(j))
	if err != nil {
		t.Fatal(err)
	}
	return max(len(j), len(again))
}

func checkEntityJSON(t *testing.T, e edm.Entity) {
	t.Helper()
	if n := entityJSONLen(t, e); n > events.MaxEntityJSONBytes {
		t.Errorf("entity JSON: %d bytes, bound %d", n, events.MaxEntityJSONBytes)
	}
}
