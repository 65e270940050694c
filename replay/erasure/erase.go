package erasure

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/internal/jsapi"
	"github.com/tablejournal/tablejournal/journal"
	"github.com/tablejournal/tablejournal/journal/outcomes"
	"github.com/tablejournal/tablejournal/replay"
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

// ErrEraseIncomplete: after an erase, something of the key was still found
// (EraseKey's final check); running it again finishes the job.
var ErrEraseIncomplete = errors.New("erase incomplete")

// Target names what to erase: one row (RK set) or a whole partition.
type Target struct {
	Table, PK string
	RK        *string
}

func (t Target) covers(rk string) bool { return t.RK == nil || *t.RK == rk }

// SHA256 is the hex SHA-256 of the key (table, pk and rk, each
// length-prefixed), as the receipt names it without holding it.
func (t Target) SHA256() string {
	h := sha256.New()
	for _, s := range []string{t.Table, t.PK} {
		fmt.Fprintf(h, "%d:%s", len(s), s)
	}
	if t.RK != nil {
		fmt.Fprintf(h, "%d:%s", len(*t.RK), *t.RK)
	}
	return hex.EncodeToString(h.Sum(nil))
}

// Plan is what an erase of a key removes, as found now.
type Plan struct {
	Target Target
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
	// Behind counts the messages of the partition's entries in the
	// records of partitions behind (package projection/lost), a partition
	// erase only.
	Behind int

	behind []behindMsgs

	// values are the property values of the key's rows counted in
	// TableRows that are long enough to look for in a store's files
	// (scrubValues); never printed.
	values [][]byte

	eraser *Eraser // that made it, to plan again and apply (preview.go)
}

// Empty reports whether nothing of the key is left to remove.
func (p *Plan) Empty() bool {
	return p.TableRows == 0 && len(p.Journal) == 0 && len(p.Changes) == 0 && len(p.Outcomes) == 0 && p.Behind == 0
}

// Receipt is what EraseKey did.
type Receipt struct {
	Table     string `json:"table"`
	Partition bool   `json:"partition"`
	// KeySHA256 is Target.SHA256: the receipt names the key without
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
		// BehindEntries counts the messages of the partition's entry
		// in the records of partitions behind (values and markers).
		BehindEntries int `json:"behindEntries"`
	} `json:"removed"`
	// JournalSeqs are the journal sequences removed; KeptSeqs the commands
	// that touched the row and others, kept (row erase only).
	JournalSeqs []uint64  `json:"journalSeqs"`
	KeptSeqs    []uint64  `json:"keptSeqs,omitempty"`
	Started     time.Time `json:"started"`
	Finished    time.Time `json:"finished"`
	// StoreFiles is the check of the table store's own files, for a store
	// that keeps its tables in local files (the embedded one); nil for
	// others.
	StoreFiles *StoreFilesCheck `json:"storeFiles,omitempty"`
	// Verified: the final check found nothing of the key left in the
	// table, the journal (but Kept), the change feed, the outcomes, the
	// records of partitions behind or the table store's files.
	Verified bool `json:"verified"`
}

// StoreFilesCheck is what a receipt says of the table store's files: they
// were scrubbed of deleted rows (store.Scrubber), then read whole for the
// key's values.
type StoreFilesCheck struct {
	// Values counts the distinct string and binary values of the key's
	// rows, of at least 8 bytes, looked for: those of the rows this run
	// found in the table (a run again after the rows were deleted has none
	// to look for, and says 0).
	Values int `json:"valuesLookedFor"`
	// Held names the files that still hold one of them; empty when
	// verified.
	Held []string `json:"held,omitempty"`
}

// PlanErase finds what an erase of t removes: everything up to the newest
// erase of the key already in the journal, if no command touched the key
// after it, else everything up to the journal's head.
func (r *Eraser) PlanErase(ctx context.Context, t Target) (*Plan, error) {
	return r.planErase(ctx, t, 0)
}

