package events_test

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/events/rules"
	"github.com/tablejournal/tablejournal/wire"
)

func strp(s string) *string { return &s }

var eraseContentTypes = []string{wire.ContentTypeJSON, wire.ContentTypeMsgpack}

func TestEraseRoundTrip(t *testing.T) {
	for _, e := range []*events.Erase{
		{ID: "erase-1", Table: "orders", PK: "customer-42"},
		{ID: "erase-2", Table: "orders", PK: "customer-42", RK: strp("order-7"), Issuer: "privacy-desk",
			IssuedAt: time.Date(2026, 11, 21, 10, 0, 0, 123456700, time.UTC)},
		{ID: "erase-3", Table: "orders", PK: "", RK: strp("")},
	} {
		if err := e.Validate(); err != nil {
			t.Fatalf("%s: %v", e.ID, err)
		}
		for _, ct := range eraseContentTypes {
			data, err := events.EncodeErase(e, ct)
			if err != nil {
				t.Fatalf("%s %s: encode: %v", e.ID, ct, err)
			}
			got, err := events.DecodeErase(data, ct)
			if err != nil {
				t.Fatalf("%s %s: decode %q: %v", e.ID, ct, data, err)
			}
			if !got.Equal(e) {
				t.Fatalf("%s %s: round trip gave %+v, want %+v", e.ID, ct, got, e)
			}
			if got.Partition() != (e.RK == nil) {
				t.Fatalf("%s: Partition() = %v", e.ID, got.Partition())
			}
		}
	}
}

