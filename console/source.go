package console

import (
	"context"
	"errors"
	"time"
)

// Source is everything the console reads. The console holds no copy of the
// row layout or of the journal's encoding: a Source reads through the same
// packages as the replay and projector commands (NewSource, source_replay.go).
type Source interface {
	JournalReader
	RowReader
	StatusReader
	Checker
	Repairer
}

// Checker checks a table against its journal.
type Checker interface {
	// Verify re-projects the journal into a scratch store apart from the
	// live one and compares the table with it, calling progress and diff
	// as it goes (never at the same time).
	Verify(ctx context.Context, table string, progress func(phase string, done, total int64), diff func(Difference)) (VerifySummary, error)
}

// JournalReader reads the journal and the outcomes of its commands.
type JournalReader interface {
	// Journal returns one page of commands matching q, in journal order.
	Journal(ctx context.Context, q JournalQuery) (JournalPage, error)
	// Command returns what one command did (its blame).
	Command(ctx context.Context, id string) (CommandView, error)
	// Resolve turns a point ("head", "seq:N" or N, "time:T" or an RFC 3339
	// time, "cmd:ID") into a journal sequence.
	Resolve(ctx context.Context, point string) (uint64, error)
	// Steps returns the sequences of the applied commands of a table, or
	// of one of its partitions when pk is set, just before and just after
	// seq (0 when there is none): the as-of page steps through them.
	Steps(ctx context.Context, table, pk string, all bool, seq uint64) (prev, next uint64, err error)
	// Recent returns the outcomes of the newest commands, at most n, oldest
	// first: the activity and rejection charts.
	Recent(ctx context.Context, n int) ([]OutcomeSample, error)
}

// RowReader reads the projected tables through time.
type RowReader interface {
	// History returns one page of the stored versions of a row, oldest
	// first: the newest page unless q names a cursor.
	History(ctx context.Context, q HistoryQuery) (RowHistory, error)
	// AsOf returns a page of the rows of a partition (or of the whole
	// table when q.All) as they stood at a journal sequence.
	AsOf(ctx context.Context, q AsOfQuery) (AsOfPage, error)
	// Tables lists the tables of the store.
	Tables(ctx context.Context) ([]string, error)
	// Retention returns what was removed of a table's history: the
	// journal horizon, the partitions' prune horizons and the erasures.
	Retention(ctx context.Context, table string, limit int) (RetentionLog, error)
}

// StatusReader reads the projectors' state.
type StatusReader interface {
	Health(ctx context.Context) (Health, error)
}

// ErrNotFound is returned by a Source for a command or row it does not
// know; the console answers 404. Checked with errors.Is.
var ErrNotFound = errors.New("not found")

// ErrBadRequest wraps a query a Source cannot answer as asked (a point
// beyond the head, a malformed time); the console answers 400. Checked
// with errors.Is.
var ErrBadRequest = errors.New("bad request")

// Field is one property of a row, rendered: the console shows values as
// text and hides them when told to.
type Field struct {
	Name, Type, Value string
}

// Change is one property that differs between two versions of a row.
type Change struct {
	Name                string
	Before, After       Field
	HadBefore, HasAfter bool
}

// JournalQuery selects a page of the journal. Its zero value is the first
// page of the whole journal.
type JournalQuery struct {
	// From is the first sequence read; if zero, Time, else 1.
	From uint64
	// Time, if set and From is zero, starts at the first command stored at
	// or after it.
	Time time.Time
	// Table and PK narrow the journal to a table or one partition of it.
	Table, PK string
	// Cmd selects the messages that carried one command ID.
	Cmd string
	// Issuer, Status and Code filter the commands read.
	Issuer, Status, Code string
	// Limit bounds the entries returned; if zero, 100.
	Limit int
	// Scan bounds the messages read to fill the page; if zero, 50 times
	// Limit. A filtered page may hold fewer than Limit entries and a
	// continuation.
	Scan int
}

// JournalPage is one page of the journal.
type JournalPage struct {
	Entries []JournalEntry
	// Next is the sequence the next page starts at; 0 when the head was
	// reached.
	Next uint64
	// Head is the journal's last sequence when the page was read.
	Head uint64
}

