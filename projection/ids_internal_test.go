package projection

import (
	"fmt"
	"testing"
)

// TestIDFilterAnswers: the first-seen filter answers "first" only for a
// sequence it has read whose ID no earlier sequence carried, and "not
// known" for a repeat, a sequence it has not read, one too far behind, or
// when it is off (no server: the filter's decisions on what it read).
func TestIDFilterAnswers(t *testing.T) {
	type read struct {
		seq uint64
		id  string
	}
	for _, tc := range []struct {
		name  string
		reads []read
		off   bool
		want  map[uint64]bool
	}{
		{name: "first and repeats", reads: []read{{1, "a"}, {2, "b"}, {3, "a"}, {5, "c"}, {6, "b"}},
			want: map[uint64]bool{1: true, 2: true, 3: false, 4: true, 5: true, 6: false, 7: false}},
		{name: "a message without an ID", reads: []read{{1, ""}, {2, ""}, {3, "x"}},
			want: map[uint64]bool{1: true, 2: true, 3: true}},
		{name: "read again", reads: []read{{1, "a"}, {2, "b"}, {1, "a"}, {2, "b"}},
			want: map[uint64]bool{1: true, 2: true}},
		{name: "off", reads: []read{{1, "a"}}, off: true, want: map[uint64]bool{1: false}},
		{name: "far behind", reads: []read{{1, "a"}, {idFilterWindow + 1, "b"}, {idFilterWindow + 2, "a"}},
			want: map[uint64]bool{1: false, 3: true, idFilterWindow + 1: true, idFilterWindow + 2: false}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newIDFilter(nil, 1000, nil)
			for _, r := range tc.reads {
				f.read(r.seq, r.id)
			}
			if tc.off {
				f.stop("test")
			}
			for seq, want := range tc.want {
				if got := f.firstSeen(seq); got != want {
					t.Errorf("firstSeen(%d) = %v, want %v", seq, got, want)
				}
			}
		})
	}
}

// TestIDFilterForgetsOldRepeats: the repeats far behind the filter's
// position are dropped (their sequences are answered "not known").
func TestIDFilterForgetsOldRepeats(t *testing.T) {
	f := newIDFilter(nil, 1000, nil)
	for seq := uint64(1); seq <= 3*idFilterWindow; seq += 1024 {
		f.read(seq, fmt.Sprint(seq%4096)) // every fourth one a repeat
	}
	// Pruned once a window: at most two windows' repeats are kept.
	if n := len(f.repeats); n == 0 || n > 2*idFilterWindow/1024+1 {
		t.Fatalf("%d repeats kept, want some and at most two windows' %d", n, 2*idFilterWindow/1024+1)
	}
	for s := range f.repeats {
		if s+2*idFilterWindow <= f.pos {
			t.Fatalf("repeat %d kept, %d behind the position %d", s, f.pos-s, f.pos)
		}
	}
}
