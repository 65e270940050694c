package journal

import (
	"fmt"

	"github.com/nats-io/nats.go"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/wire"
)

// MinMaxPayload is the smallest max_payload of a NATS server the pipeline
// works with: every valid command (up to 4 MiB of entities) fits one
// message as msgpack (events.MaxMsgpackCommandBytes), and so do the
// projector's outcome of it (wire.MaxOutcomeBytes) and each of its change events
// (wire.MaxChangeEventBytes, two images of one entity). About 6.5 MiB;
// the embedded server allows MaxPayload, 8 MiB.
const MinMaxPayload = events.MaxMsgpackCommandBytes

// CheckMaxPayload fails with ErrMaxPayload, saying what to configure, when
// the server nc is connected to has a max_payload below MinMaxPayload.
// The projector and the writer call it when they connect, so that a
// command is never stored whose outcome or change events the server would
// then refuse.
func CheckMaxPayload(nc *nats.Conn) error {
	have := nc.MaxPayload()
	if have >= MinMaxPayload {
		return nil
	}
	return fmt.Errorf("%w: the NATS server's max_payload is %s; commands of up to %s of entities need max_payload >= %s (as msgpack, and for their change events): set max_payload: 8MB in nats-server.conf",
		ErrMaxPayload, mib(have), mib(events.MaxCommandBytes), mib(MinMaxPayload))
}

// mib renders a byte count in MiB.
func mib(n int64) string {
	if n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}

// checkMsgSize fails with ErrMaxPayload when msg is larger than the server
// of nc accepts, rather than letting the publish fail with a bare "maximum
// payload exceeded".
func checkMsgSize(nc *nats.Conn, id string, msg *nats.Msg) error {
	max := nc.MaxPayload()
	if max <= 0 {
		return nil
	}
	size := int64(len(msg.Data))
	for k, vs := range msg.Header {
		for _, v := range vs {
			size += int64(len(k) + len(v) + 4) // "k: v\r\n"
		}
	}
	if size+16 <= max { // "NATS/1.0\r\n" ... "\r\n"
		return nil
	}
	advice := "raise max_payload"
	if ct := msg.Header.Get(wire.HeaderContentType); ct != "" && ct != wire.ContentTypeMsgpack {
		advice = "publish it as msgpack (at most " + mib(events.MaxMsgpackCommandBytes) + "), or raise max_payload"
	}
	return fmt.Errorf("publish %s: %w: the command is %s as %s, the server's max_payload %s; %s",
		id, ErrMaxPayload, mib(size), msg.Header.Get(wire.HeaderContentType), mib(max), advice)
}
