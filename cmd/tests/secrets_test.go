package cli_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/tablejournal/tablejournal/cmd/internal/cli"
	"github.com/tablejournal/tablejournal/cmd/projector/projectorcmd"
	"github.com/tablejournal/tablejournal/cmd/replay/replaycmd"
	"github.com/tablejournal/tablejournal/cmd/writer/writercmd"
)

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
		run  cli.Command
		args []string
	}{
		{"projector", projectorcmd.Run, []string{"--data", t.TempDir()}},
		{"writer", writercmd.Run, []string{"upsert", "--table", "orders", "--pk", "p", "--rk", "r", "--timeout", "2s"}},
		{"replay", replaycmd.Run, []string{"blame", "--cmd", "c1", "--data", t.TempDir()}},
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
						t.Setenv(cli.EnvNATS, list)
					} else {
						t.Setenv(cli.EnvNATS, "")
						args = append(args, "--nats", list)
					}
					t.Setenv(cli.EnvNATSPassword, "pw-flag")
					var stdout, stderr bytes.Buffer
					code := cli.Exit(c.run(context.Background(), args, cli.IO{Stdout: &stdout, Stderr: &stderr}), &stderr)
					if code != cli.ExitFailure {
						t.Errorf("%s: exit %d, want %d: %s", list, code, cli.ExitFailure, stderr.String())
					}
					if !strings.Contains(stderr.String(), cli.Redacted) {
						t.Errorf("%s: the error does not name the server redacted: %s", list, stderr.String())
					}
					check(t, "the error", stdout.String()+stderr.String())

					t.Setenv(cli.EnvNATS, list)
					stdout.Reset()
					stderr.Reset()
					help := []string{"--help"}
					if c.name != "projector" {
						help = []string{c.args[0], "--help"}
					}
					if code := cli.Exit(c.run(context.Background(), help, cli.IO{Stdout: &stdout, Stderr: &stderr}), &stderr); code != cli.ExitOK {
						t.Errorf("--help: exit %d: %s", code, stderr.String())
					}
					check(t, "--help", stdout.String()+stderr.String())
				}
			}
		})
	}
}
