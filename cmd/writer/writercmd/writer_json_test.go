package writercmd

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tablejournal/tablejournal/cmd/internal/cli"
	"github.com/tablejournal/tablejournal/events/rules"
)

// TestWriterJSONErrors: with --json, a usage error or an invalid command
// prints one JSON error object on stdout, as apply --json does per line.
func TestWriterJSONErrors(t *testing.T) {
	t.Parallel()
	key := []string{"--table", "orders", "--pk", "p", "--rk", "r"}
	invalidFile := filepath.Join(t.TempDir(), "bad.jsonl")
	if err := os.WriteFile(invalidFile, []byte(`{"id":"x","table":"ab","pk":"p","ops":[]}`+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		args  []string
		code  int
		usage bool
		rule  rules.Rule
		id    string
	}{
		{"unknown flag after --json", append([]string{"upsert", "--json", "--frob"}, key...), cli.ExitUsage, true, "", ""},
		{"unknown flag before --json", append([]string{"upsert", "--frob", "--json"}, key...), cli.ExitUsage, true, "", ""},
		{"missing --rk", []string{"upsert", "--json", "--table", "orders", "--pk", "p"}, cli.ExitUsage, true, "", ""},
		{"no operation", []string{"--json"}, cli.ExitUsage, true, "", ""},
		{"invalid command", append([]string{"upsert", "--json", "--id", "c-1", "--table", "ab"}, "--pk", "p", "--rk", "r"), cli.ExitRejected, false, rules.TableName, "c-1"},
		{"not connected", append([]string{"upsert", "--json", "--id", "c-2"}, key...), cli.ExitFailure, false, "", "c-2"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			stdout, stderr, code := runWriter(t, append(tt.args, "--nats", unreachableNATS)...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d; stderr %q", code, tt.code, stderr)
			}
			if strings.Count(stdout, "\n") != 1 {
				t.Fatalf("stdout %q: want one JSON line", stdout)
			}
			var got struct {
				ID    string `json:"id"`
				Error string `json:"error"`
				Rule  string `json:"rule"`
				Usage bool   `json:"usage"`
			}
			if err := json.Unmarshal([]byte(stdout), &got); err != nil {
				t.Fatalf("stdout %q: %v", stdout, err)
			}
			if got.Error == "" || got.Usage != tt.usage || got.Rule != string(tt.rule) || got.ID != tt.id {
				t.Errorf("stdout %s: want usage %v, rule %q, id %q and the error", stdout, tt.usage, tt.rule, tt.id)
			}
		})
	}
	t.Run("apply reports per line, not twice", func(t *testing.T) {
		t.Parallel()
		e := startWriterEnv(t, false)
		stdout, stderr, code := e.run(t, "apply", "--json", invalidFile)
		if code != cli.ExitRejected || strings.Count(stdout, "\n") != 1 || !strings.Contains(stdout, `"line":1`) {
			t.Fatalf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
		}
	})
}
