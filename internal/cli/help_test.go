package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"
)

// TestHelpHidesSecrets: a NATS URL with a password in the environment is the
// --nats default, and no command's --help may print the password.
func TestHelpHidesSecrets(t *testing.T) {
	// Not parallel: it sets environment variables.
	t.Setenv(EnvNATS, "nats://bob:hunter2@nats.example:4222")
	t.Setenv(EnvNATSPassword, "s3cret-pw")
	tests := []struct {
		name string
		run  Command
		args []string
	}{
		{"projector", Projector, []string{"--help"}},
		{"replay", Replay, []string{"asof", "--help"}},
		{"writer", Writer, []string{"upsert", "--help"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			err := tt.run(context.Background(), tt.args, IO{Stdout: &stdout, Stderr: &stderr})
			if code := Exit(err, &stderr); code != ExitOK {
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
