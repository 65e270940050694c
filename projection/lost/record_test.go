package lost_test

import (
	"bytes"
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

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
	// The journal the partition keys are found in: seq 1 orders/"", 2
	// orders/p2, 3 people/a.b:c/ü.
	journalStream(t, ctx, js, [][2]string{{"orders", ""}, {"orders", "p2"}, {"people", "a.b:c/ü"}})
	add := []wire.BehindPartition{
		{Table: "orders", PK: "p2", TableSeq: 0, AppliedSeq: 2, Cmd: "c4"},
		{Table: "Orders", PK: "p2", TableSeq: 7, AppliedSeq: 9, Cmd: "c9"}, // found again (another spelling): kept as first found
		{Table: "orders", PK: "", TableSeq: 0, AppliedSeq: 1, Cmd: "c1"},
		{Table: "people", PK: "a.b:c/ü", TableSeq: 5, AppliedSeq: 3, Cmd: "c6"},
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
				seen <- "-" + e.Key
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
		if s != "-"+wire.BehindKey("people", "a.b:c/ü") {
			t.Errorf("the watch saw %s, want the removal of people/a.b:c/ü", s)
		}
	case <-ctx.Done():
		t.Fatal("the watch did not see the removal")
	}
	if es, _ := rec.List(ctx, "people"); len(es) != 0 {
		t.Errorf("people after the removal: %v", es)
	}
	if err := rec.Add(ctx, wire.BehindPartition{Table: "people", PK: "a.b:c/ü", AppliedSeq: 3, Cmd: "c7"}); err != nil {
		t.Fatal(err)
	}
	if es, _ := rec.List(ctx, "people"); len(es) != 1 || es[0].Cmd != "c7" {
		t.Errorf("found again after the removal: %v", es)
	}
}

// journalStream creates a journal stream (deletes allowed) holding one
// message per table and partition key given, at sequences 1, 2, ...
func journalStream(t *testing.T, ctx context.Context, js jetstream.JetStream, parts [][2]string) jetstream.Stream {
	t.Helper()
	s, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: wire.JournalStream, Subjects: []string{wire.JournalPrefix + ".>"}})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range parts {
		if _, err := js.Publish(ctx, wire.JournalPrefix+"."+p[0]+".0."+wire.PKToken(p[1]), []byte("{}")); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// TestRecordHoldsNoKey: an entry holds the partition key only hashed,
// under the table's lower-case token; a reader finds the key in the
// journal (the message at AppliedSeq, else TableSeq, else any of the
// table's), says "(erased)" when none is left, and still reads an entry
// of the legacy form (the key in clear).
func TestRecordHoldsNoKey(t *testing.T) {
	ctx := journaltest.Context(t, time.Minute)
	srv := journaltest.StartServer(t)
	_, js := journaltest.Connect(t, srv.ClientURL())
	// seq 1 Orders/secret-a, 2 orders/secret-b, 3 orders/secret-b, 4 orders/secret-c, 5 orders/secret-b
	j := journalStream(t, ctx, js, [][2]string{{"Orders", "secret-a"}, {"orders", "secret-b"}, {"orders", "secret-b"}, {"orders", "secret-c"}, {"orders", "secret-b"}})
	rec, err := lost.Ensure(ctx, js, "", "", 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, b := range []wire.BehindPartition{
		{Table: "Orders", PK: "secret-a", AppliedSeq: 1, Cmd: "a"},
		{Table: "orders", PK: "secret-b", TableSeq: 2, AppliedSeq: 3, Cmd: "b"},
		{Table: "orders", PK: "secret-c", AppliedSeq: 4, Cmd: "c"},
	} {
		if err := rec.Add(ctx, b); err != nil {
			t.Fatal(err)
		}
	}
	kv, err := js.KeyValue(ctx, rec.Name())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := kv.Put(ctx, wire.LegacyBehindKey("old", "secret-d"), []byte(`{"table":"old","pk":"secret-d","cmd":"d"}`)); err != nil {
		t.Fatal(err)
	}
	keys, err := kv.ListKeys(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for k := range keys.Keys() {
		if k == wire.LegacyBehindKey("old", "secret-d") {
			continue
		}
		v, err := kv.Get(ctx, k)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains([]byte(k), []byte("secret")) || bytes.Contains(v.Value(), []byte("secret")) || bytes.Contains([]byte(k), []byte(wire.PKToken("secret-a"))) {
			t.Errorf("entry %s = %s holds a partition key", k, v.Value())
		}
		var b wire.BehindPartition
		if err := json.Unmarshal(v.Value(), &b); err != nil || b.PK != "" {
			t.Errorf("entry %s = %s: %v", k, v.Value(), err)
		}
	}

	// secret-b's AppliedSeq and secret-c's only message go: b is found
	// at its TableSeq, c is erased.
	for _, seq := range []uint64{3, 4} {
		if err := j.DeleteMsg(ctx, seq); err != nil {
			t.Fatal(err)
		}
	}
	tests := []struct {
		table string
		want  []string // table/pk/cmd, or table/(erased)/cmd
	}{
		{"", []string{"Orders/secret-a/a", "old/secret-d/d", "orders/(erased)/c", "orders/secret-b/b"}},
		{"Orders", []string{"Orders/secret-a/a"}},
	}
	for _, tt := range tests {
		es, err := rec.List(ctx, tt.table)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, e := range es {
			pk := e.PK
			if e.PKErased {
				pk = "(erased)"
			}
			got = append(got, e.Table+"/"+pk+"/"+e.Cmd)
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
	// secret-b's TableSeq goes too: found among the table's messages
	// (seq 5); then that goes, and its key is found nowhere.
	for i, seq := range []uint64{2, 5} {
		if err := j.DeleteMsg(ctx, seq); err != nil {
			t.Fatal(err)
		}
		es, err := rec.List(ctx, "orders")
		if err != nil || len(es) != 2 {
			t.Fatalf("orders: %+v, %v", es, err)
		}
		b := es[0]
		if b.Cmd != "b" {
			b = es[1]
		}
		if i == 0 && b.PK != "secret-b" || i == 1 && (!b.PKErased || b.PK != "") {
			t.Errorf("secret-b with seq %d gone: %+v", seq, b)
		}
	}
	if ok, err := rec.Remove(ctx, "ORDERS", "secret-c", 0); err != nil || !ok {
		t.Errorf("remove under another spelling: %v, %v", ok, err)
	}
}
