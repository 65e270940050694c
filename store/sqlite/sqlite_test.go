package sqlite

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/store"
	"github.com/tablejournal/tablejournal/store/storetest"
)

func open(t testing.TB, path string) *Store {
	t.Helper()
	s, err := Open(context.Background(), path)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
	})
	return s
}

func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		return open(t, filepath.Join(t.TempDir(), "store.db"))
	}, storetest.Quirks{})
}

// TestConformanceShuffled runs the suite with every page's rows shuffled,
// as Cosmos DB for Table answers them.
func TestConformanceShuffled(t *testing.T) {
	storetest.RunShuffled(t, func(t *testing.T) store.Store {
		return open(t, filepath.Join(t.TempDir(), "store.db"))
	}, storetest.Quirks{})
}

func BenchmarkStore(b *testing.B) {
	storetest.Bench(b, func(b *testing.B) store.Store {
		return open(b, filepath.Join(b.TempDir(), "store.db"))
	})
}

// The invariant of the concurrent tests: a writer moves a fixed total
// between the rows of one partition, one transaction at a time; any snapshot
// a reader takes sums to the total.
const (
	sharedTable = "shared"
	sharedRows  = 50
	sharedTotal = 5000
)

func seedShared(t *testing.T, s *Store) {
	t.Helper()
	ctx := context.Background()
	if err := s.CreateTable(ctx, sharedTable); err != nil {
		t.Fatal(err)
	}
	var ops []store.Op
	for i := range sharedRows {
		ops = append(ops, store.Op{Kind: store.Insert, RK: fmt.Sprintf("r%02d", i), Props: edm.Entity{"n": edm.Int64(sharedTotal / sharedRows)}})
	}
	if _, err := s.Transact(ctx, sharedTable, "p", ops); err != nil {
		t.Fatal(err)
	}
}

// moveTotals rewrites the shared rows with random shares of the total until
// stop is closed or the deadline passes.
func moveTotals(s *Store, stop <-chan struct{}, deadline time.Time) (writes int, err error) {
	r := rand.New(rand.NewPCG(1, 1))
	for time.Now().Before(deadline) {
		select {
		case <-stop:
			return writes, nil
		default:
		}
		ops := make([]store.Op, sharedRows)
		left := int64(sharedTotal)
		for i := range ops {
			n := left
			if i < sharedRows-1 {
				n = r.Int64N(min(left, 2*sharedTotal/sharedRows) + 1)
			}
			left -= n
			ops[i] = store.Op{Kind: store.Replace, RK: fmt.Sprintf("r%02d", i), Props: edm.Entity{"n": edm.Int64(n)}}
		}
		if _, err := s.Transact(context.Background(), sharedTable, "p", ops); err != nil {
			return writes, err
		}
		writes++
	}
	return writes, nil
}

func checkTotals(s *Store) error {
	page, err := s.Query(context.Background(), sharedTable, store.Query{PK: "p"})
	if err != nil {
		return err
	}
	sum := int64(0)
	for _, e := range page.Entities {
		sum += e.Props["n"].Int
	}
	if len(page.Entities) != sharedRows || sum != sharedTotal {
		return fmt.Errorf("reader saw %d rows summing to %d, want %d summing to %d", len(page.Entities), sum, sharedRows, sharedTotal)
	}
	return nil
}

// A second Open of the same file, as the replay CLI does beside the
// projector, reads consistent committed state while the first writes, and
// writes of both are serialised.
func TestSecondOpenReadsWhileFirstWrites(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "shared.db")
	writer := open(t, path)
	reader := open(t, path)
	seedShared(t, writer)

	stop := make(chan struct{})
	var (
		wg     sync.WaitGroup
		writes int
		werr   error
	)
	wg.Go(func() { writes, werr = moveTotals(writer, stop, time.Now().Add(time.Minute)) })
	reads := 0
	for deadline := time.Now().Add(time.Second); time.Now().Before(deadline); reads++ {
		if err := checkTotals(reader); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
	if werr != nil {
		t.Fatalf("writer: %v", werr)
	}
	if writes == 0 || reads == 0 {
		t.Fatalf("%d writes, %d reads: no overlap", writes, reads)
	}

	// The second store writes too, and the first sees it.
	if _, err := reader.Transact(ctx, sharedTable, "q", []store.Op{{Kind: store.Insert, RK: "from-reader"}}); err != nil {
		t.Fatalf("second store's write: %v", err)
	}
	if _, err := writer.Get(ctx, sharedTable, "q", "from-reader"); err != nil {
		t.Fatalf("first store reading the second's write: %v", err)
	}
	t.Logf("%d writes, %d consistent reads", writes, reads)
}

// envChild names the file the child writer of TestSecondProcess writes to.
const envChild = "TABLEJOURNAL_SQLITE_CHILD"

