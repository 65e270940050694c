package replay

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/journal"
	"github.com/tablejournal/tablejournal/rows"
	"github.com/tablejournal/tablejournal/store"
	"github.com/tablejournal/tablejournal/wire"
)

// Erasure (SPEC §10, docs/erasure.md): PlanErase counts what an erase of a
// row or partition will remove; EraseKey publishes the erase, waits for the
// projector to apply it, removes the key's change events, earlier commands
// and their outcomes from JetStream with secure deletes, checks that nothing
// of the key is left and returns a receipt. Every step can be run again: a
// crash at any point leaves a state that the same call finishes.

// ErrErased: the key asked about was erased (SPEC §10); the *ErasedError
// says by which command at which sequence. Checked with errors.Is.
var ErrErased = errors.New("erased")

// ErrEraseIncomplete: after an erase, something of the key was still found
// (EraseKey's final check); running it again finishes the job.
var ErrEraseIncomplete = errors.New("erase incomplete")

// ErasedError says that a key was erased, by which command and when.
type ErasedError struct {
	Table, PK string
	RK        *string // nil: the whole partition was erased
	Cmd       string
	Seq       uint64
	At        time.Time
}

func (e *ErasedError) Error() string {
	return fmt.Sprintf("%s/%q: erased by command %s at seq %d", e.Table, e.PK, e.Cmd, e.Seq)
}

// Unwrap returns ErrErased.
func (e *ErasedError) Unwrap() error { return ErrErased }

// Erased reports whether the row table/pk/rk was erased after journal
// sequence at (0: at any time): the newest erase marker of the row or its
// partition, when its erase came after at, as an *ErasedError; nil when
// the row was not erased (or only before at).
func (r *Replayer) Erased(ctx context.Context, table, pk, rk string, at uint64) error {
	var newest *ErasedError
	for _, key := range []string{rows.ErasedKey, rows.ErasedRowKey(rk)} {
		e, err := r.st.Get(ctx, table, pk, key)
		if errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrTableNotFound) {
			continue
		}
		if err != nil {
			return err
		}
		m, ok := rows.DecodeMarker(e)
		if !ok || newest != nil && newest.Seq >= m.Seq {
			continue
		}
		newest = &ErasedError{Table: table, PK: pk, Cmd: m.Cmd, Seq: m.Seq, At: m.At}
		if key != rows.ErasedKey {
			newest.RK = &rk
		}
	}
	if newest == nil || at != 0 && newest.Seq <= at {
		return nil
	}
	return newest
}

// EraseTarget names what to erase: one row (RK set) or a whole partition.
type EraseTarget struct {
	Table, PK string
	RK        *string
}

func (t EraseTarget) covers(rk string) bool { return t.RK == nil || *t.RK == rk }

