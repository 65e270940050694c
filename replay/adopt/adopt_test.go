package adopt_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/runtime"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	"github.com/Azure/azure-sdk-for-go/sdk/data/aztables"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/events/rules"
	"github.com/tablejournal/tablejournal/journal"
	"github.com/tablejournal/tablejournal/replay"
	"github.com/tablejournal/tablejournal/replay/adopt"
	"github.com/tablejournal/tablejournal/replay/rebuild"
	"github.com/tablejournal/tablejournal/replay/replaytest"
	"github.com/tablejournal/tablejournal/rows"
	"github.com/tablejournal/tablejournal/store"
	"github.com/tablejournal/tablejournal/store/azure"
	"github.com/tablejournal/tablejournal/store/sqlite"
)

func TestMain(m *testing.M) { os.Exit(replaytest.Main(m)) }

// A pass is a plan of the one shape replay's plans share: a summary, a
// fingerprint (two passes over unchanged tables share it, so a plan gone
// stale is found by planning again) and Apply.
var _ interface {
	Summary() string
	Fingerprint() string
	Apply(context.Context) error
} = (*adopt.Plan)(nil)

// backend is a store adoption is tried on, opened without the layout
// check of projectiontest: a source table is not in the layout.
type backend struct {
	name string
	open func(t testing.TB) store.Store
}

func backends() []backend {
	return []backend{
		{"sqlite", func(t testing.TB) store.Store {
			s, err := sqlite.Open(context.Background(), t.TempDir()+"/tables.db")
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { s.Close() })
			return s
		}},
		{"azurite", func(t testing.TB) store.Store { return azuriteStore(t) }},
	}
}

func azuriteStore(t testing.TB) *azure.Store {
	s, err := azure.New(azure.Config{ConnectionString: replaytest.Azurite.ConnectionString()})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// onBackends runs test on each backend, with a pipeline, an Adopter and
// the names of a source and an adopted table.
func onBackends(t *testing.T, test func(t *testing.T, st store.Store, e *replaytest.Env, a *adopt.Adopter, table, into string)) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			st := b.open(t)
			e, a := env(t, st)
			test(t, st, e, a, replaytest.UniqueTable("src"), replaytest.UniqueTable("adopted"))
		})
	}
}

// env is a pipeline with a running projector on st, and an Adopter.
func env(t testing.TB, st store.Store) (*replaytest.Env, *adopt.Adopter) {
	e := replaytest.NewEnv(t, st, replaytest.With(replaytest.Rebuild))
	return e, adopt.New(e.Src)
}

// write inserts rows into the source table, creating it.
func write(t testing.TB, ctx context.Context, st store.Store, table string, rows map[[2]string]edm.Entity) {
	t.Helper()
	if err := st.CreateTable(ctx, table); err != nil && !errors.Is(err, store.ErrTableExists) {
		t.Fatal(err)
	}
	for k, props := range rows {
		if _, err := st.Transact(ctx, table, k[0], []store.Op{{Kind: store.Upsert, RK: k[1], Props: props}}); err != nil {
			t.Fatal(err)
		}
	}
}

