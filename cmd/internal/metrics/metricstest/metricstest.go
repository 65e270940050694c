// Package metricstest reads a projector's /metrics in tests: it scrapes the
// Prometheus text format and answers questions about the samples.
package metricstest

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sort"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Families is one scrape: metric families by name.
type Families map[string]*dto.MetricFamily

// Scrape GETs url (a /metrics endpoint) and parses the text format.
func Scrape(ctx context.Context, url string) (Families, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(resp.Body)
		return nil, fmt.Errorf("GET %s: %s: %s", url, resp.Status, body)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("GET %s: %w", url, err)
	}
	return fams, nil
}

// Names lists the metric families, sorted.
func (f Families) Names() []string {
	names := make([]string, 0, len(f))
	for n := range f {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// value is the value of a counter, gauge or untyped sample.
func value(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.Counter.GetValue()
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Untyped != nil:
		return m.Untyped.GetValue()
	}
	return 0
}

// ByLabel returns the values of a counter or gauge by the value of one
// label; nil when the family is missing.
func (f Families) ByLabel(name, label string) map[string]float64 {
	fam, ok := f[name]
	if !ok {
		return nil
	}
	out := make(map[string]float64)
	for _, m := range fam.Metric {
		for _, l := range m.Label {
			if l.GetName() == label {
				out[l.GetValue()] += value(m)
			}
		}
	}
	return out
}

// Value returns the value of a family with a single unlabelled sample.
func (f Families) Value(name string) (float64, bool) {
	fam, ok := f[name]
	if !ok || len(fam.Metric) != 1 {
		return 0, false
	}
	return value(fam.Metric[0]), true
}

// Histogram returns the sample count and sum of a histogram over all its
// series whose labels include want (label, value pairs).
func (f Families) Histogram(name string, want ...string) (count uint64, sum float64) {
	fam, ok := f[name]
	if !ok {
		return 0, 0
	}
	for _, m := range fam.Metric {
		if m.Histogram == nil || !hasLabels(m, want) {
			continue
		}
		count += m.Histogram.GetSampleCount()
		sum += m.Histogram.GetSampleSum()
	}
	return count, sum
}

func hasLabels(m *dto.Metric, want []string) bool {
	for i := 0; i+1 < len(want); i += 2 {
		found := false
		for _, l := range m.Label {
			if l.GetName() == want[i] && l.GetValue() == want[i+1] {
				found = true
			}
		}
		if !found {
			return false
		}
	}
	return true
}

// Series lists the sample names a family exposes in the text format: the
// name itself, or for a histogram name_bucket, name_sum and name_count.
func Series(fam *dto.MetricFamily) []string {
	n := fam.GetName()
	switch fam.GetType() {
	case dto.MetricType_HISTOGRAM:
		return []string{n + "_bucket", n + "_sum", n + "_count"}
	case dto.MetricType_SUMMARY:
		return []string{n, n + "_sum", n + "_count"}
	}
	return []string{n}
}
