package projection

import (
	"encoding/base64"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/tablejournal/tablejournal/events/edm"
	"github.com/tablejournal/tablejournal/wire"
)

// TestChangeMsgID: a change event's Nats-Msg-Id is
// chg-<journal seq>-<version>-<base64url(rk)>, the same across versions of
// the projector, so that a republish after an upgrade is deduplicated.
func TestChangeMsgID(t *testing.T) {
	r := Result{Seq: 18446744073709551615, ID: "c-1"}
	ch := Change{RK: "row/ü?😀", Kind: wire.ChangeCreate, Version: 12, After: edm.Entity{"a": edm.Int32(1)}}
	msg, err := changeMsg(partition{"T", "p"}, r, ch, time.Unix(0, 0))
	if err != nil {
		t.Fatal(err)
	}
	want := "chg-18446744073709551615-12-" + base64.RawURLEncoding.EncodeToString([]byte(ch.RK))
	if got := msg.Header.Get(jetstream.MsgIDHeader); got != want {
		t.Errorf("Nats-Msg-Id = %q, want %q", got, want)
	}
}
