package decide

import (
	"errors"
	"fmt"
	"time"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/events/rules"
	"github.com/tablejournal/tablejournal/journal"
	"github.com/tablejournal/tablejournal/rows"
	"github.com/tablejournal/tablejournal/store"
	"github.com/tablejournal/tablejournal/wire"
)

// Entry is one journal message of a partition, ready to apply.
type Entry struct {
	Seq uint64
	// At is the journal's stored time of the message; it becomes _at.
	At time.Time
	// ID is the command ID (from Nats-Msg-Id when the body did not decode).
	ID string
	// Cmd is the decoded command, nil when Err is set.
	Cmd *events.Command
	// Erase is the decoded erase (SPEC §10) when the message is one; Cmd
	// is nil then.
	Erase *events.Erase
	// Err is why the message cannot apply (undecodable, invalid, subject
	// and body disagree); the entry is rejected with it as reason.
	Err error
	// Prior is an outcome of an earlier journal message with the same
	// command ID, if the caller knows one (the projector looks every
	// fetched ID up in the outcomes stream). A command ID applies at most
	// once, ever: if Prior says it applied (or was a duplicate) at an
	// earlier sequence, the entry is a duplicate.
	Prior Prior
	// Trace is the message's W3C trace context, copied onto the outcome
	// and change events.
	Trace TraceContext

	// Own is this message's own outcome, when the projector's look-up of
	// the batch's IDs found it stored (a redelivery): recovering a skipped
	// command needs no request of its own then.
	Own *wire.Outcome
}

// Prior is an outcome stored for a command ID, as Entry.Prior.
type Prior struct {
	Seq    uint64 // 0: none known
	Status wire.Status
	// Digest is the prior command's events.Command.Digest, "" when its
	// outcome carries none (stored before outcomes had it).
	Digest string
}

// Skipped is the status of a Result beside the three outcomes of SPEC §5
// (wire.Status): a redelivered command whose effect is already in the
// table, because the rows' _seq show it was handled before a crash or
// redelivery. It is never published: the command's outcome was published
// then (or is recovered from the table).
const Skipped wire.Status = "skipped"

// Result is what applying one entry did.
type Result struct {
	Seq    uint64
	ID     string
	Status wire.Status // an outcome, or Skipped
	Reason string      // for rejected and duplicate
	// Code and Rule say, for a rejection, what kind it is (SPEC §5).
	Code wire.Code
	Rule string
	// Rows are the versions an applied command produced, one per row it
	// changed, in the order the command first names them.
	Rows []wire.RowVersion
	// Pruned is the number of rows an applied prune removed (projection/prune.go).
	Pruned int64
	// ErasedRows is the number of rows an applied erase removed (erase.go,
	// projection/erase.go).
	ErasedRows int64
	// Changes are the change-feed events of an applied command, one per
	// row version, in the order of Rows.
	Changes []Change
	// Stored says the outcome of this entry is already in the outcomes
	// stream (the entry was handled before): nothing to publish.
	Stored bool

	// DependsOnState marks a rejection decided on the rows' state (not on
	// the message alone), which the driver validates before it is
	// published.
	DependsOnState bool
	// Erased marks a result skipped because an erase was applied after it
	// (erase.go).
	Erased bool
}

// Change is one applied row change, with before and after images.
type Change struct {
	RK      string
	Kind    wire.ChangeOp
	Version int64
	Before  edm.Entity // nil for wire.ChangeCreate
	After   edm.Entity // nil for wire.ChangeDelete
	// Partition marks the notice of a whole-partition erase (wire.ChangeErase).
	Partition bool
}

// rowState is what the apply knows of one logical row: its tip and its
// newest version of any kind (rows.State).
type rowState = rows.State

// nextVersion is the version the next command that changes the row makes.
func nextVersion(s *rowState) int64 {
	if s.Latest == nil {
		return 0
	}
	return s.Latest.Version + 1
}

// rejectError is why a command is rejected, with its code (SPEC §5).
type rejectError struct {
	msg  string
	code wire.Code
	rule string
}

func (e *rejectError) Error() string { return e.msg }

func reject(code wire.Code, rule, format string, args ...any) error {
	return &rejectError{fmt.Sprintf(format, args...), code, rule}
}

