package cli_test

import (
	"bytes"
	"context"
	"fmt"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/tablejournal/tablejournal/cmd/internal/cli"
	"github.com/tablejournal/tablejournal/cmd/internal/cli/clitest"
	"github.com/tablejournal/tablejournal/cmd/projector/projectorcmd"
	"github.com/tablejournal/tablejournal/cmd/replay/replaycmd"
	"github.com/tablejournal/tablejournal/internal/azurite"
	"github.com/tablejournal/tablejournal/journal/journaltest"
	"github.com/tablejournal/tablejournal/projection/projectiontest"
)

// TestSignedIn runs the commands signed in with Microsoft Entra ID
// against Azurite in OAuth mode (HTTPS with a certificate trusted through
// --ca-file, an account whose key no command is given): the projector
// applies a command published by the writer, replay reads the row, writes
// a snapshot to a blob by its bare URL and loads it into a new table. The
// credential is the default chain, narrowed to the managed identity
// source and pointed at an identity endpoint on loopback. No token shows
// in any output. Then the failures a user meets: signing in over http://,
// a mode the location cannot take, no identity at all.
func TestSignedIn(t *testing.T) {
	// Not parallel: it sets environment variables.
	// The starts have their own deadlines (60 s each).
	srv, err := azurite.StartOAuth(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Stop() })
	blob, err := srv.BlobEndpoint(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	ctx := journaltest.Context(t, 3*time.Minute)
	cred := &azurite.Credential{}
	// A user-assigned identity of its own (AZURE_CLIENT_ID): managed
	// identity tokens are cached per process, and this test must see
	// its own minted.
	ep, err := azurite.StartIdentityEndpoint(cred, uuid.NewString())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ep.Close() })
	azurite.Confine(t, ep.Env())
	for _, env := range []string{cli.EnvTables, cli.EnvAuth, cli.EnvCAFile, "SSL_CERT_FILE"} {
		t.Setenv(env, "")
	}
	signedIn := []string{"--tables", srv.Endpoint(), "--ca-file", srv.CAFile()}

	pctx, stop := context.WithCancel(context.Background())
	defer stop()
	stderr := &projectiontest.SyncBuffer{}
	exited := make(chan error, 1)
	go func() {
		args := append([]string{"--data", t.TempDir(), "--nats-listen", "127.0.0.1:-1", "--no-fsync"}, signedIn...)
		exited <- projectorcmd.Run(pctx, args, cli.IO{Stdout: &bytes.Buffer{}, Stderr: stderr})
	}()
	var url string
	projectiontest.WaitFor(t, ctx, "the projector's startup line", func() (bool, error) {
		select {
		case err := <-exited:
			return false, fmt.Errorf("projector exited: %v\n%s", err, stderr)
		default:
		}
		if m := embeddedURL.FindStringSubmatch(stderr.String()); m != nil {
			url = m[1]
		}
		return url != "", nil
	})
	if !regexp.MustCompile(`auth=login`).MatchString(stderr.String()) {
		t.Errorf("the startup line does not say the projector signs in:\n%s", stderr)
	}
	var outputs []string
	out, errs, code := runWriter(t, "upsert", "--table", "orders", "--pk", "p", "--rk", "r", "--id", "signed-in",
		"--set", "n:int64=7", "--wait", "--nats", url)
	outputs = append(outputs, out, errs)
	if code != cli.ExitOK || !strings.Contains(out, `applied: row "r" version 0 (upsert)`) {
		t.Fatalf("writer: exit %d, stdout %q, stderr %q\nprojector:\n%s", code, out, errs, stderr)
	}

	replay := func(args ...string) (string, string, int) {
		full := append(append([]string{args[0], "--nats", url}, signedIn...), args[1:]...)
		out, errs, code := clitest.Run(ctx, replaycmd.Run, full, cli.IO{})
		outputs = append(outputs, out, errs)
		return out, errs, code
	}
	if out, errs, code := replay("asof", "--table", "orders", "--pk", "p", "--rk", "r"); code != cli.ExitOK || !strings.Contains(out, "upsert by signed-in at seq 1") {
		t.Fatalf("replay asof signed in: exit %d\n%s%s", code, out, errs)
	}
	snap := blob + "/snapshots/orders.tjsnap"
	if out, errs, code := replay("snapshot", "--table", "orders", "--out", snap); code != cli.ExitOK {
		t.Fatalf("replay snapshot to %s: exit %d\n%s%s", snap, code, out, errs)
	}
	if out, errs, code := replay("load", "--in", snap, "--into", "ordersback"); code != cli.ExitOK {
		t.Fatalf("replay load from %s: exit %d\n%s%s", snap, code, out, errs)
	}
	if out, errs, code := replay("asof", "--table", "ordersback", "--pk", "p", "--rk", "r"); code != cli.ExitOK || !strings.Contains(out, "version 0") {
		t.Fatalf("replay asof of the loaded table: exit %d\n%s%s", code, out, errs)
	}

	stop()
	if err := <-exited; err != nil {
		t.Fatalf("projector: %v\n%s", err, stderr)
	}
	outputs = append(outputs, stderr.String())
	if len(cred.Tokens()) == 0 {
		t.Fatal("the identity endpoint minted no token: nothing signed in")
	}
	for _, tok := range cred.Tokens() {
		for _, o := range outputs {
			if strings.Contains(o, tok) {
				t.Fatalf("a token shows in the output:\n%s", o)
			}
		}
	}

	// Failures, each with what to do.
	for _, tc := range []struct {
		name string
		args []string
		env  map[string]string
		code int
		says string
	}{
		{"login over http", []string{"--tables", "http://127.0.0.1:1/signedin", "--auth", "login"}, nil, cli.ExitFailure, "plain http, where a bearer token would travel in the clear"},
		{"no such mode", []string{"--tables", srv.Endpoint(), "--auth", "token"}, nil, cli.ExitUsage, "want key, sas or login"},
		{"key without one", []string{"--tables", srv.Endpoint(), "--auth", "key"}, nil, cli.ExitFailure, "--auth key needs an account key"},
		{"no identity", signedIn, map[string]string{"AZURE_TOKEN_CREDENTIALS": "EnvironmentCredential"}, cli.ExitFailure, "no Microsoft Entra identity found"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.env != nil {
				azurite.Confine(t, tc.env)
			}
			args := append([]string{"asof", "--table", "orders", "--pk", "p", "--rk", "r", "--nats", url}, tc.args...)
			_, errs, code := clitest.Run(ctx, replaycmd.Run, args, cli.IO{})
			if code != tc.code || !strings.Contains(errs, tc.says) {
				t.Fatalf("exit %d, stderr:\n%s\nwant exit %d saying %q", code, errs, tc.code, tc.says)
			}
			t.Logf("%s", errs)
		})
	}
}
