package console_test

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/tablejournal/tablejournal/console"
	"github.com/tablejournal/tablejournal/projection/projectiontest"
	"github.com/tablejournal/tablejournal/store"
	"github.com/tablejournal/tablejournal/wire"
)

func get(t *testing.T, f *fixture, path string, header ...string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, f.srv.URL+path, nil)
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := f.srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b)
}

// TestPages reads every page of a seeded pipeline, on both stores and
// both layouts, and checks what a person would read there: a plain
// table's pages read its history table (SPEC §4), which no table list
// shows as a table of its own.
func TestPages(t *testing.T) {
	for _, b := range backends() {
		for _, layout := range []wire.Layout{wire.LayoutVersioned, wire.LayoutPlain} {
			name := b.name
			if layout == wire.LayoutPlain {
				name += "/plain"
			}
			t.Run(name, func(t *testing.T) { testPages(t, b, layout) })
		}
	}
}

func testPages(t *testing.T, b backend, layout wire.Layout) {
	f := seedIn(t, b.tables(), layout, console.Config{})
	tbl := f.table
	hist, err := wire.HistoryTable(tbl)
	if err != nil {
		t.Fatal(err)
	}
	row := func(rk string) string {
		return "/row?" + url.Values{"table": {tbl}, "pk": {"customer-42"}, "rk": {rk}}.Encode()
	}
	asof := func(kv ...string) string {
		v := url.Values{"table": {tbl}}
		for i := 0; i+1 < len(kv); i += 2 {
			v.Set(kv[i], kv[i+1])
		}
		return "/asof?" + v.Encode()
	}
	cases := []struct {
		name, path string
		code       int
		want, not  []string
	}{
		{"journal", "/journal", 200, []string{">c1<", ">c6<", ">d1<", "rejected", `<code class="code">exists</code>`, "shop"}, nil},
		{"root is the journal", "/", 200, []string{">c1<"}, nil},
		{"journal from seq", fmt.Sprintf("/journal?from=%d", f.seq["c4"]), 200, []string{">c4<", ">c6<"}, []string{">c1<"}},
		{"journal by status", "/journal?status=rejected", 200, []string{">c5<"}, []string{">c1<", ">c4<"}},
		{"journal by code", "/journal?code=exists", 200, []string{">c5<"}, []string{">c4<"}},
		{"journal by partition", "/journal?table=" + tbl + "&pk=customer-7", 200, []string{">d1<"}, []string{">c1<"}},
		// Table names are case-insensitive: another spelling is the table.
		{"journal by table in capitals", "/journal?table=" + strings.ToUpper(tbl) + "&status=applied", 200, []string{">c1<", ">d1<"}, []string{">c5<"}},
		{"journal by partition in capitals", "/journal?table=" + strings.ToUpper(tbl) + "&pk=customer-7&status=applied", 200, []string{">d1<"}, []string{">c1<"}},
		{"journal by command", "/journal?cmd=c3", 200, []string{">c3<"}, []string{">c2<"}},
		{"journal by issuer", "/journal?issuer=nobody", 200, []string{"no command matches"}, []string{">c1<"}},
		{"journal bad status", "/journal?status=bogus", 400, []string{"want applied, rejected or duplicate"}, nil},
		{"asof huge point", asof("pk", "customer-42", "at", "99999999999999999999"), 400, []string{"a journal sequence is at most"}, []string{"strconv", "out of range"}},
		{"row of no table", "/row?table=nosuch&pk=p&rk=r", 404, nil, nil},
		{"journal bad from", "/journal?from=yesterday", 400, []string{"want a journal sequence or an RFC 3339 time"}, nil},
		{"command c4", "/command?id=c4", 200, []string{"order-8", "order-9", "applied", "tip (current)", "version row"}, nil},
		{"command c3 trace", "/command?id=c3", 200, []string{traceHex, "shipped"}, nil},
		{"command rejected", "/command?id=c5", 200, []string{"rejected", "exists", "none: the command was not applied"}, nil},
		{"command unknown", "/command?id=nope", 404, nil, nil},
		{"row history", row("order-7"), 200, []string{"version 0", "version 1", "version 2", "new", "paid", "shipped", ">c1<", ">c2<", ">c3<", "shop"}, nil},
		{"row tombstone", row("order-9"), 200, []string{"deleted (tombstone)"}, nil},
		{"row unknown", row("order-0"), 404, nil, nil},
		{"asof at c2", asof("pk", "customer-42", "at", "cmd:c2"), 200, []string{"paid", "order-7"}, []string{"order-8", "shipped"}},
		{"asof at head", asof("pk", "customer-42"), 200, []string{"shipped", "order-8"}, []string{"order-9<"}},
		{"asof table", asof("scope", "table"), 200, []string{"customer-7", "order-1", "order-7"}, nil},
		{"asof diff", asof("pk", "customer-42", "at", "cmd:c1", "against", "cmd:c4"), 200, []string{"changed", "added", "order-8"}, nil},
		{"asof bad point", asof("pk", "customer-42", "at", "seq:99999"), 400, nil, nil},
		{"row pruned", "/row?table=" + tbl + "&pk=customer-9&rk=p1", 200, []string{"was removed by prune", "version 1", "version 2"}, []string{"version 0"}},
		{"asof before prune", asof("pk", "customer-9", "at", "cmd:e1"), 200, []string{"pruned"}, nil},
		{"journal shows the prune", "/journal?table=" + tbl + "&pk=customer-9", 200, []string{">prune<", "removed 1"}, nil},
		{"retention", "/retention?table=" + tbl, 200, []string{"customer-9", "never compacted", "nothing was erased"}, []string{"no partition was pruned"}},
		{"retention unknown table", "/retention?table=nosuch", 404, nil, nil},
		{"health", "/health", 200, []string{"shards", "up to date"}, nil},
		{"table lists", "/asof", 200, []string{">" + tbl + "<"}, []string{">" + hist + "<"}},
		{"retention table list", "/retention", 200, []string{">" + tbl + "<"}, []string{">" + hist + "<"}},
		{"health panel", "/health/panel", 200, []string{`id="shards"`}, []string{"<html"}},
		{"static htmx", "/static/htmx.min.js", 200, []string{"htmx"}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, body := get(t, f, c.path)
			if code != c.code {
				t.Fatalf("GET %s: %d, want %d\n%s", c.path, code, c.code, body)
			}
			for _, w := range c.want {
				if !strings.Contains(body, w) {
					t.Errorf("GET %s: no %q in\n%s", c.path, w, body)
				}
			}
			for _, w := range c.not {
				if strings.Contains(body, w) {
					t.Errorf("GET %s: %q should not be there", c.path, w)
				}
			}
		})
	}
	if layout == wire.LayoutPlain {
		projectiontest.CheckPlain(t, f.st, tbl)
		if n := len(allRows(t, f, hist)); n == 0 {
			t.Fatalf("the plain table's history %s is empty: the pages read something else", hist)
		}
	}
}

