// Package node holds the Node.js version of the orders example
// (orders.cjs) and the test that runs it.
package node

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/tablejournal/tablejournal/internal/azurite"
	"github.com/tablejournal/tablejournal/journal/journaltest"
	"github.com/tablejournal/tablejournal/tablejournaltest"
	"github.com/tablejournal/tablejournal/wire"
)

var az *azurite.Server

func TestMain(m *testing.M) { os.Exit(azurite.Run(m, &az)) }

// nodeModules finds the packages `make node-example` installs:
// .tools/node-example/node_modules in the repository root.
func nodeModules(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		p := filepath.Join(dir, ".tools", "node-example", "node_modules")
		if _, err := os.Stat(filepath.Join(p, "nats")); err == nil {
			return p
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("node packages not found: run `make node-example` in the repository root")
		}
		dir = parent
	}
}

// runNode runs node with args and the packages in mods, and returns what
// it printed; it fails the test if node fails.
func runNode(ctx context.Context, t *testing.T, mods string, args ...string) []byte {
	t.Helper()
	cmd := exec.CommandContext(ctx, "node", args...)
	cmd.Env = append(os.Environ(), "NODE_PATH="+mods)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node %v: %v\n%s\n%s", args, err, out, stderr.Bytes())
	}
	return out
}

// TestNodeOrders runs orders.cjs with node against a pipeline on Azurite
// and checks every step it reports.
func TestNodeOrders(t *testing.T) {
	mods := nodeModules(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	p := tablejournaltest.New(t, az.ConnectionString())
	customer := fmt.Sprintf("customer-%d", time.Now().UnixNano())
	out := runNode(ctx, t, mods, "orders.cjs", p.URL(), az.ConnectionString(), customer)
	var got []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		var step map[string]any
		if err := json.Unmarshal(sc.Bytes(), &step); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		got = append(got, step)
	}
	want := []map[string]any{
		{"step": "create", "status": "applied", "version": 0.0},
		{"step": "read", "rk": "order-7", "version": 0.0, "status": "new", "total": 12.5},
		{"step": "update", "status": "applied", "version": 1.0},
		{"step": "stale", "status": "rejected", "code": "version-mismatch"},
		{"step": "read", "rk": "order-7", "version": 1.0, "status": "shipped", "total": 12.5},
		{"step": "list", "rows": []any{"order-7"}},
		{"step": "feed", "changes": []any{"c:order-7:v0:new", "u:order-7:v1:shipped"}},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("node printed:\n%s\nwant:\n%v", out, want)
	}
	// The example's table is "Orders": its commands are on the lower-case
	// subject, the one every client publishes the table's commands to.
	if subs := journalSubjects(ctx, t, p.URL()); len(subs) != 1 || subs[0] != "orders" {
		t.Fatalf("the commands are stored under the table tokens %v, want [orders]", subs)
	}
}

// journalSubjects returns the table tokens of the journal's stored subjects.
func journalSubjects(ctx context.Context, t *testing.T, url string) []string {
	t.Helper()
	_, js := journaltest.Connect(t, url)
	s, err := js.Stream(ctx, wire.JournalStream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx, jetstream.WithSubjectFilter(wire.JournalPrefix+".>"))
	if err != nil {
		t.Fatal(err)
	}
	var tokens []string
	for sub := range info.State.Subjects {
		table, _, _, err := wire.ParseJournalSubject(sub)
		if err != nil {
			t.Fatalf("stored subject %q: %v", sub, err)
		}
		if !slices.Contains(tokens, table) {
			tokens = append(tokens, table)
		}
	}
	return tokens
}
