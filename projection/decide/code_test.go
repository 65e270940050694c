package decide

import (
	"fmt"
	"strings"
	"testing"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/events/rules"
	"github.com/tablejournal/tablejournal/journal"
	"github.com/tablejournal/tablejournal/wire"
)

// TestRejectionCodes: every rejection the batch makes carries the stable
// code (and rule) of SPEC §5 beside its reason.
func TestRejectionCodes(t *testing.T) {
	many := edm.Entity{}
	for i := range events.MaxProperties {
		many[fmt.Sprintf("p%d", i)] = edm.Int64(1)
	}
	big := edm.Entity{"b": edm.Binary(make([]byte, 60<<10))}
	for i := range 16 {
		big[fmt.Sprintf("s%d", i)] = edm.Binary(make([]byte, 60<<10))
	}
	tests := []struct {
		name       string
		setup      []Entry
		e          Entry
		code       wire.Code
		rule       string
		reasonPart string
	}{
		{"exists", []Entry{entry(1, "a", upsert("r", "x", 1))}, entry(2, "b", op(events.OpInsert, "r", "x", 2)),
			wire.CodeExists, "", "row exists"},
		{"not-found replace", nil, entry(2, "b", op(events.OpReplace, "r", "x", 2)), wire.CodeNotFound, "", "does not exist"},
		{"not-found delete", nil, entry(2, "b", op(events.OpDelete, "r")), wire.CodeNotFound, "", "does not exist"},
		{"version-mismatch", []Entry{entry(1, "a", upsert("r", "x", 1))}, entry(2, "b", ifv(upsert("r", "x", 2), 5)),
			wire.CodeVersionMismatch, "", "row is at version 0"},
		{"version-mismatch missing row", nil, entry(2, "b", ifv(upsert("r", "x", 2), 0)),
			wire.CodeVersionMismatch, "", "row does not exist"},
		{"unknown op", nil, entry(2, "b", events.RowOp{Op: "frob", RK: "r"}), wire.CodeInvalid, string(rules.UnknownOp), "unknown op"},
		{"merge too many", []Entry{entry(1, "a", events.RowOp{Op: events.OpUpsert, RK: "r", Entity: many})},
			entry(2, "b", op(events.OpMerge, "r", "extra", 1)), wire.CodeTooLarge, wire.RuleTooManyProperties, "merge leaves"},
		{"transaction too large", nil, entry(2, "b", events.RowOp{Op: events.OpUpsert, RK: "r", Entity: big},
			events.RowOp{Op: events.OpUpsert, RK: "s", Entity: big}, events.RowOp{Op: events.OpUpsert, RK: "t", Entity: big},
			events.RowOp{Op: events.OpUpsert, RK: "u", Entity: big}, events.RowOp{Op: events.OpUpsert, RK: "v", Entity: big}),
			wire.CodeTooLarge, wire.RuleTransactionTooLarge, "limit"},
		{"undecodable", nil, Entry{Seq: 2, ID: "b", Err: fmt.Errorf("decode: %w", &rules.ValidationError{Field: "pk", Rule: rules.KeyForbiddenChar, Detail: "#"})},
			wire.CodeInvalid, string(rules.KeyForbiddenChar), "key-forbidden-char"},
		{"subject mismatch", nil, Entry{Seq: 2, ID: "b", Err: fmt.Errorf("decode: %w: x", journal.ErrSubjectMismatch)},
			wire.CodeInvalid, wire.RuleSubjectMismatch, "disagree"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := runBatch(t, nil, append(tt.setup, tt.e)...)
			r := b.Results[len(b.Results)-1]
			if r.Status != rejected || r.Code != tt.code || !strings.Contains(r.Reason, tt.reasonPart) {
				t.Fatalf("got %s code %q reason %q, want rejected %q with %q", r.Status, r.Code, r.Reason, tt.code, tt.reasonPart)
			}
			if tt.rule != "" && r.Rule != tt.rule {
				t.Fatalf("rule %q, want %q", r.Rule, tt.rule)
			}
		})
	}
}
