package console_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/tablejournal/tablejournal/console"
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

	t.Run("hidden values and no secrets", func(t *testing.T) {
		for _, path := range []string{row, "/console/command?id=c3", "/console/asof?table=" + f.table + "&pk=customer-42", "/console/health", "/console/journal"} {
			code, body := get(t, f, path, bearer...)
			if code != http.StatusOK {
				t.Fatalf("GET %s: %d\n%s", path, code, body)
			}
			for _, secret := range []string{"shipped", "paid", "tok-123", "pw-456", "graf-pw", "SECRET", "orgId"} {
				if strings.Contains(body, secret) {
					t.Errorf("GET %s shows %q", path, secret)
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
		paths := []string{"/console/", "/console/journal", "/console/command?id=c1", row, "/console/asof", "/console/health", "/console/health/panel", "/console/static/htmx.min.js", "/console/undo", "/console/erase"}
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
