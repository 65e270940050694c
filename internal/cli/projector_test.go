package cli

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
)

// TestProjectorUsage: ownership and replica flags that cannot work are
// usage errors that say what is wrong, before anything starts.
func TestProjectorUsage(t *testing.T) {
	tests := []struct {
		name string
		env  string // TABLEJOURNAL_REPLICAS
		args []string
		want string
	}{
		{"replicas on the embedded server", "", []string{"--replicas", "3"}, "needs a JetStream cluster"},
		{"replicas from the environment", "3", nil, "needs a JetStream cluster"},
		{"replicas not a number", "three", nil, "TABLEJOURNAL_REPLICAS"},
		{"too many replicas", "", []string{"--replicas", "7", "--nats", "nats://127.0.0.1:1"}, "replicas 7"},
		{"lease below two seconds", "", []string{"--lease-ttl", "1500ms"}, "lease ttl"},
		{"instance id with a dot", "", []string{"--instance-id", "a.b"}, "instance id"},
		{"instance id with static shards", "", []string{"--shards", "1", "--instance-id", "x"}, "static"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(EnvReplicas, tt.env)
			var stdout, stderr bytes.Buffer
			err := Projector(context.Background(), append([]string{"--data", t.TempDir()}, tt.args...), &stdout, &stderr)
			if !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want a usage error about %q", err, tt.want)
			}
		})
	}
}
