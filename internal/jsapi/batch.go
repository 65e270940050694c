package jsapi

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// MultiLastMax is the most subjects one multi_last direct get asks for:
// the server answers at most 1,024 messages to one request.
const MultiLastMax = 1000

// DirectBatchReq is the part of JetStream's JSApiMsgGetRequest that batched
// direct gets use; the jetstream package does not expose it.
type DirectBatchReq struct {
	Seq       uint64   `json:"seq,omitempty"`
	NextFor   string   `json:"next_by_subj,omitempty"`
	Batch     int      `json:"batch,omitempty"`
	MultiLast []string `json:"multi_last,omitempty"`
	UpToSeq   uint64   `json:"up_to_seq,omitempty"`
}

// DirectBatch sends one batched direct get (a request answered by several
// messages, ended by a 204 EOB status) and calls fn with each message. A
// reply cut short by the server's byte limit says so in its EOB (pending
// messages and the last sequence sent); the rest is asked for again from
// there, bounded to the same last sequence. No match at all is not an
// error.
//
// It returns the replica's last sequence when it answered (the end
// marker's Nats-UpTo-Sequence of the first reply), 0 when nothing matched.
func DirectBatch(ctx context.Context, js jetstream.JetStream, replies *ReplyMux, stream string, req DirectBatchReq, fn func(Msg) error) (uint64, error) {
	nc := js.Conn()
	subj := apiPrefix(js) + "DIRECT.GET." + stream
	var first uint64
	for {
		rctx, cancel := requestCtx(ctx, js) // see LeaderGet
		pending, last, upTo, err := directRequest(rctx, nc, replies, subj, req, fn)
		cancel()
		if first == 0 {
			first = upTo
		}
		if err != nil || pending == 0 || last == 0 {
			return first, err
		}
		req.Seq = last + 1
		if len(req.MultiLast) > 0 {
			req.UpToSeq = upTo
		}
	}
}

// directRequest sends one request of DirectBatch and reads its answer.
func directRequest(ctx context.Context, nc *nats.Conn, replies *ReplyMux, subj string, req DirectBatchReq, fn func(Msg) error) (pending, last, upTo uint64, err error) {
	body, err := json.Marshal(req)
	if err != nil {
		return 0, 0, 0, err
	}
	// A multi_last answer is a message per subject and its end marker.
	inbox, next, done, err := replies.open(nc, min(max(len(req.MultiLast), req.Batch), MultiLastMax)+1)
	if err != nil {
		return 0, 0, 0, err
	}
	defer done()
	if err := nc.PublishRequest(subj, inbox, body); err != nil {
		return 0, 0, 0, err
	}
	for {
		m, err := next(ctx)
		if err != nil {
			return 0, 0, 0, fmt.Errorf("direct get: %w", err)
		}
		if status := m.Header.Get("Status"); status != "" && len(m.Data) == 0 {
			switch status {
			case "204": // end of batch
				pending, _ = strconv.ParseUint(m.Header.Get("Nats-Num-Pending"), 10, 64)
				last, _ = strconv.ParseUint(m.Header.Get(jetstream.LastSequenceHeader), 10, 64)
				upTo, _ = strconv.ParseUint(m.Header.Get("Nats-UpTo-Sequence"), 10, 64)
				return pending, last, upTo, nil
			case "404": // no message matches
				return 0, 0, 0, nil
			default:
				return 0, 0, 0, fmt.Errorf("direct get: status %s %s", status, m.Header.Get("Description"))
			}
		}
		seq, perr := strconv.ParseUint(m.Header.Get(jetstream.SequenceHeader), 10, 64)
		if perr != nil {
			return 0, 0, 0, fmt.Errorf("direct get: bad %s header: %w", jetstream.SequenceHeader, perr)
		}
		raw := Msg{Seq: seq, Subject: m.Header.Get(jetstream.SubjectHeader), Header: StripDirectHeaders(m.Header), Data: m.Data}
		if err := fn(raw); err != nil {
			return 0, 0, 0, err
		}
	}
}
