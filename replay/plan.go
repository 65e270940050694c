package replay

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/wire"
)

// Plan is one change replay makes, planned before it is made: an undo or
// a restore (repair.Plan), a prune or a compaction (retention.PrunePlan,
// retention.CompactPlan), an erase (erasure.Plan). Making a plan reads and
// changes nothing; its Preview says what it would do, for a person to read
// and confirm; Apply makes the change. The replay command prints a plan
// and applies it with --apply; the console previews it and applies it on
// confirmation, carrying its Fingerprint from the preview to the confirm.
//
// A new kind of change is a new type with these two methods, made by a
// Plan… function of its package.
type Plan interface {
	// Preview says what Apply would do.
	Preview() Preview
	// Apply makes the change. It plans again first, and when the plan made
	// now would not be this one (another Fingerprint: what it was planned
	// on changed since), it applies nothing and fails with ErrStale. A
	// plan with nothing to do applies nothing and succeeds; a refused one
	// (Preview().Blocked, conflicts) fails with its kind's error.
	Apply(ctx context.Context) (Result, error)
}

// Preview is what a plan would do.
type Preview struct {
	// Kind names the change: "undo", "restore", "prune", "compact",
	// "erase".
	Kind string
	// Summary says in a line what the plan does.
	Summary string
	// Steps are what it does, in order: one a row for a plan of commands,
	// one a partition or place, with a count, for what removes.
	Steps []Step
	// Blocked says why Apply would change nothing, "" when it would: the
	// plan has nothing to do, or it is refused (rows changed by later
	// commands).
	Blocked string
	// Fingerprint names what the plan does: a plan made again over the
	// same state has the same one, and a different one when the state
	// changed in a way that changes the plan.
	Fingerprint string
}

// Step is one thing a plan does.
type Step struct {
	// Table, PK and RK name the row the step changes, or with RK empty the
	// partition.
	Table, PK, RK string
	// Op is the operation: of a command (insert, replace, delete), or
	// "prune", "erase", "trim"; "" when the row is already as the plan
	// wants it.
	Op string
	// Conflict marks a row that later commands changed again: Apply leaves
	// it alone unless the plan was made with force.
	Conflict bool
	// Before and After are the row's values now and after the step; nil
	// where the row does not exist, and for steps whose values are not to
	// be shown (an erase).
	Before, After edm.Entity
	// Command is the ID of the command that carries the step, when one
	// command does.
	Command string
	// Count, for a step that removes, counts what it removes.
	Count
}

// Count is a number of things of a kind, for a person: "table rows", 12.
type Count struct {
	What string
	N    int64
}

// Result is what an applied plan did.
type Result struct {
	// Published are the commands it published through the journal, in
	// order, with their outcomes.
	Published []Published
	// Counts say what it removed, by place.
	Counts []Count
	// Receipt is the kind's own record of the change, when it keeps one
	// (an erase's *erasure.Receipt).
	Receipt any
}

// Published is one command an applied plan published.
type Published struct {
	ID  string
	Seq uint64
	// Duplicate: the journal held the ID already (the plan was applied
	// before) and kept the first.
	Duplicate bool
	Outcome   wire.Outcome
}

// ErrStale: a plan's Apply found that the plan made now is not the one
// previewed (what it was planned on changed since); nothing was applied.
// Plan again, read the new preview, and confirm that. Checked with
// errors.Is.
var ErrStale = errors.New("the plan changed since its preview")

// Fresh plans again with plan and returns the plan made now, or ErrStale
// when its fingerprint is not was's. Every Plan's Apply starts with it.
func Fresh[P Plan](ctx context.Context, was P, plan func(context.Context) (P, error)) (P, error) {
	now, err := plan(ctx)
	if err != nil {
		return now, err
	}
	if a, b := was.Preview(), now.Preview(); a.Fingerprint != b.Fingerprint {
		return now, fmt.Errorf("%s: %w: plan again (now: %s)", a.Summary, ErrStale, b.Summary)
	}
	return now, nil
}

// Fingerprint names a plan by what it would do: a short hash of parts.
func Fingerprint(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}
