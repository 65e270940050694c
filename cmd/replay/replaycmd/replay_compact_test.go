package replaycmd

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/tablejournal/tablejournal/cmd/internal/cli"
	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/journal"
)

// replay compact: a dry run takes the snapshot and trims nothing; --apply
// trims; rebuild then loads the recorded snapshot by itself and equals the
// live table, and verify checks it from the snapshot; rebuild --seq before
// the horizon exits 3 naming the snapshot; a snapshot at another sequence
// than --at is refused, and so is a recorded snapshot replaced by another
// file.
func TestReplayCompactCLI(t *testing.T) {
	e := startReplayEnv(t, journal.Config{AllowTrim: true})
	var seqs []uint64
	for i := range 6 {
		seqs = append(seqs, e.Publish(t, fmt.Sprintf("cc%d", i), upsert(fmt.Sprintf("order-%d", i%2), edm.Entity{"n": edm.Int64(int64(i))})).Seq)
	}
	snap := filepath.Join(t.TempDir(), "orders.snap")
	at := fmt.Sprint(seqs[3])
	out, errs, code := e.replay(t, "compact", "--table", "orders", "--snapshot", snap, "--at", at)
	if code != cli.ExitOK || !strings.Contains(out, "would trim 3 commands") || !strings.Contains(out, "taken") {
		t.Fatalf("dry run: exit %d: %s %s", code, out, errs)
	}
	out, errs, code = e.replay(t, "compact", "--table", "orders", "--snapshot", snap, "--at", at, "--apply")
	if code != cli.ExitOK || !strings.Contains(out, "trimmed 3 commands") || !strings.Contains(out, "checked") {
		t.Fatalf("apply: exit %d: %s %s", code, out, errs)
	}
	e.Publish(t, "cc-late", upsert("order-0", edm.Entity{"n": edm.Int64(99)}))
	out, errs, code = e.replay(t, "rebuild", "--table", "orders", "--into", "Rebuilt")
	if code != cli.ExitOK || !strings.Contains(errs, "loading its recorded snapshot "+snap) {
		t.Fatalf("rebuild: exit %d: %s %s", code, out, errs)
	}
	if out, errs, code = e.replay(t, "diff", "--table", "orders", "--against", "Rebuilt"); code != cli.ExitOK {
		t.Fatalf("diff of the live table and its rebuild: exit %d: %s %s", code, out, errs)
	}
	if out, errs, code = e.replay(t, "verify", "--table", "orders"); code != cli.ExitOK || !strings.Contains(errs, "verify: the journal of orders is trimmed") {
		t.Fatalf("verify of the trimmed table: exit %d: %s %s", code, out, errs)
	}
	_, errs, code = e.replay(t, "rebuild", "--table", "orders", "--into", "Early", "--seq", fmt.Sprint(seqs[2]))
	if code != cli.ExitRejected || !strings.Contains(errs, "trimmed:") || !strings.Contains(errs, snap) {
		t.Fatalf("rebuild before the horizon: exit %d: %s", code, errs)
	}
	// Another snapshot in the recorded one's place: rebuild refuses it.
	if _, errs, code := e.replay(t, "snapshot", "--table", "orders", "--out", snap, "--at", fmt.Sprint(seqs[4])); code != cli.ExitOK {
		t.Fatalf("snapshot: exit %d: %s", code, errs)
	}
	_, errs, code = e.replay(t, "rebuild", "--table", "orders", "--into", "Swapped")
	if code == cli.ExitOK || !strings.Contains(errs, "the horizon recorded") {
		t.Fatalf("rebuild from a replaced snapshot: exit %d: %s", code, errs)
	}
	_, errs, code = e.replay(t, "compact", "--table", "orders", "--snapshot", snap, "--at", fmt.Sprint(seqs[5]), "--apply")
	if code != cli.ExitRejected || !strings.Contains(errs, "refused:") {
		t.Fatalf("a snapshot at another sequence than --at: exit %d: %s", code, errs)
	}
}

// replay compact on a journal that denies purges exits 3 and says what to
// do.
func TestReplayCompactDenyPurgeCLI(t *testing.T) {
	e := startReplayEnv(t)
	e.Publish(t, "dp0", upsert("order-1", edm.Entity{"n": edm.Int64(1)}))
	last := e.Publish(t, "dp1", upsert("order-1", edm.Entity{"n": edm.Int64(2)})).Seq
	_, errs, code := e.replay(t, "compact", "--table", "orders", "--snapshot", filepath.Join(t.TempDir(), "o.snap"), "--at", fmt.Sprint(last), "--apply")
	if code != cli.ExitRejected || !strings.Contains(errs, "refused:") || !strings.Contains(errs, "--journal-allow-trim") {
		t.Fatalf("compact of a deny-purge journal: exit %d: %s", code, errs)
	}
}
