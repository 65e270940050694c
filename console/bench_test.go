package console_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"golang.org/x/sync/errgroup"

	tj "github.com/tablejournal/tablejournal"
	"github.com/tablejournal/tablejournal/console"
	"github.com/tablejournal/tablejournal/journal/journaltest"
	"github.com/tablejournal/tablejournal/replay"
	"github.com/tablejournal/tablejournal/tablejournaltest"
)

// EnvBenchRows sizes BenchmarkConsole: the rows of its table, each
// inserted by a command of its own, so the journal holds as many commands
// (the target is 1,000,000; the default keeps make bench short).
const EnvBenchRows = "TABLEJOURNAL_BENCH_CONSOLE_ROWS"

// rowsPerPartition is the partition size of the benchmark's table.
const rowsPerPartition = 100

// BenchmarkConsole renders pages of 100 commands or rows against a table
// of N rows and a journal of N commands (EnvBenchRows, default 20,000),
// through HTTP, on the embedded store, and reports each page's p50 and
// p99 latency and ratio-vs-300ms, 300 ms over the p99 (the target is at
// least 1).
func BenchmarkConsole(b *testing.B) {
	n := 20000
	if s := os.Getenv(EnvBenchRows); s != "" {
		var err error
		if n, err = strconv.Atoi(s); err != nil || n < 2*rowsPerPartition {
			b.Fatalf("%s=%q: want a number of rows, at least %d", EnvBenchRows, s, 2*rowsPerPartition)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Hour)
	defer cancel()
	p := tablejournaltest.New(b, "")
	c, err := tj.Connect(ctx, p.URL())
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	const table = "bench"
	pk := func(i int) string { return fmt.Sprintf("p%06d", i/rowsPerPartition) }
	rk := func(i int) string { return fmt.Sprintf("r%03d", i%rowsPerPartition) }
	start := time.Now()
	var (
		mu   sync.Mutex
		last uint64
	)
	g, gctx := errgroup.WithContext(ctx)
	const workers = 32
	for w := range workers {
		g.Go(func() error {
			for i := w; i < n; i += workers {
				pos, err := c.Publish(gctx, tj.NewCommand(table, pk(i)).WithID(fmt.Sprint("b", i)).
					Insert(rk(i), tj.Entity{"status": tj.String("new"), "n": tj.Int64(int64(i))}))
				if err != nil {
					return err
				}
				mu.Lock()
				last = max(last, pos.Seq)
				mu.Unlock()
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		b.Fatal(err)
	}
	// One row with a history of 20 versions.
	for v := range 20 {
		pos, err := c.Publish(ctx, tj.NewCommand(table, pk(0)).Merge(rk(0), tj.Entity{"n": tj.Int64(int64(v))}))
		if err != nil {
			b.Fatal(err)
		}
		last = max(last, pos.Seq)
	}
	if err := c.WaitApplied(ctx, last); err != nil {
		b.Fatal(err)
	}
	b.Logf("seeded %d rows and commands in %s", n, time.Since(start).Round(time.Second))

	srv := benchServer(ctx, b, p)
	mid := n / 2
	pages := []struct{ name, path string }{
		{"journal", fmt.Sprintf("/journal?from=%d", mid)},
		{"journal-filtered", fmt.Sprintf("/journal?from=%d&table=%s&pk=%s", mid, table, pk(mid))},
		{"command", "/command?id=b" + strconv.Itoa(mid)},
		{"row-history", "/row?" + url.Values{"table": {table}, "pk": {pk(0)}, "rk": {rk(0)}}.Encode()},
		{"asof-partition", "/asof?" + url.Values{"table": {table}, "pk": {pk(mid)}, "at": {strconv.Itoa(mid)}}.Encode()},
		{"asof-table", "/asof?" + url.Values{"table": {table}, "scope": {"table"}, "after": {pk(mid) + "\x00"}}.Encode()},
	}
	for _, pg := range pages {
		b.Run(pg.name, func(b *testing.B) {
			lat := make([]time.Duration, 0, b.N)
			for b.Loop() {
				t0 := time.Now()
				resp, err := srv.Client().Get(srv.URL + pg.path)
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusOK {
					b.Fatalf("GET %s: %s", pg.path, resp.Status)
				}
				lat = append(lat, time.Since(t0))
			}
			slices.Sort(lat)
			p50, p99 := lat[len(lat)/2], lat[min(len(lat)-1, len(lat)*99/100)]
			b.ReportMetric(float64(p50.Microseconds())/1000, "p50-ms")
			b.ReportMetric(float64(p99.Microseconds())/1000, "p99-ms")
			b.ReportMetric(300/(float64(p99.Microseconds())/1000), "ratio-vs-300ms")
		})
	}
}

// BenchmarkRowHistory renders the row page of a row of 5,000 versions
// (issue 36.10: it was 5.3 MB of HTML and 5,000 journal reads) and
// reports the bytes of a page.
func BenchmarkRowHistory(b *testing.B) {
	const n = 5000
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	p := tablejournaltest.New(b, "")
	c, err := tj.Connect(ctx, p.URL())
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	var last uint64
	for i := range n {
		cmd := tj.NewCommand("deep", "p").WithID(fmt.Sprint("v", i))
		if i == 0 {
			cmd.Insert("r", tj.Entity{"status": tj.String("new"), "n": tj.Int64(0)})
		} else {
			cmd.Merge("r", tj.Entity{"n": tj.Int64(int64(i))})
		}
		pos, err := c.Publish(ctx, cmd)
		if err != nil {
			b.Fatal(err)
		}
		last = pos.Seq
	}
	if err := c.WaitApplied(ctx, last); err != nil {
		b.Fatal(err)
	}
	srv := benchServer(ctx, b, p)
	path := "/row?" + url.Values{"table": {"deep"}, "pk": {"p"}, "rk": {"r"}}.Encode()
	var size int64
	for b.Loop() {
		resp, err := srv.Client().Get(srv.URL + path)
		if err != nil {
			b.Fatal(err)
		}
		size, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			b.Fatalf("GET %s: %s", path, resp.Status)
		}
	}
	b.ReportMetric(float64(size), "page-bytes")
}

// benchServer serves a console over the pipeline p.
func benchServer(ctx context.Context, b *testing.B, p *tablejournaltest.Pipeline) *httptest.Server {
	_, js := journaltest.Connect(b, p.URL())
	rp, err := replay.New(ctx, replay.Config{Store: p.Store(), JetStream: js})
	if err != nil {
		b.Fatal(err)
	}
	h, err := console.New(console.Config{Replay: rp})
	if err != nil {
		b.Fatal(err)
	}
	srv := httptest.NewServer(h)
	b.Cleanup(srv.Close)
	return srv
}
