package jsapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// ErrNotFound means there is no such message; journal.ErrNotFound is this
// error.
var ErrNotFound = errors.New("not found")

// Msg is a message returned by a get.
type Msg struct {
	Seq     uint64
	Subject string
	Header  nats.Header
	Data    []byte
}

// DirectGet asks the stream's direct-get API for one message: with
// lastBySubject set, the last message on that subject; otherwise the
// request req (JSApiMsgGetRequest fields such as start_time, which the
// jetstream package does not expose). It needs AllowDirect on the stream
// and answers ErrNotFound when there is no such message.
func DirectGet(ctx context.Context, js jetstream.JetStream, stream, lastBySubject string, req any) (Msg, error) {
	ctx, cancel := requestCtx(ctx, js) // see LeaderGet
	defer cancel()
	subj := apiPrefix(js) + "DIRECT.GET." + stream
	var body []byte
	if lastBySubject != "" {
		subj += "." + lastBySubject
	} else {
		var err error
		if body, err = json.Marshal(req); err != nil {
			return Msg{}, err
		}
	}
	resp, err := js.Conn().RequestWithContext(ctx, subj, body)
	if err != nil {
		return Msg{}, err
	}
	if len(resp.Data) == 0 {
		switch status := resp.Header.Get("Status"); status {
		case "":
		case "404":
			return Msg{}, ErrNotFound
		default:
			return Msg{}, fmt.Errorf("direct get: status %s %s", status, resp.Header.Get("Description"))
		}
	}
	seq, err := strconv.ParseUint(resp.Header.Get(jetstream.SequenceHeader), 10, 64)
	if err != nil {
		return Msg{}, fmt.Errorf("direct get: bad %s header: %w", jetstream.SequenceHeader, err)
	}
	return Msg{
		Seq:     seq,
		Subject: resp.Header.Get(jetstream.SubjectHeader),
		Header:  StripDirectHeaders(resp.Header),
		Data:    resp.Data,
	}, nil
}

// directGetHeaders are the headers a direct get adds to the stored ones.
var directGetHeaders = []string{
	jetstream.StreamHeader, jetstream.SequenceHeader, jetstream.TimeStampHeaer,
	jetstream.SubjectHeader, "Nats-Num-Pending", "Nats-Last-Sequence", "Nats-UpTo-Sequence",
}

// StripDirectHeaders removes from h the headers a direct get adds to the
// stored ones, and returns nil when none is left.
func StripDirectHeaders(h nats.Header) nats.Header {
	for _, k := range directGetHeaders {
		delete(h, k)
	}
	if len(h) == 0 {
		return nil
	}
	return h
}

// apiPrefix is the JetStream API prefix js sends requests to.
func apiPrefix(js jetstream.JetStream) string {
	o := js.Options()
	switch {
	case o.Domain != "":
		return "$JS." + o.Domain + ".API."
	case o.APIPrefix != "":
		return strings.TrimSuffix(o.APIPrefix, ".") + "."
	default:
		return jetstream.DefaultAPIPrefix
	}
}

// DeleteOrdered removes an ordered consumer once it is done with, rather
// than leaving it to the server's inactivity threshold.
func DeleteOrdered(ctx context.Context, js jetstream.JetStream, stream string, cons jetstream.Consumer) {
	info := cons.CachedInfo()
	if info == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	_ = js.DeleteConsumer(ctx, stream, info.Name)
}
