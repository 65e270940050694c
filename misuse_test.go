package tablejournal_test

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	tj "github.com/tablejournal/tablejournal"
	"github.com/tablejournal/tablejournal/events"
)

// TestIfVersionGuardsSomething: an IfVersion that guards no operation, or
// a second one on the same operation, is refused by Publish with
// ErrInvalid naming the rule, and nothing is published; before the fix
// the guard was dropped and the replace applied unguarded.
func TestIfVersionGuardsSomething(t *testing.T) {
	c := connect(t)
	ctx := testContext(t)
	table, pk := "ifversion", fmt.Sprintf("p%d", time.Now().UnixNano())
	if _, err := c.Apply(ctx, tj.NewCommand(table, pk).Upsert("a", tj.Entity{"n": tj.Int64(1)})); err != nil {
		t.Fatal(err)
	}
	set := func(n int64) tj.Entity { return tj.Entity{"n": tj.Int64(n)} }
	tests := []struct {
		name string
		cmd  *tj.Command
		rule events.Rule
	}{
		{"before any operation", tj.NewCommand(table, pk).IfVersion(7).Replace("a", set(2)), events.RuleIfVersionWithoutOp},
		{"before the first of two", tj.NewCommand(table, pk).IfVersion(7).Upsert("b", set(2)).Replace("a", set(2)), events.RuleIfVersionWithoutOp},
		{"twice on one operation", tj.NewCommand(table, pk).Replace("a", set(2)).IfVersion(7).IfVersion(0), events.RuleIfVersionTwice},
		{"twice, the first matching", tj.NewCommand(table, pk).Replace("a", set(2)).IfVersion(0).IfVersion(0), events.RuleIfVersionTwice},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pos, err := c.Publish(ctx, tt.cmd)
			var verr *events.ValidationError
			if !errors.Is(err, tj.ErrInvalid) || !errors.As(err, &verr) || verr.Rule != tt.rule ||
				!strings.Contains(err.Error(), string(tt.rule)) {
				t.Fatalf("Publish: %v (seq %d), want ErrInvalid with rule %s", err, pos.Seq, tt.rule)
			}
		})
	}
	// Nothing was published: the row is as the upsert left it, and a
	// guard placed after its operation still guards it.
	pos, err := c.Publish(ctx, tj.NewCommand(table, pk).Replace("a", set(3)).IfVersion(0))
	if err != nil {
		t.Fatal(err)
	}
	row, err := c.Get(ctx, table, pk, "a", tj.AfterSeq(pos.Seq))
	if err != nil {
		t.Fatal(err)
	}
	if row.Version != 1 || row.Seq != pos.Seq || row.Entity["n"].Int != 3 {
		t.Fatalf("row a: version %d seq %d n %d, want version 1 by seq %d, n 3", row.Version, row.Seq, row.Entity["n"].Int, pos.Seq)
	}
	if _, err := c.Get(ctx, table, pk, "b"); !errors.Is(err, tj.ErrNotFound) {
		t.Fatalf("row b: %v, want ErrNotFound", err)
	}
}
