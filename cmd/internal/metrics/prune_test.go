package metrics

import (
	"context"
	"testing"

	"github.com/tablejournal/tablejournal/cmd/internal/metrics/metricstest"
	"github.com/tablejournal/tablejournal/projection"
)

// TestPrunedRowsMetric: the projector's pruned-rows counter is on /metrics.
func TestPrunedRowsMetric(t *testing.T) {
	m, _ := newTestMetrics()
	var st projection.Stats
	st.PrunedRows.Add(259)
	m.SetStats(&st)
	f, err := metricstest.Scrape(context.Background(), httptestServer(t, m)+"/metrics")
	if err != nil {
		t.Fatal(err)
	}
	if n, ok := f.Value(NamePrunedRows); !ok || n != 259 {
		t.Fatalf("%s = %v (%v), want 259", NamePrunedRows, n, ok)
	}
}
