package erasure_test

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/journal"
	"github.com/tablejournal/tablejournal/projection"
	"github.com/tablejournal/tablejournal/projection/lost"
	"github.com/tablejournal/tablejournal/projection/projectiontest"
	"github.com/tablejournal/tablejournal/replay/erasure"
	"github.com/tablejournal/tablejournal/replay/replaytest"
	"github.com/tablejournal/tablejournal/wire"
)

// TestEraseBehind: a partition recorded behind the journal (package lost)
// in two records, under two spellings of its table, found, rebuilt and
// found again, and in a third record under the legacy key (the partition
// key in clear). A row erase keeps its entries (they hold no key); a
// partition erase removes every message of them, counts them in the
// receipt and verifies; no file of the two records' streams holds the
// partition key, in clear or as a subject token; the other partition's
// entry stays.
func TestEraseBehind(t *testing.T) {
	e := replaytest.NewEnv(t, replaytest.Stores()[0].Open(t), replaytest.With(replaytest.Erasure), replaytest.WithJournal(journal.Config{AllowMsgDelete: true}))
	ctx := e.Ctx
	table := replaytest.UniqueTable("behind")
	pk, other := "SECRET-BEHIND-3b7e", "other-partition"
	cmds := []*events.Command{upsert("b1", table, pk, "r", "v1"), upsert("b2", table, pk, "s", "v2"), upsert("o1", table, other, "r", "v3")}
	seqs := e.Publish(cmds)
	e.Await(ids(cmds))

	records := map[string]*lost.Record{}
	for _, durable := range []string{"", "other", "legacy"} {
		rec, err := lost.Ensure(ctx, e.JS, "", durable, 1)
		if err != nil {
			t.Fatal(err)
		}
		records[durable] = rec
	}
	def, alt := records[""], records["other"]
	steps := []func() error{
		func() error {
			return def.Add(ctx, wire.BehindPartition{Table: table, PK: pk, AppliedSeq: seqs[0], Cmd: "b1"})
		},
		func() error { _, err := def.Remove(ctx, table, pk, 0); return err },
		func() error {
			return def.Add(ctx, wire.BehindPartition{Table: strings.ToUpper(table), PK: pk, AppliedSeq: seqs[1], Cmd: "b2"})
		},
		func() error {
			return def.Add(ctx, wire.BehindPartition{Table: table, PK: other, AppliedSeq: seqs[2], Cmd: "o1"})
		},
		func() error {
			return alt.Add(ctx, wire.BehindPartition{Table: table, PK: pk, AppliedSeq: seqs[1], Cmd: "b2"})
		},
		func() error {
			kv, err := e.JS.KeyValue(ctx, records["legacy"].Name())
			if err != nil {
				return err
			}
			_, err = kv.Put(ctx, wire.LegacyBehindKey(strings.ToUpper(table), pk), []byte(`{"table":"`+table+`","pk":"`+pk+`"}`))
			return err
		},
	}
	for _, step := range steps {
		if err := step(); err != nil {
			t.Fatal(err)
		}
	}
	partitions := func(rec *lost.Record) []string {
		t.Helper()
		es, err := rec.List(ctx, "")
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range es {
			out = append(out, e.PK)
		}
		return out
	}
	if got := partitions(def); !slices.Equal(got, []string{pk, other}) {
		t.Fatalf("recorded behind before the erase: %v", got)
	}
	// A projector following the default record.
	e.Stop()
	p := e.StartProjector(projection.Config{Journal: journal.Config{AllowMsgDelete: true}, Logger: replaytest.Quiet})
	projectiontest.WaitFor(t, ctx, "the projector loads the record", func() (bool, error) { return p.Stats().Behind.Len() == 2, nil })

	rk := "r"
	rRec, err := e.Eraser.EraseKey(ctx, erasure.Target{Table: table, PK: pk, RK: &rk}, nil)
	if err != nil || !rRec.Verified || rRec.Removed.BehindEntries != 0 {
		t.Fatalf("row erase: %+v, %v", rRec, err)
	}
	for name, rec := range records {
		if got := partitions(rec); !slices.Contains(got, pk) {
			t.Errorf("record %q after a row erase: %v, want the partition kept", name, got)
		}
	}

	plan, err := e.Eraser.PlanErase(ctx, erasure.Target{Table: strings.ToUpper(table), PK: pk})
	if err != nil || plan.Behind != 3 {
		t.Fatalf("plan: %d messages behind, %v; want 3", plan.Behind, err)
	}
	pRec, err := e.Eraser.EraseKey(ctx, erasure.Target{Table: strings.ToUpper(table), PK: pk}, nil)
	if err != nil || !pRec.Verified || pRec.Removed.BehindEntries != 3 {
		t.Fatalf("partition erase: %+v, %v", pRec, err)
	}
	for name, rec := range records {
		if got := partitions(rec); slices.Contains(got, pk) {
			t.Errorf("record %q after the erase: %v", name, got)
		}
	}
	if got := partitions(def); !slices.Equal(got, []string{other}) {
		t.Errorf("the other partition's entry: %v", got)
	}
	projectiontest.WaitFor(t, ctx, "the projector sees the entry go", func() (bool, error) {
		got := p.Stats().Behind.List()
		return len(got) == 1 && got[0].PK == other, nil
	})
	if again, err := e.Eraser.PlanErase(ctx, erasure.Target{Table: table, PK: pk}); err != nil || again.Behind != 0 {
		t.Errorf("plan after the erase: %d messages behind, %v", again.Behind, err)
	}
	// Below the streams: the records' files hold the key in no form
	// (their entries only ever held its hash).
	for _, b := range [][]byte{[]byte(pk), []byte(wire.PKToken(pk))} {
		if got := streamFilesHolding(t, e.Server.Config().Dir, []string{"KV_" + def.Name(), "KV_" + alt.Name()}, b); len(got) != 0 {
			t.Errorf("the records' files still hold %s: %v", b, got)
		}
	}
}

// streamFilesHolding lists the files of the named streams under a server's
// store directory dir that hold b.
func streamFilesHolding(t *testing.T, dir string, streams []string, b []byte) []string {
	t.Helper()
	var found []string
	seen := map[string]bool{}
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		var in string
		for _, s := range streams {
			if strings.Contains(filepath.ToSlash(p), "/streams/"+s+"/") {
				in = s
			}
		}
		if in == "" {
			return nil
		}
		seen[in] = true
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if bytes.Contains(data, b) {
			found = append(found, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range streams {
		if !seen[s] {
			t.Fatalf("no files of stream %s under %s", s, dir)
		}
	}
	return found
}
