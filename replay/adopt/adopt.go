package adopt

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"github.com/tablejournal/tablejournal/journal/tablelayout"

	"golang.org/x/sync/errgroup"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/events/rules"
	"github.com/tablejournal/tablejournal/journal"
	"github.com/tablejournal/tablejournal/replay"
	"github.com/tablejournal/tablejournal/rows"
	"github.com/tablejournal/tablejournal/store"
	"github.com/tablejournal/tablejournal/wire"
)

// Errors of adoption, checked with errors.Is.
var (
	// ErrProblems: the pass found rows it cannot journal (invalid, or
	// colliding with the layout, or written in the adopted table since) and
	// was not told to skip them.
	ErrProblems = errors.New("rows adoption cannot journal")
	// ErrTableCase: in place, the store does not find the table under the
	// name the projector writes it by (its lower-case token, SPEC §3), as
	// Azurite matches table names case-sensitively in transactions
	// (Azure/Azurite#1355); Azure does not.
	ErrTableCase = errors.New("the store matches the table's name case-sensitively")
	// ErrNothingAdopted: a catch-up pass on a table that holds no adopted
	// row: run the first pass.
	ErrNothingAdopted = errors.New("nothing adopted yet")
)

// Rules of adoption, beside the rules of SPEC §2 a row's entity may break.
const (
	// RuleLayoutKey: the source row's RowKey is one the layout of SPEC §4
	// reserves (fence, tip:…, old:…, erased, erased:…): the source already
	// holds tablejournal rows, or a row that would read as one.
	RuleLayoutKey = rules.Rule("layout-key")
	// RuleWrittenSince: the adopted table's row was written by a command
	// that is not adoption's: the service was switched over, and a pass
	// would overwrite its writes.
	RuleWrittenSince = rules.Rule("written-since-adoption")
)

// Meta keys of an adoption command.
const (
	MetaSource = "adoptedFrom" // the source table
	MetaETag   = "sourceETag"  // the ETag of the source row adopted
)

// Config configures one pass.
type Config struct {
	// Table is the source table. Required.
	Table string
	// Into is the adopted table, the one the projector writes (blue/green:
	// the source is never written). Required, and not Table, unless
	// InPlace.
	Into string
	// InPlace adopts Table into itself: the projector writes each row's
	// layout rows beside it, and once they are applied Apply deletes the
	// row as the service wrote it, on the condition that it is unchanged
	// (its ETag). A row is readable in one form or both, never in
	// neither. Into is then Table or empty.
	InPlace bool
	// Resume finishes a first pass that stopped: Into may already hold rows
	// adopted from Table.
	Resume bool
	// CatchUp is a later pass: Into must hold rows adopted from Table; the
	// pass journals what changed in Table since (upserts and deletes).
	CatchUp bool
	// Layout is the adopted table's row layout (SPEC §4): empty keeps the
	// one the journal gives it (versioned for a new table); LayoutPlain
	// sets it plain before its first command (Apply writes the setting,
	// tablelayout.Set), so that its readers read the rows at the
	// service's own keys. In place with LayoutPlain the table's rows are
	// already where the plain layout keeps them: the projector's history
	// goes to its history table, and each row becomes the projector's
	// current row, never absent (docs/adopting.md).
	Layout wire.Layout
	// SkipInvalid lets Apply journal the other rows when some cannot be;
	// the skipped rows are listed in the plan.
	SkipInvalid bool
	// Workers bounds the partitions read at once. If zero, the Source's.
	Workers int
	// Issuer of the commands. If empty, the Source's.
	Issuer string
	// Progress, if set, is called as partitions are read (done, total).
	Progress func(done, total int64)
}

// Adopter adopts the tables of a replay.Source's store into its journal.
type Adopter struct{ *replay.Source }

// New returns an Adopter of src.
func New(src *replay.Source) *Adopter { return &Adopter{src} }

// Problem is a row a pass cannot journal, with the rule it breaks.
type Problem struct {
	PK     string     `json:"pk"`
	RK     string     `json:"rk"`
	Rule   rules.Rule `json:"rule"`
	Detail string     `json:"detail"`
}

