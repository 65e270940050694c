package projectorcmd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/tablejournal/tablejournal/cmd/internal/cli"
	"github.com/tablejournal/tablejournal/journal"
	"github.com/tablejournal/tablejournal/projection"
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
		{"negative sweep interval", "", []string{"--sweep-interval", "-1s"}, "--sweep-interval -1s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(EnvReplicas, tt.env)
			var stdout, stderr bytes.Buffer
			err := Run(context.Background(), append([]string{"--data", t.TempDir()}, tt.args...), cli.IO{Stdout: &stdout, Stderr: &stderr})
			if !errors.Is(err, cli.ErrUsage) || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("err = %v, want a usage error about %q", err, tt.want)
			}
		})
	}
}

// TestProjectorNATSFromEnv: a projector that cannot reach the server of
// $TABLEJOURNAL_NATS says that the variable chose it over the embedded
// server; given by --nats, it says nothing of the variable.
func TestProjectorNATSFromEnv(t *testing.T) {
	const down = "nats://127.0.0.1:1" // loopback, nothing listens
	tests := []struct {
		name    string
		env     string
		args    []string
		mention bool
	}{
		{"from the environment", down, nil, true},
		{"from the flag", "", []string{"--nats", down}, false},
		{"the flag over the environment", "nats://127.0.0.1:2", []string{"--nats", down}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(cli.EnvNATS, tt.env)
			var stdout, stderr bytes.Buffer
			args := append([]string{"--data", t.TempDir(), "--tables", "sqlite:" + t.TempDir() + "/t.db"}, tt.args...)
			err := Run(context.Background(), args, cli.IO{Stdout: &stdout, Stderr: &stderr})
			if err == nil || !strings.Contains(err.Error(), "connect to NATS at "+down) {
				t.Fatalf("err = %v, want a connection error", err)
			}
			says := strings.Contains(err.Error(), "the URL is "+cli.EnvNATS+"'s") && strings.Contains(err.Error(), "unset "+cli.EnvNATS+" to run the embedded one")
			if says != tt.mention {
				t.Fatalf("err = %v: mentions %s: %v, want %v", err, cli.EnvNATS, says, tt.mention)
			}
		})
	}
}

// TestTransientJetStream: the projector retries its start while JetStream
// is briefly unavailable (503 during a cluster's leader election, timeouts)
// and stops at once when it refuses.
func TestTransientJetStream(t *testing.T) {
	tests := []struct {
		err  error
		want bool
	}{
		{&jetstream.APIError{Code: 503, ErrorCode: 10008, Description: "JetStream system temporarily unavailable"}, true},
		{fmt.Errorf("create stream JOURNAL: %w", &jetstream.APIError{Code: 503}), true},
		{fmt.Errorf("consumer: %w", context.DeadlineExceeded), true},
		{nats.ErrNoResponders, true},
		{&jetstream.APIError{Code: 500, ErrorCode: 10074, Description: "replicas > 1 not supported in non-clustered mode"}, false},
		{fmt.Errorf("%w: stream JOURNAL has 1 replicas", journal.ErrReplicasMismatch), false},
	}
	for _, tt := range tests {
		if got := transientJetStream(tt.err); got != tt.want {
			t.Errorf("transientJetStream(%v) = %v, want %v", tt.err, got, tt.want)
		}
	}
}

// TestSweepIntervalFlag: --sweep-interval 0 turns the sweep off (a
// negative projection.Config.SweepInterval), unset it is the default, and
// a duration given is kept.
func TestSweepIntervalFlag(t *testing.T) {
	for _, tt := range []struct {
		args []string
		want time.Duration
	}{
		{nil, projection.DefaultSweepInterval},
		{[]string{"--sweep-interval", "0"}, -1},
		{[]string{"--sweep-interval", "30s"}, 30 * time.Second},
	} {
		var c projectCmd
		var out bytes.Buffer
		if _, err := c.parse(append([]string{"--data", t.TempDir()}, tt.args...), cli.IO{Stdout: &out, Stderr: &out}); err != nil {
			t.Fatalf("%v: %v", tt.args, err)
		}
		if c.cfg.SweepInterval != tt.want {
			t.Errorf("%v: SweepInterval %v, want %v", tt.args, c.cfg.SweepInterval, tt.want)
		}
	}
}
