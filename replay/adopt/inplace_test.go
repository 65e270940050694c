package adopt_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/replay"
	"github.com/tablejournal/tablejournal/replay/adopt"
	"github.com/tablejournal/tablejournal/replay/replaytest"
	"github.com/tablejournal/tablejournal/rows"
	"github.com/tablejournal/tablejournal/store"
	"github.com/tablejournal/tablejournal/store/azure"
)

// TestInPlace adopts a table into itself while a reader reads every row
// as the service wrote it, else as its tip: no row is ever readable in
// neither form. A row the service changed after the pass read it stays
// for the next pass; one it deleted is deleted from the layout too.
func TestInPlace(t *testing.T) {
	onBackends(t, func(t *testing.T, st store.Store, e *replaytest.Env, a *adopt.Adopter, table, _ string) {
		ctx := e.Ctx
		src := map[[2]string]edm.Entity{}
		for i := range 40 {
			src[[2]string{fmt.Sprintf("p%d", i%4), fmt.Sprintf("r%02d", i)}] = edm.Entity{"i": edm.Int64(1<<53 + int64(i))}
		}
		write(t, ctx, st, table, src)
		cfg := adopt.Config{Table: table, InPlace: true}
		p, err := a.Plan(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if p.Upserts != 40 || p.Moves != 40 {
			t.Fatalf("%s", p.Summary())
		}
		// The service changes one row and deletes another after the read.
		changed, deleted := [2]string{"p1", "r01"}, [2]string{"p2", "r02"}
		write(t, ctx, st, table, map[[2]string]edm.Entity{changed: {"i": edm.Int32(-1)}})
		if _, err := st.Transact(ctx, table, deleted[0], []store.Op{{Kind: store.Delete, RK: deleted[1]}}); err != nil {
			t.Fatal(err)
		}

		applyReading(t, ctx, p, func(ctx context.Context) error { return readEither(ctx, st, table, src, deleted) })
		if r := p.Result.InPlace; r.Moved != 38 || r.Changed != 1 || r.Deleted != 1 {
			t.Fatalf("in place: %+v, want 38 moved, 1 changed, 1 deleted", *r)
		}
		cfg.CatchUp = true
		cu, err := a.Plan(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if cu.Upserts != 1 || cu.Moves != 1 || cu.Deletes != 0 || len(cu.Problems) != 0 {
			t.Fatalf("catch-up in place: %s %v", cu.Summary(), cu.Problems)
		}
		if err := cu.Apply(ctx); err != nil {
			t.Fatal(err)
		}
		// Only the layout is left: each row's tip as the service left it.
		delete(src, deleted)
		src[changed] = edm.Entity{"i": edm.Int32(-1)}
		n := 0
		if err := store.All(ctx, st, table, store.Query{AllPartitions: true}, func(e store.Entity) error {
			if !rows.IsLayoutKey(e.RK) && e.RK != rows.FenceKey {
				t.Errorf("%q/%q is still in its service form", e.PK, e.RK)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if err := (rows.Reader{Store: st}).Current(ctx, table, store.AllPartitions, func(r rows.Row) error {
			n++
			if want := src[[2]string{r.PK, r.RK}]; !r.Props.Equal(want) {
				t.Errorf("%q/%q = %v, want %v", r.PK, r.RK, r.Props, want)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if n != len(src) {
			t.Errorf("%d rows in the layout, want %d", n, len(src))
		}
		verify(t, e, table)
	})
}

// TestInPlaceResume: a pass that stopped after its commands were applied
// but before it deleted the rows it moved is finished by --resume, which
// journals nothing again and deletes them.
func TestInPlaceResume(t *testing.T) {
	st := backends()[0].open(t)
	e, a := env(t, st)
	ctx := e.Ctx
	table := replaytest.UniqueTable("src")
	src := map[[2]string]edm.Entity{}
	for i := range 30 {
		src[[2]string{fmt.Sprintf("p%d", i%3), fmt.Sprintf("r%02d", i)}] = edm.Entity{"i": edm.Int32(int32(i))}
	}
	write(t, ctx, st, table, src)
	p, err := a.Plan(ctx, adopt.Config{Table: table, InPlace: true})
	if err != nil {
		t.Fatal(err)
	}
	// The crash: journaled and applied, nothing moved.
	ids := make([]string, len(p.Commands))
	for i, c := range p.Commands {
		ids[i] = c.ID
	}
	e.Publish(p.Commands)
	e.Await(ids)
	if _, err := a.Plan(ctx, adopt.Config{Table: table, InPlace: true}); !errors.Is(err, replay.ErrNotEmpty) {
		t.Fatalf("a first pass again: %v, want ErrNotEmpty", err)
	}
	r, err := a.Plan(ctx, adopt.Config{Table: table, InPlace: true, Resume: true})
	if err != nil {
		t.Fatal(err)
	}
	if r.Upserts != 0 || r.Unchanged != 30 || r.Moves != 30 {
		t.Fatalf("resumed: %s", r.Summary())
	}
	if err := r.Apply(ctx); err != nil {
		t.Fatal(err)
	}
	if res := r.Result; res.Published != 0 || res.InPlace.Moved != 30 {
		t.Fatalf("resumed: published %d, moved %d; want 0 and 30", res.Published, res.InPlace.Moved)
	}
	if head, _ := e.Journal.Head(ctx); head != 30 {
		t.Fatalf("journal head %d, want the 30 commands once", head)
	}
	verify(t, e, table)
}

// TestInPlaceTableCase: in place, the projector writes a table by its
// lower-case token; Azurite does not find a mixed-case table by it in a
// transaction (Azure/Azurite#1355), so the pass is refused there before
// anything is journaled, instead of stalling the projector.
func TestInPlaceTableCase(t *testing.T) {
	onBackends(t, func(t *testing.T, st store.Store, e *replaytest.Env, a *adopt.Adopter, table, _ string) {
		ctx := e.Ctx
		mixed := "Mixed" + table
		write(t, ctx, st, mixed, map[[2]string]edm.Entity{{"p", "r"}: {"a": edm.Int32(1)}})
		_, err := a.Plan(ctx, adopt.Config{Table: mixed, InPlace: true})
		_, azurite := st.(*azure.Store)
		if azurite != errors.Is(err, adopt.ErrTableCase) || (!azurite && err != nil) {
			t.Fatalf("in place on %s (azurite %t): %v", mixed, azurite, err)
		}
	})
}

// readEither reads every row of src over and over until ctx ends, as the
// service wrote it or else as its tip, and fails if one is in neither form.
// The service form is read first: the tip is written before it is
// deleted, so a row without it has its tip.
func readEither(ctx context.Context, st store.Store, table string, src map[[2]string]edm.Entity, except [2]string) error {
	for ctx.Err() == nil {
		for k := range src {
			if k == except {
				continue
			}
			_, err := st.Get(ctx, table, k[0], k[1])
			if errors.Is(err, store.ErrNotFound) {
				_, err = st.Get(ctx, table, k[0], rows.TipKey(k[1]))
				if errors.Is(err, store.ErrNotFound) {
					return fmt.Errorf("%q/%q readable in neither form", k[0], k[1])
				}
			}
			if err != nil && ctx.Err() == nil {
				return err
			}
		}
	}
	return nil
}

// applyReading applies p while read reads the table until p is applied,
// and fails the test if either fails.
func applyReading(t *testing.T, ctx context.Context, p *adopt.Plan, read func(context.Context) error) {
	t.Helper()
	rctx, stop := context.WithCancel(ctx)
	reads := make(chan error, 1)
	go func() { reads <- read(rctx) }()
	err := p.Apply(ctx)
	stop()
	if rerr := <-reads; rerr != nil {
		t.Error(rerr)
	}
	if err != nil {
		t.Fatal(err)
	}
}
