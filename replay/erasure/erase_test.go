package erasure_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/journal"
	"github.com/tablejournal/tablejournal/journal/journaltest"
	"github.com/tablejournal/tablejournal/journal/outcomes"
	"github.com/tablejournal/tablejournal/replay"
	"github.com/tablejournal/tablejournal/replay/erasure"
	"github.com/tablejournal/tablejournal/replay/rebuild"
	"github.com/tablejournal/tablejournal/replay/replaytest"
	"github.com/tablejournal/tablejournal/replay/snapshot"
	"github.com/tablejournal/tablejournal/store"
	"github.com/tablejournal/tablejournal/wire"
)

// tableHolding lists the stored rows of table whose String values hold
// secret.
func tableHolding(t *testing.T, ctx context.Context, st store.Store, table string, secret []byte) []string {
	t.Helper()
	es, err := store.Collect(ctx, st, table, store.Query{AllPartitions: true})
	if err != nil {
		t.Fatal(err)
	}
	var found []string
	for _, e := range es {
		for _, v := range e.Props {
			if v.Type == edm.TypeString && bytes.Contains([]byte(v.Str), secret) {
				found = append(found, e.PK+"/"+e.RK)
			}
		}
	}
	return found
}

func upsert(id, table, pk string, kv ...string) *events.Command {
	c := &events.Command{ID: id, Table: table, PK: pk}
	for i := 0; i < len(kv); i += 2 {
		c.Ops = append(c.Ops, events.RowOp{Op: events.OpUpsert, RK: kv[i], Entity: edm.Entity{"v": edm.String(kv[i+1])}})
	}
	return c
}