func (p Problem) String() string {
	return fmt.Sprintf("%q/%q: rule %s: %s", p.PK, p.RK, p.Rule, p.Detail)
}

// Plan is one pass, read and not yet journaled: a dry run. Apply
// journals it.
type Plan struct {
	Table string `json:"table"`
	Into  string `json:"into"`
	// Pass is "first", "resume" or "catch-up".
	Pass string `json:"pass"`
	// Rows and Partitions of the source read; Bytes their size by Azure's
	// formula (edm.EntitySize).
	Rows       int   `json:"rows"`
	Partitions int   `json:"partitions"`
	Bytes      int64 `json:"bytes"`
	// Unchanged counts the source rows the adopted table holds already, as
	// they are.
	Unchanged int `json:"unchanged"`
	// Upserts and Deletes count Commands by kind.
	Upserts int `json:"upserts"`
	Deletes int `json:"deletes"`
	// Commands are what Apply publishes, in partition then row key order.
	Commands []*events.Command `json:"-"`
	// Problems are the rows left out, by partition and row key.
	Problems []Problem `json:"problems"`
	// SkipInvalid says Apply journals the other rows despite Problems.
	SkipInvalid bool `json:"skipInvalid"`
	// Read is how long the pass took to read both tables and compare them.
	Read time.Duration `json:"readNs"`

	a *Adopter
	// Result is set by Apply.
	Result *Result `json:"result,omitempty"`
	// InPlace: Apply moves the rows (Config.InPlace).
	InPlace bool `json:"inPlace,omitempty"`
	// Layout is the adopted table's layout; SetLayout says Apply sets it
	// (plain) before publishing.
	Layout    wire.Layout `json:"layout"`
	SetLayout bool        `json:"setLayout,omitempty"`
	// Moves counts the rows as the service wrote them that Apply deletes
	// once their layout rows are applied (in place only).
	Moves int `json:"moves,omitempty"`

	parts   []partPlan // by partition, for Apply in place
	workers int
	issuer  string
}

// Blocked reports whether Apply refuses the plan: it has problems and was
// not told to skip them.
func (p *Plan) Blocked() bool { return len(p.Problems) > 0 && !p.SkipInvalid }

// Summary says in one line what the plan would journal.
func (p *Plan) Summary() string {
	s := fmt.Sprintf("adopt %s into %s (%s pass): %d rows in %d partitions, %d bytes read in %s; %d unchanged, %d upserts, %d deletes",
		p.Table, p.Into, p.Pass, p.Rows, p.Partitions, p.Bytes, p.Read.Round(time.Millisecond), p.Unchanged, p.Upserts, p.Deletes)
	if p.InPlace {
		s += fmt.Sprintf("; %d rows to move in place", p.Moves)
	}
	if n := len(p.Problems); n > 0 {
		verb := "blocking"
		if p.SkipInvalid {
			verb = "skipped"
		}
		s += fmt.Sprintf("; %d rows %s", n, verb)
	}
	return s
}

