package main

import (
	"slices"
	"testing"
)

// TestCheck runs the check on a small module whose guide quotes names it
// declares, names it does not, and things that are not Go names.
func TestCheck(t *testing.T) {
	got, err := Check("testdata/mod", []string{"docs/guide.md"})
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, f := range got {
		lines = append(lines, f.String())
	}
	want := []string{
		"docs/guide.md:3: `store.PartitionLister`: package store declares no PartitionLister",
		"docs/guide.md:4: `Entity.Timestamp`: type Entity has no field or method Timestamp",
		"docs/guide.md:5: `Store.Partitions`: type Store has no field or method Partitions",
	}
	if !slices.Equal(lines, want) {
		t.Errorf("findings:\n%q\nwant:\n%q", lines, want)
	}
}

// TestCheckQuote checks single quotes, as the guides write them.
func TestCheckQuote(t *testing.T) {
	m, err := loadModule("testdata/mod")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		quote   string
		missing bool
	}{
		{"store.Open", false},
		{"store.Open(ctx)", false},
		{"*store.Entity", false},
		{"store.Entity.ETag", false},
		{"store.Entity.Keys()", false},
		{"store.Store.Get", false},
		{"store.Gone", true},
		{"store.Entity.Gone", true},
		{"Entity.Gone", true},
		{"Entity.PK", false},
		{"--nats", false},
		{"store/store.go", false},
		{"jetstream.Publish", false},
		{"Nats-Msg-Id", false},
		{"replay rebuild --into", false},
	} {
		if got := m.check(tc.quote) != ""; got != tc.missing {
			t.Errorf("%q: missing %v, want %v (%s)", tc.quote, got, tc.missing, m.check(tc.quote))
		}
	}
}
