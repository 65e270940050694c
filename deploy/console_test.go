package deploy_test

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/tablejournal/tablejournal/journal"
	"github.com/tablejournal/tablejournal/journal/journaltest"
)

// consoleWorkload is the console Deployment's container.
func consoleWorkload(t *testing.T, m *manifests) workload {
	t.Helper()
	for _, w := range workloads(t, m) {
		if w.name == "Deployment "+consoleName {
			return w
		}
	}
	t.Fatalf("no Deployment %s", consoleName)
	return workload{}
}

// authSecretValue follows the console's --auth-file to the Secret volume
// mounted there and returns the example Secret's value of that key.
func authSecretValue(t *testing.T, m *manifests, w workload, authFile string) string {
	t.Helper()
	key := secretFileKey(t, w, authFile, authSecretName)
	val, ok := named(t, m.secrets, authSecretName).StringData[key]
	if !ok {
		t.Fatalf("--auth-file=%s is key %s of Secret %s, which the example lacks", authFile, key, authSecretName)
	}
	return val
}

// TestConsole: the console hides values and changes nothing by default,
// reads its sign-in from the auth Secret, in the format the console takes,
// and its Service and probes reach the port of its --addr. The replay
// binary started with the manifest's flags and the example Secret's
// content refuses a request without the credential and serves one with it.
func TestConsole(t *testing.T) {
	m := load(t)
	w := consoleWorkload(t, m)
	if w.command[len(w.command)-1] != "console" {
		t.Fatalf("%s runs %v, want replay console", w.name, w.command)
	}
	flags := flagValues(t, w, helpOf(t, w.command))
	if flags["hide-values"] != "true" {
		t.Error("the console does not run with --hide-values")
	}
	if v, ok := flags["allow-changes"]; ok && v != "false" {
		t.Error("the console allows changes by default")
	}
	authFile, ok := flags["auth-file"]
	if !ok {
		t.Fatal("the console runs without --auth-file: anyone reaching it reads the journal")
	}
	cred := authSecretValue(t, m, w, authFile)
	kind, rest, _ := strings.Cut(strings.TrimSpace(cred), " ")
	user, password, _ := strings.Cut(rest, " ")
	if kind != "user" || user == "" || password == "" || strings.Contains(strings.TrimSpace(cred), "\n") {
		t.Fatalf("the example auth Secret holds %q lines; want one `user NAME PASSWORD` line", kind)
	}

	_, portStr, err := net.SplitHostPort(flags["addr"])
	if err != nil {
		t.Fatalf("--addr=%s: %v", flags["addr"], err)
	}
	port, _ := strconv.Atoi(portStr)
	svc := named(t, m.services, consoleName)
	selects(t, "Service "+consoleName, &metav1.LabelSelector{MatchLabels: svc.Spec.Selector}, w.pod.Labels)
	for _, sp := range svc.Spec.Ports {
		if got := containerPort(t, w.container, sp.TargetPort); got != port {
			t.Errorf("Service port %s targets %d, --addr's is %d", sp.Name, got, port)
		}
	}
	for what, p := range map[string]*corev1.Probe{"readiness": w.container.ReadinessProbe, "liveness": w.container.LivenessProbe} {
		if p == nil || p.TCPSocket == nil {
			t.Errorf("%s probe %+v: want a TCP probe (every page asks for the credential)", what, p)
			continue
		}
		if got := containerPort(t, w.container, p.TCPSocket.Port); got != port {
			t.Errorf("%s probe port %d, --addr's is %d", what, got, port)
		}
	}

	// The manifest's flags, but for the listener and the file's place.
	file := filepath.Join(t.TempDir(), "auth")
	if err := os.WriteFile(file, []byte(cred), 0o600); err != nil {
		t.Fatal(err)
	}
	args := slicesWithout(w.args, "addr", "auth-file")
	url := startConsole(t, w.command, append(args, "--addr=127.0.0.1:0", "--auth-file="+file)...)
	ctx := journaltest.Context(t, time.Minute)
	if got := status(ctx, t, url, "", ""); got != http.StatusUnauthorized {
		t.Errorf("GET / without the credential: %d, want 401", got)
	}
	if got := status(ctx, t, url, user, password); got != http.StatusOK {
		t.Errorf("GET / with the example Secret's credential: %d, want 200", got)
	}
}

// slicesWithout is args without the flags named.
func slicesWithout(args []string, names ...string) []string {
	var out []string
	for _, a := range args {
		name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "=")
		drop := false
		for _, n := range names {
			drop = drop || name == n
		}
		if !drop {
			out = append(out, a)
		}
	}
	return out
}

// startConsole runs replay console (command) with args on a NATS server
// holding a journal and a store of its own, and returns its URL from the
// line it prints.
func startConsole(t *testing.T, command []string, args ...string) string {
	t.Helper()
	srv := journaltest.StartServer(t)
	_, js := journaltest.Connect(t, srv.ClientURL())
	if _, err := journal.Ensure(journaltest.Context(t, time.Minute), js, journal.Config{}); err != nil {
		t.Fatal(err)
	}
	full := append(append(command[1:len(command):len(command)], args...), "--nats", srv.ClientURL(), "--data", t.TempDir())
	cmd := exec.Command(command[0], full...)
	cmd.Env = append(os.Environ(), "TABLEJOURNAL_TABLES=", "TABLEJOURNAL_AUTH=")
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		cmd.Wait()
		t.Fatalf("replay console printed no URL: %v\n%s", err, stderr.String())
	}
	url, ok := strings.CutPrefix(strings.TrimSpace(line), "console: ")
	if !ok {
		t.Fatalf("replay console printed %q", line)
	}
	return url
}

// status is the status code of a GET of url, with HTTP basic credentials
// when user is set.
func status(ctx context.Context, t *testing.T, url, user, password string) int {
	t.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if user != "" {
		req.SetBasicAuth(user, password)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	return resp.StatusCode
}
