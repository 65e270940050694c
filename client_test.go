package tablejournal_test

import (
	"context"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"

	tj "github.com/tablejournal/tablejournal"
	"github.com/tablejournal/tablejournal/internal/azurite"
	"github.com/tablejournal/tablejournal/tablejournaltest"
)

func connect(t *testing.T) *tj.Client {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := tj.Connect(ctx, natsURL, tj.WithStore(tableStore), tj.WithIssuer("client-test"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	return ctx
}

// TestDeps: the client links neither the NATS server, nor the projector,
// nor replay, nor any table store (a service on Azure does not carry the
// embedded one), so a service that imports it stays small.
func TestDeps(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list: %v\n%s", err, out)
	}
	deps := strings.Fields(string(out))
	if !slices.Contains(deps, "github.com/tablejournal/tablejournal/journal") {
		t.Fatalf("go list -deps does not list journal: %v", deps)
	}
	for _, d := range deps {
		for _, banned := range []string{"nats-server", "tablejournal/projection", "tablejournal/replay", "tablejournal/tablejournaltest",
			"tablejournal/store/sqlite", "tablejournal/store/azure", "modernc.org/sqlite"} {
			if strings.Contains(d, banned) {
				t.Errorf("the client links %s", d)
			}
		}
	}
}

// TestExamples: every exported name of the package has a doc comment and
// an Example function.
func TestExamples(t *testing.T) {
	fset := token.NewFileSet()
	paths, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]*ast.File{}
	for _, path := range paths {
		if files[path], err = parser.ParseFile(fset, path, nil, parser.ParseComments); err != nil {
			t.Fatal(err)
		}
	}
	pkgs := []struct{ Files map[string]*ast.File }{{files}}
	examples := map[string]bool{}
	var names []string
	documented := map[string]bool{}
	for _, pkg := range pkgs {
		for file, f := range pkg.Files {
			for _, d := range f.Decls {
				switch d := d.(type) {
				case *ast.FuncDecl:
					if strings.HasSuffix(file, "_test.go") {
						if n, ok := strings.CutPrefix(d.Name.Name, "Example"); ok && n != "" {
							examples[n] = true // "Connect", "Client_Get"
						}
						continue
					}
					if !d.Name.IsExported() {
						continue
					}
					name := d.Name.Name
					if d.Recv != nil {
						typ := d.Recv.List[0].Type
						if s, ok := typ.(*ast.StarExpr); ok {
							typ = s.X
						}
						recv := typ.(*ast.Ident).Name
						if !ast.IsExported(recv) {
							continue
						}
						name = recv + "." + name
					}
					names = append(names, name)
					documented[name] = d.Doc != nil
				case *ast.GenDecl:
					if strings.HasSuffix(file, "_test.go") {
						continue
					}
					for _, s := range d.Specs {
						switch s := s.(type) {
						case *ast.TypeSpec:
							if s.Name.IsExported() {
								names = append(names, s.Name.Name)
								documented[s.Name.Name] = d.Doc != nil || s.Doc != nil
							}
						case *ast.ValueSpec:
							for _, n := range s.Names {
								if n.IsExported() {
									names = append(names, n.Name)
									documented[n.Name] = d.Doc != nil || s.Doc != nil || s.Comment != nil
								}
							}
						}
					}
				}
			}
		}
	}
	if len(names) < 20 {
		t.Fatalf("found only %d exported names: %v", len(names), names)
	}
	for _, n := range names {
		if !documented[n] {
			t.Errorf("%s has no doc comment", n)
		}
		owner := exampleOwner(n)
		if !examples[strings.ReplaceAll(n, ".", "_")] && (owner == "" || !examples[owner]) {
			t.Errorf("%s has no Example", n)
		}
	}
}

// exampleOwner is the example that covers a constant or variable: the
// values of one group are shown by one example (ErrExists by
// ExampleRejection, Applied by ExampleOutcome, Eq by ExampleCond).
func exampleOwner(n string) string {
	switch n {
	case "ErrRejected", "ErrVersionMismatch", "ErrExists", "ErrNotFound", "ErrInvalid", "ErrTooLarge":
		return "Rejection"
	case "Applied", "Rejected", "Duplicate":
		return "Status"
	case "Eq", "Ne", "Lt", "Le", "Gt", "Ge":
		return "CompareOp"
	case "Created", "Updated", "Deleted", "Erased":
		return "ChangeOp"
	case "ErrNoTables":
		return "WithStore"
	case "ErrNoJournal":
		return "WithStream"
	case "ErrBodyDiffers":
		return "Client_Publish"
	}
	return ""
}

