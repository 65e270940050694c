package wire

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/tablejournal/tablejournal/events"
)

// Layout names a table's row layout (SPEC §4): how the projector stores a
// table's rows and their history.
type Layout string

const (
	// LayoutVersioned is the default layout: a row's tip, versions and
	// tombstones, and the partition's fence, in the table itself, written
	// in one transaction.
	LayoutVersioned Layout = "versioned"
	// LayoutPlain keeps the current rows in the table at the service's own
	// keys and the versioned layout in the history table beside it
	// (SPEC §4, "The plain layout").
	LayoutPlain Layout = "plain"
)

// ParseLayout reads a layout's name; "" is LayoutVersioned.
func ParseLayout(s string) (Layout, error) {
	switch Layout(s) {
	case "", LayoutVersioned:
		return LayoutVersioned, nil
	case LayoutPlain:
		return LayoutPlain, nil
	}
	return "", fmt.Errorf("unknown layout %q: want %q or %q", s, LayoutVersioned, LayoutPlain)
}

// LayoutPrefix is the first tokens of the subjects of the table layout
// settings the journal stream carries beside the commands (LayoutSubject):
// no shard's filter selects them.
const LayoutPrefix = "tablejournal.layout"

// LayoutSubjects is the subject filter of every layout setting, which the
// journal stream carries.
const LayoutSubjects = LayoutPrefix + ".*"

// JournalSubjects are the subjects the journal stream takes: the
// commands', journal.<table-token>.<pk-token> (transformed to add the
// shard), and the layout settings'.
func JournalSubjects() []string { return []string{JournalPrefix + ".*.*", LayoutSubjects} }

// LayoutSubject is the subject of table's layout setting (SPEC §3):
// tablejournal.layout.<table-token>.
func LayoutSubject(table string) string { return LayoutPrefix + "." + TableToken(table) }

// LayoutSetting is the body of a layout setting message.
type LayoutSetting struct {
	Table  string `json:"table"`
	Layout Layout `json:"layout"`
}

// Encode returns the setting's JSON.
func (s LayoutSetting) Encode() []byte {
	b, _ := json.Marshal(s) // two strings: cannot fail
	return b
}

// DecodeLayoutSetting reads a layout setting message's body. A body that
// does not decode, or names an unknown layout, is an error: such a
// message sets nothing.
func DecodeLayoutSetting(b []byte) (LayoutSetting, error) {
	var s LayoutSetting
	if err := json.Unmarshal(b, &s); err != nil {
		return LayoutSetting{}, fmt.Errorf("layout setting: %w", err)
	}
	l, err := ParseLayout(string(s.Layout))
	if err != nil || s.Layout == "" {
		return LayoutSetting{}, fmt.Errorf("layout setting of table %q: %w", s.Table, err)
	}
	s.Layout = l
	return s, nil
}

// HistorySuffix ends the name of a plain table's history table.
const HistorySuffix = "History"

// ErrHistoryName marks a table whose history table's name would not be a
// valid table name (too long): it cannot be projected plain.
var ErrHistoryName = errors.New("no valid history table name")

// HistoryTable is the name of the history table of a plain table (SPEC
// §4, "The plain layout"): the table's token followed by "History". It is
// the one function that names it. A table whose history name would break
// the table-name rule (3–63 ASCII letters and digits, a letter first) is
// refused with ErrHistoryName.
func HistoryTable(table string) (string, error) {
	h := TableToken(table) + HistorySuffix
	if err := events.ValidateTable(h); err != nil {
		return "", fmt.Errorf("%w: table %q would keep its history in %q: %w", ErrHistoryName, table, h, err)
	}
	return h, nil
}
