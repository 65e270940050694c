package jsapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/tablejournal/tablejournal/internal/retry"
)

// Direct gets are fast and batched, but on a replicated stream any replica
// answers them, and a follower starts answering once it is 90% caught up
// (nats-server, monitorStream): it can miss what was stored a moment ago.
// An outcome published by another instance just before a shard changed
// hands then looks absent, and a command ID could apply twice. So the
// projector's look-ups are read-your-writes:
//
//   - single messages come from the stream's leader (STREAM.MSG.GET, which
//     only the leader answers): LeaderGet;
//   - a batched multi_last direct get carries a sentinel, the subject of
//     the newest message the leader had before the request; the answer
//     counts only if the replica's last sequence (in the batch's end
//     marker) reaches it, else it is asked again: FreshDirectBatch.

// MsgGetReq is the part of JetStream's JSApiMsgGetRequest LeaderGet sends.
type MsgGetReq struct {
	Seq       uint64     `json:"seq,omitempty"`
	LastFor   string     `json:"last_by_subj,omitempty"`
	NextFor   string     `json:"next_by_subj,omitempty"`
	StartTime *time.Time `json:"start_time,omitempty"`
}

// LeaderGet asks the stream's leader for one message (JetStream's
// STREAM.MSG.GET): consistent with every publish acknowledged before it. It
// answers an error wrapping ErrNotFound when there is no such message.
//
// The request is bounded by js's DefaultTimeout even when ctx allows longer
// (requestCtx): a request lost on its way (sent through a node that has
// just restarted and has no route to the leader yet) gets no answer, and
// must fail as a timeout rather than hold the caller until ctx ends.
func LeaderGet(ctx context.Context, js jetstream.JetStream, stream string, req MsgGetReq) (Msg, error) {
	ctx, cancel := requestCtx(ctx, js)
	defer cancel()
	body, err := json.Marshal(req)
	if err != nil {
		return Msg{}, err
	}
	resp, err := js.Conn().RequestWithContext(ctx, apiPrefix(js)+"STREAM.MSG.GET."+stream, body)
	if err != nil {
		return Msg{}, fmt.Errorf("get from %s: %w", stream, err)
	}
	var r struct {
		Message *struct {
			Subject string    `json:"subject"`
			Seq     uint64    `json:"seq"`
			Data    []byte    `json:"data"`
			Hdrs    []byte    `json:"hdrs"`
			Time    time.Time `json:"time"`
		} `json:"message"`
		Error *struct {
			Code        int    `json:"code"`
			ErrCode     int    `json:"err_code"`
			Description string `json:"description"`
		} `json:"error"`
	}
	if err := json.Unmarshal(resp.Data, &r); err != nil {
		return Msg{}, fmt.Errorf("get from %s: %w", stream, err)
	}
	switch {
	case r.Error != nil && r.Error.ErrCode == int(jetstream.JSErrCodeMessageNotFound):
		return Msg{}, ErrNotFound
	case r.Error != nil && r.Error.ErrCode == int(jetstream.JSErrCodeStreamNotFound):
		return Msg{}, fmt.Errorf("get from %s: %w", stream, jetstream.ErrStreamNotFound)
	case r.Error != nil:
		return Msg{}, fmt.Errorf("get from %s: %s (%d)", stream, r.Error.Description, r.Error.ErrCode)
	case r.Message == nil:
		return Msg{}, fmt.Errorf("get from %s: empty answer", stream)
	}
	m := Msg{Seq: r.Message.Seq, Subject: r.Message.Subject, Data: r.Message.Data}
	if len(r.Message.Hdrs) > 0 {
		if m.Header, err = nats.DecodeHeadersMsg(r.Message.Hdrs); err != nil {
			return Msg{}, fmt.Errorf("get from %s seq %d: headers: %w", stream, m.Seq, err)
		}
	}
	return m, nil
}