// rejection returns the code and rule of err, why a command is rejected:
// a *rejectError's own, or for a message that does not decode or
// validate, CodeInvalid with the rule it broke.
func rejection(err error) (wire.Code, string) {
	var re *rejectError
	var ve *rules.ValidationError
	switch {
	case errors.As(err, &re):
		return re.code, re.rule
	case errors.As(err, &ve):
		return wire.CodeInvalid, string(ve.Rule)
	case errors.Is(err, journal.ErrSubjectMismatch):
		return wire.CodeInvalid, wire.RuleSubjectMismatch
	case errors.Is(err, journal.ErrIDMismatch):
		return wire.CodeInvalid, wire.RuleIDMismatch
	case errors.Is(err, wire.ErrBadSubject):
		return wire.CodeInvalid, wire.RuleBadSubject
	}
	return wire.CodeInvalid, ""
}

// reject sets res to a rejection for err, with reason.
func (res *Result) Reject(reason string, err error) {
	res.Status, res.Reason = wire.StatusRejected, reason
	res.Code, res.Rule = rejection(err)
}

// batch accumulates the effect of consecutive commands of one partition
// into one transaction. It is pure: it reads no clock and does no I/O.
type Txn struct {
	pk   string
	base map[string]*rowState // committed state at the start of the batch
	Cur  map[string]*rowState // state after the commands taken so far
	// added are the version rows written in this batch, per RK.
	added map[string][]rows.Row
	// cost of each touched RK in the transaction: ops and bytes.
	ops, bytes map[string]int
	totalOps   int
	totalBytes int
	Results    []Result

	// seen holds command IDs known applied before this batch, by journal
	// sequence (the caller's; nil for none). appliedIDs are the IDs the
	// batch applies itself; skippedIDs those of commands it skips without
	// knowing whether they applied.
	Seen       map[string]uint64
	AppliedIDs map[string]uint64
	skippedIDs map[string]bool
	// Last is the newest command the batch applies: the Fence's content.
	Last Fence
	// by names, per row, the newest command of the batch that wrote it.
	by map[string]Source
	// Wrote is set once the batch committed a transaction.
	Wrote bool
	// Erase is what the batch knows of erases (erase.go).
	Erase EraseState
	// limits are the store's beyond Azure's (store.Store.Limits): a
	// command that breaks one is rejected by its rule, and transactions
	// stay within limits.TxBytes().
	limits events.Limits
}

func NewTxn(pk string, state map[string]*rowState, limits events.Limits) *Txn {
	return &Txn{
		pk: pk, limits: limits, base: state, Cur: make(map[string]*rowState),
		added: make(map[string][]rows.Row), ops: make(map[string]int), bytes: make(map[string]int),
		AppliedIDs: make(map[string]uint64), skippedIDs: make(map[string]bool), by: make(map[string]Source),
		// Room for the Fence write every transaction carries.
		totalOps: 1, totalBytes: fenceWireCost,
	}
}

func (b *Txn) state(rk string) *rowState {
	if s, ok := b.Cur[rk]; ok {
		return s
	}
	if s, ok := b.base[rk]; ok {
		return s
	}
	return &rowState{}
}

// ErrFull says the command does not fit the batch beside what it holds.
var ErrFull = fmt.Errorf("batch full")

// add applies e to the batch. It returns ErrFull, leaving the batch as it
// was, when the command's rows would push the transaction over the store's
// limits; the caller then commits the batch and adds e to a fresh one.
func (b *Txn) Add(e Entry) error {
	res := Result{Seq: e.Seq, ID: e.ID}
	if e.Err != nil {
		res.Reject(e.Err.Error(), e.Err)
		b.Results = append(b.Results, res)
		return nil
	}
	if done, err := b.addErased(e, res); done {
		return err
	}
	c := e.Cmd
	if err := b.limits.Check(c); err != nil {
		res.Reject(err.Error(), err)
		b.Results = append(b.Results, res)
		return nil
	}
	// Whether this ID applied earlier is known only once the commands of
	// this batch are: an earlier message with the same ID that this batch
	// applies, or skips without knowing whether it applied, is settled by
	// committing first.
	if _, ok := b.AppliedIDs[c.ID]; ok || b.skippedIDs[c.ID] {
		return ErrFull
	}
	if b.skip(e) {
		res.Status = Skipped
		b.Results = append(b.Results, res)
		return nil
	}
	if why := reused(e); why != nil {
		res.Reject(why.Error(), why)
		b.Results = append(b.Results, res)
		return nil
	}
	if dup := b.Duplicate(e); dup != "" {
		res.Status, res.Reason = wire.StatusDuplicate, dup
		b.Results = append(b.Results, res)
		return nil
	}
	eff, why := b.simulate(e)
	if why == nil {
		var err error
		if why, err = b.price(&eff); err != nil {
			return err
		}
	}
	if why != nil {
		// Nothing of a rejected command is written, nor reported as written.
		res.Reject(why.Error(), why)
		res.DependsOnState = true
		b.Results = append(b.Results, res)
		return nil
	}
	b.take(e, eff)
	res.Status, res.Rows, res.Changes = wire.StatusApplied, eff.rows, eff.changes
	b.Results = append(b.Results, res)
	return nil
}