// SHA256 is the hex SHA-256 of the key (table, pk and rk, each
// length-prefixed), as the receipt names it without holding it.
func (t EraseTarget) SHA256() string {
	h := sha256.New()
	for _, s := range []string{t.Table, t.PK} {
		fmt.Fprintf(h, "%d:%s", len(s), s)
	}
	if t.RK != nil {
		fmt.Fprintf(h, "%d:%s", len(*t.RK), *t.RK)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// ErasePlan is what an erase of a key removes, as found now.
type ErasePlan struct {
	Target EraseTarget
	// EraseID and EraseSeq name the erase of the key already in the
	// journal that this plan finishes; zero when none is.
	EraseID  string
	EraseSeq uint64
	// TableRows counts the key's stored tip, version and tombstone rows.
	TableRows int
	// Journal are the sequences of the key's earlier commands to remove;
	// Kept those that stay: for a row erase, commands that touched the row
	// and other rows of the partition.
	Journal, Kept []uint64
	// Changes are the CHANGES sequences of the key's change events.
	Changes []uint64
	// Outcomes are the OUTCOMES sequences of the removed commands'
	// outcomes.
	Outcomes []uint64
}

// Empty reports whether nothing of the key is left to remove.
func (p *ErasePlan) Empty() bool {
	return p.TableRows == 0 && len(p.Journal) == 0 && len(p.Changes) == 0 && len(p.Outcomes) == 0
}

// EraseReceipt is what EraseKey did.
type EraseReceipt struct {
	Table     string `json:"table"`
	Partition bool   `json:"partition"`
	// KeySHA256 is EraseTarget.SHA256: the receipt names the key without
	// holding it.
	KeySHA256 string `json:"keySha256"`
	EraseID   string `json:"eraseId"`
	EraseSeq  uint64 `json:"eraseSeq"`
	// Removed counts, per place, what this run removed: the table rows are
	// those the projector deleted when it applied the erase in this run.
	Removed struct {
		TableRows    int `json:"tableRows"`
		JournalMsgs  int `json:"journalMessages"`
		ChangeEvents int `json:"changeEvents"`
		Outcomes     int `json:"outcomes"`
	} `json:"removed"`
	// JournalSeqs are the journal sequences removed; KeptSeqs the commands
	// that touched the row and others, kept (row erase only).
	JournalSeqs []uint64  `json:"journalSeqs"`
	KeptSeqs    []uint64  `json:"keptSeqs,omitempty"`
	Started     time.Time `json:"started"`
	Finished    time.Time `json:"finished"`
	// Verified: the final check found nothing of the key left in the
	// table, the journal (but Kept), the change feed or the outcomes.
	Verified bool `json:"verified"`
}

// PlanErase finds what an erase of t removes: everything up to the newest
// erase of the key already in the journal, if no command touched the key
// after it, else everything up to the journal's head.
func (r *Replayer) PlanErase(ctx context.Context, t EraseTarget) (*ErasePlan, error) {
	return r.planErase(ctx, t, 0)
}

// planErase is PlanErase reading the journal up to sequence upTo (0: the
// head): with upTo an erase's sequence, the plan finishes that erase and
// never touches what the key got after it.
func (r *Replayer) planErase(ctx context.Context, t EraseTarget, upTo uint64) (*ErasePlan, error) {
	if err := r.needJournal("erase"); err != nil {
		return nil, err
	}
	if err := r.validTarget(t); err != nil {
		return nil, err
	}
	p := &ErasePlan{Target: t}
	var cand []uint64 // the key's commands since the last erase of it
	var kept []uint64
	var ids = map[uint64]string{}
	err := r.j.Read(ctx, 1, upTo, wire.PartitionFilter(t.Table, t.PK), func(m journal.Msg) error {
		if journal.IsEraseMsg(m.Header) {
			e, err := journal.DecodeEraseMsg(m)
			if err == nil && (e.RK == nil || t.RK != nil && *e.RK == *t.RK) {
				p.EraseID, p.EraseSeq = e.ID, m.Seq
				p.Journal, p.Kept = append(p.Journal, cand...), append(p.Kept, kept...)
				cand, kept = nil, nil
			}
			return nil
		}
		cmd, err := journal.DecodeMsg(m)
		id := m.Header.Get(jetstream.MsgIDHeader)
		if cmd != nil {
			id = cmd.ID
		}
		switch {
		case keptPrune(cmd):
		case t.RK == nil, cmd == nil && err != nil:
			// The whole partition; or a command that does not decode,
			// which may hold anything: removed with a partition, and with
			// a row only when the partition goes (it is listed as kept).
			if t.RK == nil {
				cand = append(cand, m.Seq)
				ids[m.Seq] = id
			} else {
				kept = append(kept, m.Seq)
			}
		default:
			mine, others := false, false
			for _, op := range cmd.Ops {
				if t.covers(op.RK) {
					mine = true
				} else {
					others = true
				}
			}
			switch {
			case mine && others:
				kept = append(kept, m.Seq)
			case mine:
				cand = append(cand, m.Seq)
				ids[m.Seq] = id
			}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("plan erase: read the journal: %w", err)
	}
	if len(cand) > 0 || len(kept) > 0 {
		// The key was written after its last erase (or never erased):
		// a new erase will cover everything to the head.
		p.EraseID, p.EraseSeq = "", 0
		p.Journal, p.Kept = append(p.Journal, cand...), append(p.Kept, kept...)
	}
	if p.TableRows, err = r.countRows(ctx, t, p.EraseSeq); err != nil {
		return nil, err
	}
	if p.Changes, err = r.keyChanges(ctx, t, p.EraseSeq); err != nil {
		return nil, err
	}
	removed := make(map[uint64]bool, len(p.Journal))
	idSet := map[string]bool{}
	for _, s := range p.Journal {
		removed[s] = true
		if ids[s] != "" {
			idSet[ids[s]] = true
		}
	}
	for id := range idSet {
		err := scanStream(ctx, r.js, wire.OutcomesStream, wire.OutcomeSubject(id), func(seq uint64, _ nats.Header, data []byte) error {
			if o, err := wire.DecodeOutcome(data); err != nil || removed[o.Seq] {
				p.Outcomes = append(p.Outcomes, seq)
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("plan erase: read outcomes: %w", err)
		}
	}
	slices.Sort(p.Outcomes)
	return p, nil
}

func (r *Replayer) validTarget(t EraseTarget) error {
	e := &events.Erase{ID: "plan", Table: t.Table, PK: t.PK, RK: t.RK}
	return e.Validate()
}

// countRows counts the key's stored rows: tips, versions and tombstones,
// those written before sequence before (0: all).
func (r *Replayer) countRows(ctx context.Context, t EraseTarget, before uint64) (int, error) {
	n := 0
	count := func(e store.Entity) {
		if !rows.IsLayoutKey(e.RK) {
			return
		}
		if s, ok := e.Props[rows.ColSeq]; before == 0 || !ok || uint64(s.Int) < before {
			n++
		}
	}
	q := store.Query{PK: t.PK}
	if t.RK != nil {
		q.From, q.To = rows.HistoryRange(*t.RK)
		if e, err := r.st.Get(ctx, t.Table, t.PK, rows.TipKey(*t.RK)); err == nil {
			count(e)
		} else if !errors.Is(err, store.ErrNotFound) && !errors.Is(err, store.ErrTableNotFound) {
			return 0, err
		}
	}
	err := store.All(ctx, r.st, t.Table, q, func(e store.Entity) error {
		count(e)
		return nil
	})
	if errors.Is(err, store.ErrTableNotFound) {
		return n, nil
	}
	return n, err
}

// keyChanges lists the CHANGES sequences of the key's change events, of
// commands before sequence before (0: all).
func (r *Replayer) keyChanges(ctx context.Context, t EraseTarget, before uint64) ([]uint64, error) {
	var seqs []uint64
	err := scanStream(ctx, r.js, wire.ChangesStream, wire.ChangeSubject(t.Table, t.PK), func(seq uint64, _ nats.Header, data []byte) error {
		ev, err := wire.DecodeChangeEvent(data)
		if err != nil {
			if t.RK == nil {
				seqs = append(seqs, seq) // unreadable, of the partition
			}
			return nil
		}
		if (before == 0 || ev.Seq < before) && t.covers(ev.RK) {
			seqs = append(seqs, seq)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("plan erase: read the change feed: %w", err)
	}
	return seqs, nil
}

// EraseKey erases t everywhere (see the top of this file) and returns the
// receipt. It waits for the projector to apply the erase as long as ctx
// allows. The change events go by secure per-message deletes, for a
// partition as for a row: unlike a subject purge, that overwrites them.
func (r *Replayer) EraseKey(ctx context.Context, t EraseTarget, now func() time.Time) (*EraseReceipt, error) {
	if err := r.needJournal("erase"); err != nil {
		return nil, err
	}
	if now == nil {
		now = time.Now
	}
	rec := &EraseReceipt{Table: t.Table, Partition: t.RK == nil, KeySHA256: t.SHA256(), Started: now().UTC()}
	js, err := r.js.Stream(ctx, r.cfg.Journal)
	if err != nil {
		return nil, err
	}
	if err := journal.CheckDeletable(js); err != nil {
		return nil, err
	}
	p, err := r.PlanErase(ctx, t)
	if err != nil {
		return nil, err
	}
	rowsBefore := p.TableRows
	if p.EraseSeq == 0 {
		e := &events.Erase{ID: eraseID(now()), Table: t.Table, PK: t.PK, RK: t.RK, Issuer: r.cfg.Issuer, IssuedAt: now()}
		res, err := journal.NewWriter(r.js, r.cfg.Journal).PublishErase(ctx, e)
		if err != nil {
			return nil, err
		}
		p.EraseID, p.EraseSeq = e.ID, res.Seq
	}
	rec.EraseID, rec.EraseSeq = p.EraseID, p.EraseSeq
	o, err := journal.NewOutcomes(r.js).Await(ctx, p.EraseID, p.EraseSeq)
	if err != nil {
		return nil, err
	}
	if o.Status != wire.StatusApplied {
		return nil, fmt.Errorf("erase %s at seq %d: %s: %s: %w", p.EraseID, p.EraseSeq, o.Status, o.Reason, ErrRejected)
	}
	// Planned again now that the erase applied: up to its sequence, so
	// that what the key got after the erase stays.
	eraseSeq := p.EraseSeq
	if p, err = r.planErase(ctx, t, eraseSeq); err != nil {
		return nil, err
	}
	rec.Removed.TableRows = rowsBefore - p.TableRows
	// Outcomes first, then change events, then the commands: the commands
	// are how a run again finds their outcomes.
	for _, step := range []struct {
		stream string
		seqs   []uint64
		n      *int
	}{
		{wire.OutcomesStream, p.Outcomes, &rec.Removed.Outcomes},
		{wire.ChangesStream, p.Changes, &rec.Removed.ChangeEvents},
		{r.cfg.Journal, p.Journal, &rec.Removed.JournalMsgs},
	} {
		if len(step.seqs) == 0 {
			continue
		}
		s, err := r.js.Stream(ctx, step.stream)
		if err != nil {
			return nil, err
		}
		n, err := journal.SecureDelete(ctx, s, step.seqs)
		*step.n += n
		if err != nil {
			return nil, err
		}
	}
	rec.JournalSeqs, rec.KeptSeqs = p.Journal, p.Kept
	left, err := r.planErase(ctx, t, eraseSeq)
	if err != nil {
		return nil, err
	}
	rec.Finished = now().UTC()
	if !left.Empty() || left.EraseSeq != p.EraseSeq {
		return rec, fmt.Errorf("%w: %d rows, %d journal messages, %d change events, %d outcomes left; run it again",
			ErrEraseIncomplete, left.TableRows, len(left.Journal), len(left.Changes), len(left.Outcomes))
	}
	rec.Verified = true
	return rec, nil
}

// eraseID is the ID of an erase published at t.
func eraseID(t time.Time) string {
	return fmt.Sprintf("erase-%d", t.UTC().UnixNano())
}

// scanStream calls fn with every message of stream on subject filter, in
// stream order. A stream that does not exist holds nothing.
func scanStream(ctx context.Context, js jetstream.JetStream, stream, filter string, fn func(seq uint64, h nats.Header, data []byte) error) error {
	s, err := js.Stream(ctx, stream)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	info, err := s.Info(ctx, jetstream.WithSubjectFilter(filter))
	if err != nil {
		return err
	}
	total := uint64(0)
	for _, n := range info.State.Subjects {
		total += n
	}
	if total == 0 {
		return nil
	}
	cons, err := s.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{FilterSubjects: []string{filter}, InactiveThreshold: time.Minute})
	if err != nil {
		return err
	}
	it, err := cons.Messages()
	if err != nil {
		return err
	}
	defer it.Stop()
	for {
		m, err := it.Next(jetstream.NextContext(ctx))
		if err != nil {
			return err
		}
		meta, err := m.Metadata()
		if err != nil {
			return err
		}
		if err := fn(meta.Sequence.Stream, m.Headers(), m.Data()); err != nil {
			return err
		}
		if meta.NumPending == 0 {
			return nil
		}
	}
}

// erasedHistory is the *ErasedError of a row with no stored version that
// an erase removed; nil otherwise. Versions left of an erased row are all
// written after the erase (a new history), so a row with any is not
// reported, and costs no read.
func (r *Replayer) erasedHistory(ctx context.Context, table, pk, rk string, versions []rows.Row) error {
	if len(versions) > 0 {
		return nil
	}
	return r.Erased(ctx, table, pk, rk, 0)
}

// erasureOnly reports whether a journal's missing messages can only be
// erasures (SPEC §10): created to allow single deletes for erasure, it
// denies purges, so no prefix of it was trimmed.
func erasureOnly(cfg jetstream.StreamConfig) bool {
	return cfg.DenyPurge && !cfg.DenyDelete && cfg.Metadata[wire.MetadataAllowMsgDelete] == "true"
}

// refuseUndoErase refuses to undo an erase: what it removed is gone for
// good. The error wraps ErrErased.
func (r *Replayer) refuseUndoErase(ctx context.Context, o wire.Outcome) error {
	if r.j == nil {
		return nil
	}
	m, err := r.j.Get(ctx, o.Seq)
	if errors.Is(err, journal.ErrNotFound) {
		return nil
	}
	if err != nil || !journal.IsEraseMsg(m.Header) {
		return err
	}
	e, err := journal.DecodeEraseMsg(m)
	if err != nil {
		return err
	}
	return fmt.Errorf("undo %s: an erase cannot be undone, what it removed is gone for good: %w",
		o.ID, &ErasedError{Table: e.Table, PK: e.PK, RK: e.RK, Cmd: e.ID, Seq: o.Seq, At: m.Time})
}

// erasedKeys are the keys of a table erased after a point: whole
// partitions, and rows by partition.
type erasedKeys struct {
	parts map[string]bool
	rows  map[[2]string]bool
}

// erasedAfter reads the journal after seq for the erases of table; nil
// without a journal connection.
func (r *Replayer) erasedAfter(ctx context.Context, table string, seq uint64) (*erasedKeys, error) {
	if r.j == nil || table == "" {
		return nil, nil
	}
	k := &erasedKeys{parts: map[string]bool{}, rows: map[[2]string]bool{}}
	err := r.j.Read(ctx, seq+1, 0, wire.TableFilter(table), func(m journal.Msg) error {
		if !journal.IsEraseMsg(m.Header) {
			return nil
		}
		e, err := journal.DecodeEraseMsg(m)
		switch {
		case err != nil:
		case e.RK == nil:
			k.parts[e.PK] = true
		default:
			k.rows[[2]string{e.PK, *e.RK}] = true
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("erases after seq %d: %w", seq, err)
	}
	return k, nil
}

// drops reports whether a snapshot's row belongs to an erased key: a tip
// or version row (fences and markers stay).
func (k *erasedKeys) drops(e store.Entity) bool {
	if k == nil {
		return false
	}
	rk, _, _, ok := rows.ParseKey(e.RK)
	return ok && (k.parts[e.PK] || k.rows[[2]string{e.PK, rk}])
}

// eraseNote describes an erase message for blame; ok is false for any
// other message.
func eraseNote(m journal.Msg) (string, bool) {
	if !journal.IsEraseMsg(m.Header) {
		return "", false
	}
	e, err := journal.DecodeEraseMsg(m)
	if err != nil {
		return fmt.Sprintf("an erase that does not decode: %v", err), true
	}
	return "an erase of " + e.Key() + ", not a command: it wrote no versions", true
}

// erasedRows is the *ErasedError of the first row of an applied outcome
// that an erase after it removed; nil when none was.
func (r *Replayer) erasedRows(ctx context.Context, o wire.Outcome) error {
	for _, rv := range o.Rows {
		if err := r.Erased(ctx, o.Table, o.PK, rv.RK, o.Seq); err != nil {
			return err
		}
	}
	return nil
}