// allRows reads every stored row of table.
func allRows(t *testing.T, f *fixture, table string) []store.Entity {
	t.Helper()
	var out []store.Entity
	err := store.All(t.Context(), f.st, table, store.Query{AllPartitions: true}, func(e store.Entity) error {
		out = append(out, e)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestVerify starts a verify from the console's form and polls its panel
// until it says the table is identical.
func TestVerify(t *testing.T) {
	f := seed(t, "", console.Config{})
	_, page := get(t, f, "/verify")
	m := regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`).FindStringSubmatch(page)
	if m == nil {
		t.Fatalf("no CSRF token in the verify form:\n%s", page)
	}
	post := func(form url.Values) *http.Response {
		t.Helper()
		c := *f.srv.Client()
		c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
		resp, err := c.PostForm(f.srv.URL+"/verify", form)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp
	}
	if resp := post(url.Values{"table": {f.table}}); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("verify without the CSRF token: %d, want 403", resp.StatusCode)
	}
	resp := post(url.Values{"table": {f.table}, "csrf": {m[1]}})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("verify: %d, want 303", resp.StatusCode)
	}
	job := resp.Header.Get("Location")
	panel := strings.Replace(job, "/verify/job", "/verify/panel", 1)
	deadline := time.Now().Add(time.Minute)
	for {
		_, body := get(t, f, panel)
		if strings.Contains(body, "identical") {
			if strings.Contains(body, "hx-trigger") {
				t.Errorf("a finished verify's panel still polls")
			}
			break
		}
		if strings.Contains(body, "failed") || strings.Contains(body, "differs") || time.Now().After(deadline) {
			t.Fatalf("verify did not find the table identical:\n%s", body)
		}
		time.Sleep(50 * time.Millisecond) // polling the page, as the browser does
	}
	if _, body := get(t, f, "/verify"); !strings.Contains(body, "identical") {
		t.Errorf("the verify list does not show the finished verify")
	}
}
