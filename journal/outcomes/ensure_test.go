package outcomes_test

import (
	"testing"
	"time"

	"github.com/tablejournal/tablejournal/journal/journaltest"
	"github.com/tablejournal/tablejournal/journal/outcomes"
	"github.com/tablejournal/tablejournal/wire"
)

// OUTCOMES keeps messages as configured: a max age is set, kept when not
// configured, changed and reported, removed when negative.
func TestEnsureMaxAge(t *testing.T) {
	_, js := journaltest.Connect(t, journaltest.StartServer(t).ClientURL())
	ctx := journaltest.Context(t, time.Minute)
	maxAge := func() time.Duration {
		s, err := js.Stream(ctx, wire.OutcomesStream)
		if err != nil {
			t.Fatal(err)
		}
		return s.CachedInfo().Config.MaxAge
	}
	for _, step := range []struct {
		cfg     time.Duration
		want    time.Duration
		changes int
	}{
		{time.Hour, time.Hour, 0}, // created
		{0, time.Hour, 0},         // kept
		{2 * time.Hour, 2 * time.Hour, 1},
		{-1, 0, 1}, // removed
	} {
		s, changes, err := outcomes.EnsureConfig(ctx, js, outcomes.Config{MaxAge: step.cfg})
		if err != nil {
			t.Fatal(err)
		}
		if got := maxAge(); got != step.want || len(changes) != step.changes || s.CachedInfo().Config.Description == "" {
			t.Fatalf("MaxAge %v: stream keeps %v (want %v), changes %q", step.cfg, got, step.want, changes)
		}
	}
}
