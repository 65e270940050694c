package journal_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/journal"
)

// TestPublishRefusesBeyondLimits: a Writer given the limits of Cosmos DB
// for Table refuses a command beyond them by the rule the projector would
// reject it by, publishing nothing; without them the command is published.
func TestPublishRefusesBeyondLimits(t *testing.T) {
	e := newEnv(t, journal.Config{})
	cosmos := journal.NewWriter(e.js, "", journal.WithLimits(events.CosmosLimits))
	cmd := command("c-long", "orders", "pk")
	cmd.Ops[0].RK = strings.Repeat("r", 255-events.RowKeyOverhead+1)
	_, err := cosmos.Publish(e.ctx, cmd)
	var ve *events.ValidationError
	if !errors.As(err, &ve) || ve.Rule != events.RuleKeyTooLong {
		t.Fatalf("Publish with Cosmos's limits: %v, want rule %s", err, events.RuleKeyTooLong)
	}
	if h := e.head(t); h != 0 {
		t.Fatalf("head %d after a refused command", h)
	}
	if _, err := journal.NewWriter(e.js, "").Publish(e.ctx, cmd); err != nil {
		t.Fatalf("Publish without limits: %v", err)
	}
}
