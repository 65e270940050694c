package console_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	tj "github.com/tablejournal/tablejournal"
	"github.com/tablejournal/tablejournal/console"
	"github.com/tablejournal/tablejournal/projection/projectiontest"
	"github.com/tablejournal/tablejournal/replay/retention"
	"github.com/tablejournal/tablejournal/rows"
	"github.com/tablejournal/tablejournal/store"
	"github.com/tablejournal/tablejournal/wire"
)

// confirm previews a repair and confirms it with the preview's form,
// returning the applied page.
func confirm(t *testing.T, f *fixture, params url.Values, header ...string) (int, string) {
	t.Helper()
	return postForm(t, f, "/repair", confirmForm(t, f, params, header...), header...)
}

// confirmForm previews a repair and returns the preview's confirmation
// form.
func confirmForm(t *testing.T, f *fixture, params url.Values, header ...string) url.Values {
	t.Helper()
	code, page := get(t, f, "/repair?"+params.Encode(), header...)
	if code != 200 {
		t.Fatalf("preview %v: %d\n%s", params, code, page)
	}
	form := url.Values{}
	for _, m := range regexp.MustCompile(`<input type="hidden" name="([a-z]+)" value="([^"]*)">`).FindAllStringSubmatch(page, -1) {
		form.Set(m[1], m[2])
	}
	if form.Get("plan") == "" {
		t.Fatalf("no confirmation form in the preview of %v:\n%s", params, page)
	}
	return form
}