// JournalEntry is one journal message and its outcome.
type JournalEntry struct {
	Seq        uint64
	Time       time.Time
	ID         string
	Table, PK  string
	Issuer     string
	IssuedAt   time.Time
	Kind       string // "command", "prune" or "erase"
	Ops        int
	Status     string // "applied", "rejected", "duplicate", or "" without an outcome yet
	Code, Rule string
	Reason     string
	Rows       int
	Removed    int64 // rows a prune or an erase removed
}

// Op is one operation of a command.
type Op struct {
	Op, RK string
	Fields []Field
	If     string // the guard, rendered ("version 3"), "" without one
}

// VersionRef is one row version a command wrote.
type VersionRef struct {
	RK      string
	Version int64
	Op      string
	Deleted bool
	Tip     bool // still the row's current version
	Fields  []Field
}

// CommandView is what one command did.
type CommandView struct {
	JournalEntry
	// Outcomes are every outcome of the ID, oldest first (an ID published
	// twice has an applied and a duplicate one).
	Outcomes []JournalEntry
	Trace    string // the W3C trace ID, "" without one
	Meta     map[string]string
	Ops      []Op
	Versions []VersionRef
	// PruneHorizon is the horizon of a prune command.
	PruneHorizon uint64
	// EraseRK is the erased row of a one-row erase; EraseRow says whether
	// the erase is of one row.
	EraseRK  string
	EraseRow bool
	// Gone says why the message body is not shown: no longer stored, or
	// not decodable.
	Gone string
}

// Version is one version of a row, with its difference to the one before.
type Version struct {
	Version int64
	Seq     uint64
	At      time.Time
	Cmd     string
	Issuer  string
	Op      string
	Deleted bool
	Tip     bool
	Fields  []Field
	Changes []Change
}

// HistoryQuery selects a page of a row's versions. Without a cursor it
// is the newest page.
type HistoryQuery struct {
	Table, PK, RK string
	// Before, if set, selects the newest versions written before this
	// journal sequence (an older page).
	Before uint64
	// After, if set and Before is not, selects the oldest versions written
	// after this journal sequence (a newer page).
	After uint64
	// Limit bounds the versions of the page; if zero, 100.
	Limit int
}

// RowHistory is one page of the stored versions of one row.
type RowHistory struct {
	Table, PK, RK string
	// Versions are the page's versions, oldest first.
	Versions []Version
	// Total is the number of stored versions of the row, over every page.
	Total int
	// Older, when set, continues to the older page (HistoryQuery.Before);
	// Newer to the newer one (HistoryQuery.After). Both are 0 at the ends.
	Older, Newer uint64
	// PrunedBefore, when not zero, is the prune horizon of the row's
	// partition: versions older than it were removed by PruneCmd.
	PrunedBefore uint64
	PruneCmd     string
	PruneRemoved int64
	// Erased, when set, says the row or its partition was erased.
	Erased *Erasure
}

// Erasure names an erase.
type Erasure struct {
	PK        string
	Cmd       string
	Seq       uint64
	At        time.Time
	Partition bool
	RK        string
}

// AsOfQuery selects a page of a table's or a partition's state at a
// sequence.
type AsOfQuery struct {
	Table string
	PK    string
	All   bool // the whole table, PK ignored
	Seq   uint64
	// After continues a page: the rows after this key ("pk\x00rk").
	After string
	// Limit bounds the rows; if zero, 100.
	Limit int
	// Against, if set, is a second sequence: the page then holds the rows
	// that differ between Seq and Against.
	Against uint64
}

// AsOfRow is one row at a point, or one row that differs between two.
type AsOfRow struct {
	PK, RK  string
	Version int64
	Seq     uint64
	Cmd     string
	At      time.Time
	Fields  []Field
	// For a comparison: Kind is "added", "removed" or "changed", with the
	// changes.
	Kind    string
	Changes []Change
}

// AsOfPage is one page of a state at a point.
type AsOfPage struct {
	Rows []AsOfRow
	// Next continues the page (AsOfQuery.After); "" at the end.
	Next string
	// Erased lists the keys erased after the point (no values).
	Erased []Erasure
	// Pruned, when set, says the point is before the partition's prune
	// horizon.
	Pruned string
}

// OutcomeSample is one command's outcome, for charts.
type OutcomeSample struct {
	At     time.Time
	Status string
	Code   string
}

