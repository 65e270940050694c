package wire

import (
	"errors"
	"strings"
	"testing"
)

func TestPKToken(t *testing.T) {
	for _, pk := range []string{"", "a", "customer-42", "ünïcødé/?#", strings.Repeat("k", 1024), "a.b*>"} {
		tok := PKToken(pk)
		if tok == "" || strings.ContainsAny(tok, ".*> \t") {
			t.Errorf("PKToken(%q) = %q is no subject token", pk, tok)
		}
		back, err := ParsePKToken(tok)
		if err != nil || back != pk {
			t.Errorf("ParsePKToken(PKToken(%q)) = %q, %v", pk, back, err)
		}
	}
	for _, bad := range []string{"", "a=b", "ab+/", "YQ==", "YR"} {
		if _, err := ParsePKToken(bad); !errors.Is(err, ErrBadSubject) {
			t.Errorf("ParsePKToken(%q) = %v, want ErrBadSubject", bad, err)
		}
	}
}

func TestParseJournalSubject(t *testing.T) {
	table, shard, pk, err := ParseJournalSubject("journal.orders.12." + PKToken("customer-42"))
	if err != nil || table != "orders" || shard != 12 || pk != "customer-42" {
		t.Fatalf("ParseJournalSubject = %q %d %q %v", table, shard, pk, err)
	}
	for _, bad := range []string{
		"", "journal.orders.Y3VzdG9tZXItNDI", "journal.orders.x.YQ", "journal.orders.-1.YQ",
		"journal.orders.01.YQ", "other.orders.1.YQ", "journal..1.YQ", "journal.orders.1.YQ.x", "journal.orders.1.a+b",
	} {
		if _, _, _, err := ParseJournalSubject(bad); !errors.Is(err, ErrBadSubject) {
			t.Errorf("ParseJournalSubject(%q) = %v, want ErrBadSubject", bad, err)
		}
	}
	if JournalSubject("orders", "customer-42") != "journal.orders.Y3VzdG9tZXItNDI" {
		t.Errorf("JournalSubject = %s", JournalSubject("orders", "customer-42"))
	}
	for _, c := range []struct{ got, want string }{
		{ShardFilter(3), "journal.*.3.*"},
		{TableFilter("orders"), "journal.orders.*.*"},
		{PartitionFilter("orders", ""), "journal.orders.*.="},
		{ChangeSubject("orders", "customer-42"), "changes.orders.Y3VzdG9tZXItNDI"},
		{ChangeFilter("orders"), "changes.orders.>"},
		{OutcomeSubject("a.b"), "outcomes.YS5i"},
		{OutcomeSubject(""), "outcomes.="},
		{OutcomeMsgID(7), "outcome-7"},
		{ChangeMsgID(9, 2, "r"), "chg-9-2-cg"},
		{ConsumerName("tablejournal-projector", 11), "tablejournal-projector-11"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}

// One table, one place: every subject and filter of a table carries its
// lower-case token, whatever the spelling; readers also look under the
// spelling journals written before held.
func TestTableToken(t *testing.T) {
	for _, c := range []struct{ got, want string }{
		{TableToken("caseT"), "caset"},
		{TableToken("CASET"), "caset"},
		{TableToken("orders"), "orders"},
		{JournalSubject("caseT", "p"), JournalSubject("CASET", "p")},
		{JournalSubject("Orders", "customer-42"), "journal.orders.Y3VzdG9tZXItNDI"},
		{JournalSubject("Orders", ""), "journal.orders.="},
		{TableFilter("caseT"), "journal.caset.*.*"},
		{PartitionFilter("CASET", "p"), "journal.caset.*.cA"},
		{ChangeSubject("caseT", "p"), "changes.caset.cA"},
		{ChangeFilter("CASET"), "changes.caset.>"},
		{strings.Join(TableFilters("caseT"), " "), "journal.caset.*.* journal.caseT.*.*"},
		{strings.Join(TableFilters("orders"), " "), "journal.orders.*.*"},
		{strings.Join(PartitionFilters("CASET", "p"), " "), "journal.caset.*.cA journal.CASET.*.cA"},
		{strings.Join(ChangeSubjects("caseT", "p"), " "), "changes.caset.cA changes.caseT.cA"},
		{strings.Join(ChangeSubjects("caset", "p"), " "), "changes.caset.cA"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
	for _, c := range []struct {
		token, table string
		holds        bool
	}{
		{"caset", "caseT", true}, {"caseT", "caseT", true}, {"caset", "CASET", true},
		{"CASET", "caseT", false}, {"CaseT", "CASET", false}, {"other", "caseT", false},
	} {
		if got := SubjectHoldsTable(c.token, c.table); got != c.holds {
			t.Errorf("SubjectHoldsTable(%q, %q) = %v", c.token, c.table, got)
		}
	}
}
