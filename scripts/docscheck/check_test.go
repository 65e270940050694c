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

// TestCheckPath checks quoted repository paths: files and folders that
// exist pass, ones that do not are found, and what is not a path of this
// repository (a media type, a build output, a Go name) is left alone.
func TestCheckPath(t *testing.T) {
	m, err := loadModule("testdata/mod")
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		quote string
		why   string
	}{
		{"store/store.go", ""},
		{"store/store.go:12", ""},
		{"store/store.go:12-30", ""},
		{"./store/store.go", ""},
		{"docs/guide.md", ""},
		{"store/", ""},
		{"store/...", ""},
		{"./store/...", ""},
		{"store/cost_test.go", "no such file or folder in the repository"},
		{"store/old/store.go:40", "no such file or folder in the repository"},
		{"docs/gone.md", "no such file or folder in the repository"},
		{"store/history/", "no such file or folder in the repository"},
		{"store/store.go/", "is a file, not a folder"},
		{"store/store.Open", ""},   // a Go name, checked as one
		{"application/json", ""},   // no such first folder: not a path here
		{"history/2026-01.md", ""}, // relative to another file
		{"bin/tablejournal", ""},   // built, ignored by .gitignore
		{"github.com/nats-io/nats.go", ""},
		{"docs/*.md", ""},                // a pattern
		{"https://example.com/a.md", ""}, // a link
		{"store.go", ""},
	} {
		if got := m.check(tc.quote); got != tc.why {
			t.Errorf("%q: %q, want %q", tc.quote, got, tc.why)
		}
	}
}
