package tablejournal

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/tablejournal/tablejournal/events/rules"
	"github.com/tablejournal/tablejournal/wire"
)

// Status says what became of a command: an outcome's status as the
// projector publishes it (wire.Status).
type Status = wire.Status

// The statuses of an Outcome.
const (
	// Applied: the command's rows are written; Outcome.Rows holds their
	// new versions.
	Applied = wire.StatusApplied
	// Rejected: nothing of the command was written (Wait returns a
	// *Rejection).
	Rejected = wire.StatusRejected
	// Duplicate: the command ID had been applied before, so this
	// publication was not applied again.
	Duplicate = wire.StatusDuplicate
)

// Outcome is what became of one published command.
type Outcome struct {
	ID     string
	Seq    uint64
	Table  string
	PK     string
	Status Status
	// Reason says, for people, why a command was rejected or is a
	// duplicate.
	Reason string
	// Rows are the row versions an applied command produced.
	Rows []RowVersion
	// At is the journal time of the command.
	At time.Time
}

// RowVersion is one row version an applied command produced.
type RowVersion struct {
	RK      string
	Version int64
	// Op is the command's last operation on the row: "insert", "upsert",
	// "replace", "merge", "upsertMerge" or "delete".
	Op      string
	Deleted bool
}

// Errors a rejected command's *Rejection matches with errors.Is, one per
// rejection code of docs/SPEC.md §5; every rejection matches ErrRejected.
var (
	// ErrRejected matches every rejection.
	ErrRejected = errors.New("command rejected")
	// ErrVersionMismatch: an IfVersion guard failed (code
	// "version-mismatch"): the row is at another version or does not
	// exist.
	ErrVersionMismatch = errors.New("version mismatch")
	// ErrExists: an Insert found the row existing (code "exists").
	ErrExists = errors.New("row exists")
	// ErrNotFound: a Replace, Merge or Delete found no row (code
	// "not-found"); Get returns it too for a row that does not exist.
	ErrNotFound = errors.New("row not found")
	// ErrInvalid: the command breaks a rule (code "invalid";
	// Rejection.Rule names it). Publish returns it too, for a command it
	// refuses to publish.
	ErrInvalid = rules.ErrInvalid
	// ErrTooLarge: with its version rows the command exceeds a store
	// limit (code "too-large").
	ErrTooLarge = errors.New("too large after versioning")
)

// Rejection is the error of a rejected command: errors.As gives it, with
// the machine-readable code of docs/SPEC.md §5.
type Rejection struct {
	// Code is the stable kind of the rejection: "invalid",
	// "version-mismatch", "exists", "not-found", "too-large",
	// "lost-write", or "" for an outcome stored before codes existed.
	Code string
	// Rule names the rule an invalid command broke, or the limit of a
	// too-large one.
	Rule string
	// Reason says why, for people.
	Reason string
	// ID and Seq are the command's.
	ID  string
	Seq uint64
	// Table and PK are where the command was to apply.
	Table, PK string
}

// Error reads "command ID (seq N) rejected: code: reason" (without
// "code: " when there is none).
func (r *Rejection) Error() string {
	if r.Code == "" {
		return fmt.Sprintf("command %s (seq %d) rejected: %s", r.ID, r.Seq, r.Reason)
	}
	return fmt.Sprintf("command %s (seq %d) rejected: %s: %s", r.ID, r.Seq, r.Code, r.Reason)
}

// Is matches ErrRejected and the sentinel error of r's code.
func (r *Rejection) Is(target error) bool {
	if target == ErrRejected {
		return true
	}
	switch wire.Code(r.Code) {
	case wire.CodeVersionMismatch:
		return target == ErrVersionMismatch
	case wire.CodeExists:
		return target == ErrExists
	case wire.CodeNotFound:
		return target == ErrNotFound
	case wire.CodeInvalid:
		return target == ErrInvalid
	case wire.CodeTooLarge:
		return target == ErrTooLarge
	case wire.CodeBodyDiffers:
		// The same refusal as Publish's inside the journal's duplicate
		// window, found by the projector beyond it.
		return target == ErrBodyDiffers
	}
	return false
}

// Wait waits until the projector has handled the command at pos and
// returns its outcome. A rejected command's error is a *Rejection; a
// duplicate is not an error (the command had applied before). ctx bounds
// the wait, which may begin before the projector has created its streams.
// A Position without an ID or a sequence (the zero Position) is refused at
// once with an error matching ErrInvalid.
func (c *Client) Wait(ctx context.Context, pos Position) (Outcome, error) {
	if pos.ID == "" || pos.Seq == 0 {
		return Outcome{}, fmt.Errorf("tablejournal: wait for %+v: %w: a Position needs the ID and the Seq Publish returned", pos, ErrInvalid)
	}
	// For a Duplicate publish, pos.Seq is the stored command's: its
	// outcome is the one to wait for too.
	o, err := c.await(ctx, pos.ID, pos.Seq)
	if err != nil {
		return Outcome{}, fmt.Errorf("tablejournal: %w", err)
	}
	return result(o)
}

// await waits for the outcome of command id at journal sequence seq:
// through the watch its Publish kept (recentPublishes), listening since
// before the publish, so that the projector's reply is not missed; else
// subscribing now and looking up what is stored.
func (c *Client) await(ctx context.Context, id string, seq uint64) (wire.Outcome, error) {
	if w := c.recent.take(seq, id); w != nil {
		defer w.Stop()
		return w.Await(ctx, seq, false)
	}
	return c.outcomes.Await(ctx, id, seq)
}

// result is what Wait and Apply return for outcome o.
func result(o wire.Outcome) (Outcome, error) {
	out := outcomeOf(o)
	if out.Status == Rejected {
		return out, &Rejection{Code: string(o.Code), Rule: o.Rule, Reason: o.Reason, ID: o.ID, Seq: o.Seq, Table: o.Table, PK: o.PK}
	}
	return out, nil
}

func outcomeOf(o wire.Outcome) Outcome {
	out := Outcome{ID: o.ID, Seq: o.Seq, Table: o.Table, PK: o.PK, Status: o.Status, Reason: o.Reason, At: o.At}
	for _, r := range o.Rows {
		out.Rows = append(out.Rows, RowVersion{RK: r.RK, Version: r.Version, Op: string(r.Op), Deleted: r.Deleted})
	}
	return out
}
