package writercmd

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/tablejournal/tablejournal/cmd/internal/cli/clitest"
)

// TestReadmeExampleApplies publishes the example command of
// docs/publishing.md exactly as written (its first JSON block, folded onto
// one line) through `writer apply --wait` against a real projector: a user
// who copies it must see it applied, not rejected.
func TestReadmeExampleApplies(t *testing.T) {
	t.Parallel()
	const doc = "../../../docs/publishing.md"
	text, err := os.ReadFile(doc)
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(text), "```json\n")
	if !ok {
		t.Fatalf("%s has no ```json block", doc)
	}
	block, _, ok := strings.Cut(rest, "```")
	if !ok {
		t.Fatalf("%s: the ```json block does not end", doc)
	}
	var line bytes.Buffer
	if err := json.Compact(&line, []byte(block)); err != nil {
		t.Fatalf("%s: the example is not JSON: %v", doc, err)
	}

	e := startWriterEnv(t, true)
	stdout, stderr, code := e.run(t, "apply", "--wait", "--json", clitest.CommandsFile(t, line.String()))
	if code != 0 {
		t.Fatalf("exit %d, want 0; stdout %q stderr %q", code, stdout, stderr)
	}
	out := applyOutput(t, stdout)
	if got := out[1].Outcome; got == nil || got.Status != "applied" {
		t.Fatalf("outcome %+v, want applied; stdout %q", got, stdout)
	}
}
