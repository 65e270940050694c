package journal_test

import (
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/events/rules"
	"github.com/tablejournal/tablejournal/journal"
	"github.com/tablejournal/tablejournal/wire"
)

func TestGetHeadSeqAtTime(t *testing.T) {
	e := newEnv(t, journal.Config{AllowTrim: true})
	if h := e.head(t); h != 0 {
		t.Fatalf("empty journal head %d", h)
	}
	if _, err := e.j.Get(e.ctx, 1); !errors.Is(err, journal.ErrNotFound) {
		t.Fatalf("Get(1) on empty journal: %v, want ErrNotFound", err)
	}
	if _, err := e.j.SeqAtTime(e.ctx, time.Now()); !errors.Is(err, journal.ErrNotFound) {
		t.Fatalf("SeqAtTime on empty journal: %v, want ErrNotFound", err)
	}

	w := journal.NewWriter(e.js, "")
	var msgs []journal.Msg
	for i := 1; i <= 3; i++ {
		res, err := w.Publish(e.ctx, command(fmt.Sprintf("c-%d", i), "orders", "customer-42"))
		if err != nil {
			t.Fatal(err)
		}
		m, err := e.j.Get(e.ctx, res.Seq)
		if err != nil {
			t.Fatal(err)
		}
		if m.Seq != uint64(i) || m.Header.Get("Nats-Msg-Id") != fmt.Sprintf("c-%d", i) || m.Time.IsZero() || len(m.Data) == 0 {
			t.Fatalf("Get(%d) = %+v", res.Seq, m)
		}
		if m.Header.Get("Nats-Sequence") != "" || m.Header.Get("Nats-Stream") != "" {
			t.Errorf("Get left direct-get headers in %v", m.Header)
		}
		msgs = append(msgs, m)
	}
	if h := e.head(t); h != 3 {
		t.Fatalf("head %d, want 3", h)
	}
	if !msgs[0].Time.Before(msgs[1].Time) || !msgs[1].Time.Before(msgs[2].Time) {
		t.Fatalf("times not increasing: %v", []time.Time{msgs[0].Time, msgs[1].Time, msgs[2].Time})
	}

	seqAt := func(at time.Time) (uint64, error) { return e.j.SeqAtTime(e.ctx, at) }
	for _, tc := range []struct {
		at   time.Time
		want uint64
	}{
		{time.Time{}, 1},
		{msgs[0].Time.Add(-time.Hour), 1},
		{msgs[0].Time, 1},
		{msgs[0].Time.Add(time.Nanosecond), 2},
		{msgs[1].Time, 2},
		{msgs[2].Time, 3},
	} {
		if got, err := seqAt(tc.at); err != nil || got != tc.want {
			t.Errorf("SeqAtTime(%s) = %d, %v, want %d", tc.at.Format(time.RFC3339Nano), got, err, tc.want)
		}
	}
	if _, err := seqAt(msgs[2].Time.Add(time.Nanosecond)); !errors.Is(err, journal.ErrNotFound) {
		t.Errorf("SeqAtTime after the head: %v, want ErrNotFound", err)
	}

	// A deleted message is not found, and positions step over it (the
	// journal allows deletes: AllowTrim).
	s, err := e.js.Stream(e.ctx, wire.JournalStream)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteMsg(e.ctx, 2); err != nil {
		t.Fatal(err)
	}
	if _, err := e.j.Get(e.ctx, 2); !errors.Is(err, journal.ErrNotFound) {
		t.Errorf("Get(deleted) = %v, want ErrNotFound", err)
	}
	if got, err := seqAt(msgs[1].Time); err != nil || got != 3 {
		t.Errorf("SeqAtTime(time of deleted 2) = %d, %v, want 3", got, err)
	}
	var read []uint64
	if err := e.j.Read(e.ctx, 0, 0, "", func(m journal.Msg) error { read = append(read, m.Seq); return nil }); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(read, []uint64{1, 3}) {
		t.Errorf("Read over a deleted message: %v, want [1 3]", read)
	}
}

func TestRead(t *testing.T) {
	e := newEnv(t, journal.Config{})
	w := journal.NewWriter(e.js, "", journal.WithContentType(wire.ContentTypeJSON))
	for i := 1; i <= 10; i++ {
		pk := "even"
		if i%2 == 1 {
			pk = "odd"
		}
		if _, err := w.Publish(e.ctx, command(fmt.Sprintf("c-%d", i), "orders", pk)); err != nil {
			t.Fatal(err)
		}
	}
	read := func(from, to uint64, filter string) []uint64 {
		t.Helper()
		var seqs []uint64
		err := e.j.Read(e.ctx, from, to, filter, func(m journal.Msg) error {
			cmd, err := journal.DecodeMsg(m)
			if err != nil {
				return err
			}
			if cmd.ID != fmt.Sprintf("c-%d", m.Seq) {
				return fmt.Errorf("seq %d holds %s", m.Seq, cmd.ID)
			}
			seqs = append(seqs, m.Seq)
			return nil
		})
		if err != nil {
			t.Fatalf("Read(%d, %d, %q): %v", from, to, filter, err)
		}
		return seqs
	}
	odd := wire.PartitionFilter("orders", "odd")
	for _, tc := range []struct {
		from, to uint64
		filter   string
		want     []uint64
	}{
		{0, 0, "", []uint64{1, 2, 3, 4, 5, 6, 7, 8, 9, 10}},
		{3, 7, "", []uint64{3, 4, 5, 6, 7}},
		{5, 5, "", []uint64{5}},
		{9, 100, "", []uint64{9, 10}},
		{11, 0, "", nil},
		{7, 3, "", nil},
		{0, 0, odd, []uint64{1, 3, 5, 7, 9}},
		{2, 6, odd, []uint64{3, 5}},      // to is not in the filter
		{10, 0, odd, nil},                // nothing matches after from
		{0, 0, "journal.other.*.*", nil}, // nothing matches at all
	} {
		if got := read(tc.from, tc.to, tc.filter); !slices.Equal(got, tc.want) {
			t.Errorf("Read(%d, %d, %q) = %v, want %v", tc.from, tc.to, tc.filter, got, tc.want)
		}
	}

	stop := errors.New("stop")
	n := 0
	err := e.j.Read(e.ctx, 0, 0, "", func(journal.Msg) error {
		if n++; n == 3 {
			return stop
		}
		return nil
	})
	if err != stop || n != 3 {
		t.Errorf("Read returned %v after %d messages, want fn's error after 3", err, n)
	}
}

