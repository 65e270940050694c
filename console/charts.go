package console

import (
	"fmt"
	"strings"
	"time"

	"github.com/tablejournal/tablejournal/rows"
	"github.com/tablejournal/tablejournal/wire"
)

// chart is an SVG chart the templates draw (charts.html): bars, a line,
// dots, in a W×H plot area with a margin for the labels.
type chart struct {
	W, H       float64
	Title      string
	Bars       []bar
	Line       string // polyline points "x,y x,y"
	Dots       []dot
	YMax       string
	XFrom, XTo string
	Empty      bool
}

type bar struct {
	X, Y, W, H   float64
	Class, Title string
}

type dot struct {
	X, Y         float64
	Class, Title string
	Href, Label  string
}

const (
	chartW = 600
	chartH = 120
)

// chartWindow is the time the activity and lag charts cover.
const chartWindow = 15 * time.Minute

// activityChart counts the outcomes per minute over the last chartWindow:
// applied and rejected stacked, or only the rejections.
func activityChart(recent []wire.Outcome, now time.Time, rejections bool) chart {
	const n = int(chartWindow / time.Minute)
	start := now.Truncate(time.Minute).Add(-time.Duration(n-1) * time.Minute)
	var applied, rejected [n]int
	for _, o := range recent {
		i := int(o.At.Sub(start) / time.Minute)
		if i < 0 || i >= n {
			continue
		}
		if o.Status == wire.StatusRejected {
			rejected[i]++
		} else if !rejections {
			applied[i]++
		}
	}
	top := 1
	for i := range n {
		top = max(top, applied[i]+rejected[i])
	}
	c := chart{W: chartW, H: chartH, YMax: fmt.Sprint(top), Empty: top == 1 && sum(applied[:])+sum(rejected[:]) == 0,
		XFrom: start.UTC().Format("15:04"), XTo: now.UTC().Format("15:04")}
	c.Title = "commands per minute (applied, rejected)"
	if rejections {
		c.Title = "rejections per minute"
	}
	w := float64(chartW) / float64(n)
	for i := range n {
		x := float64(i) * w
		minute := start.Add(time.Duration(i) * time.Minute).UTC().Format("15:04")
		ha := float64(applied[i]) / float64(top) * chartH
		hr := float64(rejected[i]) / float64(top) * chartH
		if applied[i] > 0 {
			c.Bars = append(c.Bars, bar{X: x + 1, Y: chartH - ha, W: w - 2, H: ha, Class: "applied",
				Title: fmt.Sprintf("%s: %d applied", minute, applied[i])})
		}
		if rejected[i] > 0 {
			c.Bars = append(c.Bars, bar{X: x + 1, Y: chartH - ha - hr, W: w - 2, H: hr, Class: "rejected",
				Title: fmt.Sprintf("%s: %d rejected", minute, rejected[i])})
		}
	}
	return c
}

func sum(xs []int) int {
	t := 0
	for _, x := range xs {
		t += x
	}
	return t
}

// lagChart draws the largest shard lag over the samples of the last
// chartWindow.
func lagChart(samples []sample, now time.Time) chart {
	start := now.Add(-chartWindow)
	c := chart{W: chartW, H: chartH, Title: "largest shard lag (seconds)",
		XFrom: start.UTC().Format("15:04"), XTo: now.UTC().Format("15:04")}
	top := 1.0
	for _, s := range samples {
		top = max(top, s.Lag.Seconds())
	}
	c.YMax = fmt.Sprintf("%.0fs", top)
	var pts []string
	for _, s := range samples {
		if s.At.Before(start) {
			continue
		}
		x := s.At.Sub(start).Seconds() / chartWindow.Seconds() * chartW
		y := chartH - s.Lag.Seconds()/top*chartH
		pts = append(pts, fmt.Sprintf("%.1f,%.1f", x, y))
		c.Dots = append(c.Dots, dot{X: x, Y: y, Class: "lag",
			Title: fmt.Sprintf("%s: lag %.1fs, %d pending", s.At.UTC().Format("15:04:05"), s.Lag.Seconds(), s.Pending)})
	}
	c.Line = strings.Join(pts, " ")
	c.Empty = len(pts) == 0
	return c
}

// versionsChart puts a row's versions on a line by journal sequence.
func versionsChart(vs []rows.Row) chart {
	c := chart{W: chartW, H: 40, Title: "versions by journal sequence", Empty: len(vs) == 0}
	if len(vs) == 0 {
		return c
	}
	lo, hi := vs[0].Seq, vs[len(vs)-1].Seq
	c.XFrom, c.XTo = fmt.Sprintf("seq %d", lo), fmt.Sprintf("seq %d", hi)
	for i, v := range vs {
		x := 10.0
		if hi > lo {
			x = 10 + float64(v.Seq-lo)/float64(hi-lo)*(chartW-20)
		} else if len(vs) > 1 {
			x = 10 + float64(i)/float64(len(vs)-1)*(chartW-20)
		}
		class, label := "version", fmt.Sprintf("v%d", v.Version)
		if v.Deleted {
			class, label = "tombstone", "×"
		}
		c.Dots = append(c.Dots, dot{X: x, Y: 20, Class: class, Label: label, Href: fmt.Sprintf("#seq-%d", v.Seq),
			Title: fmt.Sprintf("version %d at seq %d by %s", v.Version, v.Seq, v.Cmd)})
	}
	return c
}