// skip reports whether e was handled before (a redelivery): a row it
// names already carries its or a later sequence.
func (b *Txn) skip(e Entry) bool {
	for _, op := range e.Cmd.Ops {
		if l := b.state(op.RK).Latest; l != nil && l.Seq >= e.Seq {
			if l.Seq == e.Seq && l.Cmd == e.Cmd.ID {
				b.AppliedIDs[e.Cmd.ID] = e.Seq // it applied: its own version says so
			} else {
				b.skippedIDs[e.Cmd.ID] = true
			}
			return true
		}
	}
	return false
}

// reused refuses e when its ID applied before with another body (SPEC §5,
// code body-differs): an ID names one command, at any distance in time.
// The earlier outcome's digest says what that command was; an outcome
// without one (stored before digests) cannot tell, and e is a duplicate.
func reused(e Entry) error {
	p := e.Prior
	if p.Seq == 0 || p.Seq >= e.Seq || p.Digest == "" || (p.Status != wire.StatusApplied && p.Status != wire.StatusDuplicate) {
		return nil
	}
	if e.Cmd.Digest() == p.Digest {
		return nil
	}
	return reject(wire.CodeBodyDiffers, "", "command ID %s already applied at journal sequence %d with another body: an ID names one command; publish this one under a new ID", e.Cmd.ID, p.Seq)
}

// duplicate says why e is a duplicate, or "": a command ID applies at most
// once, ever (a republish after JetStream's duplicate window, or one
// published without Nats-Msg-Id).
func (b *Txn) Duplicate(e Entry) string {
	id := e.Cmd.ID
	if s, ok := b.Seen[id]; ok && s < e.Seq {
		return fmt.Sprintf("command %s already applied at journal sequence %d", id, s)
	}
	if e.Prior.Seq != 0 && e.Prior.Seq < e.Seq {
		switch e.Prior.Status {
		case wire.StatusApplied:
			return fmt.Sprintf("command %s already applied at journal sequence %d", id, e.Prior.Seq)
		case wire.StatusDuplicate:
			return fmt.Sprintf("command %s already applied (journal sequence %d was a duplicate of it)", id, e.Prior.Seq)
		}
	}
	for _, op := range e.Cmd.Ops {
		if l := b.state(op.RK).Latest; l != nil && l.Cmd == id {
			return fmt.Sprintf("command %s already applied at journal sequence %d", id, l.Seq)
		}
	}
	return ""
}

// effect is what one command would do to the batch: the rows' working
// state after it, the version rows it adds, what it reports, and what the
// transaction costs with it.
type effect struct {
	// touched are the rows the command names, in the order it first
	// names them: a command names few rows, so a slice, not maps (this
	// runs once per command).
	touched []effectRow
	rows    []wire.RowVersion
	changes []Change
	// the transaction's totals with the command.
	totalOps, totalBy int
}

// effectRow is what a command does to one row.
type effectRow struct {
	rk      string
	s       *rowState     // the row's working state
	version int64         // the version the command makes of the row
	last    events.OpKind // the command's last op on the row
	added   []rows.Row    // the version rows it adds
	// cost of the row's writes in the transaction with the command: ops
	// and bytes (price).
	ops, bytes int
}

// row returns the effect on rk, nil if the command does not name it yet.
func (eff *effect) row(rk string) *effectRow {
	for i := range eff.touched {
		if eff.touched[i].rk == rk {
			return &eff.touched[i]
		}
	}
	return nil
}

// simulate runs e's ops on copies of its rows, so a rejected or oversized
// command leaves no trace; it returns why it is rejected, or nil. A
// command makes at most one new version of each row it names (SPEC §4:
// versions grow by one per applied command on a row, and a version row is
// keyed by the command's sequence): its ops on one row apply in order to a
// working copy, and only the row's state after the last one is written.
func (b *Txn) simulate(e Entry) (effect, error) {
	var eff effect
	for i, op := range e.Cmd.Ops {
		t := eff.row(op.RK)
		if t == nil {
			cp := *b.state(op.RK)
			eff.touched = append(eff.touched, effectRow{rk: op.RK, s: &cp, version: nextVersion(&cp)})
			t = &eff.touched[len(eff.touched)-1]
		}
		if err := applyOp(t.s, op, e, b.pk, t.version); err != nil {
			return effect{}, fmt.Errorf("ops[%d] %s %q: %w", i, op.Op, op.RK, err)
		}
		t.last = op.Op
	}
	for i := range eff.touched {
		t := &eff.touched[i]
		rv, ch, ok := finishRow(t.rk, b.pk, e, b.state(t.rk), t.s, t.last, &t.added)
		if ok {
			eff.rows = append(eff.rows, rv)
			eff.changes = append(eff.changes, ch)
		}
	}
	return eff, nil
}

