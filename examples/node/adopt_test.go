package node

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/journal/journaltest"
	"github.com/tablejournal/tablejournal/replay"
	"github.com/tablejournal/tablejournal/replay/adopt"
	"github.com/tablejournal/tablejournal/replay/rebuild"
	"github.com/tablejournal/tablejournal/rows"
	"github.com/tablejournal/tablejournal/store"
	"github.com/tablejournal/tablejournal/tablejournaltest"
)

// TestNodeAdopt adopts a table that legacy.cjs wrote with
// @azure/data-tables (every EDM type, whole-number doubles and 7-digit
// DateTimes in the SDK's own {value, type} form): the adopted rows have the
// source's values and types, through the store and as the Node SDK reads
// them, and the adopted table is identical to its journal.
func TestNodeAdopt(t *testing.T) {
	mods := nodeModules(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	p := tablejournaltest.New(t, az.ConnectionString())
	suffix := time.Now().UnixNano() % 1_000_000_000
	source, into := fmt.Sprintf("Legacy%d", suffix), fmt.Sprintf("Adopted%d", suffix)
	node := func(args ...string) map[string]any {
		t.Helper()
		out := runNode(ctx, t, mods, append([]string{"legacy.cjs", args[0], az.ConnectionString()}, args[1:]...)...)
		var step map[string]any
		if err := json.Unmarshal(out, &step); err != nil {
			t.Fatalf("node %v printed %q: %v", args, out, err)
		}
		return step
	}
	node("write", source, "24")

	_, js := journaltest.Connect(t, p.URL())
	src, err := replay.New(ctx, replay.Config{Store: p.Store(), JetStream: js})
	if err != nil {
		t.Fatal(err)
	}
	plan, err := adopt.New(src).Plan(ctx, adopt.Config{Table: source, Into: into})
	if err != nil {
		t.Fatal(err)
	}
	if err := plan.Apply(ctx); err != nil {
		t.Fatal(err)
	}
	if plan.Rows != 24 || plan.Upserts != 24 || len(plan.Problems) != 0 {
		t.Fatalf("%s, problems %v", plan.Summary(), plan.Problems)
	}

	// Through the store, which reads the service's wire form: exact types.
	n := 0
	err = store.All(ctx, p.Store(), source, store.Query{AllPartitions: true}, func(e store.Entity) error {
		n++
		got, err := rows.Reader{Store: p.Store()}.Get(ctx, into, e.PK, e.RK)
		if err != nil {
			return err
		}
		if !got.Props.Equal(e.Props) {
			t.Errorf("%s/%s: adopted %v, source %v", e.PK, e.RK, got.Props, e.Props)
		}
		if w := e.Props["whole"]; w.Type != edm.TypeDouble {
			t.Errorf("%s/%s: whole read as %v, want Edm.Double", e.PK, e.RK, w.Type)
		}
		return nil
	})
	if err != nil || n != 24 {
		t.Fatalf("compared %d rows: %v", n, err)
	}
	// As the Node SDK reads them.
	if got := node("compare", source, into); got["source"] != 24.0 || got["adopted"] != 24.0 || len(got["differences"].([]any)) != 0 {
		t.Fatalf("node compare: %v", got)
	}
	d, err := rebuild.New(src).Verify(ctx, rebuild.VerifyConfig{Table: into})
	if err != nil || !d.Identical() {
		t.Fatalf("verify %s: %+v, %v", into, d, err)
	}
}