// TestChildWriter is the writer process of TestSecondProcess.
func TestChildWriter(t *testing.T) {
	path := os.Getenv(envChild)
	if path == "" {
		t.Skip("the writer process of TestSecondProcess")
	}
	writes, err := moveTotals(open(t, path), nil, time.Now().Add(time.Second))
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("child: %d writes\n", writes)
}

// Another process writes the file while this one reads it.
func TestSecondProcess(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a process")
	}
	path := filepath.Join(t.TempDir(), "process.db")
	reader := open(t, path)
	seedShared(t, reader)

	cmd := exec.Command(os.Args[0], "-test.run=^TestChildWriter$", "-test.count=1")
	cmd.Env = append(os.Environ(), envChild+"="+path)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	reads := 0
	for {
		select {
		case err := <-done:
			_, rest, found := strings.Cut(out.String(), "child: ")
			if err != nil || !found {
				t.Fatalf("writer process: %v\n%s", err, out.String())
			}
			writes, _, _ := strings.Cut(rest, "\n")
			t.Logf("writer process: %s; this one: %d consistent reads", writes, reads)
			return
		default:
		}
		if err := checkTotals(reader); err != nil {
			_ = cmd.Process.Kill()
			t.Fatal(err)
		}
		reads++
	}
}

// Data survives Close and a new Open; the clock keeps etags unique even
// when the wall clock goes back.
func TestReopenAndClockStepBack(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "reopen.db")
	s1, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if err := s1.CreateTable(ctx, "keep"); err != nil {
		t.Fatal(err)
	}
	want := storetest.EdgeEntity()
	if _, err := s1.Transact(ctx, "keep", "p", []store.Op{{Kind: store.Insert, RK: "r", Props: want}}); err != nil {
		t.Fatal(err)
	}
	before, _ := s1.Get(ctx, "keep", "p", "r")
	if err := s1.Close(); err != nil {
		t.Fatal(err)
	}

	s2 := open(t, path)
	s2.now = func() time.Time { return time.Date(2001, 1, 1, 0, 0, 0, 0, time.UTC) } // far in the past
	got, err := s2.Get(ctx, "keep", "p", "r")
	if err != nil {
		t.Fatal(err)
	}
	if !sameProps(want, got.Props) || got.ETag != before.ETag {
		t.Fatal("row changed across reopen")
	}
	if _, err := s2.Transact(ctx, "keep", "p", []store.Op{{Kind: store.Merge, RK: "r", IfMatch: got.ETag}}); err != nil {
		t.Fatal(err)
	}
	after, _ := s2.Get(ctx, "keep", "p", "r")
	if after.ETag == before.ETag || !after.Timestamp.After(before.Timestamp) {
		t.Fatalf("clock went back: %s at %v after %s at %v", after.ETag, after.Timestamp, before.ETag, before.Timestamp)
	}
}

func sameProps(a, b edm.Entity) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		w := b[k]
		if !v.Equal(w) && !(math.IsNaN(v.Float) && math.IsNaN(w.Float)) {
			return false
		}
	}
	return true
}

func TestPropsCodecExact(t *testing.T) {
	want := storetest.EdgeEntity()
	want["nanPayload"] = edm.Double(math.Float64frombits(0x7ff8dead_beef0001))
	want["dtNano"] = edm.Value{Type: edm.TypeDateTime, Time: time.Date(1, 1, 1, 0, 0, 0, 1, time.UTC)}
	got, err := decodeProps(encodeProps(want))
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range want {
		if !v.Equal(got[k]) { // bit-exact, NaN payloads included
			t.Errorf("%s: got %#v, want %#v", k, got[k], v)
		}
	}
	if len(got) != len(want) {
		t.Errorf("got %d properties, want %d", len(got), len(want))
	}
	// Files written before the codec moved into events still read: the
	// golden entity, as this store kept it then, decodes and re-encodes to
	// the same bytes.
	golden, err := os.ReadFile(filepath.Join("..", "..", "events", "edm", "testdata", "entity.bin"))
	if err != nil {
		t.Fatal(err)
	}
	stored := append([]byte{propsFormat}, golden...)
	old, err := decodeProps(stored)
	if err != nil {
		t.Fatalf("golden row: %v", err)
	}
	if again := encodeProps(old); !bytes.Equal(again, stored) {
		t.Fatalf("golden row re-encodes differently:\n got  %x\n want %x", again, stored)
	}
	for _, bad := range [][]byte{nil, {}, {2}, {1, 1}, {1, 1, 1, 'a', 99}, {1, 1, 1, 'a', byte(edm.TypeDouble - 1), 0},
		{1, 1, 1, 'a', byte(edm.TypeBoolean - 1), 2}, append(append([]byte(nil), stored...), 0)} {
		if _, err := decodeProps(bad); err == nil {
			t.Errorf("decodeProps(%v) succeeded", bad)
		}
	}
}