// TestRejections: each rejection is a *Rejection with its code, matched
// by errors.Is against its sentinel and ErrRejected only.
func TestRejections(t *testing.T) {
	c := connect(t)
	ctx := testContext(t)
	pk := fmt.Sprintf("rej-%d", time.Now().UnixNano())
	if _, err := c.Apply(ctx, tj.NewCommand("rejections", pk).Insert("a", tj.Entity{"n": tj.Int64(1)})); err != nil {
		t.Fatal(err)
	}
	sentinels := []error{tj.ErrVersionMismatch, tj.ErrExists, tj.ErrNotFound, tj.ErrInvalid, tj.ErrTooLarge}
	tests := []struct {
		name string
		cmd  *tj.Command
		want error
		code string
	}{
		{"exists", tj.NewCommand("rejections", pk).Insert("a", tj.Entity{}), tj.ErrExists, "exists"},
		{"not found", tj.NewCommand("rejections", pk).Replace("missing", tj.Entity{}), tj.ErrNotFound, "not-found"},
		{"version", tj.NewCommand("rejections", pk).Merge("a", tj.Entity{"n": tj.Int64(2)}).IfVersion(7), tj.ErrVersionMismatch, "version-mismatch"},
		{"both ops or none", tj.NewCommand("rejections", pk).Upsert("b", tj.Entity{}).Delete("missing"), tj.ErrNotFound, "not-found"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, err := c.Apply(ctx, tt.cmd)
			var rej *tj.Rejection
			if !errors.As(err, &rej) || rej.Code != tt.code || rej.ID != tt.cmd.ID() || rej.Seq == 0 || o.Status != tj.Rejected {
				t.Fatalf("got %v (%+v), want a rejection with code %s", err, rej, tt.code)
			}
			for _, s := range sentinels {
				if errors.Is(err, s) != (s == tt.want) {
					t.Errorf("errors.Is(%v, %v) = %v", err, s, !(s == tt.want))
				}
			}
			if !errors.Is(err, tj.ErrRejected) {
				t.Errorf("not ErrRejected: %v", err)
			}
		})
	}
	if _, err := c.Get(ctx, "rejections", pk, "b"); !errors.Is(err, tj.ErrNotFound) {
		t.Fatalf("row b of a rejected command: %v, want ErrNotFound", err)
	}
	// Invalid commands are refused before they are published.
	_, err := c.Publish(ctx, tj.NewCommand("rejections", "bad#pk").Upsert("a", tj.Entity{}))
	if !errors.Is(err, tj.ErrInvalid) || !strings.Contains(err.Error(), "key-forbidden-char") {
		t.Fatalf("publish of a bad key: %v", err)
	}
}