// price sets the cost of the touched rows after the command, and checks it
// against the store's limits: it returns why the command is rejected, or
// ErrFull when the command may fit a batch of its own.
func (b *Txn) price(eff *effect) (why, err error) {
	eff.totalOps, eff.totalBy = b.totalOps, b.totalBytes
	for i := range eff.touched {
		t := &eff.touched[i]
		all := t.added
		if prev := b.added[t.rk]; len(prev) > 0 {
			all = append(append([]rows.Row(nil), prev...), t.added...)
		}
		n, sz, err := rowCost(b.pk, b.baseTip(t.rk), t.s.Tip, all)
		if err != nil {
			return err, nil
		}
		t.ops, t.bytes = n, sz
		eff.totalOps += n - b.ops[t.rk]
		eff.totalBy += sz - b.bytes[t.rk]
	}
	if eff.totalOps <= store.MaxOps && eff.totalBy <= b.limits.TxBytes() {
		return nil, nil
	}
	if len(b.Results) > 0 {
		return nil, ErrFull
	}
	return reject(wire.CodeTooLarge, wire.RuleTransactionTooLarge, "too large after versioning: %d store operations, %d bytes (limits %d, %d)",
		eff.totalOps, eff.totalBy, store.MaxOps, b.limits.TxBytes()), nil
}

// take adds an applied command's effect to the batch.
func (b *Txn) take(e Entry, eff effect) {
	for _, t := range eff.touched {
		b.by[t.rk] = Source{RK: t.rk, Seq: e.Seq, Cmd: e.Cmd.ID}
		b.Cur[t.rk] = t.s
		if len(t.added) > 0 {
			b.added[t.rk] = append(b.added[t.rk], t.added...)
		}
		b.ops[t.rk], b.bytes[t.rk] = t.ops, t.bytes
	}
	b.totalOps, b.totalBytes = eff.totalOps, eff.totalBy
	b.AppliedIDs[e.Cmd.ID] = e.Seq
	// The Fence names the newest command that wrote a version (one that
	// changed nothing, inserting and deleting a row, does not count), so
	// that it is the same however the journal is batched.
	if len(eff.rows) > 0 && e.Seq > b.Last.Seq {
		b.Last = Fence{Exists: true, Seq: e.Seq, Cmd: e.Cmd.ID, At: e.At}
	}
}

// source names the row and command a store op of the batch is for.
func (b *Txn) Source(storeKey string) Source {
	rk, _, _, ok := rows.ParseKey(storeKey)
	if !ok {
		return Source{Key: storeKey}
	}
	src := b.by[rk]
	src.RK, src.Key = rk, storeKey
	return src
}

func (b *Txn) baseTip(rk string) *rows.Row {
	if s, ok := b.base[rk]; ok {
		return s.Tip
	}
	return nil
}

// applyOp applies one row operation to the working state s of a row, as
// version v: the version the command makes of the row, whatever the number
// of its ops on it. It writes nothing; finishRow does, once per row.
func applyOp(s *rowState, op events.RowOp, e Entry, pk string, v int64) error {
	exists := s.Tip != nil
	if op.IfVersion != nil {
		switch {
		case !exists:
			return reject(wire.CodeVersionMismatch, "", "ifVersion %d: row does not exist", *op.IfVersion)
		case s.Tip.Version != *op.IfVersion:
			return reject(wire.CodeVersionMismatch, "", "ifVersion %d: row is at version %d", *op.IfVersion, s.Tip.Version)
		}
	}
	kind := op.Op
	switch kind {
	case events.OpInsert:
		if exists {
			return reject(wire.CodeExists, "", "row exists at version %d", s.Tip.Version)
		}
	case events.OpReplace, events.OpMerge, events.OpDelete:
		if !exists {
			return reject(wire.CodeNotFound, "", "row does not exist")
		}
	case events.OpUpsert, events.OpUpsertMerge:
	default:
		return reject(wire.CodeInvalid, string(rules.UnknownOp), "unknown op %q", kind)
	}
	if kind == events.OpDelete {
		s.Tip = nil
		return nil
	}
	next := rows.Row{PK: pk, RK: op.RK, Version: v, Cmd: e.Cmd.ID, Seq: e.Seq, At: e.At, Op: kind, Tip: true}
	if exists && (kind == events.OpMerge || kind == events.OpUpsertMerge) {
		next.Props = s.Tip.Props.Clone()
		for k, v := range op.Entity {
			next.Props[k] = v
		}
		if len(next.Props) > events.MaxProperties {
			return reject(wire.CodeTooLarge, wire.RuleTooManyProperties, "merge leaves %d properties, more than %d", len(next.Props), events.MaxProperties)
		}
	} else {
		// Shared, not copied: neither the command's entity nor a row's
		// Props are modified once made (a merge copies the tip first).
		next.Props = op.Entity
	}
	s.Tip, s.Latest = &next, &next
	return nil
}