// TestEraseEverywhere erases a partition and a row while the projector
// applies traffic to other partitions: afterwards no JetStream message,
// change event, outcome or table row holds the erased values, what else a
// row erase's commands held stays, the receipt says what went, a rebuild
// of the journal with its holes equals the live table, and time travel of
// the erased keys answers ErrErased.
func TestEraseEverywhere(t *testing.T) {
	for _, b := range replaytest.Stores() {
		t.Run(b.Name, func(t *testing.T) {
			e := replaytest.NewEnv(t, b.Open(t), replaytest.With(replaytest.History|replaytest.Rebuild|replaytest.Snapshot|replaytest.Erasure), replaytest.WithJournal(journal.Config{AllowMsgDelete: true}))
			ctx := e.Ctx
			table := replaytest.UniqueTable("erase")
			secretP, secretR := []byte("SECRET-PARTITION-7f3c"), []byte("SECRET-ROW-9a1d")
			var cmds []*events.Command
			for i := range 5 {
				cmds = append(cmds, upsert(fmt.Sprintf("p%d", i), table, "cust-1",
					fmt.Sprintf("r%d", i%3), fmt.Sprintf("%s-%d", secretP, i)))
				cmds = append(cmds, upsert(fmt.Sprintf("x%d", i), table, "cust-2", "x", fmt.Sprintf("%s-%d", secretR, i)))
			}
			// One command on the erased row and another: it stays, and so
			// does y's value in it.
			cmds = append(cmds, upsert("xy", table, "cust-2", "x", string(secretR)+"-both", "y", "keep-y"))
			cmds = append(cmds, upsert("y1", table, "cust-2", "y", "keep-y1"))
			e.Publish(cmds)
			e.Await(ids(cmds))

			// Live traffic on other partitions throughout.
			stop := make(chan struct{})
			var wg sync.WaitGroup
			var live []string
			wg.Add(1)
			go func() {
				defer wg.Done()
				for i := 0; ; i++ {
					select {
					case <-stop:
						return
					default:
					}
					c := upsert(fmt.Sprintf("live%d", i), table, fmt.Sprintf("other-%d", i%4), "r", fmt.Sprintf("v%d", i))
					if _, err := e.Writer.Publish(ctx, c); err != nil {
						t.Errorf("live traffic: %v", err)
						return
					}
					live = append(live, c.ID)
				}
			}()

			pRec, err := e.Eraser.EraseKey(ctx, erasure.Target{Table: table, PK: "cust-1"}, nil)
			if err != nil {
				t.Fatalf("erase partition: %v", err)
			}
			rk := "x"
			rRec, err := e.Eraser.EraseKey(ctx, erasure.Target{Table: table, PK: "cust-2", RK: &rk}, nil)
			if err != nil {
				t.Fatalf("erase row: %v", err)
			}
			close(stop)
			wg.Wait()
			e.Await(live)

			if !pRec.Verified || pRec.Removed.JournalMsgs != 5 || pRec.Removed.TableRows == 0 || pRec.Removed.ChangeEvents != 5 || pRec.Removed.Outcomes != 5 {
				t.Errorf("partition receipt: %+v", pRec)
			}
			if !rRec.Verified || rRec.Removed.JournalMsgs != 5 || len(rRec.KeptSeqs) != 1 || rRec.Removed.ChangeEvents != 6 {
				t.Errorf("row receipt: %+v", rRec)
			}
			if got := journaltest.StreamsHolding(t, ctx, e.JS, secretP); len(got) != 0 {
				t.Errorf("messages still hold the erased partition's values: %v", got)
			}
			// The kept command "xy" still holds x's value: the limit of a
			// row erase, said in its receipt.
			if got := journaltest.StreamsHolding(t, ctx, e.JS, secretR); len(got) != 1 {
				t.Errorf("messages holding the erased row's values: %v, want the one kept command", got)
			}
			for _, s := range [][]byte{secretP, secretR} {
				if got := tableHolding(t, ctx, e.Store, table, s); len(got) != 0 {
					t.Errorf("table rows still hold %s: %v", s, got)
				}
			}
			if got := tableHolding(t, ctx, e.Store, table, []byte("keep-y1")); len(got) == 0 {
				t.Error("the row erase removed another row")
			}

			// Time travel of the erased keys.
			_, err = e.Hist.History(ctx, table, "cust-1", "r0")
			var ee *replay.ErasedError
			if !errors.Is(err, replay.ErrErased) || !errors.As(err, &ee) || ee.Seq != pRec.EraseSeq || ee.Cmd != pRec.EraseID {
				t.Errorf("history of an erased row: %v", err)
			}
			// Blame of the kept command names the erase of its row x.
			if _, err := e.Hist.Blame(ctx, "xy"); !errors.Is(err, replay.ErrErased) {
				t.Errorf("blame of a command whose row was erased: %v", err)
			}
			if b, err := e.Hist.Blame(ctx, rRec.EraseID); err != nil || b.Command != nil || b.DecodeErr == "" {
				t.Errorf("blame of the erase: %+v, %v", b, err)
			}
			if err := e.Hist.Erased(ctx, table, "cust-2", "y", 0); err != nil {
				t.Errorf("a row beside the erased one: %v", err)
			}

			// Running it again finds nothing more to do.
			again, err := e.Eraser.EraseKey(ctx, erasure.Target{Table: table, PK: "cust-1"}, nil)
			if err != nil || again.EraseSeq != pRec.EraseSeq || again.Removed.JournalMsgs != 0 {
				t.Errorf("erase again: %+v, %v", again, err)
			}

			// A rebuild of the journal with its holes equals the live table.
			e.WaitProjected(ctx)
			stats, err := e.Rebuild.Verify(ctx, rebuild.VerifyConfig{Table: table})
			if err != nil || !stats.Identical() {
				t.Errorf("verify after the erase: %+v, %v", stats, err)
			}
		})
	}
}

