package console_test

import (
	"context"
	"fmt"
	"html"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	tj "github.com/tablejournal/tablejournal"
	"github.com/tablejournal/tablejournal/console"
	"github.com/tablejournal/tablejournal/replay/erasure"
)

// deepRow gives row deep/r of the fixture's table n versions (version 0 to
// n-1), each written by a command of its own, and returns the seqs of the
// versions.
func deepRow(t *testing.T, f *fixture, n int) []uint64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	seqs := make([]uint64, 0, n)
	for i := range n {
		cmd := tj.NewCommand(f.table, "deep").WithID(fmt.Sprintf("deep-%d", i))
		if i == 0 {
			cmd.Insert("r", tj.Entity{"n": tj.Int64(0)})
		} else {
			cmd.Merge("r", tj.Entity{"n": tj.Int64(int64(i))})
		}
		pos, err := f.client.Publish(ctx, cmd)
		if err != nil {
			t.Fatal(err)
		}
		seqs = append(seqs, pos.Seq)
	}
	if err := f.client.WaitApplied(ctx, seqs[n-1]); err != nil {
		t.Fatal(err)
	}
	return seqs
}

var versionRE = regexp.MustCompile(`<h3>version (\d+)`)

// versionsOn lists the versions a row page shows, in order.
func versionsOn(body string) []string {
	var out []string
	for _, m := range versionRE.FindAllStringSubmatch(body, -1) {
		out = append(out, m[1])
	}
	return out
}

// pagerLink is the href of the pager link of a class ("older", "newer").
func pagerLink(t *testing.T, body, class string) string {
	t.Helper()
	m := regexp.MustCompile(`class="` + class + `" href="([^"]+)"`).FindStringSubmatch(body)
	if m == nil {
		return ""
	}
	return html.UnescapeString(m[1])
}

// TestRowHistoryPages reads a row of 250 versions: the page holds the
// newest 100, its timeline only them, older and newer links walk the
// history by sequence, and the page stays small.
func TestRowHistoryPages(t *testing.T) {
	f := seed(t, "", console.Config{})
	const n = 250
	seqs := deepRow(t, f, n)
	first := "/row?" + url.Values{"table": {f.table}, "pk": {"deep"}, "rk": {"r"}}.Encode()
	code, body := get(t, f, first)
	if code != 200 {
		t.Fatalf("GET %s: %d\n%s", first, code, body)
	}
	span := func(lo, hi int) []string {
		var out []string
		for v := lo; v <= hi; v++ {
			out = append(out, fmt.Sprint(v))
		}
		return out
	}
	if got, want := versionsOn(body), span(150, 249); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("the first page shows versions %v, want the newest 100 (150 to 249)", got)
	}
	if got := strings.Count(body, "<circle"); got != 100 {
		t.Errorf("the timeline draws %d versions, want the page's 100", got)
	}
	if !strings.Contains(body, "versions 150 to 249 of 250 stored") {
		t.Errorf("the page does not say which versions it shows")
	}
	// 100 versions of one small property: a few KB each at most.
	if len(body) > 200_000 {
		t.Errorf("the page is %d bytes: not bounded by its page", len(body))
	}
	if pagerLink(t, body, "newer") != "" {
		t.Errorf("the newest page links to a newer one")
	}
	older := pagerLink(t, body, "older")
	if want := fmt.Sprintf("before=%d", seqs[150]); !strings.Contains(older, want) {
		t.Fatalf("older link %q, want %s", older, want)
	}
	_, body = get(t, f, older)
	if got, want := versionsOn(body), span(50, 149); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("the older page shows %v, want 50 to 149", got)
	}
	_, body = get(t, f, pagerLink(t, body, "older"))
	if got, want := versionsOn(body), span(0, 49); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("the oldest page shows %v, want 0 to 49", got)
	}
	if pagerLink(t, body, "older") != "" {
		t.Errorf("the oldest page links to an older one")
	}
	// Version 0 is an insert: its page still diffs version 1 against it.
	if !strings.Contains(body, "version 1") {
		t.Fatalf("the oldest page lacks version 1")
	}
	_, body = get(t, f, pagerLink(t, body, "newer"))
	if got, want := versionsOn(body), span(50, 149); strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("newer from the oldest page shows %v, want 50 to 149", got)
	}
	if code, _ := get(t, f, first+"&before=x"); code != 400 {
		t.Errorf("before=x: %d, want 400", code)
	}
}

// TestRowErased: the row page of an erased row answers 404 and names the
// erase.
func TestRowErased(t *testing.T) {
	f := seedErasable(t, console.Config{})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rk := "order-1"
	if _, err := erasure.New(f.rp).EraseKey(ctx, erasure.Target{Table: f.table, PK: "customer-7", RK: &rk}, time.Now); err != nil {
		t.Fatal(err)
	}
	path := "/row?" + url.Values{"table": {f.table}, "pk": {"customer-7"}, "rk": {rk}}.Encode()
	code, body := get(t, f, path)
	if code != 404 || !strings.Contains(body, `id="erased"`) {
		t.Fatalf("GET %s: %d, want 404 naming the erase\n%s", path, code, body)
	}
}