func TestDecodeMsg(t *testing.T) {
	good := command("c-1", "orders", "customer-42")
	body, err := events.Encode(good, wire.ContentTypeMsgpack)
	if err != nil {
		t.Fatal(err)
	}
	jsonBody, err := events.Encode(good, wire.ContentTypeJSON)
	if err != nil {
		t.Fatal(err)
	}
	stored := "journal.orders.3." + wire.PKToken("customer-42")
	hdr := func(kv ...string) nats.Header {
		h := nats.Header{}
		for i := 0; i < len(kv); i += 2 {
			h.Set(kv[i], kv[i+1])
		}
		return h
	}

	for _, m := range []journal.Msg{
		{Seq: 1, Subject: stored, Data: body}, // no Content-Type: msgpack
		{Seq: 2, Subject: stored, Data: body, Header: hdr("Content-Type", wire.ContentTypeMsgpack, "Nats-Msg-Id", "c-1")},
		{Seq: 3, Subject: stored, Data: jsonBody, Header: hdr("Content-Type", wire.ContentTypeJSON, wire.HeaderSchema, wire.SchemaVersion)},
	} {
		cmd, err := journal.DecodeMsg(m)
		if err != nil {
			t.Fatalf("DecodeMsg(seq %d): %v", m.Seq, err)
		}
		if !cmd.Equal(good) {
			t.Errorf("DecodeMsg(seq %d) = %+v, want %+v", m.Seq, cmd, good)
		}
	}

	for _, tc := range []struct {
		name string
		m    journal.Msg
		want error
	}{
		{"other pk", journal.Msg{Subject: "journal.orders.3." + wire.PKToken("customer-43"), Data: body}, journal.ErrSubjectMismatch},
		{"other table", journal.Msg{Subject: "journal.invoices.3." + wire.PKToken("customer-42"), Data: body}, journal.ErrSubjectMismatch},
		{"unstored subject", journal.Msg{Subject: wire.JournalSubject("orders", "customer-42"), Data: body}, journal.ErrSubjectMismatch},
		{"other msg id", journal.Msg{Subject: stored, Data: body, Header: hdr("Nats-Msg-Id", "c-2")}, journal.ErrIDMismatch},
		{"garbage msgpack", journal.Msg{Subject: stored, Data: []byte{0xc1, 0x00}}, rules.ErrInvalid},
		{"garbage json", journal.Msg{Subject: stored, Data: []byte("{"), Header: hdr("Content-Type", wire.ContentTypeJSON)}, rules.ErrInvalid},
		{"json as msgpack", journal.Msg{Subject: stored, Data: jsonBody}, rules.ErrInvalid},
		{"unknown content type", journal.Msg{Subject: stored, Data: body, Header: hdr("Content-Type", "text/plain")}, rules.ErrInvalid},
		{"unknown schema", journal.Msg{Subject: stored, Data: body, Header: hdr(wire.HeaderSchema, "99")}, rules.ErrInvalid},
	} {
		_, err := journal.DecodeMsg(tc.m)
		if !errors.Is(err, tc.want) || !errors.Is(err, rules.ErrInvalid) {
			t.Errorf("%s: DecodeMsg = %v, want %v (and rules.ErrInvalid)", tc.name, err, tc.want)
		}
	}

	invalid := command("c-1", "orders", "customer-42")
	invalid.Ops = nil
	invalidBody, err := events.Encode(invalid, wire.ContentTypeJSON)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := journal.DecodeMsg(journal.Msg{Subject: stored, Data: invalidBody, Header: hdr("Content-Type", wire.ContentTypeJSON)}); !errors.Is(err, rules.ErrInvalid) {
		t.Errorf("DecodeMsg(no ops) = %v, want rules.ErrInvalid", err)
	}
}

// A raw client can put one partition's subject on another's body: it is
// stored, and the mismatch shows when the projector decodes it.
func TestDecodeMsgSubjectBodyMismatchThroughTheServer(t *testing.T) {
	e := newEnv(t, journal.Config{})
	seq := publishRaw(t, e, wire.JournalSubject("orders", "customer-b"), "c-1", rawJSON("c-1", "orders", "customer-a"))
	m, err := e.j.Get(e.ctx, seq)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := journal.DecodeMsg(m); !errors.Is(err, journal.ErrSubjectMismatch) || !errors.Is(err, rules.ErrInvalid) {
		t.Fatalf("DecodeMsg = %v, want ErrSubjectMismatch wrapping rules.ErrInvalid", err)
	}
}
