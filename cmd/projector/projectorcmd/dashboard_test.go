package projectorcmd

import (
	"bytes"
	"encoding/json"
	"os"
	"regexp"
	"sort"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/tablejournal/tablejournal/cmd/internal/metrics"
	"github.com/tablejournal/tablejournal/cmd/internal/metrics/metricstest"
	"github.com/tablejournal/tablejournal/journal/journaltest"
)

// metricName finds the metric names a PromQL expression uses.
var metricName = regexp.MustCompile(`\b(?:tablejournal|go|process)_[a-z0-9_]+\b`)

// dashboardExprs returns every PromQL expression of the Grafana dashboard:
// its panels' targets and its template variables' queries.
func dashboardExprs(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
		Templating struct {
			List []struct {
				Definition string `json:"definition"`
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(data, &d); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var exprs []string
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			if tg.Expr == "" {
				t.Errorf("%s: panel %q has a target without an expression", path, p.Title)
			}
			exprs = append(exprs, tg.Expr)
		}
	}
	for _, v := range d.Templating.List {
		if v.Definition != "" { // the data source variable has none
			exprs = append(exprs, v.Definition)
		}
	}
	return exprs
}

// alertExprs returns the expressions of the Prometheus alerting rules and
// checks that every rule is complete.
func alertExprs(t *testing.T, path string) []string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Groups []struct {
			Name  string `yaml:"name"`
			Rules []struct {
				Alert       string            `yaml:"alert"`
				Expr        string            `yaml:"expr"`
				For         string            `yaml:"for"`
				Labels      map[string]string `yaml:"labels"`
				Annotations map[string]string `yaml:"annotations"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	var exprs []string
	alerts := map[string]bool{}
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" || r.Expr == "" || r.Labels["severity"] == "" || r.Annotations["summary"] == "" {
				t.Errorf("%s: rule %+v lacks an alert name, expression, severity or summary", path, r)
			}
			if r.For != "" {
				if _, err := time.ParseDuration(r.For); err != nil {
					t.Errorf("%s: %s: for: %v", path, r.Alert, err)
				}
			}
			alerts[r.Alert] = true
			exprs = append(exprs, r.Expr)
		}
	}
	// The issue asks for the first four.
	for _, a := range []string{"TablejournalProjectorLagging", "TablejournalShardUnowned", "TablejournalShardFailed", "TablejournalStoreThrottled", "TablejournalTableDisagrees", "TablejournalPartitionHeld"} {
		if !alerts[a] {
			t.Errorf("%s: no alert %s", path, a)
		}
	}
	return exprs
}

// TestDashboardAndAlerts: every metric docs/grafana/tablejournal.json and
// docs/prometheus/alerts.yml reference exists in a scrape of a running
// projector, and the dashboard shows every metric of SPEC §9.
func TestDashboardAndAlerts(t *testing.T) {
	t.Parallel()
	ctx := journaltest.Context(t, time.Minute)
	e := startMetricsEnv(t)
	p := e.projector(t)
	e.h.PublishAll(ctx, workload(31, 100))
	e.h.WaitProjected(ctx)
	f, err := p.scrape(ctx)
	if err != nil {
		t.Fatal(err)
	}
	scraped := map[string]bool{}
	for _, fam := range f {
		for _, s := range metricstest.Series(fam) {
			scraped[s] = true
		}
	}

	used := map[string][]string{} // metric → files using it
	for file, exprs := range map[string][]string{
		"docs/grafana/tablejournal.json": dashboardExprs(t, "../../../docs/grafana/tablejournal.json"),
		"docs/prometheus/alerts.yml":     alertExprs(t, "../../../docs/prometheus/alerts.yml"),
	} {
		if len(exprs) == 0 {
			t.Errorf("%s: no expressions", file)
		}
		for _, x := range exprs {
			names := metricName.FindAllString(x, -1)
			if len(names) == 0 {
				t.Errorf("%s: %q uses no metric", file, x)
			}
			for _, n := range names {
				used[n] = append(used[n], file)
			}
		}
	}
	var missing []string
	for n, files := range used {
		if !scraped[n] {
			missing = append(missing, n+" (in "+files[0]+")")
		}
	}
	sort.Strings(missing)
	for _, m := range missing {
		t.Errorf("not in a scrape of the projector: %s", m)
	}
	for _, n := range []string{metrics.NameShardsOwned, metrics.NameAppliedSequence, metrics.NameLagMessages,
		metrics.NameLagSeconds, metrics.NameCommands, metrics.NameBatchCommands + "_bucket",
		metrics.NameBatchSeconds + "_bucket", metrics.NameApplyDelay + "_bucket", metrics.NameStoreRequest + "_bucket",
		metrics.NameRetries, metrics.NameShardFailures} {
		if len(used[n]) == 0 {
			t.Errorf("the dashboard and the alerts do not show %s", n)
		}
	}
}
