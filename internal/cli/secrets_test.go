package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

func TestRedactURLs(t *testing.T) {
	tests := []struct{ in, want string }{
		{"nats://127.0.0.1:4222", "nats://127.0.0.1:4222"},
		{"nats://u:secret1@h1,nats://u:secret2@h2", "nats://u:xxxxx@h1,nats://u:xxxxx@h2"},
		{"nats://u:secret1@h1, tls://u:secret2@h2:4443", "nats://u:xxxxx@h1,tls://u:xxxxx@h2:4443"},
		{"u:secret@host", "u:xxxxx@host"},
		{"u:secret@host:4222,h2", "u:xxxxx@host:4222,h2"},
		{"nats://t0ken@host", "nats://xxxxx@host"},
		{"t0ken@host", "xxxxx@host"},
		{"nats://u:se%zzcret@host", "nats://xxxxx@host"}, // does not parse
		{"nats://u:secret@host:99999999", "nats://u:xxxxx@host:99999999"},
	}
	for _, tt := range tests {
		if got := redactURLs(tt.in); got != tt.want {
			t.Errorf("redactURLs(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestCommandsHideSecrets: every command, given NATS URLs with credentials
// by flag or environment, shows none of them in errors or --help.
func TestCommandsHideSecrets(t *testing.T) {
	// Not parallel: it sets environment variables.
	secrets := []string{"secret1", "secret2", "secret3", "s3cr3tt0ken", "se%zzcret", "pw-flag"}
	lists := []string{
		"nats://u:secret1@127.0.0.1:1,nats://u:secret2@127.0.0.1:2",
		"u:secret3@127.0.0.1:1",
		"nats://s3cr3tt0ken@127.0.0.1:1",
		"nats://u:se%zzcret@127.0.0.1:1",                  // does not parse
		"nats://u:secret1@127.0.0.1:99999999,u:secret2@h", // bad port, echoed by the client
	}
	commands := []struct {
		name string
		run  Command
		args []string
	}{
		{"projector", Projector, []string{"--data", t.TempDir()}},
		{"writer", Writer, []string{"upsert", "--table", "orders", "--pk", "p", "--rk", "r", "--timeout", "2s"}},
		{"replay", Replay, []string{"blame", "--cmd", "c1", "--data", t.TempDir()}},
	}
	check := func(t *testing.T, what, out string) {
		t.Helper()
		for _, s := range secrets {
			if strings.Contains(out, s) {
				t.Errorf("%s shows the secret %q:\n%s", what, s, out)
			}
		}
	}
	for _, c := range commands {
		t.Run(c.name, func(t *testing.T) {
			for _, list := range lists {
				for _, viaEnv := range []bool{false, true} {
					args := append([]string(nil), c.args...)
					if viaEnv {
						t.Setenv(EnvNATS, list)
					} else {
						t.Setenv(EnvNATS, "")
						args = append(args, "--nats", list)
					}
					t.Setenv(EnvNATSPassword, "pw-flag")
					var stdout, stderr bytes.Buffer
					code := Exit(c.run(context.Background(), args, IO{Stdout: &stdout, Stderr: &stderr}), &stderr)
					if code != ExitFailure {
						t.Errorf("%s: exit %d, want %d: %s", list, code, ExitFailure, stderr.String())
					}
					if !strings.Contains(stderr.String(), redacted) {
						t.Errorf("%s: the error does not name the server redacted: %s", list, stderr.String())
					}
					check(t, "the error", stdout.String()+stderr.String())

					t.Setenv(EnvNATS, list)
					stdout.Reset()
					stderr.Reset()
					help := []string{"--help"}
					if c.name != "projector" {
						help = []string{c.args[0], "--help"}
					}
					if code := Exit(c.run(context.Background(), help, IO{Stdout: &stdout, Stderr: &stderr}), &stderr); code != ExitOK {
						t.Errorf("--help: exit %d: %s", code, stderr.String())
					}
					check(t, "--help", stdout.String()+stderr.String())
				}
			}
		})
	}
}
