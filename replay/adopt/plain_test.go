package adopt_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/tablejournal/tablejournal/journal/tablelayout"

	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/replay/adopt"
	"github.com/tablejournal/tablejournal/replay/replaytest"
	"github.com/tablejournal/tablejournal/rows"
	"github.com/tablejournal/tablejournal/store"
	"github.com/tablejournal/tablejournal/wire"
)

// rowsOf builds n rows over four partitions.
func rowsOf(n int) map[[2]string]edm.Entity {
	src := map[[2]string]edm.Entity{}
	for i := range n {
		src[[2]string{fmt.Sprintf("p%d", i%4), fmt.Sprintf("r%02d", i)}] = edm.Entity{"i": edm.Int64(1<<53 + int64(i)), "s": edm.String(fmt.Sprint("v", i))}
	}
	return src
}

// userProps is e without the system columns.
func userProps(e edm.Entity) edm.Entity {
	out := edm.Entity{}
	for k, v := range e {
		if !strings.HasPrefix(k, "_") {
			out[k] = v
		}
	}
	return out
}

// plainHolds checks that a full-table query of the plain table returns
// exactly want, each row adopted (its _cmd adoption's) and with the
// projector's system columns.
func plainHolds(t *testing.T, ctx context.Context, st store.Store, table string, want map[[2]string]edm.Entity) {
	t.Helper()
	n := 0
	if err := store.All(ctx, st, table, store.Query{AllPartitions: true}, func(e store.Entity) error {
		n++
		w, ok := want[[2]string{e.PK, e.RK}]
		switch {
		case !ok:
			t.Errorf("%s holds %q/%q, not a current row", table, e.PK, e.RK)
		case !userProps(e.Props).Equal(w):
			t.Errorf("%s %q/%q = %v, want %v", table, e.PK, e.RK, userProps(e.Props), w)
		case !adopt.IsAdoptionID(e.Props[rows.ColCmd].Str) || e.Props[rows.ColSeq].Int == 0:
			t.Errorf("%s %q/%q is not the projector's adopted row: _cmd %q, _seq %d", table, e.PK, e.RK, e.Props[rows.ColCmd].Str, e.Props[rows.ColSeq].Int)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if n != len(want) {
		t.Errorf("%s holds %d rows, want %d", table, n, len(want))
	}
}

// TestPlainInPlace adopts a table into itself in the plain layout while a
// reader reads every row at its own key, as a service's reader does: each
// row is there at every moment with the service's values, and ends as the
// projector's current row; the history is in the history table. A row the
// service changed after the pass read it is left for the next pass, one it
// deleted is not journaled.
func TestPlainInPlace(t *testing.T) {
	onBackends(t, func(t *testing.T, st store.Store, e *replaytest.Env, a *adopt.Adopter, table, _ string) {
		ctx := e.Ctx
		src := rowsOf(40)
		write(t, ctx, st, table, src)
		cfg := adopt.Config{Table: table, InPlace: true, Layout: wire.LayoutPlain}
		p, err := a.Plan(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if p.Upserts != 40 || p.Moves != 40 || !p.SetLayout || p.Layout != wire.LayoutPlain {
			t.Fatalf("%s (layout %s, set %t)", p.Summary(), p.Layout, p.SetLayout)
		}
		changed, deleted := [2]string{"p1", "r01"}, [2]string{"p2", "r02"}
		write(t, ctx, st, table, map[[2]string]edm.Entity{changed: {"i": edm.Int32(-1)}})
		if _, err := st.Transact(ctx, table, deleted[0], []store.Op{{Kind: store.Delete, RK: deleted[1]}}); err != nil {
			t.Fatal(err)
		}
		want := map[[2]string]edm.Entity{}
		for k, v := range src {
			want[k] = v
		}
		delete(want, deleted)
		want[changed] = edm.Entity{"i": edm.Int32(-1)}

		applyReading(t, ctx, p, func(ctx context.Context) error { return readAtOwnKeys(ctx, st, table, want) })
		if r := p.Result.InPlace; r.Moved != 38 || r.Changed != 1 || r.Deleted != 1 {
			t.Fatalf("in place: %+v, want 38 adopted, 1 changed, 1 deleted", *r)
		}
		if l, err := tablelayout.Of(ctx, e.Journal, table); err != nil || l.Layout != wire.LayoutPlain {
			t.Fatalf("layout of %s: %+v, %v", table, l, err)
		}
		// The next pass adopts the changed row, and only it.
		cfg.Resume = true
		r, err := a.Plan(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if r.Upserts != 1 || r.Unchanged != 38 || r.SetLayout || len(r.Problems) != 0 {
			t.Fatalf("next pass: %s %v", r.Summary(), r.Problems)
		}
		if err := r.Apply(ctx); err != nil {
			t.Fatal(err)
		}
		plainHolds(t, ctx, st, table, want)
		verify(t, e, table)
		// A layout never changes.
		if _, err := a.Plan(ctx, adopt.Config{Table: table, InPlace: true, Resume: true, Layout: wire.LayoutVersioned}); !errors.Is(err, tablelayout.ErrSet) {
			t.Errorf("--layout versioned on a plain table: %v, want ErrSet", err)
		}
	})
}

// TestPlainInPlaceResume: a pass that stamped its rows and stopped before
// its commands were published is finished by the next pass, which
// journals the same commands (their IDs are in the stamps).
func TestPlainInPlaceResume(t *testing.T) {
	st := backends()[0].open(t)
	e, a := env(t, st)
	ctx := e.Ctx
	table := replaytest.UniqueTable("src")
	src := rowsOf(12)
	write(t, ctx, st, table, src)
	p, err := a.Plan(ctx, adopt.Config{Table: table, InPlace: true, Layout: wire.LayoutPlain})
	if err != nil {
		t.Fatal(err)
	}
	// The crash: the layout set and every row stamped, nothing published.
	if _, err := tablelayout.Set(ctx, e.Journal, table, wire.LayoutPlain); err != nil {
		t.Fatal(err)
	}
	for _, c := range p.Commands {
		if _, err := st.Transact(ctx, table, c.PK, []store.Op{{Kind: store.Merge, RK: c.Ops[0].RK,
			Props: edm.Entity{rows.ColSeq: edm.Int64(0), rows.ColCmd: edm.String(c.ID)}}}); err != nil {
			t.Fatal(err)
		}
	}
	r, err := a.Plan(ctx, adopt.Config{Table: table, InPlace: true, Resume: true})
	if err != nil {
		t.Fatal(err)
	}
	if r.Upserts != 12 || r.Fingerprint() != p.Fingerprint() {
		t.Fatalf("resumed: %s; fingerprint %s, first pass %s", r.Summary(), r.Fingerprint(), p.Fingerprint())
	}
	if err := r.Apply(ctx); err != nil {
		t.Fatal(err)
	}
	plainHolds(t, ctx, st, table, src)
	verify(t, e, table)
}

// TestPlainInto adopts a table into a new plain table: the adopted rows at
// the service's own keys, the history beside them; a table with commands
// cannot be made plain.
func TestPlainInto(t *testing.T) {
	st := backends()[0].open(t)
	e, a := env(t, st)
	ctx := e.Ctx
	table, into := replaytest.UniqueTable("src"), replaytest.UniqueTable("adopted")
	src := rowsOf(20)
	write(t, ctx, st, table, src)
	cfg := adopt.Config{Table: table, Into: into, Layout: wire.LayoutPlain}
	p, err := a.Plan(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Apply(ctx); err != nil {
		t.Fatal(err)
	}
	plainHolds(t, ctx, st, into, src)
	verify(t, e, into)
	// A catch-up reads the tips from the history table.
	src[[2]string{"p0", "r00"}] = edm.Entity{"i": edm.Int32(7)}
	write(t, ctx, st, table, map[[2]string]edm.Entity{{"p0", "r00"}: {"i": edm.Int32(7)}})
	cfg.CatchUp = true
	cu, err := a.Plan(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if cu.Upserts != 1 || cu.Unchanged != 19 {
		t.Fatalf("catch-up: %s", cu.Summary())
	}
	if err := cu.Apply(ctx); err != nil {
		t.Fatal(err)
	}
	plainHolds(t, ctx, st, into, src)

	// A versioned table with commands cannot become plain.
	other := replaytest.UniqueTable("versioned")
	v, err := a.Plan(ctx, adopt.Config{Table: table, Into: other})
	if err != nil {
		t.Fatal(err)
	}
	if err := v.Apply(ctx); err != nil {
		t.Fatal(err)
	}
	_, err = a.Plan(ctx, adopt.Config{Table: table, Into: other, CatchUp: true, Layout: wire.LayoutPlain})
	if !errors.Is(err, tablelayout.ErrTableHasCommands) {
		t.Fatalf("--layout plain on a table with commands: %v, want ErrTableHasCommands", err)
	}
}

// readAtOwnKeys reads every row of want at its own key over and over until
// ctx ends, and fails if one is missing or its values (the system columns
// aside) are not want's: a plain table's reader never misses a row.
func readAtOwnKeys(ctx context.Context, st store.Store, table string, want map[[2]string]edm.Entity) error {
	for ctx.Err() == nil {
		for k, w := range want {
			e, err := st.Get(ctx, table, k[0], k[1])
			if ctx.Err() != nil {
				return nil
			}
			if err != nil {
				return fmt.Errorf("%q/%q: %w", k[0], k[1], err)
			}
			if got := userProps(e.Props); !got.Equal(w) {
				return fmt.Errorf("%q/%q = %v, want %v", k[0], k[1], got, w)
			}
		}
	}
	return nil
}