// Fingerprint identifies what the plan would do: the tables, the command
// IDs (which name every row's version) and the problems. Two passes over
// unchanged tables have the same fingerprint.
func (p *Plan) Fingerprint() string {
	h := sha256.New()
	fmt.Fprintf(h, "%q %q %t\n", p.Table, p.Into, p.SkipInvalid)
	for _, c := range p.Commands {
		fmt.Fprintf(h, "%s\n", c.ID)
	}
	for _, pr := range p.Problems {
		fmt.Fprintf(h, "%q %q %s\n", pr.PK, pr.RK, pr.Rule)
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}

// Plan reads a pass: the source table, the adopted table's current rows
// (after waiting until the projector applied what the journal holds, so
// that the previous pass's commands are seen), and compares them.
func (a *Adopter) Plan(ctx context.Context, cfg Config) (*Plan, error) {
	if cfg.InPlace && cfg.Into == "" {
		cfg.Into = cfg.Table
	}
	if err := cfg.check(); err != nil {
		return nil, err
	}
	if err := a.NeedJournal("adopt"); err != nil {
		return nil, err
	}
	if cfg.Workers <= 0 {
		cfg.Workers = a.Config().Workers
	}
	if cfg.Issuer == "" {
		cfg.Issuer = a.Config().Issuer
	}
	start := time.Now()
	head, err := a.Journal().Head(ctx)
	if err != nil {
		return nil, err
	}
	if err := a.WaitApplied(ctx, head); err != nil {
		return nil, err
	}
	st := a.Store()
	if _, err := st.Get(ctx, cfg.Table, "", ""); errors.Is(err, store.ErrTableNotFound) {
		return nil, fmt.Errorf("adopt %s: %w", cfg.Table, err)
	}
	if cfg.InPlace {
		if err := a.sameTable(ctx, cfg.Table); err != nil {
			return nil, err
		}
	}
	lay, set, err := a.adoptedLayout(ctx, cfg)
	if err != nil {
		return nil, err
	}
	pks, srcParts, err := a.partitions(ctx, cfg, lay)
	if err != nil {
		return nil, err
	}
	p := &Plan{Table: cfg.Table, Into: cfg.Into, Pass: "first", SkipInvalid: cfg.SkipInvalid, a: a, Partitions: srcParts,
		InPlace: cfg.InPlace, Layout: lay.layout, SetLayout: set, workers: cfg.Workers, issuer: cfg.Issuer}
	switch {
	case cfg.CatchUp:
		p.Pass = "catch-up"
	case cfg.Resume:
		p.Pass = "resume"
	}
	parts := make([]partPlan, len(pks))
	var done atomic.Int64
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(cfg.Workers)
	for i, pk := range pks {
		g.Go(func() error {
			pp, err := a.planPartition(gctx, cfg, lay, pk)
			if err != nil {
				return fmt.Errorf("adopt %s partition %q: %w", cfg.Table, pk, err)
			}
			parts[i] = pp
			if cfg.Progress != nil {
				cfg.Progress(done.Add(1), int64(len(pks)))
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	adopted := 0
	p.parts = parts
	for _, pp := range parts {
		p.Moves += len(pp.moves)
		p.Rows += pp.rows
		p.Bytes += pp.bytes
		p.Unchanged += pp.unchanged
		adopted += pp.adopted
		p.Commands = append(p.Commands, pp.cmds...)
		p.Problems = append(p.Problems, pp.problems...)
	}
	for _, c := range p.Commands {
		if c.Ops[0].Op == events.OpDelete {
			p.Deletes++
		} else {
			p.Upserts++
		}
	}
	switch {
	case adopted > 0 && !cfg.Resume && !cfg.CatchUp:
		return nil, fmt.Errorf("adopt into %s: %w (%d rows adopted already); to finish a pass that stopped run it with --resume, for a later pass --catch-up", cfg.Into, replay.ErrNotEmpty, adopted)
	case adopted == 0 && cfg.CatchUp:
		return nil, fmt.Errorf("adopt %s into %s: %w: run the first pass (without --catch-up)", cfg.Table, cfg.Into, ErrNothingAdopted)
	}
	p.Read = time.Since(start)
	return p, nil
}

func (c Config) check() error {
	var errs []error
	if !store.ValidTableName(c.Table) {
		errs = append(errs, fmt.Errorf("source table %q: rule %s", c.Table, rules.TableName))
	}
	if !store.ValidTableName(c.Into) {
		errs = append(errs, fmt.Errorf("adopted table %q: rule %s", c.Into, rules.TableName))
	}
	if strings.EqualFold(c.Table, c.Into) != c.InPlace {
		if c.InPlace {
			errs = append(errs, fmt.Errorf("adopt %s in place into %s: in place is into the table itself", c.Table, c.Into))
		} else {
			errs = append(errs, fmt.Errorf("adopt %s into itself: name a new table, or adopt it in place", c.Table))
		}
	}
	if c.Resume && c.CatchUp {
		errs = append(errs, errors.New("resume and catch-up: a catch-up pass resumes by itself, name one"))
	}
	return errors.Join(errs...)
}

// sameTable checks, before an in-place pass, that a transaction on the
// table's token (the name the projector writes it by) reaches the table:
// a delete of a row that cannot exist, which writes nothing.
func (a *Adopter) sameTable(ctx context.Context, table string) error {
	tok := wire.TableToken(table)
	if tok == table {
		return nil
	}
	_, err := a.Store().Transact(ctx, tok, "", []store.Op{{Kind: store.Delete, RK: "adopt-probe", IfMatch: `W/"datetime'1601-01-01T00%3A00%3A00Z'"`}})
	switch {
	case errors.Is(err, store.ErrTableNotFound):
		return fmt.Errorf("adopt %s in place: %w: the projector writes it as %s, which this store does not find; adopt it --into a new table", table, ErrTableCase, tok)
	case errors.Is(err, store.ErrNotFound), errors.Is(err, store.ErrPrecondition):
		return nil
	}
	return fmt.Errorf("adopt %s in place: %w", table, err)
}

// adopted is the adopted table's layout, and the table that holds its
// versioned rows (its tips, read to compare): Into itself, or its history
// table when plain.
type adopted struct {
	layout wire.Layout
	vt     string
}

func (l adopted) plain() bool { return l.layout == wire.LayoutPlain }

// adoptedLayout decides the adopted table's layout: the journal's, or
// cfg.Layout, which may only set a table the journal has no setting for
// (set reports that Apply must write it). A layout never changes: asking
// for another is refused here, and SetLayout refuses, before anything is
// published, a table that has commands already.
func (a *Adopter) adoptedLayout(ctx context.Context, cfg Config) (adopted, bool, error) {
	tl, err := tablelayout.Of(ctx, a.Journal(), cfg.Into)
	if err != nil {
		return adopted{}, false, err
	}
	l, set := tl.Layout, false
	switch {
	case cfg.Layout == "" || cfg.Layout == tl.Layout:
	case tl.Seq != 0:
		return adopted{}, false, fmt.Errorf("adopt into %s --layout %s: %w: %s since sequence %d; a layout never changes (rebuild --into a new table)", cfg.Into, cfg.Layout, tablelayout.ErrSet, tl.Layout, tl.Seq)
	case cfg.Layout == wire.LayoutPlain:
		if tl.Ignored != "" {
			return adopted{}, false, fmt.Errorf("adopt into %s --layout plain: %w, and does not hold (%s): the table is versioned; adopt --into a new table", cfg.Into, tablelayout.ErrSet, tl.Ignored)
		}
		if _, err := wire.HistoryTable(cfg.Into); err != nil {
			return adopted{}, false, fmt.Errorf("adopt into %s --layout plain: %w", cfg.Into, err)
		}
		if seq, err := a.firstCommand(ctx, cfg.Into); err != nil || seq != 0 {
			if err == nil {
				err = fmt.Errorf("adopt into %s --layout plain: %w: at sequence %d, projected versioned; a layout is set before the first command (adopt --into a new table, or rebuild this one --into one set plain)", cfg.Into, tablelayout.ErrTableHasCommands, seq)
			}
			return adopted{}, false, err
		}
		l, set = wire.LayoutPlain, true
	}
	vt, err := rows.VersionTable(cfg.Into, l)
	if err != nil {
		return adopted{}, false, err
	}
	return adopted{layout: l, vt: vt}, set, nil
}

// firstCommand is the sequence of table's first command in the journal, 0
// if it has none.
func (a *Adopter) firstCommand(ctx context.Context, table string) (uint64, error) {
	var first uint64
	found := errors.New("found")
	err := a.Journal().ReadAny(ctx, 1, 0, wire.TableFilters(table), func(m journal.Msg) error {
		first = m.Seq
		return found
	})
	if err != nil && !errors.Is(err, found) {
		return 0, fmt.Errorf("adopt into %s: read the journal: %w", table, err)
	}
	return first, nil
}

// partitions returns the partition keys of the source and of the adopted
// table, merged and sorted, and how many the source has.
func (a *Adopter) partitions(ctx context.Context, cfg Config, lay adopted) ([]string, int, error) {
	seen := map[string]bool{}
	var pks []string
	n := 0
	add := func(src bool) func(string) error {
		return func(pk string) error {
			if src {
				n++
			}
			if !seen[pk] {
				seen[pk] = true
				pks = append(pks, pk)
			}
			return nil
		}
	}
	if err := a.Store().Partitions(ctx, cfg.Table, add(true)); err != nil {
		return nil, 0, fmt.Errorf("adopt %s: %w", cfg.Table, err)
	}
	if err := a.Store().Partitions(ctx, lay.vt, add(false)); err != nil && !errors.Is(err, store.ErrTableNotFound) {
		return nil, 0, fmt.Errorf("adopt into %s: %w", cfg.Into, err)
	}
	sort.Strings(pks)
	return pks, n, nil
}

// partPlan is what one partition contributes to a Plan.
type partPlan struct {
	pk                       string
	moves                    []move // in place: the rows to delete once applied
	rows, unchanged, adopted int
	bytes                    int64
	cmds                     []*events.Command
	problems                 []Problem
}

// planPartition reads partition pk of both tables and compares them.
func (a *Adopter) planPartition(ctx context.Context, cfg Config, lay adopted, pk string) (partPlan, error) {
	pp := partPlan{pk: pk}
	// In place, a pass after the first meets the layout's own rows (none
	// in a plain table: its history is beside it).
	ours := cfg.InPlace && (cfg.Resume || cfg.CatchUp) && !lay.plain()
	tips := map[string]rows.Row{}
	from, to := rows.TipRange()
	err := store.All(ctx, a.Store(), lay.vt, store.Query{PK: pk, From: from, To: to}, func(e store.Entity) error {
		r, err := rows.DecodeRow(e)
		switch {
		case errors.Is(err, rows.ErrLayout):
			// A row at a tip's key that is no tip: in place, the scan
			// of the source reports it; into a table, it is foreign.
			if !cfg.InPlace {
				pp.problems = append(pp.problems, Problem{PK: pk, RK: e.RK, Rule: RuleLayoutKey, Detail: fmt.Sprintf("the adopted table holds a row that is not in the layout: %v", err)})
			}
			return nil
		case err != nil:
			return err
		}
		tips[r.RK] = r
		return nil
	})
	if err != nil && !errors.Is(err, store.ErrTableNotFound) {
		return pp, err
	}
	for _, t := range tips {
		if IsAdoptionID(t.Cmd) {
			pp.adopted++
		}
	}
	limits := a.Store().Limits()
	err = store.All(ctx, a.Store(), cfg.Table, store.Query{PK: pk}, func(e store.Entity) error {
		if ours && reservedKey(e.RK) {
			return nil
		}
		pp.rows++
		pp.bytes += int64(edm.EntitySize(e.PK, e.RK, e.Props))
		tip, had := tips[e.RK]
		delete(tips, e.RK)
		if cfg.InPlace && lay.plain() {
			if done := planStamped(&pp, cfg, e, tip, had); done {
				return nil
			}
		}
		// A plain table keeps its rows at their own keys and the layout's
		// rows in its history table: no key of the source collides.
		if reservedKey(e.RK) && !lay.plain() {
			pp.problems = append(pp.problems, Problem{PK: pk, RK: e.RK, Rule: RuleLayoutKey, Detail: "the RowKey is one the journal's row layout reserves (SPEC §4)"})
			return nil
		}
		id := UpsertID(cfg.Table, cfg.Into, pk, e.RK, e.ETag)
		switch {
		case had && tip.Cmd == id:
			pp.unchanged++
			if cfg.InPlace && !lay.plain() { // applied, not yet moved: a pass stopped
				pp.moves = append(pp.moves, move{rk: e.RK, etag: e.ETag, cmd: id})
			}
			return nil
		case had && !IsAdoptionID(tip.Cmd):
			pp.problems = append(pp.problems, writtenSince(tip))
			return nil
		}
		cmd := &events.Command{
			ID: id, Table: cfg.Into, PK: pk, Issuer: cfg.Issuer,
			Ops:  []events.RowOp{{Op: events.OpUpsert, RK: e.RK, Entity: e.Props}},
			Meta: map[string]string{MetaSource: cfg.Table, MetaETag: e.ETag},
		}
		if err := limits.Validate(cmd); err != nil {
			pp.problems = append(pp.problems, invalid(pk, e.RK, err))
			return nil
		}
		pp.cmds = append(pp.cmds, cmd)
		if cfg.InPlace {
			pp.moves = append(pp.moves, move{rk: e.RK, etag: e.ETag, cmd: id})
		}
		return nil
	})
	if err != nil && !errors.Is(err, store.ErrTableNotFound) {
		return pp, err
	}
	if cfg.InPlace {
		if !lay.plain() {
			blockPartition(&pp)
		}
		// A tip without its row as the service wrote it is a row moved
		// by an earlier pass, not one the service deleted.
		return pp, nil
	}
	// What the adopted table holds and the source no longer does.
	gone := make([]string, 0, len(tips))
	for rk := range tips {
		gone = append(gone, rk)
	}
	sort.Strings(gone)
	for _, rk := range gone {
		tip := tips[rk]
		if !IsAdoptionID(tip.Cmd) {
			pp.problems = append(pp.problems, writtenSince(tip))
			continue
		}
		pp.cmds = append(pp.cmds, &events.Command{
			ID: DeleteID(cfg.Table, cfg.Into, pk, rk, tip.Cmd), Table: cfg.Into, PK: pk, Issuer: cfg.Issuer,
			Ops:  []events.RowOp{{Op: events.OpDelete, RK: rk}},
			Meta: map[string]string{MetaSource: cfg.Table},
		})
	}
	return pp, nil
}

// blockPartition, in place, leaves out every row of a partition that holds
// a row at a key of the layout: the projector would write its own rows
// there (the fence first), and fail on the service's.
func blockPartition(pp *partPlan) {
	at := ""
	for _, pr := range pp.problems {
		if pr.Rule == RuleLayoutKey {
			at = pr.RK
			break
		}
	}
	if at == "" {
		return
	}
	for _, c := range pp.cmds {
		pp.problems = append(pp.problems, Problem{PK: pp.pk, RK: c.Ops[0].RK, Rule: RuleLayoutKey,
			Detail: fmt.Sprintf("in place, the partition's row %q is at a key of the layout, where the projector writes its own rows: no row of the partition can be adopted in place", at)})
	}
	pp.cmds, pp.moves = nil, nil
	sort.Slice(pp.problems, func(i, j int) bool { return pp.problems[i].RK < pp.problems[j].RK })
}

func writtenSince(tip rows.Row) Problem {
	return Problem{PK: tip.PK, RK: tip.RK, Rule: RuleWrittenSince,
		Detail: fmt.Sprintf("the adopted row was written by command %s, not by adoption: a pass would overwrite it", tip.Cmd)}
}

// invalid is the Problem of a row whose adoption command breaks a rule.
func invalid(pk, rk string, err error) Problem {
	pr := Problem{PK: pk, RK: rk, Detail: err.Error()}
	if ve := (*rules.ValidationError)(nil); errors.As(err, &ve) {
		pr.Rule = ve.Rule
		// "ops[0].entity["_x"]: rule ...": the field is the row's.
		pr.Detail = strings.TrimPrefix(ve.Field, "ops[0].")
		if pr.Detail != "" {
			pr.Detail += ": "
		}
		pr.Detail += ve.Detail
	}
	return pr
}

// reservedKey reports whether a source RowKey is one of the layout's.
func reservedKey(rk string) bool {
	return rk == rows.FenceKey || rows.IsLayoutKey(rk) || rows.IsErasedKey(rk) ||
		strings.HasPrefix(rk, rows.TipPrefix) || strings.HasPrefix(rk, rows.OldPrefix)
}

// WaitApplied waits until the projector has applied the journal through
// seq (replay.Source.AppliedSeq), polling with a growing pause, until ctx
// ends.
func (a *Adopter) WaitApplied(ctx context.Context, seq uint64) error {
	pause := 20 * time.Millisecond
	start, told := time.Now(), false
	for {
		got, err := a.AppliedSeq(ctx)
		if err != nil {
			return err
		}
		if got >= seq {
			return nil
		}
		if !told && time.Since(start) > 2*time.Second {
			told = true
			a.Config().Logger.Info("adopt: waiting for the projector to apply the journal", "appliedThrough", got, "want", seq)
		}
		t := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("waiting for the projector to apply the journal through seq %d (applied through %d): %w", seq, got, ctx.Err())
		case <-t.C:
		}
		pause = min(2*pause, time.Second)
	}
}
