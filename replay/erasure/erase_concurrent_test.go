package erasure_test

import (
	"context"
	"testing"
	"time"

	"github.com/tablejournal/tablejournal/replay/erasure"
)

// TestPlanDuringErase: planning an erase of a key (replay erase's dry
// run, the console's preview) while an erase of it deletes its messages
// answers, and does not wait for messages deleted after the plan's read
// counted them: an ordered consumer's pending count includes them, and a
// read that trusted it waited for them until its context ended.
func TestPlanDuringErase(t *testing.T) {
	e, table := largePartition(t, 300)
	target := erasure.Target{Table: table, PK: "big"}
	done := make(chan error, 1)
	go func() {
		_, err := e.Eraser.EraseKey(e.Ctx, target, nil)
		done <- err
	}()
	plans := 0
	for {
		select {
		case err := <-done:
			if err != nil {
				t.Fatalf("erase: %v", err)
			}
			t.Logf("%d plans during the erase", plans)
			return
		default:
		}
		ctx, cancel := context.WithTimeout(e.Ctx, 20*time.Second)
		start := time.Now()
		_, err := e.Eraser.PlanErase(ctx, target)
		cancel()
		if err != nil {
			t.Fatalf("plan %d during the erase, after %v: %v", plans, time.Since(start).Round(time.Millisecond), err)
		}
		plans++
	}
}