// TestEraseCrashBetweenSteps: the erase published and applied, then a
// crash at each point of the removal outside the table (nothing removed
// yet; the outcomes removed; the outcomes and half the change events; all
// but half the commands); the same erase run again reuses the journaled
// erase and finishes the job, down to the server's files.
func TestEraseCrashBetweenSteps(t *testing.T) {
	for _, b := range replaytest.Stores() {
		t.Run(b.Name, func(t *testing.T) {
			e := replaytest.NewEnv(t, b.Open(t), replaytest.With(replaytest.History|replaytest.Rebuild|replaytest.Snapshot|replaytest.Erasure), replaytest.WithJournal(journal.Config{AllowMsgDelete: true}))
			ctx := e.Ctx
			table := replaytest.UniqueTable("crash")
			for point := range 4 {
				pk := fmt.Sprintf("cust-%d", point)
				secret := []byte(fmt.Sprintf("SECRET-CRASH-55e1-%d", point))
				var cmds []*events.Command
				for i := range 4 {
					cmds = append(cmds, upsert(fmt.Sprintf("c%d-%d", point, i), table, pk, fmt.Sprintf("r%d", i), fmt.Sprintf("%s-%d", secret, i)))
				}
				e.Publish(cmds)
				e.Await(ids(cmds))
				er := &events.Erase{ID: fmt.Sprintf("erase-by-hand-%d", point), Table: table, PK: pk}
				res, err := e.Writer.PublishErase(ctx, er)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := outcomes.NewReader(e.JS).Await(ctx, er.ID, res.Seq); err != nil {
					t.Fatal(err)
				}
				target := erasure.Target{Table: table, PK: pk}
				plan, err := e.Eraser.PlanErase(ctx, target)
				if err != nil || plan.EraseSeq != res.Seq || len(plan.Journal) != 4 || len(plan.Outcomes) != 4 || len(plan.Changes) != 4 || plan.TableRows != 0 {
					t.Fatalf("point %d: plan %+v, %v", point, plan, err)
				}
				// The crash: part of the removal done.
				done := 0
				for i, part := range []struct {
					stream string
					seqs   []uint64
				}{{wire.OutcomesStream, plan.Outcomes}, {wire.ChangesStream, plan.Changes[:2]}, {wire.JournalStream, plan.Journal[:2]}} {
					if i >= point {
						break
					}
					s, err := e.JS.Stream(ctx, part.stream)
					if err != nil {
						t.Fatal(err)
					}
					if _, err := erasure.SecureDelete(ctx, s, part.seqs); err != nil {
						t.Fatal(err)
					}
					if part.stream == wire.JournalStream {
						done = len(part.seqs)
					}
				}
				if point > 2 {
					// Past the change events: all of them went before the
					// commands did.
					s, _ := e.JS.Stream(ctx, wire.ChangesStream)
					if _, err := erasure.SecureDelete(ctx, s, plan.Changes[2:]); err != nil {
						t.Fatal(err)
					}
				}
				rec, err := e.Eraser.EraseKey(ctx, target, nil)
				if err != nil {
					t.Fatalf("point %d: the erase again: %v", point, err)
				}
				if rec.EraseID != er.ID || rec.EraseSeq != res.Seq || !rec.Verified || rec.Removed.JournalMsgs != 4-done {
					t.Errorf("point %d: receipt %+v", point, rec)
				}
				if got := journaltest.StreamsHolding(t, ctx, e.JS, secret); len(got) != 0 {
					t.Errorf("point %d: messages still hold the erased values: %v", point, got)
				}
			}
			// Below the streams too: the server's files, byte for byte
			// (secure delete overwrites the stored message).
			if got := filesHolding(t, e.Server.Config().Dir, []byte("SECRET-CRASH-55e1")); len(got) != 0 {
				t.Errorf("the server's store files still hold the erased values: %v", got)
			}
		})
	}
}

// filesHolding lists the files under dir that hold b.
func filesHolding(t *testing.T, dir string, b []byte) []string {
	t.Helper()
	var found []string
	err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
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
	return found
}

