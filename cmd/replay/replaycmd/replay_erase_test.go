package replaycmd

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/tablejournal/tablejournal/cmd/internal/cli"
	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/journal"
)

// TestReplayEraseCLI: the dry run counts what an erase will remove and
// removes nothing; --apply --json prints a verified receipt; history and
// asof of the erased row then exit 3 naming the erase; on a deny-delete
// journal the erase is refused.
func TestReplayEraseCLI(t *testing.T) {
	e := startReplayEnv(t, journal.Config{AllowMsgDelete: true})
	e.Publish(t, "c1", upsert("order-7", edm.Entity{"name": edm.String("Ada")}))
	e.Publish(t, "c2", upsert("order-7", edm.Entity{"name": edm.String("Ada L.")}))

	out, errs, code := e.replay(t, "erase", "--table", "orders", "--pk", "customer-42", "--json")
	var plan erasePlanView
	if code != 0 || json.Unmarshal([]byte(out), &plan) != nil || !plan.DryRun || plan.JournalMsgs != 2 || plan.TableRows != 2 || plan.Outcomes != 2 {
		t.Fatalf("dry run: code %d, %s %s", code, out, errs)
	}
	out, errs, code = e.replay(t, "erase", "--table", "orders", "--pk", "customer-42", "--apply", "--json")
	var rec struct {
		EraseID  string `json:"eraseId"`
		EraseSeq uint64 `json:"eraseSeq"`
		Verified bool   `json:"verified"`
		Removed  struct {
			JournalMsgs int `json:"journalMessages"`
		} `json:"removed"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &rec) != nil || !rec.Verified || rec.Removed.JournalMsgs != 2 {
		t.Fatalf("apply: code %d, %s %s", code, out, errs)
	}
	for _, args := range [][]string{
		{"history", "--table", "orders", "--pk", "customer-42", "--rk", "order-7"},
		{"asof", "--table", "orders", "--pk", "customer-42", "--rk", "order-7", "--seq", "1"},
	} {
		_, errs, code := e.replay(t, args...)
		if code != cli.ExitRejected || !strings.Contains(errs, "erased by command "+rec.EraseID) {
			t.Errorf("%s of the erased row: exit %d, %s", args[0], code, errs)
		}
	}
	_, errs, code = e.replay(t, "undo", "--cmd", rec.EraseID)
	if code != cli.ExitRejected || !strings.Contains(errs, "cannot be undone") {
		t.Errorf("undo of the erase: exit %d, %s", code, errs)
	}
}

func TestReplayEraseDenyDelete(t *testing.T) {
	e := startReplayEnv(t)
	e.Publish(t, "c1", upsert("order-7", edm.Entity{"name": edm.String("Ada")}))
	_, errs, code := e.replay(t, "erase", "--table", "orders", "--pk", "customer-42", "--apply")
	if code != cli.ExitFailure || !strings.Contains(errs, "move --new-stream NEWNAME --allow-msg-delete") {
		t.Fatalf("erase on a deny-delete journal: exit %d, %s", code, errs)
	}
}

// TestSeqRanges: the receipt's text writes sequences as runs, and past
// maxSeqRanges runs says how many more there are.
func TestSeqRanges(t *testing.T) {
	interleaved := make([]uint64, 100_000)
	for i := range interleaved {
		interleaved[i] = uint64(2*i + 1)
	}
	consecutive := make([]uint64, 100_000)
	for i := range consecutive {
		consecutive[i] = uint64(i + 5)
	}
	for _, c := range []struct {
		name string
		seqs []uint64
		want string
	}{
		{"none", nil, ""},
		{"one", []uint64{7}, "7"},
		{"runs and singles", []uint64{3, 5, 6, 7, 8, 9, 12}, "3, 5-9, 12"},
		{"unsorted with a repeat", []uint64{9, 5, 6, 6, 3}, "3, 5-6, 9"},
		{"100,000 consecutive", consecutive, "5-100004"},
		{"100,000 interleaved", interleaved, "1, 3, 5, 7, 9, 11, 13, 15, 17, 19, 21, 23, 25, 27, 29, 31, 33, 35, 37, 39 and 99980 more ranges (--json lists every sequence)"},
	} {
		if got := seqRanges(c.seqs); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}