func TestEraseJSONForm(t *testing.T) {
	e := &events.Erase{ID: "x1", Table: "orders", PK: "c", RK: strp("r")}
	data, err := events.EncodeErase(e, wire.ContentTypeJSON)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"id":"x1","table":"orders","pk":"c","rk":"r"}`; string(data) != want {
		t.Fatalf("JSON form %s, want %s", data, want)
	}
}

func TestEraseRules(t *testing.T) {
	tests := []struct {
		name, json string
		rule       rules.Rule
		decodeErr  bool // the decoder, not Validate, rejects it
	}{
		{"values", `{"id":"a1","table":"orders","pk":"p","ops":[{"op":"upsert","rk":"r","entity":{"x":1}}]}`, rules.UnknownField, true},
		{"entity", `{"id":"a1","table":"orders","pk":"p","entity":{"x":"secret"}}`, rules.UnknownField, true},
		{"meta", `{"id":"a1","table":"orders","pk":"p","meta":{"k":"v"}}`, rules.UnknownField, true},
		{"case", `{"id":"a1","table":"orders","PK":"p"}`, rules.UnknownField, true},
		{"duplicate", `{"id":"a1","table":"orders","pk":"p","pk":"q"}`, rules.DuplicateField, true},
		{"not string", `{"id":"a1","table":"orders","pk":"p","rk":7}`, rules.Malformed, true},
		{"null rk", `{"id":"a1","table":"orders","pk":"p","rk":null}`, rules.Malformed, true},
		{"array", `[]`, rules.Malformed, true},
		{"trailing", `{"id":"a1","table":"orders","pk":"p"} {}`, rules.Malformed, true},
		{"truncated", `{"id":"a1","table":"orders"`, rules.Malformed, true},
		{"bad date", `{"id":"a1","table":"orders","pk":"p","issuedAt":"yesterday"}`, rules.BadDateTime, true},
		{"no id", `{"table":"orders","pk":"p"}`, rules.IDRequired, false},
		{"id charset", `{"id":"a b","table":"orders","pk":"p"}`, rules.IDCharset, false},
		{"table", `{"id":"a1","table":"1x","pk":"p"}`, rules.TableName, false},
		{"pk char", `{"id":"a1","table":"orders","pk":"a/b"}`, rules.KeyForbiddenChar, false},
		{"rk char", `{"id":"a1","table":"orders","pk":"p","rk":"a#b"}`, rules.KeyForbiddenChar, false},
		{"rk control", `{"id":"a1","table":"orders","pk":"p","rk":"a\u0001"}`, rules.KeyControlChar, false},
		{"rk long", `{"id":"a1","table":"orders","pk":"p","rk":"` + strings.Repeat("r", events.MaxKeyUnits) + `"}`, rules.KeyTooLong, false},
		{"issuer", `{"id":"a1","table":"orders","pk":"p","issuer":"` + strings.Repeat("i", events.MaxIssuerLen+1) + `"}`, rules.IssuerLength, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e, err := events.DecodeErase([]byte(tt.json), wire.ContentTypeJSON)
			if !tt.decodeErr {
				if err != nil {
					t.Fatalf("decode: %v", err)
				}
				err = e.Validate()
			} else if e != nil {
				t.Fatalf("a decode error came with an erase")
			}
			var ve *rules.ValidationError
			if !errors.As(err, &ve) || !errors.Is(err, rules.ErrInvalid) || ve.Rule != tt.rule {
				t.Fatalf("error %v, want rule %s", err, tt.rule)
			}
		})
	}
}

func TestEraseMsgpackRules(t *testing.T) {
	for name, tt := range map[string]struct {
		v    any
		rule rules.Rule
	}{
		"values":     {om{"id", "a1", "table", "orders", "pk", "p", "ops", []any{}}, rules.UnknownField},
		"not string": {om{"id", "a1", "table", "orders", "pk", 7}, rules.Malformed},
		"duplicate":  {om{"id", "a1", "id", "a2", "table", "orders", "pk", "p"}, rules.DuplicateField},
		"not map":    {[]any{"id"}, rules.Malformed},
	} {
		t.Run(name, func(t *testing.T) {
			e, err := events.DecodeErase(mp(t, tt.v), wire.ContentTypeMsgpack)
			var ve *rules.ValidationError
			if e != nil || !errors.As(err, &ve) || ve.Rule != tt.rule {
				t.Fatalf("got %+v, %v; want rule %s", e, err, tt.rule)
			}
		})
	}
	data := append(mp(t, om{"id", "a1", "table", "orders", "pk", "p"}), 0xc0)
	if _, err := events.DecodeErase(data, ""); !errors.Is(err, rules.ErrInvalid) {
		t.Fatalf("trailing data: %v", err)
	}
}

// checkErase is the property the erase fuzzers check, as checkDecoded for
// commands: errors are *rules.ValidationError wrapping rules.ErrInvalid; a decoded
// erase validates without panicking and re-encodes in both forms to bytes
// that decode to an Equal erase and encode again to the same bytes.
func checkErase(t *testing.T, e *events.Erase, err error) {
	if err != nil {
		var ve *rules.ValidationError
		if !errors.As(err, &ve) || !errors.Is(err, rules.ErrInvalid) || e != nil {
			t.Fatalf("decode error %v (%T) is not a *rules.ValidationError wrapping rules.ErrInvalid, or came with an erase", err, err)
		}
		return
	}
	_ = e.Validate()
	for _, ct := range eraseContentTypes {
		enc, err := events.EncodeErase(e, ct)
		if err != nil {
			var ve *rules.ValidationError
			if errors.As(err, &ve) && ve.Rule == rules.BadDateTime {
				continue // a decoded issuedAt outside what the wire carries
			}
			t.Fatalf("%s: re-encoding a decoded erase: %v\n%#v", ct, err, e)
		}
		e2, err := events.DecodeErase(enc, ct)
		if err != nil || !e2.Equal(e) {
			t.Fatalf("%s: round trip: %v\n%#v\n%#v", ct, err, e, e2)
		}
		enc2, err := events.EncodeErase(e2, ct)
		if err != nil || !bytes.Equal(enc, enc2) {
			t.Fatalf("%s: encoding is not stable (%v):\n%q\n%q", ct, err, enc, enc2)
		}
	}
}

func FuzzDecodeEraseJSON(f *testing.F) {
	for _, s := range []string{`{}`, `{"id":"a1","table":"orders","pk":"p","rk":"r","issuer":"i","issuedAt":"2026-01-01T00:00:00Z"}`,
		`{"id":"a1","ops":[]}`, `{"rk":null}`, `{"pk":"\ud800"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		e, err := events.DecodeErase(data, wire.ContentTypeJSON)
		checkErase(t, e, err)
	})
}

func FuzzDecodeEraseMsgpack(f *testing.F) {
	f.Add([]byte{0x80})
	f.Add(mp(f, om{"id", "a1", "table", "orders", "pk", "p", "rk", "r"}))
	f.Add(mp(f, om{"id", "a1", "entity", om{"x", 1}}))
	f.Fuzz(func(t *testing.T, data []byte) {
		e, err := events.DecodeErase(data, wire.ContentTypeMsgpack)
		checkErase(t, e, err)
	})
}
