package console_test

import (
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/tablejournal/tablejournal/console"
	"github.com/tablejournal/tablejournal/journal/journaltest"
	"github.com/tablejournal/tablejournal/journal/outcomes"
	"github.com/tablejournal/tablejournal/wire"
)

// TestSafety: authentication, hidden values, no secret in a page, and a
// console that changes nothing, mounted under a prefix.
func TestSafety(t *testing.T) {
	f := seed(t, "", console.Config{
		Prefix:     "/console",
		HideValues: true,
		Auth:       &console.Auth{Token: "tok-123", User: "ops", Password: "pw-456"},
		GrafanaURL: "https://admin:graf-pw@grafana.example/d/tj?orgId=1&auth_token=SECRET",
	})
	bearer := []string{"Authorization", "Bearer tok-123"}
	row := "/console/row?table=" + f.table + "&pk=customer-42&rk=order-7"

	t.Run("auth", func(t *testing.T) {
		tests := []struct {
			name   string
			header []string
			code   int
		}{
			{"none", nil, http.StatusUnauthorized},
			{"wrong token", []string{"Authorization", "Bearer nope"}, http.StatusUnauthorized},
			{"token", bearer, http.StatusOK},
			{"basic", []string{"Authorization", "Basic b3BzOnB3LTQ1Ng=="}, http.StatusOK},                 // ops:pw-456
			{"wrong basic", []string{"Authorization", "Basic b3BzOnB3LTQ1Nw=="}, http.StatusUnauthorized}, // ops:pw-457
		}
		for _, tt := range tests {
			t.Run(tt.name, func(t *testing.T) {
				if code, body := get(t, f, "/console/journal", tt.header...); code != tt.code {
					t.Errorf("GET: %d, want %d\n%s", code, tt.code, body)
				}
			})
		}
	})

	// A command whose value breaks a rule: the rejection's reason quotes
	// it (issue 36 item 4), as a plain NATS client would send it.
	leak := nats.NewMsg(wire.JournalSubject(f.table, "customer-42"))
	leak.Header.Set(jetstream.MsgIDHeader, "leak1")
	leak.Header.Set("Content-Type", "application/json")
	leak.Data = []byte(`{"id":"leak1","table":"` + f.table + `","pk":"customer-42","ops":[{"op":"upsert","rk":"x","entity":{"email2":"alice.secret@example.com","email2@odata.type":"Edm.Int64"}}]}`)
	ctx := journaltest.Context(t, time.Minute)
	ack, err := f.js.PublishMsg(ctx, leak)
	if err != nil {
		t.Fatal(err)
	}
	if o, err := outcomes.NewReader(f.js).Await(ctx, "leak1", ack.Sequence); err != nil || !strings.Contains(o.Reason, "alice.secret") {
		t.Fatalf("leak1's outcome %+v, %v: want a rejection quoting the value", o, err)
	}

	t.Run("hidden values and no secrets", func(t *testing.T) {
		for _, path := range []string{row, "/console/command?id=c3", "/console/command?id=leak1", "/console/asof?table=" + f.table + "&pk=customer-42", "/console/health", "/console/journal"} {
			code, body := get(t, f, path, bearer...)
			if code != http.StatusOK {
				t.Fatalf("GET %s: %d\n%s", path, code, body)
			}
			for _, secret := range []string{"alice.secret", "shipped", "paid", "tok-123", "pw-456", "graf-pw", "SECRET", "orgId"} {
				if strings.Contains(body, secret) {
					i := strings.Index(body, secret)
					t.Errorf("GET %s shows %q: %s", path, secret, body[max(0, i-100):i+100])
				}
			}
			if !strings.Contains(body, `href="/console/journal"`) {
				t.Errorf("GET %s: links are not under the prefix", path)
			}
		}
		if _, body := get(t, f, row, bearer...); !strings.Contains(body, "•••") || !strings.Contains(body, "status") {
			t.Errorf("row page with hidden values shows no names or no mask")
		}
		if _, body := get(t, f, "/console/health", bearer...); !strings.Contains(body, `href="https://grafana.example/d/tj"`) {
			t.Errorf("health page has no Grafana link")
		}
	})

	t.Run("changes nothing", func(t *testing.T) {
		paths := []string{"/console/", "/console/journal", "/console/command?id=c1", row, "/console/asof", "/console/health", "/console/health/panel", "/console/static/htmx.min.js", "/console/repair", "/console/repair?kind=undo&cmd=c1"}
		for _, m := range []string{http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
			for _, p := range paths {
				req, _ := http.NewRequest(m, f.srv.URL+p, strings.NewReader("x=1"))
				req.Header.Set(bearer[0], bearer[1])
				resp, err := f.srv.Client().Do(req)
				if err != nil {
					t.Fatal(err)
				}
				resp.Body.Close()
				if resp.StatusCode != http.StatusMethodNotAllowed {
					t.Errorf("%s %s: %d, want 405", m, p, resp.StatusCode)
				}
			}
		}
	})
}

