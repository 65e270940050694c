package console_test

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	tj "github.com/tablejournal/tablejournal"
	"github.com/tablejournal/tablejournal/console"
)

// EnvShots names the folder the browser tests save their screenshots in;
// if unset, a temporary folder of the test.
const EnvShots = "TABLEJOURNAL_CONSOLE_SHOTS"

// chromium finds Debian's chromium. A missing browser fails the test: the
// browser tests are part of make test (.ci/run installs it).
func chromium(t *testing.T) string {
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("no chromium on PATH: the console's browser tests need it (apt-get install -y chromium)")
	return ""
}

// browser starts a headless chromium that reaches nothing but what it is
// sent to, and records every URL it requests.
func browser(t *testing.T) (context.Context, func() []string) {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(chromium(t)),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-features", "MediaRouter,OptimizationHints,Translate"),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 900),
	)
	actx, cancelA := chromedp.NewExecAllocator(context.Background(), opts...)
	bctx, cancelB := chromedp.NewContext(actx)
	ctx, cancelT := context.WithTimeout(bctx, 8*time.Minute)
	t.Cleanup(func() { cancelT(); cancelB(); cancelA() })
	var (
		mu   sync.Mutex
		urls []string
	)
	chromedp.ListenTarget(ctx, func(ev any) {
		if e, ok := ev.(*network.EventRequestWillBeSent); ok {
			mu.Lock()
			urls = append(urls, e.Request.URL)
			mu.Unlock()
		}
	})
	if err := chromedp.Run(ctx, network.Enable()); err != nil {
		t.Fatalf("start chromium: %v", err)
	}
	return ctx, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), urls...)
	}
}