// sameAsSource checks that the current rows of into are the rows of
// table, values and types, and nothing else.
func sameAsSource(t *testing.T, ctx context.Context, st store.Store, table, into string) {
	t.Helper()
	src := map[[2]string]edm.Entity{}
	if err := store.All(ctx, st, table, store.Query{AllPartitions: true}, func(e store.Entity) error {
		src[[2]string{e.PK, e.RK}] = e.Props
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	got := 0
	err := rows.Reader{Store: st}.Current(ctx, into, store.AllPartitions, func(r rows.Row) error {
		got++
		want, ok := src[[2]string{r.PK, r.RK}]
		if !ok {
			t.Errorf("adopted %q/%q is not in the source", r.PK, r.RK)
			return nil
		}
		if !r.Props.Equal(want) {
			t.Errorf("adopted %q/%q = %v, source %v", r.PK, r.RK, r.Props, want)
		}
		if !adopt.IsAdoptionID(r.Cmd) {
			t.Errorf("adopted %q/%q written by %s", r.PK, r.RK, r.Cmd)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got != len(src) {
		t.Errorf("adopted table holds %d rows, source %d", got, len(src))
	}
}

func verify(t *testing.T, e *replaytest.Env, into string) {
	t.Helper()
	d, err := e.Rebuild.Verify(e.Ctx, rebuild.VerifyConfig{Table: into})
	if err != nil {
		t.Fatal(err)
	}
	if !d.Identical() {
		t.Errorf("verify %s: %d missing, %d extra, %d changed", into, d.Missing, d.Extra, d.Changed)
	}
}

func TestAdoptAndCatchUp(t *testing.T) {
	onBackends(t, func(t *testing.T, st store.Store, e *replaytest.Env, a *adopt.Adopter, table, into string) {
		ctx := e.Ctx
		src := map[[2]string]edm.Entity{}
		for i := range 60 {
			src[[2]string{fmt.Sprintf("p%d", i%7), fmt.Sprintf("r%02d", i)}] = edm.Entity{
				"n": edm.Int64(1<<53 + int64(i)), "w": edm.Double(float64(i)), "s": edm.String(""),
			}
		}
		src[[2]string{"", ""}] = edm.Entity{} // the empty keys, an empty entity
		write(t, ctx, st, table, src)

		cfg := adopt.Config{Table: table, Into: into}
		p, err := a.Plan(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if p.Rows != 61 || p.Partitions != 8 || p.Upserts != 61 || p.Deletes != 0 || len(p.Problems) != 0 || p.Bytes == 0 {
			t.Fatalf("first pass: %s, %d problems", p.Summary(), len(p.Problems))
		}
		// The dry run wrote nothing.
		if _, err := st.Get(ctx, into, "p0", rows.TipKey("r00")); !errors.Is(err, store.ErrTableNotFound) && !errors.Is(err, store.ErrNotFound) {
			t.Fatalf("the dry run wrote the adopted table: %v", err)
		}
		if err := p.Apply(ctx); err != nil {
			t.Fatal(err)
		}
		if p.Result.Published != 61 {
			t.Errorf("published %d, want 61", p.Result.Published)
		}
		sameAsSource(t, ctx, st, table, into)

		// A first pass again is refused; the same pass resumed finds
		// nothing to do, with the fingerprint of any unchanged pass.
		if _, err := a.Plan(ctx, cfg); !errors.Is(err, replay.ErrNotEmpty) {
			t.Fatalf("first pass over an adopted table: %v, want ErrNotEmpty", err)
		}
		cfg.Resume = true
		again, err := a.Plan(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if len(again.Commands) != 0 || again.Unchanged != 61 {
			t.Fatalf("resumed pass over an unchanged source: %s", again.Summary())
		}

		// The service writes on: one row changed, one added, one
		// deleted, a whole partition deleted.
		change := map[[2]string]edm.Entity{
			{"p1", "r01"}: {"n": edm.Int32(-1)},
			{"p9", "new"}: {"d": edm.DateTime(time.Date(2026, 1, 2, 3, 4, 5, 678912300, time.UTC))},
		}
		write(t, ctx, st, table, change)
		dels := [][2]string{{"p2", "r02"}}
		for k := range src {
			if k[0] == "p3" {
				dels = append(dels, k)
			}
		}
		for _, k := range dels {
			if _, err := st.Transact(ctx, table, k[0], []store.Op{{Kind: store.Delete, RK: k[1]}}); err != nil {
				t.Fatal(err)
			}
		}
		cfg = adopt.Config{Table: table, Into: into, CatchUp: true}
		cu, err := a.Plan(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if cu.Upserts != 2 || cu.Deletes != len(dels) {
			t.Fatalf("catch-up: %s, want 2 upserts and %d deletes", cu.Summary(), len(dels))
		}
		if err := cu.Apply(ctx); err != nil {
			t.Fatal(err)
		}
		sameAsSource(t, ctx, st, table, into)
		verify(t, e, into)

		// The history of an adopted row starts with adoption.
		var first rows.Row
		if err := (rows.Reader{Store: st}).Versions(ctx, into, "p1", "r01", func(r rows.Row) error { first = r; return nil }); err != nil {
			t.Fatal(err)
		}
		if !adopt.IsAdoptionID(first.Cmd) || first.Version != 0 {
			t.Errorf("oldest version of p1/r01: %s v%d, want an adoption command at v0", first.Cmd, first.Version)
		}

		// Once the service writes the adopted table, a pass refuses to
		// overwrite its writes.
		svc := &events.Command{ID: "svc-1", Table: into, PK: "p1", Ops: []events.RowOp{{Op: events.OpUpsert, RK: "r01", Entity: edm.Entity{"n": edm.Int32(2)}}}}
		e.Publish([]*events.Command{svc})
		e.Await([]string{svc.ID})
		cu, err = a.Plan(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		if len(cu.Problems) != 1 || cu.Problems[0].Rule != adopt.RuleWrittenSince || !cu.Blocked() {
			t.Fatalf("catch-up after the service wrote the adopted table: %s, problems %v", cu.Summary(), cu.Problems)
		}
	})
}

func TestProblems(t *testing.T) {
	onBackends(t, func(t *testing.T, st store.Store, e *replaytest.Env, a *adopt.Adopter, table, into string) {
		ctx := e.Ctx
		many := edm.Entity{}
		for i := range store.MaxProperties {
			many[fmt.Sprintf("p%03d", i)] = edm.Int32(int32(i))
		}
		write(t, ctx, st, table, map[[2]string]edm.Entity{
			{"p", "ok"}:      {"a": edm.String("x")},
			{"p", "_sys"}:    {"_x": edm.Int32(1)},
			{"p", "many"}:    many,
			{"p", "fence"}:   {"a": edm.Int32(1)},
			{"p", "tip:old"}: {"a": edm.Int32(1)},
			{"q", "old:x:1"}: {"a": edm.Int32(1)},
			{"q", "big"}:     big(),
		})
		p, err := a.Plan(ctx, adopt.Config{Table: table, Into: into})
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]rules.Rule{}
		for _, pr := range p.Problems {
			got[pr.PK+"/"+pr.RK] = pr.Rule
		}
		want := map[string]rules.Rule{
			"p/_sys": rules.PropertyReserved, "p/many": rules.TooManyProperties, "p/fence": adopt.RuleLayoutKey,
			"p/tip:old": adopt.RuleLayoutKey, "q/old:x:1": adopt.RuleLayoutKey, "q/big": rules.EntityTooLarge,
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("problems %v, want %v", got, want)
		}
		if p.Upserts != 1 || !p.Blocked() {
			t.Fatalf("%s", p.Summary())
		}
		// In place, a partition with a row at a layout key is left out
		// whole: the projector writes its own rows there.
		ip, err := a.Plan(ctx, adopt.Config{Table: table, InPlace: true, SkipInvalid: true})
		if err != nil {
			t.Fatal(err)
		}
		if ip.Upserts != 0 || ip.Moves != 0 || len(ip.Problems) != 7 {
			t.Fatalf("in place: %s, problems %v", ip.Summary(), ip.Problems)
		}
		if err := p.Apply(ctx); !errors.Is(err, adopt.ErrProblems) {
			t.Fatalf("Apply of a blocked plan: %v, want ErrProblems", err)
		}
		if head, _ := e.Journal.Head(ctx); head != 0 {
			t.Fatalf("a refused plan published: journal head %d", head)
		}
		p, err = a.Plan(ctx, adopt.Config{Table: table, Into: into, SkipInvalid: true})
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Apply(ctx); err != nil {
			t.Fatal(err)
		}
		r, err := rows.Reader{Store: st}.Get(ctx, into, "p", "ok")
		if err != nil || !r.Props.Equal(edm.Entity{"a": edm.String("x")}) {
			t.Fatalf("the valid row: %v, %v", r, err)
		}
		if !strings.Contains(p.Summary(), "6 rows skipped") {
			t.Errorf("summary %q does not count the skipped rows", p.Summary())
		}
	})
}

// big is an entity Azure stores (under 1 MiB) but that is too large once
// versioned (events.MaxEntitySize): strings, which weigh twice their
// length in EntitySize and once on the wire (Azurite checks the wire).
func big() edm.Entity {
	e := edm.Entity{}
	for i := 0; edm.EntitySize("q", "big", e) <= events.MaxEntitySize; i++ {
		rest := (events.MaxEntitySize - edm.EntitySize("q", "big", e)) / 2
		e[fmt.Sprintf("s%02d", i)] = edm.String(strings.Repeat("x", min(rest+8, events.MaxBinaryBytes/2-8)))
	}
	return e
}

// TestForeignSDK writes the source table with the Azure SDK (aztables),
// every EDM type, adopts it, and reads both back with the SDK in full
// metadata: every adopted row has the source's values and types.
func TestForeignSDK(t *testing.T) {
	st := azuriteStore(t)
	e, a := env(t, st)
	ctx := e.Ctx
	table, into := replaytest.UniqueTable("src"), replaytest.UniqueTable("adopted")
	svc, err := aztables.NewServiceClientFromConnectionString(replaytest.Azurite.ConnectionString(), nil)
	if err != nil {
		t.Fatal(err)
	}
	tc := svc.NewClient(table)
	if _, err := tc.CreateTable(ctx, nil); err != nil {
		t.Fatal(err)
	}
	dt := time.Date(2026, 11, 21, 10, 0, 0, 123456700, time.UTC)
	for i := range 30 {
		ent := aztables.EDMEntity{
			Entity: aztables.Entity{PartitionKey: fmt.Sprintf("customer-%d", i%4), RowKey: fmt.Sprintf("order-%d", i)},
			Properties: map[string]any{
				"Str": fmt.Sprintf("ordre nº %d – 世界", i), "Empty": "", "Paid": i%2 == 0,
				"Qty": int32(i), "Big": aztables.EDMInt64(1<<53 + int64(i)), "Neg": aztables.EDMInt64(math.MinInt64 + int64(i)),
				"Price": float64(i) + 0.25, "At": aztables.EDMDateTime(dt.Add(time.Duration(i) * 100)),
				"Ref":  aztables.EDMGUID(fmt.Sprintf("0f8fad5b-d9cb-469f-a165-%012d", i)),
				"Blob": aztables.EDMBinary([]byte{byte(i), 0, 0xff}),
			},
		}
		body, err := json.Marshal(ent)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tc.AddEntity(ctx, body, nil); err != nil {
			t.Fatal(err)
		}
	}
	// Whole-number doubles as the SDKs of other languages send them.
	raw := `{"PartitionKey":"customer-0","RowKey":"whole","W":3,"W@odata.type":"Edm.Double","Z":0,"Z@odata.type":"Edm.Double",
		"D":"2026-11-21T10:00:00.1234567Z","D@odata.type":"Edm.DateTime","Inf":"Infinity","Inf@odata.type":"Edm.Double"}`
	if _, err := tc.AddEntity(ctx, []byte(raw), nil); err != nil {
		t.Fatal(err)
	}

	p, err := a.Plan(ctx, adopt.Config{Table: table, Into: into})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Apply(ctx); err != nil {
		t.Fatal(err)
	}
	if p.Upserts != 31 {
		t.Fatalf("%s", p.Summary())
	}
	// Both tables are read as the service answers, in full metadata: the
	// raw response, not the SDK's page, which re-encodes each entity
	// through a map and so writes a whole-number Double 3.0 as 3.
	full := to.Ptr(aztables.MetadataFormatFull)
	pager := tc.NewListEntitiesPager(&aztables.ListEntitiesOptions{Format: full})
	ic := svc.NewClient(into)
	n := 0
	for pager.More() {
		var raw *http.Response
		if _, err := pager.NextPage(policy.WithCaptureResponse(ctx, &raw)); err != nil {
			t.Fatal(err)
		}
		var page struct{ Value []json.RawMessage }
		if err := json.Unmarshal(payload(t, raw), &page); err != nil {
			t.Fatal(err)
		}
		for _, body := range page.Value {
			want := sdkProps(t, body)
			var pk, rk string
			_ = json.Unmarshal([]byte(want["PartitionKey"]), &pk)
			_ = json.Unmarshal([]byte(want["RowKey"]), &rk)
			var rawGot *http.Response
			if _, err := ic.GetEntity(policy.WithCaptureResponse(ctx, &rawGot), pk, rows.TipKey(rk), &aztables.GetEntityOptions{Format: full}); err != nil {
				t.Fatalf("%s/%s: %v", pk, rk, err)
			}
			got := sdkProps(t, payload(t, rawGot))
			delete(want, "PartitionKey")
			delete(want, "RowKey")
			delete(got, "PartitionKey")
			delete(got, "RowKey")
			for name := range got {
				if strings.HasPrefix(name, "_") {
					delete(got, name)
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Errorf("%s/%s:\nadopted %v\nsource  %v", pk, rk, got, want)
			}
			if rk == "whole" && (want["W"] != "3.0 " || want["Z"] != "0.0 ") {
				t.Errorf("the whole-number doubles read back as %s and %s, not as Doubles: the comparison cannot tell them from Int32", want["W"], want["Z"])
			}
			n++
		}
	}
	if n != 31 {
		t.Fatalf("compared %d rows, want 31", n)
	}
	sameAsSource(t, ctx, st, table, into)
	verify(t, e, into)
}

func payload(t *testing.T, r *http.Response) []byte {
	t.Helper()
	b, err := runtime.Payload(r)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// sdkProps returns the properties of an entity as the SDK reads it in full
// metadata: each value's JSON with its @odata.type annotation, the
// service's metadata and Timestamp left out.
func sdkProps(t *testing.T, body []byte) map[string]string {
	t.Helper()
	var m map[string]json.RawMessage
	if err := json.Unmarshal(body, &m); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for name, v := range m {
		if strings.HasPrefix(name, "odata.") || strings.Contains(name, "@odata.") || name == "Timestamp" {
			continue
		}
		typ := ""
		if a, ok := m[name+"@odata.type"]; ok {
			typ = string(a)
		}
		if typ == `"Edm.DateTime"` {
			// Azurite echoes the literal written; the instant is the value.
			var at time.Time
			if err := json.Unmarshal(v, &at); err != nil {
				t.Fatal(err)
			}
			v = json.RawMessage(at.UTC().Format(time.RFC3339Nano))
		}
		out[name] = string(v) + " " + typ
	}
	return out
}

// TestResumeAfterCrash stops a pass in the middle of journaling (its
// context cancelled, as a killed process stops), then resumes it: the
// journal ends with each row's command once, and every adopted row at
// version 0.
func TestResumeAfterCrash(t *testing.T) {
	st := backends()[0].open(t)
	e, a := env(t, st)
	ctx := e.Ctx
	table, into := replaytest.UniqueTable("src"), replaytest.UniqueTable("adopted")
	src := map[[2]string]edm.Entity{}
	for i := range 600 {
		src[[2]string{fmt.Sprintf("p%d", i%12), fmt.Sprintf("r%03d", i)}] = edm.Entity{"i": edm.Int32(int32(i))}
	}
	write(t, ctx, st, table, src)
	p, err := a.Plan(ctx, adopt.Config{Table: table, Into: into})
	if err != nil {
		t.Fatal(err)
	}
	cctx, crash := context.WithCancel(ctx)
	_, err = p.ApplyWith(cctx, adopt.ApplyOptions{Progress: func(done, _ int64) {
		if done == 100 {
			crash()
		}
	}})
	if err == nil {
		t.Fatal("the crashed pass reported success")
	}
	head, err := e.Journal.Head(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if head < 100 || head >= 600 {
		t.Fatalf("the crash left %d commands in the journal, want between 100 and 599", head)
	}
	p, err = a.Plan(ctx, adopt.Config{Table: table, Into: into, Resume: true})
	if err != nil {
		t.Fatal(err)
	}
	// A publish in flight at the crash may be stored after head was read.
	if p.Upserts+p.Unchanged != 600 || p.Unchanged < int(head) {
		t.Fatalf("resumed: %s; the journal held %d", p.Summary(), head)
	}
	if err := p.Apply(ctx); err != nil {
		t.Fatal(err)
	}
	sameAsSource(t, ctx, st, table, into)
	ids := map[string]int{}
	last, _ := e.Journal.Head(ctx)
	if err := e.Journal.Read(ctx, 1, last, "", func(m journal.Msg) error {
		ids[m.Header.Get(jetstream.MsgIDHeader)]++
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if len(ids) != 600 || last != 600 {
		t.Fatalf("the journal holds %d messages of %d IDs, want 600 of 600", last, len(ids))
	}
	if err := (rows.Reader{Store: st}).Current(ctx, into, store.AllPartitions, func(r rows.Row) error {
		if r.Version != 0 {
			t.Errorf("%q/%q at version %d, want 0: applied twice", r.PK, r.RK, r.Version)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}
