package writercmd

import (
	"strings"
	"testing"

	"github.com/tablejournal/tablejournal/cmd/internal/cli"
)

// Re-publishing an ID with the same body exits 0 as "already in the
// journal"; with another body it exits 3 saying so: the new data would be
// dropped by JetStream's deduplication.
func TestWriterRepublishDifferentBody(t *testing.T) {
	t.Parallel()
	e := startWriterEnv(t, false)
	args := []string{"upsert", "--table", "orders", "--pk", "p", "--rk", "r", "--id", "same-id", "--set", "status=new"}
	if out, errs, code := e.run(t, args...); code != cli.ExitOK {
		t.Fatalf("first: exit %d: %s%s", code, out, errs)
	}
	if out, errs, code := e.run(t, args...); code != cli.ExitOK || !strings.Contains(out, "already in the journal") {
		t.Fatalf("the same again: exit %d: %s%s", code, out, errs)
	}
	other := append(args[:len(args)-1:len(args)-1], "status=cancelled")
	_, errs, code := e.run(t, other...)
	if code != cli.ExitRejected || !strings.Contains(errs, "command ID same-id is already in the journal with a different body (seq 1)") {
		t.Fatalf("another body: exit %d: %s", code, errs)
	}
}
