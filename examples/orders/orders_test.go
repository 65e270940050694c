package orders_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/tablejournal/tablejournal/internal/azurite"
	"github.com/tablejournal/tablejournal/tablejournaltest"
)

var (
	az  *azurite.Server
	bin string // the built cmd/orders
)

func TestMain(m *testing.M) {
	os.Exit(azurite.Run(m, &az))
}

// build builds cmd/orders once per test binary.
func build(t *testing.T) string {
	t.Helper()
	if bin != "" {
		return bin
	}
	dir, err := os.MkdirTemp("", "orders-bin-")
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "orders")
	if b, err := exec.Command("go", "build", "-o", out, "./cmd/orders").CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, b)
	}
	bin = out
	return bin
}

// TestOrdersService builds the example service and drives it over HTTP
// against a pipeline on the embedded store and on Azurite: create, a
// duplicate create, read after write, update with If-Match, a stale
// update, the list, and the change-feed counter, which resumes from its
// checkpoint after a restart.
func TestOrdersService(t *testing.T) {
	for _, backend := range []struct{ name, tables string }{
		{"embedded", ""},
		{"azurite", az.ConnectionString()},
	} {
		t.Run(backend.name, func(t *testing.T) {
			p := tablejournaltest.New(t, backend.tables)
			svc := startService(t, build(t), p.URL(), p.Tables())
			customer := fmt.Sprintf("customer-%d", time.Now().UnixNano())
			base := svc.url + "/orders/" + customer

			r := call(t, "POST", base, "", `{"id":"order-7","status":"new","total":12.5}`, 201)
			seq := r.Header.Get("X-Journal-Seq")
			if r.Header.Get("ETag") != "0" || seq == "" {
				t.Fatalf("create: ETag %q seq %q", r.Header.Get("ETag"), seq)
			}
			call(t, "POST", base, "", `{"id":"order-7","status":"new","total":1}`, 409)
			// A misspelled field is refused, not dropped: no order-5 is created.
			if r := call(t, "POST", base, "", `{"id":"order-5","status":"new","totl":1}`, 400); !strings.Contains(body(t, r), `unknown field "totl"`) {
				t.Fatal("a misspelled field's 400 does not name it")
			}
			call(t, "GET", base+"/order-5", "", "", 404)

			var o struct {
				Status  string
				Total   float64
				Version int64
			}
			decode(t, call(t, "GET", base+"/order-7?after="+seq, "", "", 200), &o)
			if o.Status != "new" || o.Total != 12.5 || o.Version != 0 {
				t.Fatalf("read after create: %+v", o)
			}
			r = call(t, "PUT", base+"/order-7", "0", `{"status":"shipped","total":12.5}`, 200)
			seq = r.Header.Get("X-Journal-Seq")
			call(t, "PUT", base+"/order-7", "0", `{"status":"cancelled","total":12.5}`, 412)
			call(t, "PUT", base+"/order-9", "", `{"status":"x"}`, 428)
			call(t, "GET", base+"/order-9", "", "", 404)
			decode(t, call(t, "GET", base+"/order-7?after="+seq, "", "", 200), &o)
			if o.Status != "shipped" || o.Version != 1 {
				t.Fatalf("read after update: %+v", o)
			}
			var list []struct{ ID string }
			decode(t, call(t, "GET", base+"?after="+seq, "", "", 200), &list)
			if len(list) != 1 || list[0].ID != "order-7" {
				t.Fatalf("list: %+v", list)
			}
			svc.waitCounts(t, `{"changes":2,"counts":{"shipped":1}}`)

			// The counter's checkpoint survives a restart: the new process
			// takes only the changes made after it.
			svc.stop(t)
			svc = startService(t, bin, p.URL(), p.Tables())
			call(t, "POST", svc.url+"/orders/"+customer, "", `{"id":"order-8","status":"new","total":3}`, 201)
			svc.waitCounts(t, `{"changes":1,"counts":{"new":1}}`)
		})
	}
}

type service struct {
	cmd *exec.Cmd
	url string
}

// startService runs the built service on a free port and waits until it
// listens.
func startService(t *testing.T, bin, natsURL, tables string) *service {
	t.Helper()
	cmd := exec.Command(bin, "--nats", natsURL, "--tables", tables, "--listen", "127.0.0.1:0")
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &service{cmd: cmd}
	t.Cleanup(func() { s.stop(t) })
	line, err := bufio.NewReader(out).ReadString('\n')
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "listening on ")
	if err != nil || !ok {
		t.Fatalf("service said %q: %v", line, err)
	}
	go io.Copy(io.Discard, out)
	s.url = "http://" + addr
	return s
}

// stop ends the service with SIGTERM and checks that it exits cleanly.
func (s *service) stop(t *testing.T) {
	if s.cmd.Process == nil || s.cmd.ProcessState != nil {
		return
	}
	s.cmd.Process.Signal(syscall.SIGTERM)
	if err := s.cmd.Wait(); err != nil {
		t.Errorf("service exit: %v", err)
	}
}

// waitCounts waits until GET /counts answers want: the counter follows the
// change feed asynchronously.
func (s *service) waitCounts(t *testing.T, want string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	var got string
	for time.Now().Before(deadline) {
		b, err := io.ReadAll(call(t, "GET", s.url+"/counts", "", "", 200).Body)
		if err != nil {
			t.Fatal(err)
		}
		if got = strings.TrimSpace(string(b)); got == want {
			return
		}
		time.Sleep(20 * time.Millisecond) // polling an HTTP endpoint: no event to wait on
	}
	t.Fatalf("counts: %s, want %s", got, want)
}

func call(t *testing.T, method, url, ifMatch, body string, want int) *http.Response {
	t.Helper()
	req, err := http.NewRequest(method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	if ifMatch != "" {
		req.Header.Set("If-Match", ifMatch)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if resp.StatusCode != want {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("%s %s: %d %s, want %d", method, url, resp.StatusCode, b, want)
	}
	return resp
}

func decode(t *testing.T, r *http.Response, v any) {
	t.Helper()
	if err := json.NewDecoder(r.Body).Decode(v); err != nil {
		t.Fatal(err)
	}
}

// body reads r's whole body.
func body(t *testing.T, r *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(r.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