// planErase is PlanErase reading the journal up to sequence upTo (0: the
// head): with upTo an erase's sequence, the plan finishes that erase and
// never touches what the key got after it.
func (r *Eraser) planErase(ctx context.Context, t Target, upTo uint64) (*Plan, error) {
	if err := r.NeedJournal("erase"); err != nil {
		return nil, err
	}
	if err := r.validTarget(t); err != nil {
		return nil, err
	}
	p := &Plan{Target: t, eraser: r}
	ids, err := r.keyCommands(ctx, p, upTo)
	if err != nil {
		return nil, fmt.Errorf("plan erase: read the journal: %w", err)
	}
	if p.TableRows, p.values, err = r.countRows(ctx, t, p.EraseSeq); err != nil {
		return nil, err
	}
	if p.Changes, err = r.keyChanges(ctx, t, p.EraseSeq); err != nil {
		return nil, err
	}
	if p.Outcomes, err = r.keyOutcomes(ctx, p.Journal, ids); err != nil {
		return nil, fmt.Errorf("plan erase: read outcomes: %w", err)
	}
	if p.behind, err = r.keyBehind(ctx, t); err != nil {
		return nil, err
	}
	for _, b := range p.behind {
		p.Behind += b.n
	}
	return p, nil
}

// keyCommands reads the journal of the key's partition up to sequence upTo
// (0: the head) into p: the newest erase of the key, and the key's commands
// to remove (Journal) or keep (Kept). It returns the command IDs by
// sequence.
func (r *Eraser) keyCommands(ctx context.Context, p *Plan, upTo uint64) (map[uint64]string, error) {
	t := p.Target
	var cand []uint64 // the key's commands since the last erase of it
	var kept []uint64
	var ids = map[uint64]string{}
	filters, err := keySubjects(ctx, r.JetStream(), r.Journal().Name(), t, wire.JournalPrefix+".*.*."+wire.PKToken(t.PK), wire.PartitionFilter(t.Table, t.PK))
	if err != nil {
		return nil, err
	}
	err = r.Journal().ReadAny(ctx, 1, upTo, filters, func(m journal.Msg) error {
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
		switch removed, keep := t.classify(cmd, err); {
		case removed:
			cand = append(cand, m.Seq)
			ids[m.Seq] = id
		case keep:
			kept = append(kept, m.Seq)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(cand) > 0 || len(kept) > 0 {
		// The key was written after its last erase (or never erased):
		// a new erase will cover everything to the head.
		p.EraseID, p.EraseSeq = "", 0
		p.Journal, p.Kept = append(p.Journal, cand...), append(p.Kept, kept...)
	}
	return ids, nil
}

// classify says what an erase of t does with a journaled command (cmd, or
// decodeErr when it does not decode): remove it, keep it (it touched t and
// other rows), or neither (it did not touch t).
func (t Target) classify(cmd *events.Command, decodeErr error) (remove, keep bool) {
	switch {
	case keptPrune(cmd):
		return false, false
	case t.RK == nil, cmd == nil && decodeErr != nil:
		// The whole partition; or a command that does not decode,
		// which may hold anything: removed with a partition, and with
		// a row only when the partition goes (it is listed as kept).
		return t.RK == nil, t.RK != nil
	}
	mine, others := false, false
	for _, op := range cmd.Ops {
		if t.covers(op.RK) {
			mine = true
		} else {
			others = true
		}
	}
	return mine && !others, mine && others
}

// keyOutcomes lists the OUTCOMES sequences of the outcomes of the removed
// commands (journal, their IDs in ids), in order: every outcome on the
// subject of a removed command's ID that is of a removed command or does
// not decode (on its own ID's subject), and those of removed commands on
// outcomes.=, where the outcomes of every message without a usable ID go.
// It reads them with batched direct gets (outcomes.Reader.Every), in
// requests in proportion to the commands and with no consumer: a consumer
// per ID exhausted JetStream's consumers beyond about a thousand commands.
func (r *Eraser) keyOutcomes(ctx context.Context, journalSeqs []uint64, ids map[uint64]string) ([]uint64, error) {
	removed := make(map[uint64]bool, len(journalSeqs))
	idList := make([]string, 0, len(journalSeqs))
	for _, s := range journalSeqs {
		removed[s] = true
		idList = append(idList, ids[s])
	}
	shared := wire.OutcomeSubject("")
	var out []uint64
	err := outcomes.NewReader(r.JetStream()).Every(ctx, idList, func(seq uint64, subject string, data []byte) error {
		o, err := wire.DecodeOutcome(data)
		if err == nil && removed[o.Seq] || err != nil && subject != shared {
			out = append(out, seq)
		}
		return nil
	})
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	slices.Sort(out)
	return out, nil
}

func (r *Eraser) validTarget(t Target) error {
	e := &events.Erase{ID: "plan", Table: t.Table, PK: t.PK, RK: t.RK}
	return e.Validate()
}

// countRows counts the key's stored rows: tips, versions and tombstones,
// those written before sequence before (0: all). For a plain table (SPEC
// §4) they are in its history table, and the table's own rows of the key
// count too: an erase removes the key from both.
func (r *Eraser) countRows(ctx context.Context, t Target, before uint64) (int, [][]byte, error) {
	vt, err := r.VersionTable(ctx, t.Table)
	if err != nil {
		return 0, nil, err
	}
	n := 0
	var values [][]byte
	seen := map[string]bool{}
	count := func(layout bool) func(store.Entity) error {
		return func(e store.Entity) error {
			if layout && !rows.IsLayoutKey(e.RK) {
				return nil
			}
			if s, ok := e.Props[rows.ColSeq]; before == 0 || !ok || uint64(s.Int) < before {
				n++
				values = scrubValues(values, seen, e.Props)
			}
			return nil
		}
	}
	get := func(table, rk string, fn func(store.Entity) error) error {
		e, err := r.Store().Get(ctx, table, t.PK, rk)
		if err == nil {
			return fn(e)
		}
		if errors.Is(err, store.ErrNotFound) || errors.Is(err, store.ErrTableNotFound) {
			return nil
		}
		return err
	}
	all := func(table string, q store.Query, fn func(store.Entity) error) error {
		err := store.All(ctx, r.Store(), table, q, fn)
		if errors.Is(err, store.ErrTableNotFound) {
			return nil
		}
		return err
	}
	q := store.Query{PK: t.PK}
	if t.RK != nil {
		q.From, q.To = rows.HistoryRange(*t.RK)
		if err := get(vt, rows.TipKey(*t.RK), count(true)); err != nil {
			return 0, nil, err
		}
	}
	if err := all(vt, q, count(true)); err != nil {
		return 0, nil, err
	}
	if vt == t.Table {
		return n, values, nil
	}
	if t.RK != nil {
		err = get(t.Table, *t.RK, count(false))
	} else {
		err = all(t.Table, store.Query{PK: t.PK}, count(false))
	}
	return n, values, err
}

// minScrubValue is the shortest value looked for in a store's files: a
// shorter one (a flag, a small number's digits) occurs in any file by
// chance.
const minScrubValue = 8

// scrubValues adds to values the string and binary properties of a row
// that are at least minScrubValue bytes long, once each (seen holds those
// added: a set, so that a partition of 100,000 distinct values costs
// linear time, not quadratic).
func scrubValues(values [][]byte, seen map[string]bool, props edm.Entity) [][]byte {
	for name, v := range props {
		var b []byte
		switch {
		case strings.HasPrefix(name, "_"):
			continue // system columns: IDs and operations, not the key's data
		case v.Type == edm.TypeString:
			b = []byte(v.Str)
		case v.Type == edm.TypeBinary:
			b = v.Bytes
		}
		if len(b) >= minScrubValue && !seen[string(b)] {
			seen[string(b)] = true
			values = append(values, b)
		}
	}
	return values
}

// keyChanges lists the CHANGES sequences of the key's change events, of
// commands before sequence before (0: all).
func (r *Eraser) keyChanges(ctx context.Context, t Target, before uint64) ([]uint64, error) {
	var seqs []uint64
	subjects, err := keySubjects(ctx, r.JetStream(), wire.ChangesStream, t, wire.ChangesPrefix+".*."+wire.PKToken(t.PK), wire.ChangeSubject(t.Table, t.PK))
	if err != nil {
		return nil, fmt.Errorf("plan erase: read the change feed: %w", err)
	}
	err = scanStream(ctx, r.JetStream(), wire.ChangesStream, subjects, func(seq uint64, _ nats.Header, data []byte) error {
		var ev wire.ChangeEvent
		if err := json.Unmarshal(data, &ev); err != nil {
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
// receipt: it plans the erase and carries the plan out at once, as
// Plan.Apply carries out a plan previewed before. It waits for the projector to apply the erase as long as ctx
// allows. The change events go by secure per-message deletes, for a
// partition as for a row: unlike a subject purge, that overwrites them.
func (r *Eraser) EraseKey(ctx context.Context, t Target, now func() time.Time) (*Receipt, error) {
	if err := r.checkDeletable(ctx); err != nil {
		return nil, err
	}
	p, err := r.PlanErase(ctx, t)
	if err != nil {
		return nil, err
	}
	return r.erase(ctx, p, now)
}

// checkDeletable fails unless the journal allows the secure deletes an
// erase needs.
func (r *Eraser) checkDeletable(ctx context.Context) error {
	if err := r.NeedJournal("erase"); err != nil {
		return err
	}
	js, err := r.JetStream().Stream(ctx, r.Config().Journal)
	if err != nil {
		return err
	}
	return checkDeletable(js)
}

// erase carries out plan p, made just now (EraseKey, Plan.Apply).
func (r *Eraser) erase(ctx context.Context, p *Plan, now func() time.Time) (*Receipt, error) {
	if now == nil {
		now = time.Now
	}
	t := p.Target
	rec := &Receipt{Table: t.Table, Partition: t.RK == nil, KeySHA256: t.SHA256(), Started: now().UTC()}
	var err error
	rowsBefore, values := p.TableRows, p.values
	appliedBefore, err := r.appliedBefore(ctx, p)
	if err != nil {
		return nil, err
	}
	if p.EraseSeq == 0 {
		e := &events.Erase{ID: eraseID(now()), Table: t.Table, PK: t.PK, RK: t.RK, Issuer: r.Config().Issuer, IssuedAt: now()}
		res, err := journal.NewWriter(r.JetStream(), r.Config().Journal).PublishErase(ctx, e)
		if err != nil {
			return nil, err
		}
		p.EraseID, p.EraseSeq = e.ID, res.Seq
	}
	rec.EraseID, rec.EraseSeq = p.EraseID, p.EraseSeq
	o, err := r.await(ctx, p.EraseID, p.EraseSeq)
	if err != nil {
		return nil, err
	}
	if o.Status != wire.StatusApplied {
		return nil, fmt.Errorf("erase %s at seq %d: %s: %s: %w", p.EraseID, p.EraseSeq, o.Status, o.Reason, replay.ErrRejected)
	}
	// Planned again now that the erase applied: up to its sequence, so
	// that what the key got after the erase stays.
	eraseSeq := p.EraseSeq
	log := r.Config().Logger.With("erase", p.EraseID, "seq", eraseSeq)
	step := time.Now()
	if p, err = r.planErase(ctx, t, eraseSeq); err != nil {
		return nil, err
	}
	log.Info("erase: planned", "journal", len(p.Journal), "outcomes", len(p.Outcomes), "changes", len(p.Changes), "took", time.Since(step).Round(time.Millisecond))
	if !appliedBefore {
		// What the projector removed, as it counted when it applied the
		// erase: rows it wrote after the plan counted are in it. An
		// outcome without the count (recovered after a crash, or of a
		// projector before it) falls back on the plan's count.
		rec.Removed.TableRows = max(int(o.Erased), rowsBefore-p.TableRows)
	}
	if err := r.deletePlanned(ctx, p, rec); err != nil {
		return nil, err
	}
	rec.JournalSeqs, rec.KeptSeqs = p.Journal, p.Kept
	step = time.Now()
	left, err := r.planErase(ctx, t, eraseSeq)
	if err != nil {
		return nil, err
	}
	log.Info("erase: checked", "took", time.Since(step).Round(time.Millisecond))
	rec.Finished = now().UTC()
	if !left.Empty() || left.EraseSeq != p.EraseSeq {
		return rec, fmt.Errorf("%w: %d rows, %d journal messages, %d change events, %d outcomes, %d messages of partitions behind left; run it again",
			ErrEraseIncomplete, left.TableRows, len(left.Journal), len(left.Changes), len(left.Outcomes), left.Behind)
	}
	if err := r.scrubStore(ctx, rec, values); err != nil {
		return rec, err
	}
	rec.Verified = true
	return rec, nil
}

// appliedBefore reports whether the erase a plan finishes (p.EraseSeq
// set: journaled by an earlier run) was applied before this run: then
// this run removed no table rows.
func (r *Eraser) appliedBefore(ctx context.Context, p *Plan) (bool, error) {
	if p.EraseSeq == 0 {
		return false, nil
	}
	o, err := outcomes.NewReader(r.JetStream()).Latest(ctx, p.EraseID)
	if errors.Is(err, journal.ErrNotFound) || errors.Is(err, jetstream.ErrStreamNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return o.Seq == p.EraseSeq && o.Status == wire.StatusApplied, nil
}

// await waits for the outcome of the erase id at seq, at most r.wait when
// set.
func (r *Eraser) await(ctx context.Context, id string, seq uint64) (wire.Outcome, error) {
	if r.wait > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, r.wait)
		defer cancel()
	}
	o, err := outcomes.NewReader(r.JetStream()).Await(ctx, id, seq)
	if err != nil {
		return o, fmt.Errorf("wait for the projector to apply erase %s at seq %d (it is journaled: the same erase run again finishes it): %w", id, seq, err)
	}
	return o, nil
}

// deletePlanned securely deletes the messages p names and counts them in
// rec. The partition's entries behind first (purged: their streams deny
// deletes, and they hold no key but in entries of the legacy form), then
// outcomes, then change events, then the commands: the commands are how a
// run again finds their outcomes.
func (r *Eraser) deletePlanned(ctx context.Context, p *Plan, rec *Receipt) error {
	n, err := r.deleteBehind(ctx, p.behind)
	rec.Removed.BehindEntries += n
	if err != nil {
		return err
	}
	for _, step := range []struct {
		stream string
		seqs   []uint64
		n      *int
	}{
		{wire.OutcomesStream, p.Outcomes, &rec.Removed.Outcomes},
		{wire.ChangesStream, p.Changes, &rec.Removed.ChangeEvents},
		{r.Config().Journal, p.Journal, &rec.Removed.JournalMsgs},
	} {
		if len(step.seqs) == 0 {
			continue
		}
		s, err := r.JetStream().Stream(ctx, step.stream)
		if err != nil {
			return err
		}
		if err := r.deleteAll(ctx, s, step.seqs, step.n); err != nil {
			return err
		}
	}
	return nil
}

// progressEvery is how often a long run of secure deletes says how far it
// got: each costs JetStream a rewrite of a block file, and a partition of
// 100,000 commands takes most of an hour (docs/erasure.md).
const progressEvery = 15 * time.Second

// deleteAll securely deletes seqs of s, counting them in n, and logs
// its progress every progressEvery.
func (r *Eraser) deleteAll(ctx context.Context, s jetstream.Stream, seqs []uint64, n *int) error {
	const chunk = 256
	log := r.Config().Logger.With("stream", s.CachedInfo().Config.Name)
	start, last := time.Now(), time.Now()
	for i := 0; i < len(seqs); i += chunk {
		d, err := secureDelete(ctx, s, seqs[i:min(i+chunk, len(seqs))])
		*n += d
		if err != nil {
			return err
		}
		if time.Since(last) >= progressEvery {
			log.Info("erase: deleting", "done", min(i+chunk, len(seqs)), "of", len(seqs), "took", time.Since(start).Round(time.Second))
			last = time.Now()
		}
	}
	log.Info("erase: deleted", "messages", len(seqs), "took", time.Since(start).Round(time.Millisecond))
	return nil
}

// scrubStore has a store that keeps its tables in local files
// (store.Scrubber: the embedded one) scrub them of the deleted rows, and
// records the check of its files for values in the receipt.
func (r *Eraser) scrubStore(ctx context.Context, rec *Receipt, values [][]byte) error {
	sc, ok := r.Store().(store.Scrubber)
	if !ok {
		return nil
	}
	held, err := sc.Scrub(ctx, values)
	if err != nil {
		return fmt.Errorf("erase: scrub the table store's files: %w", err)
	}
	rec.StoreFiles = &StoreFilesCheck{Values: len(values), Held: held}
	if len(held) > 0 {
		return fmt.Errorf("%w: the table store's files %s still hold erased values; run it again",
			ErrEraseIncomplete, strings.Join(held, ", "))
	}
	return nil
}

// eraseID is the ID of an erase published at t.
func eraseID(t time.Time) string {
	return fmt.Sprintf("erase-%d", t.UTC().UnixNano())
}

// keySubjects returns the subject filters of t's partition in stream:
// canonical, the filter under the table's lower-case token (wire.TableToken),
// and the filter of every other spelling of the table the stream holds
// the partition under, which journals and change feeds written before
// subjects carried the lower-case token may have. all is the filter of
// the partition in every table, with the table token second.
func keySubjects(ctx context.Context, js jetstream.JetStream, stream string, t Target, all, canonical string) ([]string, error) {
	filters := []string{canonical}
	s, err := js.Stream(ctx, stream)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return filters, nil
	}
	if err != nil {
		return nil, err
	}
	info, err := s.Info(ctx, jetstream.WithSubjectFilter(all))
	if err != nil {
		return nil, err
	}
	canonTok := strings.Split(canonical, ".")[1]
	for subject := range info.State.Subjects {
		toks := strings.Split(subject, ".")
		if len(toks) < 3 || toks[1] == canonTok || !strings.EqualFold(toks[1], t.Table) {
			continue
		}
		ftoks := strings.Split(all, ".")
		ftoks[1] = toks[1]
		if f := strings.Join(ftoks, "."); !slices.Contains(filters, f) {
			filters = append(filters, f)
		}
	}
	slices.Sort(filters[1:])
	return filters, nil
}

// scanStream calls fn with every message of stream on any of filters, in
// stream order, through one ordered consumer that it deletes when done. A
// stream that does not exist holds nothing.
func scanStream(ctx context.Context, js jetstream.JetStream, stream string, filters []string, fn func(seq uint64, h nats.Header, data []byte) error) error {
	s, err := js.Stream(ctx, stream)
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil
	}
	if err != nil {
		return err
	}
	total := uint64(0)
	for _, filter := range filters {
		info, err := s.Info(ctx, jetstream.WithSubjectFilter(filter))
		if err != nil {
			return err
		}
		for _, n := range info.State.Subjects {
			total += n
		}
	}
	if total == 0 {
		return nil
	}
	// Deleted when done (ReadOrdered does), not left to lapse: a plan
	// reads again right after, and JetStream bounds a stream's consumers.
	// UpTo, not a read until NumPending is 0 alone: what it counted may be
	// deleted meanwhile (by an erase of the same key) and never come.
	cfg := jetstream.OrderedConsumerConfig{FilterSubjects: filters, InactiveThreshold: time.Minute}
	return jsapi.ReadOrdered(ctx, js, stream, cfg, func(m jetstream.Msg, meta *jetstream.MsgMetadata) error {
		return fn(meta.Sequence.Stream, m.Headers(), m.Data())
	}, jsapi.UpTo(0))
}
