package adopt

import (
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"testing"

	"github.com/tablejournal/tablejournal/events"
)

// TestIDs pins the command IDs of SPEC §6 (adopt): computed here from the
// SPEC's words, they must equal the package's, be valid command IDs, and
// differ whenever any field differs, including by moving bytes between
// fields.
func TestIDs(t *testing.T) {
	spec := func(fields ...string) string {
		h := sha256.New()
		for _, f := range fields {
			h.Write(binary.LittleEndian.AppendUint64(nil, uint64(len(f))))
			h.Write([]byte(f))
		}
		return "adopt-" + hex.EncodeToString(h.Sum(nil)[:20])
	}
	cases := []struct {
		got, want string
	}{
		{UpsertID("legacy", "orders", "c1", "o1", `W/"datetime'2026-11-29T00%3A00%3A00.1234567Z'"`), spec("upsert", "legacy", "orders", "c1", "o1", `W/"datetime'2026-11-29T00%3A00%3A00.1234567Z'"`)},
		{UpsertID("legacy", "orders", "", "", ""), spec("upsert", "legacy", "orders", "", "", "")},
		{DeleteID("legacy", "orders", "c1", "o1", "adopt-x"), spec("delete", "legacy", "orders", "c1", "o1", "adopt-x")},
	}
	seen := map[string]bool{}
	for _, c := range cases {
		if c.got != c.want {
			t.Errorf("ID %s, SPEC says %s", c.got, c.want)
		}
		cmd := events.Command{ID: c.got, Table: "orders", Ops: []events.RowOp{{Op: events.OpDelete}}}
		if err := cmd.Validate(); err != nil {
			t.Errorf("ID %s: %v", c.got, err)
		}
		seen[c.got] = true
	}
	for _, id := range []string{UpsertID("legacy", "orders", "c1o", "1", "e"), UpsertID("legacy", "orders", "c1", "o1", "e2"), UpsertID("legacy2", "orders", "c1", "o1", "e")} {
		if seen[id] {
			t.Errorf("two rows share ID %s", id)
		}
		seen[id] = true
	}
}