// shots returns the folder the screenshots of test name go to.
func shots(t *testing.T, name string) string {
	dir := os.Getenv(EnvShots)
	if dir == "" {
		dir = t.TempDir()
	}
	dir = filepath.Join(dir, name)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// waitFor evaluates a JavaScript condition in the page until it holds,
// across navigations (an evaluation while the page is replaced fails and
// is tried again).
func waitFor(js string) chromedp.Action {
	return waitForWithin(js, 30*time.Second)
}

// waitForWithin is waitFor with its own deadline.
func waitForWithin(js string, d time.Duration) chromedp.Action {
	return chromedp.ActionFunc(func(ctx context.Context) error {
		ctx, cancel := context.WithTimeout(ctx, d)
		defer cancel()
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		var last error
		for {
			var ok bool
			err := chromedp.Evaluate(js, &ok).Do(ctx)
			if err == nil && ok {
				return nil
			}
			if err != nil {
				last = err
			}
			select {
			case <-ctx.Done():
				return fmt.Errorf("waiting for %s: %w (last error: %v)", js, ctx.Err(), last)
			case <-tick.C:
			}
		}
	})
}

// pageText is the browser's address and the first 2,000 characters of
// the page's text, for a failed step's message.
func pageText(ctx context.Context) string {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	var loc, body string
	if err := chromedp.Run(ctx, chromedp.Location(&loc), chromedp.Evaluate(`document.body ? document.body.innerText : ""`, &body)); err != nil {
		return "(unreadable: " + err.Error() + ")"
	}
	if len(body) > 2000 {
		body = body[:2000] + "…"
	}
	return fmt.Sprintf("%s: %q", loc, body)
}

// TestBrowser clicks through every page in a real browser over a seeded
// pipeline, on both stores, and reads what a person would read.
func TestBrowser(t *testing.T) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			f := seed(t, b.tables(), console.Config{})
			ctx, requested := browser(t)
			dir := shots(t, "browser-"+b.name)
			shot := func(name string) chromedp.Action {
				return chromedp.ActionFunc(func(ctx context.Context) error {
					var buf []byte
					if err := chromedp.FullScreenshot(&buf, 100).Do(ctx); err != nil {
						return err
					}
					return os.WriteFile(filepath.Join(dir, name+".png"), buf, 0o644)
				})
			}
			run := func(what string, actions ...chromedp.Action) {
				t.Helper()
				// A step that waits for an element the page never shows
				// fails on its own deadline, with what the page showed.
				sctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
				defer cancel()
				if err := chromedp.Run(sctx, actions...); err != nil {
					t.Fatalf("%s: %v; the page at %s", what, err, pageText(ctx))
				}
			}
			text := func(sel string) string {
				t.Helper()
				var s string
				run("read "+sel, chromedp.Text(sel, &s, chromedp.ByQuery))
				return s
			}
			wants := func(where, got string, want ...string) {
				t.Helper()
				for _, w := range want {
					if !strings.Contains(got, w) {
						t.Errorf("%s: no %q in %q", where, w, got)
					}
				}
			}

			// The journal: every command with its outcome.
			run("journal", chromedp.Navigate(f.srv.URL+"/journal"), chromedp.WaitVisible("#journal", chromedp.ByQuery), shot("journal"))
			wants("journal", text("#journal"), "c1", "c4", "c6", "d1", "rejected", "exists", "shop")

			// Filter by status with the form, then open the rejection.
			run("filter", chromedp.SetValue(`select[name="status"]`, "rejected", chromedp.ByQuery),
				chromedp.Click(`form.filters button`, chromedp.ByQuery),
				waitFor(`location.search.includes("status=rejected")`),
				chromedp.WaitVisible("#journal", chromedp.ByQuery))
			got := text("#journal tbody")
			wants("rejected only", got, "c5", "exists")
			if strings.Contains(got, "c4") {
				t.Errorf("filtered journal shows c4: %q", got)
			}
			run("open c5", chromedp.Click(`//a[text()="c5"]`, chromedp.BySearch), chromedp.WaitVisible("#outcome", chromedp.ByQuery), shot("command-rejected"))
			wants("rejected command", text("#outcome"), "rejected", "exists")
			wants("rejection reason", text("dd.reason"), "row exists")

			// Blame: a command that wrote two rows.
			// The link is followed by its href rather than clicked: a click
			// right after the journal page loaded was lost twice in CI (the
			// page stayed on the journal until the step's deadline).
			var c4 string
			run("blame c4", chromedp.Navigate(f.srv.URL+"/journal"), chromedp.WaitVisible("#journal", chromedp.ByQuery),
				chromedp.AttributeValue(`//a[text()="c4"]`, "href", &c4, nil, chromedp.BySearch),
				chromedp.ActionFunc(func(ctx context.Context) error {
					base, err := url.Parse(f.srv.URL + "/journal")
					if err != nil {
						return err
					}
					ref, err := url.Parse(c4)
					if err != nil {
						return err
					}
					return chromedp.Navigate(base.ResolveReference(ref).String()).Do(ctx)
				}),
				chromedp.WaitVisible("#versions", chromedp.ByQuery), shot("command-blame"))
			wants("blame c4", text("#versions"), "order-8", "order-9", "tip (current)", "version row")

			// A row's three versions and their diffs, reached from the
			// command that wrote its last version.
			run("c3", chromedp.Navigate(f.srv.URL+"/command?id=c3"), chromedp.WaitVisible("#ops", chromedp.ByQuery))
			wants("c3 trace", text("#trace"), traceHex)
			run("row", chromedp.Click(`#ops a`, chromedp.ByQuery), chromedp.WaitVisible("ol.versions", chromedp.ByQuery), shot("row-history"))
			var versions []string
			run("versions", chromedp.Evaluate(`[...document.querySelectorAll("ol.versions > li")].map(li => li.innerText)`, &versions))
			if len(versions) != 3 {
				t.Fatalf("row history shows %d versions, want 3: %q", len(versions), versions)
			}
			wants("version 0", versions[0], "version 0", "insert", "c1", "new", "10")
			wants("version 1", versions[1], "version 1", "merge", "c2", "new", "paid")
			wants("version 2", versions[2], "version 2", "replace", "c3", "paid", "shipped", "12", "current")

			// As of version 1's command, then one step on, then the diff.
			run("asof c2", chromedp.Click(`#seq-`+fmt.Sprint(f.seq["c2"])+` a[href*="asof"]`, chromedp.ByQuery),
				chromedp.WaitVisible("#rows", chromedp.ByQuery), shot("asof-c2"))
			got = text("#rows")
			wants("as of c2", got, "order-7", "paid")
			if strings.Contains(got, "shipped") || strings.Contains(got, "order-8") {
				t.Errorf("as of c2 shows later state: %q", got)
			}
			next := fmt.Sprintf("at=%d", f.seq["c3"])
			run("step", chromedp.Click("#nextstep", chromedp.ByQuery), waitFor(`location.search.includes(`+quote(next)+`)`),
				chromedp.WaitVisible("#rows", chromedp.ByQuery), shot("asof-c3"))
			wants("as of c3", text("#rows"), "shipped", "12")
			run("diff", chromedp.Click("#diffprev", chromedp.ByQuery), waitFor(`location.search.includes("against=")`),
				chromedp.WaitVisible("#rows", chromedp.ByQuery), shot("asof-diff"))
			wants("diff c2..c3", text("#rows"), "order-7", "changed", "paid", "shipped")

			// Health: publish a burst, watch the page refresh itself until
			// nothing is pending and the lag is back to zero.
			for i := range 100 {
				if _, err := f.client.Publish(ctx, tj.NewCommand(f.table, "burst").Upsert(fmt.Sprint("r", i%20), tj.Entity{"n": tj.Int64(int64(i))})); err != nil {
					t.Fatal(err)
				}
			}
			run("health", chromedp.Click(`//nav/a[text()="Health"]`, chromedp.BySearch), chromedp.WaitVisible("#shards", chromedp.ByQuery),
				// The projector drains the burst in a second on an idle
				// machine; the deadline allows for a loaded one.
				waitForWithin(`document.querySelector("#pending").innerText == "0 pending" && document.querySelector("#maxlag").innerText == "0.0s"`, 3*time.Minute),
				shot("health"))
			wants("health", text("#shards"), "up to date")

			// Retention: the prune of customer-9.
			run("retention", chromedp.Click(`//nav/a[text()="Retention"]`, chromedp.BySearch), chromedp.WaitVisible(`select[name="table"]`, chromedp.ByQuery),
				chromedp.SetValue(`select[name="table"]`, f.table, chromedp.ByQuery), chromedp.Click(`form.filters button`, chromedp.ByQuery),
				chromedp.WaitVisible("#prunes", chromedp.ByQuery), shot("retention"))
			wants("retention", text("#prunes"), "customer-9", fmt.Sprint(f.seq["e2"]))

			// Verify: start one and watch the page poll it to the end.
			run("verify", chromedp.Click(`//nav/a[text()="Verify"]`, chromedp.BySearch), chromedp.WaitVisible("#start", chromedp.ByQuery),
				chromedp.SetValue(`select[name="table"]`, f.table, chromedp.ByQuery), chromedp.Click("#start", chromedp.ByQuery),
				waitFor(`!!document.querySelector("#vstate") && document.querySelector("#vstate").innerText.includes("identical")`),
				shot("verify"))

			// No page asked for anything but the console.
			base, _ := url.Parse(f.srv.URL)
			for _, u := range requested() {
				p, err := url.Parse(u)
				if err != nil || (p.Scheme != "data" && p.Host != base.Host) {
					t.Errorf("the browser requested %q: the console must need no network", u)
				}
			}
			t.Logf("screenshots in %s", dir)
		})
	}
}