// postForm posts form to path, as the console's forms do.
func postForm(t *testing.T, f *fixture, path string, form url.Values, header ...string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, f.srv.URL+path, strings.NewReader(form.Encode()))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := f.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestRepairCounts: the applied page of a prune and of a restore names the
// point it resolved, and a partition pruned by several commands counts the
// rows of all of them on the retention and row pages.
func TestRepairCounts(t *testing.T) {
	f := seed(t, "", console.Config{AllowChanges: true})
	for _, c := range []struct {
		kind, at, seq string
	}{{"restore", "cmd:c2", "c2"}, {"prune", "cmd:c3", "c3"}} {
		code, body := confirm(t, f, url.Values{"kind": {c.kind}, "table": {f.table}, "pk": {"customer-42"}, "at": {c.at}})
		want := "(seq " + itoa(f.seq[c.seq]) + ")"
		if code != 200 || !strings.Contains(body, "Applied: "+c.kind) || !strings.Contains(body, want) {
			t.Errorf("applied %s: %d, want a page saying %q\n%s", c.kind, code, want, body)
		}
	}

	// 250 versions pruned up to the newest, 100 rows a command: three
	// prune commands remove 249 rows.
	seqs := deepRow(t, f, 250)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	plan, err := retention.NewPruner(f.rp).PlanPrune(ctx, retention.PruneConfig{Table: f.table, Partition: store.InPartition("deep"),
		Before: seqs[249], MaxRows: 100, Pace: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	res, err := plan.Apply(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Published) != 3 || len(res.Counts) != 1 || res.Counts[0].N != 249 {
		t.Fatalf("the prune published %d commands removing %+v, want 3 removing 249 rows", len(res.Published), res.Counts)
	}
	_, body := get(t, f, "/retention?table="+f.table)
	if !regexp.MustCompile(`>deep</a></td><td>\d+</td><td><a [^>]+>[^<]+</a></td><td>249</td>`).MatchString(body) {
		t.Errorf("the retention page does not count the 249 rows of every prune of deep:\n%s", body)
	}
	_, body = get(t, f, "/row?"+url.Values{"table": {f.table}, "pk": {"deep"}, "rk": {"r"}}.Encode())
	if !strings.Contains(body, "(249 rows)") {
		t.Errorf("the row page does not count the 249 rows pruned")
	}
	// A command whose versions were pruned still has its page: the
	// command, and a note that what it wrote is pruned.
	code, body := get(t, f, "/command?id=deep-10")
	if code != 200 || !strings.Contains(body, `id="pruned"`) || !strings.Contains(body, "deep-10") {
		t.Errorf("the page of a pruned command: %d, want 200 saying its versions are pruned\n%s", code, body)
	}
}

func itoa(n uint64) string { return strconv.FormatUint(n, 10) }

// TestRepairIssuerAndErase: every repair the console publishes names the
// signed-in user as its issuer, and an erase's preview lists the rows it
// takes (50, then how many more) and says it cannot be undone. On a plain
// table (SPEC §4) the same, and the erase leaves no row of the partition
// in the table nor in its history.
func TestRepairIssuerAndErase(t *testing.T) {
	for _, layout := range []wire.Layout{wire.LayoutVersioned, wire.LayoutPlain} {
		t.Run(string(layout), func(t *testing.T) { testRepairIssuerAndErase(t, layout) })
	}
}

func testRepairIssuerAndErase(t *testing.T, layout wire.Layout) {
	f := seedErasableIn(t, layout, console.Config{AllowChanges: true, Auth: &console.Auth{User: "alice", Password: "pw", Token: "tok"}})
	alice := []string{"Authorization", "Basic " + base64.StdEncoding.EncodeToString([]byte("alice:pw"))}
	token := []string{"Authorization", "Bearer tok"}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for c := range 4 { // 100 rows
		cmd := tj.NewCommand(f.table, "bulk").WithID(fmt.Sprint("bulk", c))
		for i := range 25 {
			cmd.Insert(fmt.Sprintf("r%03d", c*25+i), tj.Entity{"n": tj.Int64(int64(i))})
		}
		if _, err := f.client.Apply(ctx, cmd); err != nil {
			t.Fatal(err)
		}
	}

	if code, body := confirm(t, f, url.Values{"kind": {"undo"}, "cmd": {"c3"}}, alice...); code != 200 || !strings.Contains(body, "Applied: undo") {
		t.Fatalf("undo as alice: %d\n%s", code, body)
	}
	if code, body := confirm(t, f, url.Values{"kind": {"prune"}, "table": {f.table}, "pk": {"customer-42"}, "at": {"cmd:c3"}}, token...); code != 200 {
		t.Fatalf("prune with the token: %d\n%s", code, body)
	}

	erase := url.Values{"kind": {"erase"}, "table": {f.table}, "pk": {"bulk"}}
	code, page := get(t, f, "/repair?"+erase.Encode(), alice...)
	if code != 200 {
		t.Fatalf("erase preview: %d\n%s", code, page)
	}
	if n := strings.Count(page, `<li><a href="/row?`); n != 50 {
		t.Errorf("the erase preview lists %d rows, want 50", n)
	}
	for _, w := range []string{">r000<", ">r049<", "and 50 more", "cannot be undone", "console:alice"} {
		if !strings.Contains(page, w) {
			t.Errorf("erase preview: no %q", w)
		}
	}
	if strings.Contains(page, ">r050<") {
		t.Errorf("the erase preview lists more than 50 rows")
	}
	if code, body := confirm(t, f, erase, alice...); code != 200 || !strings.Contains(body, "Applied: erase") {
		t.Fatalf("erase as alice: %d\n%s", code, body)
	}
	if layout == wire.LayoutPlain {
		projectiontest.CheckPlain(t, f.st, f.table)
		hist, err := wire.HistoryTable(f.table)
		if err != nil {
			t.Fatal(err)
		}
		for _, tb := range []string{f.table, hist} {
			for _, e := range allRows(t, f, tb) {
				if e.PK == "bulk" && rows.IsLayoutKey(e.RK) || e.PK == "bulk" && tb == f.table {
					t.Fatalf("after the erase, %s holds %q/%q", tb, e.PK, e.RK)
				}
			}
		}
	}

	for _, c := range []struct{ issuer, want string }{
		{"console:alice", ">undo-c3-"}, {"console:token", ">prune<"}, {"console:alice", ">erase<"},
	} {
		_, body := get(t, f, "/journal?"+url.Values{"issuer": {c.issuer}}.Encode(), alice...)
		if !strings.Contains(body, c.want) {
			t.Errorf("the journal of issuer %s holds no %q", c.issuer, c.want)
		}
	}
}
