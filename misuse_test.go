package tablejournal_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	tj "github.com/tablejournal/tablejournal"
	"github.com/tablejournal/tablejournal/events/rules"
	"github.com/tablejournal/tablejournal/journal/journaltest"
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
		rule rules.Rule
	}{
		{"before any operation", tj.NewCommand(table, pk).IfVersion(7).Replace("a", set(2)), rules.IfVersionWithoutOp},
		{"before the first of two", tj.NewCommand(table, pk).IfVersion(7).Upsert("b", set(2)).Replace("a", set(2)), rules.IfVersionWithoutOp},
		{"twice on one operation", tj.NewCommand(table, pk).Replace("a", set(2)).IfVersion(7).IfVersion(0), rules.IfVersionTwice},
		{"twice, the first matching", tj.NewCommand(table, pk).Replace("a", set(2)).IfVersion(0).IfVersion(0), rules.IfVersionTwice},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pos, err := c.Publish(ctx, tt.cmd)
			var verr *rules.ValidationError
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

// TestClientSentinels: what a service matches with errors.Is, each with a
// message that says what is wrong in its terms.
func TestClientSentinels(t *testing.T) {
	c := connect(t)
	ctx := testContext(t)
	pk := fmt.Sprintf("s%d", time.Now().UnixNano())

	t.Run("Guid", func(t *testing.T) {
		_, err := tj.Guid("nope")
		var verr *rules.ValidationError
		if !errors.Is(err, tj.ErrInvalid) || !errors.As(err, &verr) || verr.Rule != rules.BadGuid {
			t.Fatalf("Guid(nope): %v, want ErrInvalid, rule bad-guid", err)
		}
	})
	// The value of a failed Guid, its error ignored, is refused naming its
	// property; before the fix it was the zero Value, published as "".
	t.Run("ignored Guid error", func(t *testing.T) {
		g, _ := tj.Guid("zzz")
		pos, err := c.Publish(ctx, tj.NewCommand("sentinels", pk).Upsert("g", tj.Entity{"owner": g}))
		var verr *rules.ValidationError
		if !errors.Is(err, tj.ErrInvalid) || !errors.As(err, &verr) || verr.Rule != rules.ZeroValue ||
			!strings.Contains(err.Error(), "owner") {
			t.Fatalf("Publish of a failed Guid: %v (seq %d), want ErrInvalid naming property owner", err, pos.Seq)
		}
	})
	t.Run("body differs", func(t *testing.T) {
		first := tj.NewCommand("sentinels", pk).Upsert("r", tj.Entity{"n": tj.Int64(1)})
		if _, err := c.Publish(ctx, first); err != nil {
			t.Fatal(err)
		}
		_, err := c.Publish(ctx, tj.NewCommand("sentinels", pk).WithID(first.ID()).Upsert("r", tj.Entity{"n": tj.Int64(2)}))
		if !errors.Is(err, tj.ErrBodyDiffers) || errors.Is(err, tj.ErrInvalid) {
			t.Fatalf("same ID, other body: %v, want ErrBodyDiffers", err)
		}
	})
	// A zero Value, as a failed constructor returns, is refused naming
	// its property; before, it was written as an empty Edm.String.
	t.Run("zero Value", func(t *testing.T) {
		g, _ := tj.Guid("zzz")
		for _, e := range []tj.Entity{{"ref": g}, {"n": tj.Int64(1), "ref": tj.Value{}}} {
			pos, err := c.Publish(ctx, tj.NewCommand("sentinels", pk).Upsert("zero", e))
			var verr *rules.ValidationError
			if !errors.Is(err, tj.ErrInvalid) || !errors.As(err, &verr) || verr.Rule != rules.ZeroValue ||
				verr.Field != `ops[0].entity["ref"]` || !strings.Contains(err.Error(), `"ref"`) {
				t.Fatalf("Publish of a zero Value: %v (seq %d), want ErrInvalid, rule zero-value, naming ref", err, pos.Seq)
			}
		}
		if _, err := c.Get(ctx, "sentinels", pk, "zero"); !errors.Is(err, tj.ErrNotFound) {
			t.Fatalf("row zero: %v, want ErrNotFound: nothing published", err)
		}
	})
	// WithStream names a stream that does not exist, on the server of a
	// journal (JetStream refused the publish with "expected stream does
	// not match") and on one without any (the publish retried for its
	// whole budget).
	empty := journaltest.StartServer(t).ClientURL()
	for _, url := range []string{natsURL, empty} {
		t.Run("no stream "+url, func(t *testing.T) {
			other, err := tj.Connect(ctx, url, tj.WithStream("NOPE"))
			if err != nil {
				t.Fatal(err)
			}
			defer other.Close()
			pctx, cancel := context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
			_, err = other.Publish(pctx, tj.NewCommand("sentinels", pk).Upsert("r", tj.Entity{}))
			if !errors.Is(err, tj.ErrNoJournal) || !strings.Contains(err.Error(), "no journal stream NOPE") || pctx.Err() != nil {
				t.Fatalf("publish to stream NOPE: %v, want ErrNoJournal naming NOPE at once", err)
			}
		})
	}
	t.Run("follow another table", func(t *testing.T) {
		name := "sentinels-" + pk
		pos, err := c.Publish(ctx, tj.NewCommand("orders", pk).Upsert("r", tj.Entity{}))
		if err != nil {
			t.Fatal(err)
		}
		// The checkpoint, made by a Follow that stops at its first change.
		fctx, cancel := context.WithCancel(ctx)
		defer cancel()
		if err := c.Follow(fctx, name, "orders", func(context.Context, tj.Change) error { cancel(); return nil }, tj.FollowFrom(pos.Seq)); err != nil {
			t.Fatal(err)
		}
		for _, tt := range []struct {
			name, table string
			opts        []tj.FollowOption
			want        string
		}{
			{"table", "customers", nil, `the checkpoint "` + name + `" follows table orders, not table customers`},
			{"partition", "orders", []tj.FollowOption{tj.FollowPartition("c-1")}, `follows table orders, not partition "c-1" of table orders`},
		} {
			t.Run(tt.name, func(t *testing.T) {
				err := c.Follow(ctx, name, tt.table, func(context.Context, tj.Change) error { return nil }, tt.opts...)
				if !errors.Is(err, tj.ErrInvalid) || !strings.Contains(err.Error(), tt.want) || strings.Contains(err.Error(), "changes.") {
					t.Fatalf("Follow: %v, want ErrInvalid saying %q", err, tt.want)
				}
			})
		}
	})
	t.Run("follow a name no table has", func(t *testing.T) {
		for _, table := range []string{"Bad-Table!", "*", "orders.x", ""} {
			err := c.Follow(ctx, "sentinels-bad-"+pk, table, func(context.Context, tj.Change) error { return nil })
			var verr *rules.ValidationError
			if !errors.Is(err, tj.ErrInvalid) || !errors.As(err, &verr) || verr.Rule != rules.TableName {
				t.Fatalf("Follow(%q): %v, want ErrInvalid, rule table-name", table, err)
			}
		}
	})
}
