package replay

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/tablejournal/tablejournal/journal"
)

// PointKind says how a Point names its position.
type PointKind uint8

// The ways to name a point of the journal (SPEC §6).
const (
	// AtHead is the journal's head when the point is resolved: the zero
	// Point.
	AtHead PointKind = iota
	// AtSeq is a journal sequence: the state just after it was applied.
	AtSeq
	// AtTime is a time: the state as of that instant, after every command
	// the journal stored at or before it.
	AtTime
	// AtCmd is a command ID: the state just after that command.
	AtCmd
)

// Point names a position in the journal. The zero Point is the head.
type Point struct {
	Kind PointKind
	Seq  uint64    // for AtSeq
	Time time.Time // for AtTime
	Cmd  string    // for AtCmd
}

// Head returns the point at the journal's head.
func Head() Point { return Point{} }

// Seq returns the point just after journal sequence n (0: before the first
// command).
func Seq(n uint64) Point { return Point{Kind: AtSeq, Seq: n} }

// Time returns the point as of t.
func Time(t time.Time) Point { return Point{Kind: AtTime, Time: t} }

// Cmd returns the point just after command id.
func Cmd(id string) Point { return Point{Kind: AtCmd, Cmd: id} }

// String renders p in the form ParsePoint reads.
func (p Point) String() string {
	switch p.Kind {
	case AtSeq:
		return "seq:" + strconv.FormatUint(p.Seq, 10)
	case AtTime:
		return "time:" + p.Time.UTC().Format(time.RFC3339Nano)
	case AtCmd:
		return "cmd:" + p.Cmd
	}
	return "head"
}

// ParsePoint reads a point: "head", "seq:N" or a bare number N, "time:T"
// or a bare RFC 3339 time T, "cmd:ID" (or any other text, taken as a
// command ID).
func ParsePoint(s string) (Point, error) {
	s = strings.TrimSpace(s)
	kind, rest, ok := strings.Cut(s, ":")
	if ok {
		switch kind {
		case "seq":
			n, err := strconv.ParseUint(rest, 10, 64)
			if err != nil {
				return Point{}, fmt.Errorf("%w: %q: want seq:N with N a journal sequence, at most %d", ErrBadPoint, s, uint64(math.MaxUint64))
			}
			return Seq(n), nil
		case "time":
			t, err := time.Parse(time.RFC3339Nano, rest)
			if err != nil {
				return Point{}, fmt.Errorf("%w: %q: want time:RFC3339, as in time:2026-11-21T10:00:00Z", ErrBadPoint, s)
			}
			return Time(t), nil
		case "cmd":
			if rest == "" {
				return Point{}, fmt.Errorf("%w: %q: want cmd:ID", ErrBadPoint, s)
			}
			return Cmd(rest), nil
		}
	}
	switch {
	case s == "" || s == "head":
		return Head(), nil
	case isDigits(s):
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			return Point{}, fmt.Errorf("%w: %q: a journal sequence is at most %d", ErrBadPoint, s, uint64(math.MaxUint64))
		}
		return Seq(n), nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return Time(t), nil
	}
	return Cmd(s), nil
}

func isDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}

// Resolve turns p into a journal sequence S: the state at p is that of the
// journal prefix 1..S.
//
//   - AtHead: the journal's head now.
//   - AtSeq: the sequence itself; one beyond the head is ErrBadPoint.
//   - AtTime: the last sequence stored at or before the time (the first
//     stored after it, minus one; the head if none is after it).
//   - AtCmd: the command's journal sequence, from its outcome
//     (ErrNoOutcome if it has none).
func (r *Source) Resolve(ctx context.Context, p Point) (uint64, error) {
	if p.Kind == AtSeq && r.j == nil {
		return p.Seq, nil // no journal to check it against: asof on tables alone
	}
	if err := r.NeedJournal("resolve " + p.String()); err != nil {
		return 0, err
	}
	switch p.Kind {
	case AtHead:
		return r.j.Head(ctx)
	case AtSeq:
		head, err := r.j.Head(ctx)
		if err != nil {
			return 0, err
		}
		if p.Seq > head {
			return 0, fmt.Errorf("%w: sequence %d is beyond the journal's head %d", ErrBadPoint, p.Seq, head)
		}
		return p.Seq, nil
	case AtTime:
		next, err := r.j.SeqAtTime(ctx, p.Time.Add(time.Nanosecond))
		if errors.Is(err, journal.ErrNotFound) {
			return r.j.Head(ctx)
		}
		if err != nil {
			return 0, err
		}
		return next - 1, nil
	case AtCmd:
		o, err := r.Outcome(ctx, p.Cmd)
		if err != nil {
			return 0, err
		}
		return o.Seq, nil
	}
	return 0, fmt.Errorf("%w: unknown point kind %d", ErrBadPoint, p.Kind)
}