// Health is the state of every shard.
type Health struct {
	At      time.Time
	Head    uint64
	Shards  []Shard
	Pending uint64
	MaxLag  time.Duration
	Rate    float64
	Unowned []int
	// Behind and Held name the partitions recorded behind the journal
	// (the store lost writes) and held by a row the projector did not
	// write, one line each (wire.BehindPartition.String).
	Behind, Held []string
}

// Shard is one shard's state.
type Shard struct {
	Shard      int
	Owner      string
	OwnerSince time.Time
	Applied    uint64
	Pending    uint64
	Lag        time.Duration
	Rate       float64
	Consumer   bool
}

// RetentionLog is what prunes, compactions and erasures removed of one
// table, as its rows and the journal record it: counts and commands,
// never values.
type RetentionLog struct {
	Table string
	// Compacted, when set, is the table's journal horizon: the journal
	// holds none of its commands before Seq.
	Compacted *Compaction
	Prunes    []Prune
	Erasures  []Erasure
	// Truncated says more entries exist than the limit asked for.
	Truncated bool
}

// Compaction is a table's journal horizon, with the snapshot that stands
// for the commands before it (its location never holds a secret).
type Compaction struct {
	Seq      uint64
	Snapshot string
	SHA256   string
	Recorded time.Time
}

// Prune is a partition's prune horizon: versions older than Seq were
// removed by Cmd (Removed rows, over every prune of the partition).
type Prune struct {
	PK      string
	Seq     uint64
	Cmd     string
	Removed int64
}

// Difference is one stored row a verify found different.
type Difference struct {
	Kind    string // "missing", "extra" or "changed"
	PK, Key string
	Columns []Change
}

// VerifySummary sums up a verify.
type VerifySummary struct {
	Seq                     uint64
	Rows                    int64
	Missing, Extra, Changed int64
	Elapsed                 time.Duration
}

// Repairer plans and applies the corrections the console offers with
// Config.AllowChanges: undo, restore, prune and erase, journaled as the
// replay command's are.
type Repairer interface {
	// Plan says what a repair would do, changing nothing.
	Plan(ctx context.Context, r Repair) (RepairPlan, error)
	// Apply plans r again and applies it, unless the plan's fingerprint
	// is no longer want (the tables changed since the preview): then it
	// applies nothing and fails with ErrPlanChanged.
	Apply(ctx context.Context, r Repair, want string) (RepairResult, error)
}

// ErrPlanChanged: the plan confirmed is not the plan the tables call for
// now. Checked with errors.Is.
var ErrPlanChanged = errors.New("the plan changed since its preview")

// Repair names one correction.
type Repair struct {
	Kind string // "undo", "restore", "prune" or "erase"
	// Cmd is the undone command.
	Cmd string
	// Table, PK (All for the whole table) and, for a row erase, RK.
	Table, PK, RK string
	All, Row      bool
	// Point is where a restore goes back to, or a prune's horizon.
	Point string
	// Force undoes rows later commands changed again.
	Force bool
	// By is who asks: the signed-in console user ("token" for the bearer
	// token, "" without authentication). The commands a repair publishes
	// name it as their issuer ("console:" By, or "console").
	By string
}

// RepairPlan is what a repair would do.
type RepairPlan struct {
	Repair
	Seq   uint64 // the point resolved
	Steps []RepairStep
	// Commands are the IDs of the commands it would publish.
	Commands []string
	// Counts, for a prune or an erase, say what would go, by place.
	Counts []Count
	// Rows, for an erase, are the keys of the rows it erases, at most
	// eraseListed of them; RowsMore counts the others.
	Rows     []string
	RowsMore int
	// Issuer is the issuer the repair's commands are published under.
	Issuer string
	// Blocked says why the plan cannot be applied ("" when it can).
	Blocked string
	// Fingerprint names the plan: the confirmation carries it back.
	Fingerprint string
}

// RepairStep is what a plan does to one row.
type RepairStep struct {
	PK, RK   string
	Op       string
	Conflict bool
	Changes  []Change
}

// Count is a number of things of a kind.
type Count struct {
	What string
	N    int64
}

// RepairResult is what an applied repair did.
type RepairResult struct {
	// Plan is the plan applied, with its point resolved.
	Plan     RepairPlan
	Outcomes []JournalEntry
	Counts   []Count
}
