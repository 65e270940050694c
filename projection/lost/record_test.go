package lost_test

import (
	"context"
	"testing"
	"time"

	"github.com/tablejournal/tablejournal/journal/journaltest"
	"github.com/tablejournal/tablejournal/projection/lost"
	"github.com/tablejournal/tablejournal/wire"
)

// TestRecord: an entry is written once (the first finding is kept),
// listed by table, removed only at the revision read, and followed by a
// watch from its first entries on; a bucket that does not exist reads as
// empty.
func TestRecord(t *testing.T) {
	ctx := journaltest.Context(t, time.Minute)
	srv := journaltest.StartServer(t)
	_, js := journaltest.Connect(t, srv.ClientURL())
	empty, err := lost.Open(ctx, js, "", "")
	if err != nil {
		t.Fatal(err)
	}
	if es, err := empty.List(ctx, ""); err != nil || len(es) != 0 {
		t.Fatalf("a record with no bucket: %v, %v", es, err)
	}
	rec, err := lost.Ensure(ctx, js, "", "", 1)
	if err != nil {
		t.Fatal(err)
	}
	if rec.Name() != wire.BehindBucketPrefix {
		t.Errorf("bucket %s, want %s", rec.Name(), wire.BehindBucketPrefix)
	}
	add := []wire.BehindPartition{
		{Table: "orders", PK: "p2", TableSeq: 2, AppliedSeq: 4, Cmd: "c4"},
		{Table: "orders", PK: "p2", TableSeq: 7, AppliedSeq: 9, Cmd: "c9"}, // found again: kept as first found
		{Table: "orders", PK: "", TableSeq: 0, AppliedSeq: 1, Cmd: "c1"},
		{Table: "people", PK: "a.b:c/ü", TableSeq: 5, AppliedSeq: 6, Cmd: "c6"},
	}
	for _, b := range add {
		if err := rec.Add(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		table string
		want  []string // pk/cmd
	}{
		{"", []string{"/c1", "p2/c4", "a.b:c/ü/c6"}},
		{"orders", []string{"/c1", "p2/c4"}},
		{"people", []string{"a.b:c/ü/c6"}},
		{"nope", nil},
	}
	for _, tt := range tests {
		es, err := rec.List(ctx, tt.table)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, e := range es {
			got = append(got, e.PK+"/"+e.Cmd)
		}
		if len(got) != len(tt.want) {
			t.Errorf("List(%q) = %v, want %v", tt.table, got, tt.want)
			continue
		}
		for i := range got {
			if got[i] != tt.want[i] {
				t.Errorf("List(%q) = %v, want %v", tt.table, got, tt.want)
				break
			}
		}
	}

	// A watch sees what is there, then a removal.
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	seen := make(chan string, 16)
	loaded := make(chan struct{})
	go func() {
		_ = rec.Watch(wctx, func(e lost.Entry, deleted bool) {
			if deleted {
				seen <- "-" + e.PK
			} else {
				seen <- "+" + e.PK
			}
		}, func() { close(loaded) })
	}()
	select {
	case <-loaded:
	case <-ctx.Done():
		t.Fatal("the watch never loaded")
	}
	if n := len(seen); n != 3 {
		t.Errorf("%d entries before loaded, want 3", n)
	}
	for len(seen) > 0 {
		<-seen
	}

	es, err := rec.List(ctx, "people")
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := rec.Remove(ctx, "people", es[0].PK, es[0].Revision+100); err == nil || ok {
		t.Errorf("removal at another revision: %v, %v; want refused", ok, err)
	}
	if ok, err := rec.Remove(ctx, "people", es[0].PK, es[0].Revision); err != nil || !ok {
		t.Errorf("removal at its revision: %v, %v", ok, err)
	}
	select {
	case s := <-seen:
		if s != "-a.b:c/ü" {
			t.Errorf("the watch saw %s, want the removal of people/a.b:c/ü", s)
		}
	case <-ctx.Done():
		t.Fatal("the watch did not see the removal")
	}
	if es, _ := rec.List(ctx, "people"); len(es) != 0 {
		t.Errorf("people after the removal: %v", es)
	}
	if err := rec.Add(ctx, wire.BehindPartition{Table: "people", PK: "a.b:c/ü", Cmd: "c7"}); err != nil {
		t.Fatal(err)
	}
	if es, _ := rec.List(ctx, "people"); len(es) != 1 || es[0].Cmd != "c7" {
		t.Errorf("found again after the removal: %v", es)
	}
}
