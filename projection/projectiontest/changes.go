package projectiontest

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/wire"
)

// CheckChangeFeed reads the whole change feed and checks it against the
// model: exactly one event per row version the model holds (so republished
// events were deduplicated), with the right op, before and after images,
// command and sequence, and the events of each row in journal order.
func (h *Harness) CheckChangeFeed(ctx context.Context, table string, m *Model) {
	h.t.Helper()
	t := h.t
	s, err := h.JS.Stream(ctx, wire.ChangesStream)
	if err != nil {
		t.Fatal(err)
	}
	info, err := s.Info(ctx)
	if err != nil {
		t.Fatal(err)
	}
	type key struct {
		id RowID
		v  int64
	}
	seen := make(map[key]wire.ChangeEvent)
	last := make(map[RowID]key)
	var holes []uint64 // sequences of the stream without a message
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq && seq > 0; seq++ {
		msg, err := s.GetMsg(ctx, seq)
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			holes = append(holes, seq)
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		ev, err := wire.DecodeChangeEvent(msg.Data)
		if err != nil {
			t.Fatal(err)
		}
		id := RowID{ev.Table, ev.PK, ev.RK}
		k := key{id, ev.Version}
		if _, dup := seen[k]; dup {
			t.Errorf("%s/%s version %d: two change events", ev.PK, ev.RK, ev.Version)
		}
		seen[k] = ev
		// Journal order per row: a command touching a row twice gives two
		// versions of one sequence, in version order.
		if l, ok := last[id]; ok && ev.Version <= l.v {
			t.Errorf("%s/%s: change event of version %d after version %d", ev.PK, ev.RK, ev.Version, l.v)
		}
		last[id] = k
	}
	n := 0
	for _, id := range m.IDs() {
		if id.Table != table {
			continue
		}
		hist := m.Rows[id]
		for i, v := range hist {
			n++
			ev, ok := seen[key{id, v.Version}]
			if !ok {
				t.Errorf("%s/%s version %d (seq %d, %s): no change event", id.PK, id.RK, v.Version, v.Seq, v.Cmd)
				continue
			}
			wantOp, before, after := wantChange(hist, i)
			if err := checkEvent(ev, wantOp, v, before, after); err != nil {
				t.Errorf("%s/%s version %d: %v", id.PK, id.RK, v.Version, err)
			}
		}
	}
	mine := 0 // the stream holds every table's events
	for k := range seen {
		if k.id.Table == table {
			mine++
		}
	}
	if mine != n {
		// Holes tell a message the stream lost (or a test deleted) from
		// one never published.
		t.Errorf("%d change events, the model has %d row versions; the stream holds %d messages in %d..%d, %d sequences without one %v",
			mine, n, info.State.Msgs, info.State.FirstSeq, info.State.LastSeq, len(holes), holes[:min(len(holes), 20)])
	}
}

// wantChange is the change event the model's version i of a row's history
// hist makes: its kind and before and after images.
func wantChange(hist []Version, i int) (op wire.ChangeOp, before, after edm.Entity) {
	v := hist[i]
	if i > 0 && !hist[i-1].Deleted {
		before = hist[i-1].Props
	}
	if !v.Deleted {
		after = v.Props
	}
	switch {
	case v.Deleted:
		return wire.ChangeDelete, before, after
	case before == nil:
		return wire.ChangeCreate, before, after
	}
	return wire.ChangeUpdate, before, after
}

func checkEvent(ev wire.ChangeEvent, op wire.ChangeOp, v Version, before, after edm.Entity) error {
	if ev.Op != op || ev.Cmd != v.Cmd || ev.Seq != v.Seq {
		return fmt.Errorf("event op %s cmd %s seq %d, want %s by %s at %d", ev.Op, ev.Cmd, ev.Seq, op, v.Cmd, v.Seq)
	}
	gotBefore, gotAfter, err := ev.Images()
	if err != nil {
		return err
	}
	for _, img := range []struct {
		name string
		got  edm.Entity
		want edm.Entity
	}{{"before", gotBefore, before}, {"after", gotAfter, after}} {
		got := img.got
		if (got == nil) != (img.want == nil) || !got.Equal(img.want) {
			return fmt.Errorf("%s image %v, want %v", img.name, got, img.want)
		}
	}
	return nil
}