// TestRepair: with AllowChanges, an undo is planned, previewed, refused
// without the CSRF token or with a stale plan, and applied on
// confirmation, through the journal; without it, no repair route exists.
func TestRepair(t *testing.T) {
	f := seed(t, "", console.Config{AllowChanges: true})
	code, page := get(t, f, "/repair?kind=undo&cmd=c3")
	if code != http.StatusOK {
		t.Fatalf("undo plan: %d\n%s", code, page)
	}
	for _, w := range []string{"shipped", "paid", "undo-c3-", `id="confirm"`} {
		if !strings.Contains(page, w) {
			t.Errorf("undo preview: no %q", w)
		}
	}
	csrf := regexp.MustCompile(`name="csrf" value="([0-9a-f]+)"`).FindStringSubmatch(page)
	plan := regexp.MustCompile(`name="plan" value="([0-9a-f]+)"`).FindStringSubmatch(page)
	if csrf == nil || plan == nil {
		t.Fatalf("no confirmation form:\n%s", page)
	}
	post := func(form url.Values) (int, string) { return postForm(t, f, "/repair", form) }
	form := url.Values{"kind": {"undo"}, "cmd": {"c3"}, "plan": {plan[1]}}
	if code, _ := post(form); code != http.StatusForbidden {
		t.Errorf("confirm without the CSRF token: %d, want 403", code)
	}
	form.Set("csrf", csrf[1])
	form.Set("plan", "0000000000000000")
	if code, body := post(form); code != http.StatusConflict || !strings.Contains(body, "Nothing was applied") {
		t.Errorf("confirm of a stale plan: %d, want 409\n%s", code, body)
	}
	form.Set("plan", plan[1])
	code, body := post(form)
	if code != http.StatusOK || !strings.Contains(body, "undo-c3-") || !strings.Contains(body, "applied") {
		t.Fatalf("confirm: %d\n%s", code, body)
	}
	_, row := get(t, f, "/row?table="+f.table+"&pk=customer-42&rk=order-7")
	if !strings.Contains(row, "version 3") || !strings.Contains(row, "undo-c3-") {
		t.Errorf("the row has no version by the undo:\n%s", row)
	}
	if _, again := get(t, f, "/repair?kind=undo&cmd=c3"); !strings.Contains(again, "nothing to do") && !strings.Contains(again, "blocked") {
		t.Logf("second plan of the same undo:\n%s", again)
	}

	ro := seed(t, "", console.Config{})
	if code, _ := get(t, ro, "/repair?kind=undo&cmd=c3"); code != http.StatusNotFound {
		t.Errorf("read-only console plans repairs: %d", code)
	}
	if _, cmd := get(t, ro, "/command?id=c3"); strings.Contains(cmd, `id="undo"`) {
		t.Errorf("read-only console offers an undo")
	}
}
