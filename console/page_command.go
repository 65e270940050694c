package console

// The command page: what one command did (its blame): its outcome, every
// outcome of its ID, its operations and the versions it wrote.

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/journal"
	"github.com/tablejournal/tablejournal/projection"
	"github.com/tablejournal/tablejournal/replay"
	"github.com/tablejournal/tablejournal/replay/history"
	"github.com/tablejournal/tablejournal/rows"
	"github.com/tablejournal/tablejournal/wire"
)

func init() {
	register(page{name: "command", routes: func(h *Handler) []route {
		return []route{{"GET /command", h.command}}
	}})
}

// commandPage is what one command did.
type commandPage struct {
	entry
	// History is every outcome of the ID, oldest first (an ID published
	// twice has an applied and a duplicate one).
	History []wire.Outcome
	Trace   string // the W3C trace ID, "" without one
	// Meta, Ops and PruneHorizon are the decoded command's.
	Meta         map[string]string
	Ops          []events.RowOp
	PruneHorizon uint64
	// Versions are the row versions it wrote (history.Blame).
	Versions []rows.Row
	// EraseRK is the erased row of a one-row erase; EraseRow says whether
	// the erase is of one row.
	EraseRK  string
	EraseRow bool
	// Gone says why the message body is not shown: no longer stored, or
	// not decodable.
	Gone string
	// Pruned says that the versions it wrote are pruned, and by what.
	Pruned string
}

func (p commandPage) title() string { return "Command " + p.ID }

func (h *Handler) command(w http.ResponseWriter, r *http.Request) {
	id := r.URL.Query().Get("id")
	if id == "" {
		h.httpError(w, r, fmt.Errorf("%w: name a command: ?id=ID", errBadRequest))
		return
	}
	p, err := h.svc.blame(r.Context(), id)
	if err != nil {
		h.httpError(w, r, err)
		return
	}
	h.render(w, r, "command", p)
}

// blame reads what command id did.
func (s *services) blame(ctx context.Context, id string) (commandPage, error) {
	j, err := s.journal()
	if err != nil {
		return commandPage{}, err
	}
	b, err := s.hist.Blame(ctx, id)
	var pruned *replay.PrunedError
	note := ""
	switch {
	case errors.Is(err, replay.ErrNoOutcome):
		return commandPage{}, fmt.Errorf("command %q: %w", id, errNotFound)
	case errors.As(err, &pruned):
		// The versions it wrote are pruned; the command and its outcome
		// are not.
		if b, err = s.prunedBlame(ctx, j, id); err != nil {
			return commandPage{}, err
		}
		note = fmt.Sprintf("the versions it wrote are pruned: the partition's history before seq %d was removed by %s", pruned.Horizon.Seq, pruned.Horizon.Cmd)
	case err != nil:
		return commandPage{}, err
	}
	v := commandPage{entry: outcomeEntry(b.Outcome, "command"), Versions: b.Versions, Pruned: note}
	v.ID = id
	if m, err := j.Get(ctx, b.Outcome.Seq); err == nil {
		v.entry = decodeEntry(m)
		v.Trace = traceID(m.Header.Get(projection.HeaderTraceparent))
		if x, err := journal.DecodeEraseMsg(m); err == nil && journal.IsEraseMsg(m.Header) && x.RK != nil {
			v.EraseRow, v.EraseRK = true, *x.RK
		}
	} else {
		v.Gone = "the journal no longer stores this command (erased or trimmed)"
	}
	v.Outcome = b.Outcome
	if hist, err := s.outcomes.History(ctx, id); err == nil {
		v.History = hist
	}
	if c := b.Command; c != nil {
		v.Meta, v.Ops = c.Meta, c.Ops
		if c.Prune != nil {
			v.PruneHorizon = c.Prune.Horizon
		}
	} else if b.DecodeErr != "" && v.Gone == "" && v.Kind != "erase" {
		v.Gone = "the command does not decode: " + b.DecodeErr
	}
	return v, nil
}

// traceID is the trace ID of a W3C traceparent header.
func traceID(parent string) string {
	parts := strings.Split(parent, "-")
	if len(parts) != 4 {
		return ""
	}
	return parts[1]
}

// prunedBlame is what a blame shows of command id whose versions are
// pruned: its outcome and command, no versions.
func (s *services) prunedBlame(ctx context.Context, j *journal.Journal, id string) (*history.Blame, error) {
	o, err := s.hist.Outcome(ctx, id)
	if err != nil {
		return nil, err
	}
	b := &history.Blame{Outcome: o}
	if m, err := j.Get(ctx, o.Seq); err == nil {
		b.Command, _ = journal.DecodeMsg(m)
	}
	return b, nil
}