// TestReadYourWrites: a read with AfterSeq sees the command at that
// sequence, applied or rejected, and every earlier command of its
// partition, whether the reading client published it (and knows its ID)
// or another did (and it reads the journal for it).
func TestReadYourWrites(t *testing.T) {
	c, other := connect(t), connect(t)
	ctx := testContext(t)
	pk := fmt.Sprintf("ryw-%d", time.Now().UnixNano())
	for i := range 20 {
		pos, err := c.Publish(ctx, tj.NewCommand("ryw", pk).Upsert("row", tj.Entity{"i": tj.Int64(int64(i))}))
		if err != nil {
			t.Fatal(err)
		}
		reader := c
		if i%2 == 1 {
			reader = other
		}
		r, err := reader.Get(ctx, "ryw", pk, "row", tj.AfterSeq(pos.Seq))
		if err != nil {
			t.Fatal(err)
		}
		if r.Entity["i"].Int != int64(i) || r.Version != int64(i) || r.Seq != pos.Seq || r.Command != pos.ID {
			t.Fatalf("after seq %d read %+v", pos.Seq, r)
		}
	}
	// A rejected last command: the applied one before it is visible.
	applied, err := c.Publish(ctx, tj.NewCommand("ryw", pk).Upsert("other", tj.Entity{}))
	if err != nil {
		t.Fatal(err)
	}
	rejected, err := c.Publish(ctx, tj.NewCommand("ryw", pk).Insert("row", tj.Entity{}))
	if err != nil {
		t.Fatal(err)
	}
	rows, err := c.Partition(ctx, "ryw", pk, tj.AfterSeq(rejected.Seq))
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 2 || rows[0].RK != "other" || rows[0].Seq != applied.Seq {
		t.Fatalf("partition after a rejected command: %+v", rows)
	}
	if rows, err := other.Partition(ctx, "ryw", pk, tj.AfterSeq(rejected.Seq)); err != nil || len(rows) != 2 {
		t.Fatalf("partition after a rejected command, read by another client: %+v, %v", rows, err)
	}
	// A sequence past the journal's head is no Position of this journal:
	// refused at once (issue 28, item 13), not waited for.
	start := time.Now()
	if _, err := c.Get(ctx, "ryw", pk, "row", tj.AfterSeq(rejected.Seq+1_000_000)); !errors.Is(err, tj.ErrInvalid) {
		t.Fatalf("a read after a sequence past the journal's head: %v, want ErrInvalid", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("the refusal of a sequence past the head took %s", took)
	}
}

// TestWaitZeroPosition: Wait refuses a Position without ID or Seq at
// once (issue 28, item 13) instead of waiting until the deadline.
func TestWaitZeroPosition(t *testing.T) {
	c := connect(t)
	ctx := testContext(t)
	for _, pos := range []tj.Position{{}, {ID: "x"}, {Seq: 1}} {
		start := time.Now()
		if _, err := c.Wait(ctx, pos); !errors.Is(err, tj.ErrInvalid) {
			t.Fatalf("Wait(%+v) = %v, want ErrInvalid", pos, err)
		}
		if took := time.Since(start); took > 5*time.Second {
			t.Fatalf("Wait(%+v) took %s to refuse", pos, took)
		}
	}
}

// TestQuery: a filtered query over current rows skips deleted rows and
// system columns.
func TestQuery(t *testing.T) {
	t.Run("embedded", func(t *testing.T) { testQuery(t, connect(t)) })
	t.Run("azurite", func(t *testing.T) { testQuery(t, connectAzurite(t)) })
}

// connectAzurite starts Azurite and a pipeline on it, and connects a
// Client to them.
func connectAzurite(t *testing.T) *tj.Client {
	ctx := testContext(t)
	// Azurite's start has its own deadline (60 s): on a loaded machine
	// it may take most of it.
	az, err := azurite.Start(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { az.Stop() })
	p := tablejournaltest.New(t, az.ConnectionString())
	c, err := tj.Connect(ctx, p.URL(), tj.WithStore(p.Store()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

func testQuery(t *testing.T, c *tj.Client) {
	ctx := testContext(t)
	table := fmt.Sprintf("query%d", time.Now().UnixNano())
	cmd := tj.NewCommand(table, "p")
	for i := range 5 {
		cmd.Upsert(fmt.Sprintf("r%d", i), tj.Entity{"n": tj.Int64(int64(i)), "s": tj.String("x")})
	}
	pos, err := c.Publish(ctx, cmd)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Wait(ctx, pos); err != nil {
		t.Fatal(err)
	}
	del, err := c.Publish(ctx, tj.NewCommand(table, "p").Delete("r4"))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for r, err := range c.Query(ctx, table, tj.Query{AllPartitions: true, Where: []tj.Cond{{Prop: "n", Op: tj.Ge, Value: tj.Int64(2)}}}, tj.AfterSeq(del.Seq)) {
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := r.Entity["_v"]; ok || len(r.Entity) != 2 {
			t.Fatalf("row %s has %v", r.RK, r.Entity)
		}
		got = append(got, r.RK)
	}
	if !slices.Equal(got, []string{"r2", "r3"}) {
		t.Fatalf("query: %v", got)
	}
	for _, err := range c.Query(ctx, table, tj.Query{PK: "p", Where: []tj.Cond{{Prop: "_seq", Op: tj.Eq, Value: tj.Int64(1)}}}) {
		if !errors.Is(err, tj.ErrInvalid) {
			t.Fatalf("filter on a system column: %v", err)
		}
	}
}

// TestFollowResumes: a checkpoint delivers each change once, in row order,
// across a stop and a restart, and a failing handler gets its change again.
func TestFollowResumes(t *testing.T) {
	c := connect(t)
	ctx := testContext(t)
	table := fmt.Sprintf("follow%d", time.Now().UnixNano())
	var last tj.Position
	for i := range 10 {
		var err error
		last, err = c.Publish(ctx, tj.NewCommand(table, fmt.Sprintf("p%d", i%2)).Upsert("r", tj.Entity{"i": tj.Int64(int64(i))}))
		if err != nil {
			t.Fatal(err)
		}
	}
	if _, err := c.Wait(ctx, last); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var seen []string
	failAt := 4
	follow := func() error {
		fctx, cancel := context.WithCancel(ctx)
		defer cancel()
		return c.Follow(fctx, "test-"+table, table, func(_ context.Context, ch tj.Change) error {
			mu.Lock()
			defer mu.Unlock()
			if len(seen) == failAt {
				failAt = -1
				return errors.New("handler fails once")
			}
			seen = append(seen, fmt.Sprintf("%s/%d/%d", ch.PK, ch.Version, ch.After["i"].Int))
			if len(seen) == 10 {
				cancel()
			}
			return nil
		})
	}
	if err := follow(); err == nil || !strings.Contains(err.Error(), "fails once") {
		t.Fatalf("first follow: %v", err)
	}
	if err := follow(); err != nil {
		t.Fatal(err)
	}
	perRow := map[string][]string{}
	for _, s := range seen {
		pk, rest, _ := strings.Cut(s, "/")
		perRow[pk] = append(perRow[pk], rest)
	}
	want := map[string][]string{
		"p0": {"0/0", "1/2", "2/4", "3/6", "4/8"},
		"p1": {"0/1", "1/3", "2/5", "3/7", "4/9"},
	}
	if len(seen) != 10 || !slices.Equal(perRow["p0"], want["p0"]) || !slices.Equal(perRow["p1"], want["p1"]) {
		t.Fatalf("changes delivered: %v", seen)
	}
	// Nothing is left to deliver: a third run sees only a new change.
	pos, err := c.Publish(ctx, tj.NewCommand(table, "p0").Delete("r"))
	if err != nil {
		t.Fatal(err)
	}
	var got []tj.Change
	fctx, cancel := context.WithCancel(ctx)
	defer cancel()
	err = c.Follow(fctx, "test-"+table, table, func(_ context.Context, ch tj.Change) error {
		got = append(got, ch)
		cancel()
		return nil
	})
	if err != nil || len(got) != 1 || got[0].Op != tj.Deleted || got[0].Seq != pos.Seq || got[0].Before["i"].Int != 8 || got[0].After != nil {
		t.Fatalf("resumed follow: %v %+v", err, got)
	}
}

// TestTraceContext: the span of the publishing context reaches the change
// event's context in the handler.
func TestTraceContext(t *testing.T) {
	c := connect(t)
	ctx := testContext(t)
	table := fmt.Sprintf("trace%d", time.Now().UnixNano())
	tid, _ := trace.TraceIDFromHex("4bf92f3577b34da6a3ce929d0e0e4736")
	sid, _ := trace.SpanIDFromHex("00f067aa0ba902b7")
	sc := trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled, Remote: true})
	pos, err := c.Publish(trace.ContextWithSpanContext(ctx, sc), tj.NewCommand(table, "p").Upsert("r", tj.Entity{}))
	if err != nil {
		t.Fatal(err)
	}
	fctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var got trace.SpanContext
	// A checkpoint of its own: a checkpoint follows one table, and under
	// -count the next run's table is another on the same server.
	err = c.Follow(fctx, "test-"+table, table, func(hctx context.Context, ch tj.Change) error {
		got = trace.SpanContextFromContext(hctx)
		cancel()
		return nil
	}, tj.FollowFrom(pos.Seq))
	if err != nil {
		t.Fatal(err)
	}
	if got.TraceID() != tid || got.SpanID() != sid || !got.IsSampled() {
		t.Fatalf("change event's trace context: %v %v", got.TraceID(), got.SpanID())
	}
}

// TestRejectionWithoutCode: an outcome stored before rejections had codes
// is a rejection of unknown kind: ErrRejected, and no sentinel of a code.
func TestRejectionWithoutCode(t *testing.T) {
	err := error(&tj.Rejection{Reason: "row exists at version 0", ID: "old", Seq: 3})
	if !errors.Is(err, tj.ErrRejected) {
		t.Fatal("not ErrRejected")
	}
	for _, s := range []error{tj.ErrVersionMismatch, tj.ErrExists, tj.ErrNotFound, tj.ErrInvalid, tj.ErrTooLarge} {
		if errors.Is(err, s) {
			t.Errorf("a rejection without code matches %v", s)
		}
	}
	if got := err.Error(); got != "command old (seq 3) rejected: row exists at version 0" {
		t.Errorf("Error() = %q", got)
	}
}

// TestFollowRestartAfterCrash: a follower that dies holding a change (its
// connection gone, no acknowledgement) is restarted; the new run gets that
// change at once (issue 31: within 1 s), not after the checkpoint's ack
// wait, with the ack wait of FollowAckWait applied to the checkpoint.
func TestFollowRestartAfterCrash(t *testing.T) {
	c := connect(t)
	ctx := testContext(t)
	table := fmt.Sprintf("crash%d", time.Now().UnixNano())
	dead, err := tj.Connect(ctx, natsURL)
	if err != nil {
		t.Fatal(err)
	}
	defer dead.Close()
	held := make(chan tj.Change, 1)
	done := make(chan error, 1)
	go func() {
		done <- dead.Follow(ctx, table, table, func(_ context.Context, ch tj.Change) error {
			held <- ch
			dead.Close() // the process dies with the change in hand
			return errors.New("crashed")
		})
	}()
	pos, err := c.Publish(ctx, tj.NewCommand(table, "p").Upsert("r", tj.Entity{}))
	if err != nil {
		t.Fatal(err)
	}
	select {
	case ch := <-held:
		if ch.Seq != pos.Seq {
			t.Fatalf("the first run got seq %d, want %d", ch.Seq, pos.Seq)
		}
	case err := <-done:
		t.Fatalf("the first run ended before a change: %v", err)
	}
	<-done
	fctx, cancel := context.WithCancel(ctx)
	defer cancel()
	got := make(chan tj.Change, 1)
	start := time.Now()
	go func() {
		done <- c.Follow(fctx, table, table, func(_ context.Context, ch tj.Change) error {
			select {
			case got <- ch:
			default:
			}
			return nil
		}, tj.FollowAckWait(20*time.Second))
	}()
	select {
	case ch := <-got:
		if ch.Seq != pos.Seq {
			t.Fatalf("the restarted run got seq %d first, want %d", ch.Seq, pos.Seq)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the restarted follower did not get the held change within 10s")
	}
	if took := time.Since(start); took > 3*time.Second {
		t.Errorf("the restarted follower took %s for the held change", took)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := c.Follow(ctx, table, table, func(context.Context, tj.Change) error { return nil }, tj.FollowAckWait(-time.Second)); !errors.Is(err, tj.ErrInvalid) {
		t.Fatalf("FollowAckWait(-1s): %v, want ErrInvalid", err)
	}
}

// TestReadAfterWriteTakesTheWatch: Publish listens for its command's
// outcome before publishing and keeps the watch (the latest 256) for a read
// after the write, which takes it, so that the projector's reply, sent
// before the read began, is not missed (issue 39: read-your-writes within
// 1.2× Apply); Apply and a duplicate keep none, Close stops them all.
func TestReadAfterWriteTakesTheWatch(t *testing.T) {
	c := connect(t)
	ctx := testContext(t)
	pk := fmt.Sprintf("watch-%d", time.Now().UnixNano())
	var last tj.Position
	for i := range 3 {
		pos, err := c.Publish(ctx, tj.NewCommand("ryw", pk).WithID(fmt.Sprintf("%s-%d", pk, i)).Upsert("row", tj.Entity{"i": tj.Int64(int64(i))}))
		if err != nil {
			t.Fatal(err)
		}
		last = pos
	}
	if n := tj.WatchesKept(c); n != 3 {
		t.Fatalf("after 3 publishes: %d watches kept, want 3", n)
	}
	if _, err := c.Publish(ctx, tj.NewCommand("ryw", pk).WithID(last.ID).Upsert("row", tj.Entity{"i": tj.Int64(2)})); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Apply(ctx, tj.NewCommand("ryw", pk).Upsert("applied", tj.Entity{})); err != nil {
		t.Fatal(err)
	}
	if n := tj.WatchesKept(c); n != 3 {
		t.Fatalf("after a duplicate publish and an Apply: %d watches kept, want still 3", n)
	}
	r, err := c.Get(ctx, "ryw", pk, "row", tj.AfterSeq(last.Seq))
	if err != nil || r.Seq != last.Seq {
		t.Fatalf("read after seq %d: %+v, %v", last.Seq, r, err)
	}
	if n := tj.WatchesKept(c); n != 2 {
		t.Fatalf("after the read: %d watches kept, want 2", n)
	}
	for i := range 300 {
		if _, err := c.Publish(ctx, tj.NewCommand("ryw", pk).Upsert(fmt.Sprintf("r%d", i), tj.Entity{})); err != nil {
			t.Fatal(err)
		}
	}
	if n := tj.WatchesKept(c); n != 256 {
		t.Fatalf("after 300 more publishes: %d watches kept, want the latest 256", n)
	}
	c.Close()
	if n := tj.WatchesKept(c); n != 0 {
		t.Fatalf("after Close: %d watches kept", n)
	}
}
