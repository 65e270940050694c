package projection

import (
	"testing"
	"time"
)

// TestSweepPace drives the sweep's pacing with a fake clock: each event
// is the step it must ask for (when, and list or which partition), then
// what the sweep did, took long after the step was due, and when the last
// complete pass ended afterwards.
func TestSweepPace(t *testing.T) {
	const s = time.Second
	type event struct {
		at   time.Duration // the step's time, from t0
		list bool
		part string
		took time.Duration
		// outcome: the listing (list), nil with fail: it failed; or the
		// check failed (fail).
		parts []string
		fail  bool
		// complete is completed() afterwards, from t0; -1: none.
		complete time.Duration
	}
	cases := []struct {
		name                 string
		interval, gap, retry time.Duration
		done                 time.Duration // -1: no pass before
		events               []event
	}{
		{name: "spread over the interval after the start check", interval: 10 * s, gap: s, retry: 3 * s, done: 0,
			events: []event{
				{at: 10 * s, list: true, parts: []string{"a", "b", "c", "d"}, complete: 0},
				{at: 10 * s, part: "a", complete: 0},
				{at: 12500 * time.Millisecond, part: "b", complete: 0},
				{at: 15 * s, part: "c", complete: 0},
				{at: 17500 * time.Millisecond, part: "d", took: s / 2, complete: 18 * s},
				{at: 20 * s, list: true, parts: []string{"a"}, complete: 18 * s},
				{at: 20 * s, part: "a", complete: 20 * s},
				{at: 30 * s, list: true, parts: []string{"a", "b"}, complete: 20 * s},
			}},
		{name: "no pass before: the first starts at once", interval: 10 * s, gap: s, retry: 3 * s, done: -1,
			events: []event{
				{at: -1, list: true, parts: []string{"a", "b"}, complete: -1}, // at once
				{at: 0, part: "a", complete: -1},
				{at: 5 * s, part: "b", complete: 5 * s},
				{at: 10 * s, list: true, parts: []string{"a"}, complete: 5 * s},
			}},
		{name: "the rate cap stretches a pass past the interval", interval: 2 * s, gap: s, retry: 3 * s, done: 0,
			events: []event{
				{at: 2 * s, list: true, parts: []string{"a", "b", "c", "d"}, complete: 0},
				{at: 2 * s, part: "a", complete: 0},
				{at: 3 * s, part: "b", complete: 0}, // due at 2.5 s
				{at: 4 * s, part: "c", complete: 0},
				{at: 5 * s, part: "d", complete: 5 * s},
				{at: 6 * s, list: true, parts: []string{"a"}, complete: 5 * s}, // not 4 s: the gap
			}},
		{name: "slow checks catch up at the gap", interval: 10 * s, gap: s / 10, retry: 3 * s, done: 0,
			events: []event{
				{at: 10 * s, list: true, parts: []string{"a", "b", "c"}, complete: 0},
				{at: 10 * s, part: "a", took: 8 * s, complete: 0},
				{at: 18100 * time.Millisecond, part: "b", complete: 0}, // due at 13.3 s: late
				{at: 18200 * time.Millisecond, part: "c", complete: 18200 * time.Millisecond},
				{at: 20 * s, list: true, parts: nil, complete: 20 * s}, // a shard of no partitions
				{at: 30 * s, list: true, parts: []string{"a"}, complete: 20 * s},
			}},
		{name: "a failed check leaves the pass incomplete", interval: 10 * s, gap: s, retry: 3 * s, done: 0,
			events: []event{
				{at: 10 * s, list: true, parts: []string{"a", "b"}, complete: 0},
				{at: 10 * s, part: "a", fail: true, complete: 0},
				{at: 15 * s, part: "b", complete: 0},
				{at: 20 * s, list: true, parts: []string{"a", "b"}, complete: 0},
				{at: 20 * s, part: "a", complete: 0},
				{at: 25 * s, part: "b", complete: 25 * s},
			}},
		{name: "a failed listing is tried again", interval: 10 * s, gap: s, retry: 3 * s, done: 0,
			events: []event{
				{at: 10 * s, list: true, fail: true, complete: 0},
				{at: 13 * s, list: true, fail: true, took: 2 * s, complete: 0},
				{at: 18 * s, list: true, parts: []string{"a"}, complete: 0},
				{at: 18 * s, part: "a", complete: 18 * s},
				{at: 28 * s, list: true, parts: []string{"a"}, complete: 18 * s}, // interval after the listing
			}},
	}
	t0 := time.Date(2026, 11, 29, 1, 0, 0, 0, time.UTC)
	at := func(d time.Duration) time.Time {
		if d < 0 {
			return time.Time{}
		}
		return t0.Add(d)
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := newSweepPace(c.interval, c.gap, c.retry, at(c.done))
			for i, e := range c.events {
				got := p.step()
				want := sweepStep{At: at(e.at), List: e.list, Part: e.part}
				if got != want {
					t.Fatalf("event %d: step %+v, want %+v", i, got, want)
				}
				now := got.At
				if now.IsZero() {
					now = t0 // at once
				}
				now = now.Add(e.took)
				switch {
				case e.list && e.fail:
					p.listFailed(now)
				case e.list:
					p.listed(now, e.parts)
				default:
					p.checked(now, !e.fail)
				}
				if c := p.completed(); !c.Equal(at(e.complete)) {
					t.Fatalf("event %d: last complete pass %v, want %v", i, c.Sub(t0), e.complete)
				}
			}
		})
	}
}
