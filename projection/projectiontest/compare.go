package projectiontest

import (
	"bytes"
	"context"
	"sync"
	"testing"

	"github.com/tablejournal/tablejournal/rows"
	"github.com/tablejournal/tablejournal/store"
	"github.com/tablejournal/tablejournal/wire"
)

// SameVersionCount reports whether a and b hold the same rows with the same
// number of versions each.
func SameVersionCount(a, b map[RowID][]rows.Row) bool {
	if len(a) != len(b) {
		return false
	}
	for id, rs := range b {
		if len(a[id]) != len(rs) {
			return false
		}
	}
	return true
}

// CompareStores checks two stores hold the same entities in table, every
// column but the store's own Timestamp and etag.
func CompareStores(t testing.TB, a, b store.Store, table string) {
	t.Helper()
	ea, err := store.Collect(context.Background(), a, table, store.Query{AllPartitions: true})
	if err != nil {
		t.Fatal(err)
	}
	eb, err := store.Collect(context.Background(), b, table, store.Query{AllPartitions: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(ea) != len(eb) {
		t.Fatalf("%d entities vs %d", len(ea), len(eb))
	}
	for i := range ea {
		if ea[i].PK != eb[i].PK || ea[i].RK != eb[i].RK || !ea[i].Props.Equal(eb[i].Props) {
			t.Fatalf("entity %d differs:\n%+v\n%+v", i, ea[i], eb[i])
		}
	}
}

// CheckOutcomes checks that every journal message has exactly the outcome
// the model gives, and that the workload produced every kind of outcome.
func CheckOutcomes(t testing.TB, got map[uint64]wire.Outcome, model *Model) {
	t.Helper()
	counts := map[string]int{}
	for seq, want := range model.Status {
		o, ok := got[seq]
		switch {
		case !ok:
			t.Errorf("seq %d: no outcome, model says %s", seq, want)
		case string(o.Status) != want:
			t.Errorf("seq %d (%s): outcome %s (%s), model says %s", seq, o.ID, o.Status, o.Reason, want)
		case o.Status == wire.StatusRejected && o.Reason == "":
			t.Errorf("seq %d: rejected without a reason", seq)
		}
		counts[want]++
	}
	if len(got) != len(model.Status) {
		t.Errorf("%d outcomes for %d journal messages", len(got), len(model.Status))
	}
	// The workload must exercise every outcome, or the test proves little.
	for _, st := range []string{"applied", "rejected", "duplicate"} {
		if counts[st] == 0 {
			t.Errorf("workload produced no %s command: %v", st, counts)
		}
	}
	t.Logf("outcomes: %v", counts)
}

// SyncBuffer is a log destination safe for concurrent writers.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}
