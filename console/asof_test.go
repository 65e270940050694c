package console_test

import (
	"context"
	"fmt"
	"net/url"
	"strings"
	"testing"
	"time"

	tj "github.com/tablejournal/tablejournal"
	"github.com/tablejournal/tablejournal/console"
)

// TestAsOfPoints: the as-of page keeps the table as a link spells it,
// compares older to newer whichever point comes first, pins the sequence
// its next page continues at, and steps nowhere into pruned history.
func TestAsOfPoints(t *testing.T) {
	f := seed(t, "", console.Config{})
	asof := func(kv ...string) string {
		v := url.Values{}
		for i := 0; i+1 < len(kv); i += 2 {
			v.Set(kv[i], kv[i+1])
		}
		return "/asof?" + v.Encode()
	}
	must := func(path string, want, not []string) string {
		t.Helper()
		code, body := get(t, f, path)
		if code != 200 {
			t.Fatalf("GET %s: %d\n%s", path, code, body)
		}
		for _, w := range want {
			if !strings.Contains(body, w) {
				t.Errorf("GET %s: no %q", path, w)
			}
		}
		for _, w := range not {
			if strings.Contains(body, w) {
				t.Errorf("GET %s: %q should not be there", path, w)
			}
		}
		return body
	}

	// A journal link spells the table as its commands do.
	upper := strings.ToUpper(f.table)
	must(asof("table", upper, "pk", "customer-42"), []string{"<option selected>" + upper + "</option>", "order-7"},
		[]string{"<option>" + f.table + "</option>"})

	// Newer first: still from the older point to the newer.
	c1, c4 := f.seq["c1"], f.seq["c4"]
	for _, pts := range [][2]string{{"cmd:c1", "cmd:c4"}, {"cmd:c4", "cmd:c1"}} {
		must(asof("table", f.table, "pk", "customer-42", "at", pts[0], "against", pts[1]),
			[]string{fmt.Sprintf("What changed from seq %d to seq %d", c1, c4), `<tr class="added"><td>customer-42</td><td><a href="/row?pk=customer-42&amp;rk=order-8`},
			[]string{`class="removed"`})
	}

	// Pruned history: customer-9 was pruned at e2, so neither a point
	// before it nor the horizon itself steps back into it.
	must(asof("table", f.table, "pk", "customer-9", "at", "cmd:e1"), []string{"earlier history was pruned"}, []string{`id="prev"`, `id="diffprev"`})
	must(asof("table", f.table, "pk", "customer-9", "at", "cmd:e2"), nil, []string{`id="prev"`, `id="diffprev"`})
	must(asof("table", f.table, "pk", "customer-9", "at", "cmd:e3"), []string{`id="prev"`}, nil)

	// The whole table over more than a page: the next page is of the
	// same snapshot, even after a later command.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for c := range 4 { // 100 rows, 25 a command (a command holds at most 33)
		cmd := tj.NewCommand(f.table, "bulk").WithID(fmt.Sprint("bulk", c))
		for i := range 25 {
			cmd.Insert(fmt.Sprintf("r%03d", c*25+i), tj.Entity{"n": tj.Int64(int64(i))})
		}
		if _, err := f.client.Apply(ctx, cmd); err != nil {
			t.Fatal(err)
		}
	}
	body := must(asof("table", f.table, "scope", "table"), []string{`id="next"`}, nil)
	next := pagerHref(t, body, "next")
	if strings.Contains(next, "at=head") || !strings.Contains(next, "at=") {
		t.Fatalf("the next page link %q does not pin the sequence", next)
	}
	if _, err := f.client.Apply(ctx, tj.NewCommand(f.table, "customer-7").WithID("later").Insert("order-2", tj.Entity{"n": tj.Int64(1)})); err != nil {
		t.Fatal(err)
	}
	must(next, []string{"order-1"}, []string{"order-2"})
}

// pagerHref is the href of the link with id.
func pagerHref(t *testing.T, body, id string) string {
	t.Helper()
	i := strings.Index(body, `id="`+id+`" href="`)
	if i < 0 {
		t.Fatalf("no link #%s", id)
	}
	rest := body[i+len(`id="`+id+`" href="`):]
	return strings.ReplaceAll(rest[:strings.Index(rest, `"`)], "&amp;", "&")
}
