package projection_test

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/journal/journaltest"
	"github.com/tablejournal/tablejournal/projection"
	"github.com/tablejournal/tablejournal/projection/projectiontest"
	"github.com/tablejournal/tablejournal/wire"
)

// TestTraceContext: a command's W3C traceparent and tracestate headers are
// copied onto its outcome (applied or rejected) and its change events; a
// malformed traceparent is not copied.
func TestTraceContext(t *testing.T) {
	const (
		parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
		state  = "vendor=opaque"
	)
	for _, b := range backends() {
		t.Run(b.Name, func(t *testing.T) {
			ctx := journaltest.Context(t, time.Minute)
			h := projectiontest.Start(t, b.Open(t), projectiontest.Options{})
			h.StartProjector(projection.Config{})
			upsert := func(id, pk string) *events.Command {
				return &events.Command{ID: id, Table: "traced", PK: pk, Ops: []events.RowOp{{
					Op: events.OpUpsert, RK: "r", Entity: edm.Entity{"n": edm.Int64(1)}}}}
			}
			cases := []struct {
				cmd         *events.Command
				header      nats.Header
				wantParent  string
				wantState   string
				wantChanges bool
			}{
				{upsert("applied", "a"), nats.Header{"traceparent": {parent}, "tracestate": {state}}, parent, state, true},
				{&events.Command{ID: "rejected", Table: "traced", PK: "b", Ops: []events.RowOp{{
					Op: events.OpReplace, RK: "missing", Entity: edm.Entity{}}}},
					nats.Header{"traceparent": {parent}}, parent, "", false},
				{upsert("capitalized", "c"), nats.Header{"Traceparent": {parent}}, parent, "", true},
				{upsert("malformed", "d"), nats.Header{"traceparent": {"00-xyz"}, "tracestate": {state}}, "", "", true},
				{upsert("none", "e"), nats.Header{}, "", "", true},
			}
			for _, c := range cases {
				data, err := events.MarshalMsgpack(c.cmd)
				if err != nil {
					t.Fatal(err)
				}
				msg := nats.NewMsg(wire.JournalSubject(c.cmd.Table, c.cmd.PK))
				msg.Data, msg.Header = data, c.header
				msg.Header.Set(jetstream.MsgIDHeader, c.cmd.ID)
				if _, err := h.JS.PublishMsg(ctx, msg); err != nil {
					t.Fatal(err)
				}
			}
			h.WaitProjected(ctx)
			outcomes, err := h.JS.Stream(ctx, wire.OutcomesStream)
			if err != nil {
				t.Fatal(err)
			}
			changes, err := h.JS.Stream(ctx, wire.ChangesStream)
			if err != nil {
				t.Fatal(err)
			}
			check := func(what string, hdr nats.Header, wantParent, wantState string) {
				t.Helper()
				if got := hdr.Get(projection.HeaderTraceparent); got != wantParent {
					t.Errorf("%s: traceparent %q, want %q", what, got, wantParent)
				}
				if got := hdr.Get(projection.HeaderTracestate); got != wantState {
					t.Errorf("%s: tracestate %q, want %q", what, got, wantState)
				}
			}
			for _, c := range cases {
				o, err := outcomes.GetLastMsgForSubject(ctx, wire.OutcomeSubject(c.cmd.ID))
				if err != nil {
					t.Fatalf("outcome of %s: %v", c.cmd.ID, err)
				}
				check("outcome of "+c.cmd.ID, o.Header, c.wantParent, c.wantState)
				ch, err := changes.GetLastMsgForSubject(ctx, wire.ChangeSubject(c.cmd.Table, c.cmd.PK))
				switch {
				case c.wantChanges && err != nil:
					t.Errorf("change event of %s: %v", c.cmd.ID, err)
				case c.wantChanges:
					check("change event of "+c.cmd.ID, ch.Header, c.wantParent, c.wantState)
				case err == nil:
					t.Errorf("%s wrote nothing but has a change event", c.cmd.ID)
				}
			}
		})
	}
}