func quote(s string) string { return fmt.Sprintf("%q", s) }

// TestBrowserLongValues: a row whose key and value are long strings
// without spaces wraps on its row and as-of pages: nothing scrolls
// sideways.
func TestBrowserLongValues(t *testing.T) {
	f := seed(t, "", console.Config{})
	long := strings.Repeat("x", 3000)
	rk := "k" + strings.Repeat("y", 400)
	if _, err := f.client.Apply(context.Background(), tj.NewCommand(f.table, "long").WithID("long").
		Insert(rk, tj.Entity{"note": tj.String(long)})); err != nil {
		t.Fatal(err)
	}
	ctx, _ := browser(t)
	for _, path := range []string{
		"/row?" + url.Values{"table": {f.table}, "pk": {"long"}, "rk": {rk}}.Encode(),
		"/asof?" + url.Values{"table": {f.table}, "pk": {"long"}}.Encode(),
		"/command?id=long",
	} {
		var wide bool
		err := chromedp.Run(ctx, chromedp.Navigate(f.srv.URL+path), chromedp.WaitVisible("main", chromedp.ByQuery),
			chromedp.Evaluate(`document.documentElement.scrollWidth > window.innerWidth + 1`, &wide))
		if err != nil {
			t.Fatalf("%s: %v", path, err)
		}
		if wide {
			t.Errorf("%s scrolls sideways: a long string does not wrap", path)
		}
	}
}