// TestEraseDenyDelete: on a journal created with deny-delete, the erase
// refuses with ErrDenyDelete and publishes nothing.
func TestEraseDenyDelete(t *testing.T) {
	b := replaytest.Stores()[0]
	e := replaytest.NewEnv(t, b.Open(t), replaytest.With(replaytest.History|replaytest.Rebuild|replaytest.Snapshot|replaytest.Erasure))
	head, err := e.Journal.Head(e.Ctx)
	if err != nil {
		t.Fatal(err)
	}
	_, err = e.Eraser.EraseKey(e.Ctx, erasure.Target{Table: "orders", PK: "p"}, func() time.Time { return time.Unix(1, 0) })
	if !errors.Is(err, erasure.ErrDenyDelete) {
		t.Fatalf("erase on a deny-delete journal: %v", err)
	}
	if after, _ := e.Journal.Head(e.Ctx); after != head {
		t.Fatalf("the refused erase published: head %d → %d", head, after)
	}
}

func ids(cmds []*events.Command) []string {
	out := make([]string, len(cmds))
	for i, c := range cmds {
		out[i] = c.ID
	}
	return out
}

// TestEraseSnapshotLoad: a snapshot taken before an erase, loaded after
// it, and rebuilt from, holds none of the erased rows and says how many
// it dropped; rows of other keys load.
func TestEraseSnapshotLoad(t *testing.T) {
	for _, b := range replaytest.Stores() {
		t.Run(b.Name, func(t *testing.T) {
			e := replaytest.NewEnv(t, b.Open(t), replaytest.With(replaytest.History|replaytest.Rebuild|replaytest.Snapshot|replaytest.Erasure), replaytest.WithJournal(journal.Config{AllowMsgDelete: true}))
			ctx := e.Ctx
			table := replaytest.UniqueTable("snap")
			secret := []byte("SECRET-SNAP-0b7e")
			cmds := []*events.Command{
				upsert("s1", table, "cust", "a", string(secret)+"-a", "b", string(secret)+"-b"),
				upsert("s2", table, "cust", "a", string(secret)+"-a2"),
				upsert("s3", table, "other", "c", "keep-c"),
				upsert("s4", table, "row", "x", string(secret)+"-x", "y", "keep-y"),
			}
			e.Publish(cmds)
			e.Await(ids(cmds))
			e.WaitProjected(ctx)
			var snap bytes.Buffer
			if _, err := e.Snap.Take(ctx, &snap, snapshot.Config{Table: table}); err != nil {
				t.Fatal(err)
			}
			rk := "x"
			for _, tg := range []erasure.Target{{Table: table, PK: "cust"}, {Table: table, PK: "row", RK: &rk}} {
				if _, err := e.Eraser.EraseKey(ctx, tg, nil); err != nil {
					t.Fatalf("erase %+v: %v", tg, err)
				}
			}
			into := replaytest.UniqueTable("loaded")
			ls, err := e.Snap.Load(ctx, bytes.NewReader(snap.Bytes()), snapshot.LoadConfig{Into: into})
			if err != nil {
				t.Fatal(err)
			}
			// cust: a's tip and version, b's tip and the partition's fence
			// (snapshots carry fences, with the prune horizon); row: x's tip.
			if ls.Erased != 5 {
				t.Errorf("load dropped %d rows of erased keys, want 5", ls.Erased)
			}
			if got := tableHolding(t, ctx, e.Store, into, secret); len(got) != 0 {
				t.Errorf("loaded rows hold erased values: %v", got)
			}
			for _, keep := range []string{"keep-c", "keep-y"} {
				if got := tableHolding(t, ctx, e.Store, into, []byte(keep)); len(got) == 0 {
					t.Errorf("the load dropped %s", keep)
				}
			}
			rebuilt := replaytest.UniqueTable("rebuilt")
			rs, err := e.Rebuild.Rebuild(ctx, rebuild.Config{Into: rebuilt, Snapshot: bytes.NewReader(snap.Bytes())})
			if err != nil || rs.Erased != 5 {
				t.Fatalf("rebuild from the snapshot: %+v, %v", rs, err)
			}
			if got := tableHolding(t, ctx, e.Store, rebuilt, secret); len(got) != 0 {
				t.Errorf("rebuilt rows hold erased values: %v", got)
			}
		})
	}
}
