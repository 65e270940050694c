package events_test

import (
	"errors"
	"testing"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/events/rules"
)

func pruneCommand(h uint64) *events.Command {
	return &events.Command{ID: "prune-1", Table: "orders", PK: "customer-42", Prune: &events.Prune{Horizon: h}}
}

func TestPruneRoundTrip(t *testing.T) {
	want := pruneCommand(1 << 62)
	want.Issuer, want.Meta = "replay", map[string]string{"keep": "90d"}
	for _, codec := range codecs {
		data, err := codec.marshal(want)
		if err != nil {
			t.Fatalf("%s: %v", codec.ext, err)
		}
		got, err := codec.unmarshal(data)
		if err != nil {
			t.Fatalf("%s: %v\n%q", codec.ext, err, data)
		}
		if !got.Equal(want) || !got.IsPrune() || got.Prune.Horizon != 1<<62 {
			t.Fatalf("%s: round trip gave %#v", codec.ext, got)
		}
		if err := got.Validate(); err != nil {
			t.Fatalf("%s: %v", codec.ext, err)
		}
	}
	if j, _ := events.MarshalJSON(pruneCommand(7)); string(j) != `{"id":"prune-1","table":"orders","pk":"customer-42","ops":[],"prune":{"horizon":7}}` {
		t.Fatalf("JSON form: %s", j)
	}
	if pruneCommand(7).Equal(pruneCommand(8)) || pruneCommand(7).Equal(&events.Command{ID: "prune-1", Table: "orders", PK: "customer-42"}) {
		t.Fatal("commands with other prunes compare equal")
	}
}

func TestPruneDecodeErrors(t *testing.T) {
	const head = `{"id":"p1","table":"orders","pk":"k",`
	jsonCases := []struct {
		in   string
		rule rules.Rule
	}{
		{head + `"prune":{"horizon":-1}}`, rules.Malformed},
		{head + `"prune":{"horizon":1.5}}`, rules.Malformed},
		{head + `"prune":{"horizon":"7"}}`, rules.Malformed},
		{head + `"prune":{"horizon":18446744073709551616}}`, rules.Malformed},
		{head + `"prune":{"Horizon":7}}`, rules.UnknownField},
		{head + `"prune":{"horizon":7,"horizon":8}}`, rules.DuplicateField},
		{head + `"prune":[7]}`, rules.Malformed},
		{head + `"prune":{"horizon":7},"prune":{"horizon":7}}`, rules.DuplicateField},
	}
	for _, tc := range jsonCases {
		_, err := events.UnmarshalJSON([]byte(tc.in))
		var ve *rules.ValidationError
		if !errors.As(err, &ve) || ve.Rule != tc.rule || !errors.Is(err, rules.ErrInvalid) {
			t.Errorf("%s: got %v, want rule %s", tc.in, err, tc.rule)
		}
	}
	top := om{"id", "p1", "table", "orders", "pk", "k"}
	mpCases := []struct {
		prune any
		rule  rules.Rule
	}{
		{om{"horizon", -1}, rules.Malformed},
		{om{"horizon", "7"}, rules.Malformed},
		{om{"horizon", 1.5}, rules.Malformed},
		{om{"horizont", 7}, rules.UnknownField},
		{om{"horizon", 7, "horizon", 7}, rules.DuplicateField},
		{[]any{7}, rules.Malformed},
	}
	for _, tc := range mpCases {
		in := append(append(om{}, top...), "prune", tc.prune)
		_, err := events.UnmarshalMsgpack(mp(t, in))
		var ve *rules.ValidationError
		if !errors.As(err, &ve) || ve.Rule != tc.rule {
			t.Errorf("msgpack %v: got %v, want rule %s", tc.prune, err, tc.rule)
		}
	}
	// null is absent: a command without ops then.
	c, err := events.UnmarshalJSON([]byte(head + `"prune":null}`))
	if err != nil || c.IsPrune() {
		t.Fatalf("null prune: %v %#v", err, c)
	}
}

func TestPruneValidate(t *testing.T) {
	withOps := pruneCommand(5)
	withOps.Ops = []events.RowOp{{Op: events.OpDelete, RK: "r"}}
	badID := pruneCommand(5)
	badID.ID = "a/b"
	cases := []struct {
		name string
		c    *events.Command
		rule rules.Rule
	}{
		{"ok", pruneCommand(5), ""},
		{"horizon 0", pruneCommand(0), rules.PruneHorizon},
		{"horizon too large", pruneCommand(1 << 63), rules.PruneHorizon},
		{"with ops", withOps, rules.PruneOps},
		{"bad id", badID, rules.IDCharset},
	}
	for _, tc := range cases {
		err := tc.c.Validate()
		var ve *rules.ValidationError
		switch {
		case tc.rule == "" && err != nil:
			t.Errorf("%s: %v", tc.name, err)
		case tc.rule != "" && (!errors.As(err, &ve) || ve.Rule != tc.rule):
			t.Errorf("%s: got %v, want rule %s", tc.name, err, tc.rule)
		}
	}
	if err := events.CheckPruneSeq(pruneCommand(5), 6); err != nil {
		t.Fatal(err)
	}
	var ve *rules.ValidationError
	if err := events.CheckPruneSeq(pruneCommand(6), 6); !errors.As(err, &ve) || ve.Rule != rules.PruneFuture {
		t.Fatalf("horizon at its own sequence: %v", err)
	}
}

func FuzzDecodePrune(f *testing.F) {
	for _, h := range []uint64{1, 1 << 40, events.MaxPruneHorizon} {
		for _, codec := range codecs {
			data, err := codec.marshal(pruneCommand(h))
			if err != nil {
				f.Fatal(err)
			}
			f.Add(codec.ext == ".json", data)
		}
	}
	f.Add(true, []byte(`{"id":"x","prune":{"horizon":1},"ops":[{"op":"delete","rk":""}]}`))
	f.Add(false, mp(f, om{"id", "x", "prune", om{"horizon", uint64(1) << 63}}))
	f.Fuzz(func(t *testing.T, isJSON bool, data []byte) {
		var c *events.Command
		var err error
		if isJSON {
			c, err = events.UnmarshalJSON(data)
		} else {
			c, err = events.UnmarshalMsgpack(data)
		}
		checkDecoded(t, c, err)
	})
}
