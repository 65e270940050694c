package erasure_test

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/tablejournal/tablejournal/wire"
)

// changeEvents reads every change event of a partition from CHANGES, in
// order.
func changeEvents(t *testing.T, ctx context.Context, js jetstream.JetStream, table, pk string) []wire.ChangeEvent {
	t.Helper()
	s, err := js.Stream(ctx, wire.ChangesStream)
	if err != nil {
		t.Fatal(err)
	}
	subj := wire.ChangeSubject(table, pk)
	info, err := s.Info(ctx, jetstream.WithSubjectFilter(subj))
	if err != nil {
		t.Fatal(err)
	}
	if info.State.Subjects[subj] == 0 {
		return nil
	}
	cons, err := s.OrderedConsumer(ctx, jetstream.OrderedConsumerConfig{FilterSubjects: []string{subj}})
	if err != nil {
		t.Fatal(err)
	}
	it, err := cons.Messages()
	if err != nil {
		t.Fatal(err)
	}
	defer it.Stop()
	var out []wire.ChangeEvent
	for {
		m, err := it.Next(jetstream.NextContext(ctx))
		if err != nil {
			t.Fatalf("read %s: %v", subj, err)
		}
		var ev wire.ChangeEvent
		if err := json.Unmarshal(m.Data(), &ev); err != nil {
			t.Fatalf("change event %s: %v", m.Data(), err)
		}
		out = append(out, ev)
		meta, _ := m.Metadata()
		if meta.NumPending == 0 {
			return out
		}
	}
}

// eraseNotices are the erase notices among evs (op "erase").
func eraseNotices(evs []wire.ChangeEvent) []wire.ChangeEvent {
	var out []wire.ChangeEvent
	for _, ev := range evs {
		if ev.Op == wire.ChangeErase {
			out = append(out, ev)
		}
	}
	return out
}

// checkNotice fails t unless evs hold exactly one erase notice
// of the erase at seq: the key (rk, or the partition), no values.
func checkNotice(t *testing.T, evs []wire.ChangeEvent, seq uint64, cmd string, rk *string) {
	t.Helper()
	var n *wire.ChangeEvent
	for i, ev := range eraseNotices(evs) {
		if ev.Seq == seq {
			if n != nil {
				t.Errorf("two notices of the erase at seq %d", seq)
			}
			n = &eraseNotices(evs)[i]
		}
	}
	switch {
	case n == nil:
		t.Errorf("no erase notice of seq %d in %+v", seq, evs)
	case n.Cmd != cmd || n.Before != nil || n.After != nil || (rk == nil) != n.Partition || rk != nil && n.RK != *rk:
		t.Errorf("erase notice %+v, want command %s, rk %v, no values", *n, cmd, rk)
	}
}
