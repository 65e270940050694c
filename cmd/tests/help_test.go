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

// TestHelpHidesSecrets: a NATS URL with a password in the environment is the
// --nats default, and no command's --help may print the password.
func TestHelpHidesSecrets(t *testing.T) {
	// Not parallel: it sets environment variables.
	t.Setenv(cli.EnvNATS, "nats://bob:hunter2@nats.example:4222")
	t.Setenv(cli.EnvNATSPassword, "s3cret-pw")
	tests := []struct {
		name string
		run  cli.Command
		args []string
	}{
		{"projector", projectorcmd.Run, []string{"--help"}},
		{"replay", replaycmd.Run, []string{"asof", "--help"}},
		{"writer", writercmd.Run, []string{"upsert", "--help"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			err := tt.run(context.Background(), tt.args, cli.IO{Stdout: &stdout, Stderr: &stderr})
			if code := cli.Exit(err, &stderr); code != cli.ExitOK {
				t.Fatalf("exit %d: %s", code, stderr.String())
			}
			out := stdout.String() + stderr.String()
			if !strings.Contains(out, "nats://bob:xxxxx@nats.example:4222") {
				t.Errorf("help does not show the redacted default URL:\n%s", out)
			}
			for _, secret := range []string{"hunter2", "s3cret-pw"} {
				if strings.Contains(out, secret) {
					t.Errorf("help shows the secret %q", secret)
				}
			}
		})
	}
}