func TestKeyEncodingOrder(t *testing.T) {
	keys := append([]string(nil), storetest.OrderKeys...)
	for i, a := range keys {
		if decodeKey(encodeKey(a)) != a {
			t.Fatalf("key %+q does not round-trip", a)
		}
		for _, b := range keys[i+1:] {
			if got, want := strings.Compare(string(encodeKey(a)), string(encodeKey(b))), store.CompareKeys(a, b); got != want {
				t.Fatalf("encoded %+q vs %+q: %d, want %d", a, b, got, want)
			}
		}
	}
}

func TestContinuationToken(t *testing.T) {
	for _, k := range [][2]string{{"", ""}, {"p", "r"}, {"日本", "a:b\U0001F600"}} {
		pk, rk, err := decodeToken(encodeToken(k[0], k[1]))
		if err != nil || pk != k[0] || rk != k[1] {
			t.Fatalf("token of %q: %q %q %v", k, pk, rk, err)
		}
	}
	for _, bad := range []string{"!", "AA", encodeToken("p", "r")[:2]} {
		if _, _, err := decodeToken(bad); !errors.Is(err, store.ErrInvalid) {
			t.Errorf("decodeToken(%q): %v", bad, err)
		}
	}
}

// The scans use the primary key index, never a sort or a full scan.
func TestScanPlans(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "plan.db"))
	for _, sh := range []scanShape{
		{partition: true, limit: true},
		{partition: true, from: true, to: true, after: true, limit: true},
		{after: true, limit: true},
		{from: true, to: true},
	} {
		rows, err := s.rdb.Query("EXPLAIN QUERY PLAN "+sh.sql(), make([]any, strings.Count(sh.sql(), "?"))...)
		if err != nil {
			t.Fatal(err)
		}
		var plan []string
		for rows.Next() {
			var id, parent, notused int
			var detail string
			if err := rows.Scan(&id, &parent, &notused, &detail); err != nil {
				t.Fatal(err)
			}
			plan = append(plan, detail)
		}
		rows.Close()
		joined := strings.Join(plan, "; ")
		if strings.Contains(joined, "TEMP B-TREE") || !strings.Contains(joined, "USING PRIMARY KEY (tid=?") {
			t.Errorf("%s:\n  plan %s", sh.sql(), joined)
		}
		if sh.after && !strings.Contains(joined, "(pk,rk)>(?,?)") && !strings.Contains(joined, "rk>?") {
			t.Logf("%s:\n  plan %s (continuation is not an index bound)", sh.sql(), joined)
		}
	}
}

// Commits are durable (synchronous=FULL) in WAL mode; readers cannot write.
func TestPragmas(t *testing.T) {
	s := open(t, filepath.Join(t.TempDir(), "pragmas.db"))
	ctx := context.Background()
	for _, c := range []struct {
		db         *sql.DB
		pragma     string
		want       string
		connection string
	}{
		{s.wdb, "journal_mode", "wal", "writer"},
		{s.wdb, "synchronous", "2", "writer"}, // FULL
		{s.wdb, "busy_timeout", fmt.Sprint(busyTimeout.Milliseconds()), "writer"},
		{s.rdb, "query_only", "1", "reader"},
		{s.rdb, "journal_mode", "wal", "reader"},
	} {
		var got string
		if err := c.db.QueryRowContext(ctx, "PRAGMA "+c.pragma).Scan(&got); err != nil {
			t.Fatal(err)
		}
		if got != c.want {
			t.Errorf("%s: PRAGMA %s = %s, want %s", c.connection, c.pragma, got, c.want)
		}
	}
}

// A writer that waits longer than the busy timeout for another process's
// write lock gets ErrBusy, and nothing is written.
func TestBusy(t *testing.T) {
	defer func(d time.Duration) { busyTimeout = d }(busyTimeout)
	busyTimeout = 100 * time.Millisecond
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "busy.db")
	s := open(t, path)
	if err := s.CreateTable(ctx, "busy"); err != nil {
		t.Fatal(err)
	}
	other := open(t, path) // another process
	conn, err := other.wdb.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		t.Fatal(err)
	}
	_, err = s.Transact(ctx, "busy", "p", []store.Op{{Kind: store.Insert, RK: "r"}})
	if !errors.Is(err, store.ErrBusy) {
		t.Fatalf("Transact while another writer holds the lock: %v, want ErrBusy", err)
	}
	if _, err := conn.ExecContext(ctx, "ROLLBACK"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Transact(ctx, "busy", "p", []store.Op{{Kind: store.Insert, RK: "r"}}); err != nil {
		t.Fatalf("Transact after the lock is released: %v", err)
	}
}

// TestConformancePaged runs the suite through a wrapper that pages like
// Azure: small scan budgets and empty pages with continuations.
func TestConformancePaged(t *testing.T) {
	storetest.RunPaged(t, func(t *testing.T) store.Store {
		return open(t, filepath.Join(t.TempDir(), "store.db"))
	}, storetest.Quirks{})
}
