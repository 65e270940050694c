package console_test

import (
	"context"
	"io"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/tablejournal/tablejournal/console"
	"github.com/tablejournal/tablejournal/replay/retention"
	"github.com/tablejournal/tablejournal/store"
)

// confirm previews a repair and confirms it with the preview's form,
// returning the applied page.
func confirm(t *testing.T, f *fixture, params url.Values) (int, string) {
	t.Helper()
	code, page := get(t, f, "/repair?"+params.Encode())
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
	return postForm(t, f, "/repair", form)
}

// postForm posts form to path, as the console's forms do.
func postForm(t *testing.T, f *fixture, path string, form url.Values) (int, string) {
	t.Helper()
	resp, err := f.srv.Client().PostForm(f.srv.URL+path, form)
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
	st, err := retention.NewPruner(f.rp).Prune(ctx, retention.PruneConfig{Table: f.table, Partition: store.InPartition("deep"),
		Before: seqs[249], MaxRows: 100, Apply: true, Pace: time.Millisecond}, func(retention.PrunePartition) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	if st.Rows != 249 {
		t.Fatalf("the prune removed %d rows, want 249", st.Rows)
	}
	_, body := get(t, f, "/retention?table="+f.table)
	if !regexp.MustCompile(`>deep</a></td><td>\d+</td><td><a [^>]+>[^<]+</a></td><td>249</td>`).MatchString(body) {
		t.Errorf("the retention page does not count the 249 rows of every prune of deep:\n%s", body)
	}
	_, body = get(t, f, "/row?"+url.Values{"table": {f.table}, "pk": {"deep"}, "rk": {"r"}}.Encode())
	if !strings.Contains(body, "(249 rows)") {
		t.Errorf("the row page does not count the 249 rows pruned")
	}
}

func itoa(n uint64) string { return strconv.FormatUint(n, 10) }