// ScanSubject passes fn, in stream order, the messages of subject stored at
// or after from, read one by one from the stream's leader (read-your-writes,
// like LeaderGet), until fn answers false or there are no more. It costs one
// request per message: for the rare look-ups of crash recovery, not for
// reading a stream.
func ScanSubject(ctx context.Context, js jetstream.JetStream, stream, subject string, from time.Time, fn func(seq uint64, data []byte) (bool, error)) error {
	req := MsgGetReq{NextFor: subject, StartTime: &from}
	for {
		m, err := LeaderGet(ctx, js, stream, req)
		if errors.Is(err, ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		more, err := fn(m.Seq, m.Data)
		if err != nil || !more {
			return err
		}
		req = MsgGetReq{NextFor: subject, Seq: m.Seq + 1}
	}
}

// errStale says a direct get was answered by a replica behind the leader.
var errStale = errors.New("answered by a replica that is behind")

// freshTries bounds how often a stale answer is asked again; a follower
// within reach of the leader catches up in milliseconds.
const freshTries = 50

// FreshDirectBatch runs a multi_last direct get of subjects (at most
// MultiLastMax-1 of them) whose answer includes everything stored on the
// stream before the call, whichever replica answers, and passes fn the
// messages of those subjects. See the comment at the top of this file.
func FreshDirectBatch(ctx context.Context, js jetstream.JetStream, replies *ReplyMux, stream string, subjects []string, hint *SentinelHint, fn func(Msg) error) error {
	var newest Msg
	if sentinel := hint.get(); sentinel != "" {
		// The newest message of an earlier call is a sentinel too (it is
		// still the last of its subject unless the stream dropped it): ask
		// the leader and the replica at once, one round trip instead of
		// two. The answer counts under the same condition.
		type answer struct {
			m   Msg
			err error
		}
		leader := make(chan answer, 1)
		go func() {
			m, err := LeaderGet(ctx, js, stream, MsgGetReq{LastFor: ">"})
			leader <- answer{m, err}
		}()
		req := DirectBatchReq{MultiLast: append(subjects[:len(subjects):len(subjects)], sentinel)}
		got, upTo, err := collectBatch(ctx, js, replies, stream, req)
		a := <-leader
		if errors.Is(a.err, ErrNotFound) {
			return nil // the stream is empty
		}
		if a.err != nil {
			return a.err
		}
		newest = a.m
		hint.set(newest.Subject)
		if err == nil && upTo >= newest.Seq {
			return deliverAsked(subjects, got, fn)
		}
	} else {
		// ">" is the stream's newest message, whatever its subject: the
		// server reads it by sequence. (Its own subject filter would make
		// the leader match every subject of the stream, one per command
		// ID.)
		var err error
		newest, err = LeaderGet(ctx, js, stream, MsgGetReq{LastFor: ">"})
		if errors.Is(err, ErrNotFound) {
			return nil // the stream is empty
		}
		if err != nil {
			return err
		}
		hint.set(newest.Subject)
	}
	req := DirectBatchReq{MultiLast: append(subjects[:len(subjects):len(subjects)], newest.Subject)}
	for try := 1; ; try++ {
		got, upTo, err := collectBatch(ctx, js, replies, stream, req)
		if err != nil {
			return err
		}
		if upTo >= newest.Seq {
			return deliverAsked(subjects, got, fn)
		}
		if try == freshTries {
			return fmt.Errorf("direct get of %s: %w (at %d, the leader at %d)", stream, errStale, upTo, newest.Seq)
		}
		if err := retry.Sleep(ctx, time.Duration(try)*time.Millisecond); err != nil {
			return err
		}
	}
}

// collectBatch is DirectBatch keeping the messages, to be passed on only
// once the answer proves fresh.
func collectBatch(ctx context.Context, js jetstream.JetStream, replies *ReplyMux, stream string, req DirectBatchReq) ([]Msg, uint64, error) {
	var got []Msg
	upTo, err := DirectBatch(ctx, js, replies, stream, req, func(m Msg) error {
		got = append(got, m)
		return nil
	})
	return got, upTo, err
}

// deliverAsked passes fn the messages of got on subjects, not the
// sentinel's.
func deliverAsked(subjects []string, got []Msg, fn func(Msg) error) error {
	asked := make(map[string]bool, len(subjects))
	for _, subj := range subjects {
		asked[subj] = true
	}
	for _, m := range got {
		if !asked[m.Subject] {
			continue // the sentinel
		}
		if err := fn(m); err != nil {
			return err
		}
	}
	return nil
}

// SentinelHint remembers the subject of the newest message FreshDirectBatch
// last saw on a stream, the sentinel of its next call. It is only a hint:
// an answer counts by the leader's sequence, whatever the sentinel.
type SentinelHint struct{ v atomic.Pointer[string] }

func (h *SentinelHint) get() string {
	if h == nil {
		return ""
	}
	if s := h.v.Load(); s != nil {
		return *s
	}
	return ""
}

func (h *SentinelHint) set(subject string) {
	if h != nil {
		h.v.Store(&subject)
	}
}

// requestCtx bounds one JetStream API request by js's DefaultTimeout, or
// ctx's deadline if that is sooner: the server answers such a request at
// once, so no answer by then means it was lost.
func requestCtx(ctx context.Context, js jetstream.JetStream) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, js.Options().DefaultTimeout)
}