// finishRow turns a row's working state w after a command's ops into what
// the command writes, given the row's state before the command: the old tip
// copied to its version row, and a new tip or a tombstone. A row that did
// not exist before nor after (inserted and deleted by the same command)
// gets no version: w is reset and ok is false. The tombstone holds the
// values the row had before the command, the last it had at any journal
// sequence.
func finishRow(rk, pk string, e Entry, before, w *rowState, last events.OpKind, added *[]rows.Row) (wire.RowVersion, Change, bool) {
	old := before.Tip
	if old == nil && w.Tip == nil {
		*w = *before
		return wire.RowVersion{}, Change{}, false
	}
	if old != nil {
		cp := *old
		cp.Tip, cp.ETag = false, ""
		*added = append(*added, cp)
	}
	v := nextVersion(before)
	if w.Tip == nil {
		tomb := rows.Row{PK: pk, RK: rk, Version: v, Cmd: e.Cmd.ID, Seq: e.Seq, At: e.At, Op: events.OpDelete,
			Deleted: true, Props: old.Props}
		*added = append(*added, tomb)
		w.Latest = &tomb
		return wire.RowVersion{RK: rk, Version: v, Op: events.OpDelete, Deleted: true},
			Change{RK: rk, Kind: wire.ChangeDelete, Version: v, Before: old.Props}, true
	}
	w.Tip.Op = last
	w.Latest = w.Tip
	rv := wire.RowVersion{RK: rk, Version: v, Op: last}
	if old == nil {
		return rv, Change{RK: rk, Kind: wire.ChangeCreate, Version: v, After: w.Tip.Props}, true
	}
	return rv, Change{RK: rk, Kind: wire.ChangeUpdate, Version: v, Before: old.Props, After: w.Tip.Props}, true
}

// TxOps renders the batch as store operations: version rows are inserted
// (never overwritten: a conflict means someone else wrote this history), the
// tip is inserted, replaced or deleted against the state the batch started
// from.
func (b *Txn) TxOps() []store.Op {
	var ops []store.Op
	for rk, s := range b.Cur {
		for _, r := range b.added[rk] {
			ops = append(ops, store.Op{Kind: store.Insert, RK: r.StoreKey(), Props: r.Encode()})
		}
		base := b.baseTip(rk)
		switch {
		case s.Tip != nil && s.Tip != base && base == nil:
			ops = append(ops, store.Op{Kind: store.Insert, RK: rows.TipKey(rk), Props: s.Tip.Encode()})
		case s.Tip != nil && s.Tip != base:
			ops = append(ops, store.Op{Kind: store.Replace, RK: rows.TipKey(rk), Props: s.Tip.Encode(), IfMatch: ETagOrAny(base.ETag)})
		case s.Tip == nil && base != nil:
			ops = append(ops, store.Op{Kind: store.Delete, RK: rows.TipKey(rk), IfMatch: ETagOrAny(base.ETag)})
		}
	}
	return ops
}

func ETagOrAny(etag string) string {
	if etag == "" {
		return "*"
	}
	return etag
}

// TouchedRKs lists the RowKeys a list of entries touches, once each.
func TouchedRKs(entries []Entry) []string {
	seen := make(map[string]bool)
	var rks []string
	for _, e := range entries {
		if e.Cmd == nil {
			continue
		}
		for _, op := range e.Cmd.Ops {
			if !seen[op.RK] {
				seen[op.RK] = true
				rks = append(rks, op.RK)
			}
		}
	}
	return rks
}

// Source says which row and command a store op of a transaction belongs
// to (Txn.Source).
type Source struct {
	RK, Key string
	Seq     uint64
	Cmd     string
}

// IsPrune reports whether e is a prune command (SPEC §2), which takes
// transactions of its own.
func IsPrune(e Entry) bool { return e.Cmd.IsPrune() }
