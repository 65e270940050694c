package console

import (
	"context"
	"fmt"
	"time"

	"github.com/tablejournal/tablejournal/journal"
	"github.com/tablejournal/tablejournal/wire"
)

// entry is one journal message (a command, a prune or an erase) with its
// outcome, as the journal, command, as-of and repair pages list them: the
// message's header facts, decoded through package journal, beside the
// projector's wire.Outcome.
type entry struct {
	Seq       uint64
	Time      time.Time
	ID        string
	Table, PK string
	Issuer    string
	IssuedAt  time.Time
	Kind      string // "command", "prune" or "erase"
	Ops       int
	// Outcome is the message's outcome; its Status is "" without one yet.
	Outcome wire.Outcome
}

// decodeEntry reads a journal message: a command, a prune or an erase.
// Its table is as the body spells it, else the subject's token.
func decodeEntry(m journal.Msg) entry {
	e := entry{Seq: m.Seq, Time: m.Time, Kind: "command"}
	if table, _, pk, err := wire.ParseJournalSubject(m.Subject); err == nil {
		e.Table, e.PK = table, pk
	}
	if journal.IsEraseMsg(m.Header) {
		e.Kind = "erase"
		if x, err := journal.DecodeEraseMsg(m); err == nil {
			e.ID, e.Issuer, e.IssuedAt, e.Table = x.ID, x.Issuer, x.IssuedAt, x.Table
		}
		return e
	}
	c, err := journal.DecodeMsg(m)
	if err != nil {
		e.ID = m.Header.Get("Nats-Msg-Id")
		return e
	}
	e.ID, e.Issuer, e.IssuedAt, e.Ops, e.Table = c.ID, c.Issuer, c.IssuedAt, len(c.Ops), c.Table
	if c.IsPrune() {
		e.Kind = "prune"
	}
	return e
}

// outcomeEntry is the entry of an outcome whose message is not read.
func outcomeEntry(o wire.Outcome, kind string) entry {
	return entry{Seq: o.Seq, Time: o.At, ID: o.ID, Table: o.Table, PK: o.PK, Kind: kind, Outcome: o}
}

// attachOutcomes sets each entry's outcome: the latest of its ID, or, when
// that is of another message of the same ID, the one of its own.
func (s *services) attachOutcomes(ctx context.Context, es []entry) error {
	if len(es) == 0 {
		return nil
	}
	ids := make([]string, 0, len(es))
	for _, e := range es {
		if e.ID != "" {
			ids = append(ids, e.ID)
		}
	}
	latest, err := s.outcomes.LatestAll(ctx, ids)
	if err != nil {
		return fmt.Errorf("outcomes: %w", err)
	}
	for i := range es {
		o, ok := latest[es[i].ID]
		if ok && o.Seq != es[i].Seq {
			ok = false
			hist, err := s.outcomes.History(ctx, es[i].ID)
			if err != nil {
				return fmt.Errorf("outcomes of %s: %w", es[i].ID, err)
			}
			for _, h := range hist {
				if h.Seq == es[i].Seq {
					o, ok = h, true
				}
			}
		}
		if ok {
			es[i].Outcome = o
		}
	}
	return nil
}

// entryAt is the journal entry of an outcome, with its message if stored.
func (s *services) entryAt(ctx context.Context, j *journal.Journal, o wire.Outcome) entry {
	e := outcomeEntry(o, "command")
	if m, err := j.Get(ctx, o.Seq); err == nil {
		e = decodeEntry(m)
		e.Outcome = o
	}
	return e
}
