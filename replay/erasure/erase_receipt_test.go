package erasure_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/journal"
	"github.com/tablejournal/tablejournal/journal/journaltest"
	"github.com/tablejournal/tablejournal/projection"
	"github.com/tablejournal/tablejournal/replay/erasure"
	"github.com/tablejournal/tablejournal/replay/replaytest"
	"github.com/tablejournal/tablejournal/wire"
)

// TestEraseReceiptCountsRowsAppliedLate: the receipt's table rows are
// those the projector removed when it applied the erase, also when the
// projector had not yet applied the key's commands when the erase began
// (it was behind, here stopped): the same commands in another partition,
// applied, are the count to expect. Counted before the erase was
// published, the receipt said 0. On both layouts (a plain table's own rows
// count too), for a partition and for a row.
func TestEraseReceiptCountsRowsAppliedLate(t *testing.T) {
	for _, c := range layoutCases {
		t.Run(fmt.Sprintf("%s/row=%v", c.layout, c.rowErase), func(t *testing.T) {
			cfg := journal.Config{AllowMsgDelete: true}
			e := replaytest.NewEnv(t, replaytest.Stores()[0].Open(t), replaytest.With(replaytest.Erasure), replaytest.WithJournal(cfg))
			ctx := e.Ctx
			table := replaytest.UniqueTable("receipt")
			e.SetLayout(ctx, table, c.layout)
			cmds := func(pk string) []*events.Command {
				del := &events.Command{ID: pk + "-del", Table: table, PK: pk, Ops: []events.RowOp{{Op: events.OpDelete, RK: "b"}}}
				return []*events.Command{
					upsert(pk+"-1", table, pk, "a", "SECRET-1", "b", "SECRET-2"),
					upsert(pk+"-2", table, pk, "a", "SECRET-3"),
					del,
					upsert(pk+"-3", table, pk, "c", "SECRET-4"),
				}
			}
			target := func(pk string) erasure.Target {
				tg := erasure.Target{Table: table, PK: pk}
				if c.rowErase {
					rk := "a"
					tg.RK = &rk
				}
				return tg
			}
			ctl := cmds("ctl")
			e.Publish(ctl)
			e.Await(ids(ctl))
			plan, err := e.Eraser.PlanErase(ctx, target("ctl"))
			if err != nil {
				t.Fatal(err)
			}
			want := plan.TableRows
			if want == 0 {
				t.Fatal("the applied partition has no rows to erase: the test sees nothing")
			}

			e.Stop()
			seqs := e.Publish(cmds("late"))
			type result struct {
				rec *erasure.Receipt
				err error
			}
			done := make(chan result, 1)
			go func() {
				rec, err := e.Eraser.EraseKey(ctx, target("late"), nil)
				done <- result{rec, err}
			}()
			// The erase is journaled after the commands, none applied.
			journalPast(t, e, seqs[len(seqs)-1])
			e.StartProjector(projection.Config{Journal: cfg, Logger: replaytest.Quiet})
			r := <-done
			if r.err != nil || !r.rec.Verified {
				t.Fatalf("erase: %+v, %v", r.rec, r.err)
			}
			if r.rec.Removed.TableRows != want {
				t.Errorf("receipt: %d table rows removed, the projector held %d when it applied the erase", r.rec.Removed.TableRows, want)
			}

			// Run again, it finishes nothing and removed no rows.
			again, err := e.Eraser.EraseKey(ctx, target("late"), nil)
			if err != nil || again.Removed.TableRows != 0 || again.EraseSeq != r.rec.EraseSeq {
				t.Errorf("erase again: %+v, %v", again, err)
			}
		})
	}
}

// journalPast waits until the journal holds a message after seq.
func journalPast(t *testing.T, e *replaytest.Env, seq uint64) {
	t.Helper()
	s, err := e.JS.Stream(e.Ctx, wire.JournalStream)
	if err != nil {
		t.Fatal(err)
	}
	journaltest.WaitFor(t, 30*time.Second, fmt.Sprintf("a journal message after seq %d", seq), func() bool {
		info, err := s.Info(e.Ctx)
		return err == nil && info.State.LastSeq > seq
	})
}
