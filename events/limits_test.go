package events_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/events/rules"
)

// TestCosmosLimits: each limit of Cosmos DB for Table is a named rule, the
// rule Azure's own limit of the same kind is, at its bound exactly; the
// zero Limits add nothing to Validate.
func TestCosmosLimits(t *testing.T) {
	// 231 bytes of row key is 255 once versioned.
	rkAt := func(n int) string { return strings.Repeat("r", n) }
	withRK := func(rk string) *events.Command {
		c := validCommand()
		c.Ops[0].RK = rk
		return c
	}
	withProp := func(name string) *events.Command {
		c := validCommand()
		c.Ops[0].Entity[name] = edm.Int32(1)
		return c
	}
	atWireCost := func(over bool) *events.Command {
		c := validCommand()
		c.Ops = opsAtWireCost(t, c.PK, 3, 2<<20, over)
		return c
	}
	tests := []struct {
		name  string
		cmd   *events.Command
		rule  rules.Rule
		field string
	}{
		{"row key at the bound", withRK(rkAt(255 - events.RowKeyOverhead)), "", ""},
		{"row key one byte over", withRK(rkAt(256 - events.RowKeyOverhead)), rules.KeyTooLong, "ops[0].rk"},
		{"row key over once escaped", withRK(rkAt(255-events.RowKeyOverhead-2) + ":"), rules.KeyTooLong, "ops[0].rk"},
		{"row key counted in UTF-8", withRK(strings.Repeat("é", (255-events.RowKeyOverhead)/2+1)), rules.KeyTooLong, "ops[0].rk"},
		{"reserved ID", withProp("ID"), rules.PropertySystem, `ops[0].entity["ID"]`},
		{"reserved rid", withProp("rid"), rules.PropertySystem, `ops[0].entity["rid"]`},
		{"reserved etag", withProp("etag"), rules.PropertySystem, `ops[0].entity["etag"]`},
		{"reserved ResourceId in another case", withProp("resourceid"), rules.PropertySystem, `ops[0].entity["resourceid"]`},
		{"a name like a reserved one", withProp("rids"), "", ""},
		{"command at the batch bound", atWireCost(false), "", ""},
		{"command over the batch bound", atWireCost(true), rules.CommandTooLarge, "ops"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if err := tt.cmd.Validate(); err != nil {
				t.Fatalf("Azure's limits refuse it: %v", err)
			}
			if err := (events.Limits{}).Validate(tt.cmd); err != nil {
				t.Fatalf("the zero Limits refuse it: %v", err)
			}
			err := events.CosmosLimits.Validate(tt.cmd)
			if tt.rule == "" {
				if err != nil {
					t.Fatalf("Cosmos refuses it: %v", err)
				}
				return
			}
			var ve *rules.ValidationError
			if !errors.As(err, &ve) || !errors.Is(err, rules.ErrInvalid) || ve.Rule != tt.rule || ve.Field != tt.field {
				t.Fatalf("err = %v, want rule %s at %s", err, tt.rule, tt.field)
			}
			if !strings.Contains(ve.Detail, "Cosmos DB for Table") {
				t.Errorf("detail %q does not name the service", ve.Detail)
			}
		})
	}
}
