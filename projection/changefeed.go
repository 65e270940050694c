package projection

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/journal"
)

// ChangeStream is the JetStream stream of the change feed. Its subjects are
// changes.<table>.<pk-token>, so a consumer can follow one table or one
// partition; events of one row are in journal order.
const ChangeStream = "CHANGES"

// ChangeEvent is one applied row change, as published on the change feed.
// Before and After are entities in the same OData JSON form commands use.
type ChangeEvent struct {
	Table   string          `json:"table"`
	PK      string          `json:"pk"`
	RK      string          `json:"rk"`
	Op      ChangeKind      `json:"op"`
	Version int64           `json:"version"`
	Cmd     string          `json:"cmd"`
	Seq     uint64          `json:"seq"`
	At      time.Time       `json:"at"`
	Before  json.RawMessage `json:"before,omitempty"`
	After   json.RawMessage `json:"after,omitempty"`
}

// MaxChangeEventBytes bounds a change event: one row's before and after
// images, each at most events.MaxEntityJSONBytes (the row fits Azure's
// 1 MiB entity), and the rest of the event (keys, command ID, time) under
// 8 KiB. It is within journal.MinMaxPayload, which the projector checks
// the server's max_payload against when it starts, so every change event
// of an applied command can be published. About 6 MiB.
const MaxChangeEventBytes = 2*events.MaxEntityJSONBytes + 8<<10

// ChangeSubject is the subject of change events of one partition.
func ChangeSubject(table, pk string) string {
	return "changes." + table + "." + journal.PKToken(pk)
}

// EnsureChangeFeed creates the change-feed stream, or brings an existing one
// to this configuration where it differs (journal.EnsureStream) and returns
// what it changed. maxAge is how long change events are kept: if zero, a
// new stream keeps them forever and an existing stream's limit is left as
// it is; negative removes a limit set before. journal.WithReplicas sets its
// replica count; an existing stream's is never changed (see
// journal.CheckReplicas).
func EnsureChangeFeed(ctx context.Context, js jetstream.JetStream, maxAge time.Duration, opts ...journal.EnsureOption) ([]string, error) {
	replicas := journal.Replicas(opts...)
	_, changes, err := journal.EnsureStream(ctx, js, jetstream.StreamConfig{
		Name:        ChangeStream,
		Description: "tablejournal change feed: before and after images of every applied row change (changes.<table>.<pk-token>)",
		Subjects:    []string{"changes.>"},
		Storage:     jetstream.FileStorage,
		Duplicates:  2 * time.Minute,
		MaxAge:      max(maxAge, 0),
		Replicas:    max(replicas, 1),
	}, journal.Managed{MaxAge: maxAge != 0,
		Check: func(have jetstream.StreamConfig) error { return journal.CheckReplicas(have, replicas) }})
	if err != nil {
		return nil, fmt.Errorf("change feed stream: %w", err)
	}
	return changes, nil
}

// publisher publishes the outcomes and change events of one fetched batch.
// Outcomes of commands that wrote nothing are published, all at once, and
// awaited before their batch commits. For applied commands the change events are
// published first and the outcomes only once every change event is stored,
// all before the journal messages are acknowledged: so a stored outcome
// means its change events are stored too, and a command redelivered after
// a crash without its outcome gets both rebuilt (recoverOutcome).
type publisher struct {
	js      jetstream.JetStream
	changes bool
	obs     Observer

	mu       sync.Mutex
	inflight map[partition]*inflight // change events sent, not yet known stored
	outcomes []*nats.Msg             // outcomes waiting for them
	handled  []handled               // the outcomes' commands, reported once stored
}

// inflight is one partition's change events sent and not yet known to be
// stored, and the rows they are of. An event whose ack never comes is sent
// again, and then lands after everything sent meanwhile: so a row has at
// most one event in flight, and a second event of a row waits until the
// partition's events in flight are stored (see sendChange). Only the
// goroutine applying the partition uses it until wait.
type inflight struct {
	futures []jetstream.PubAckFuture
	rows    map[string]bool
}

// handled is a command whose outcome is reported to the Observer once it
// is stored.
type handled struct {
	status journal.Status
	at     time.Time // journal time
}

func newPublisher(js jetstream.JetStream, changes bool, obs Observer) *publisher {
	return &publisher{js: js, changes: changes, obs: obs, inflight: make(map[partition]*inflight)}
}

// written counts the results of a committed transaction that it wrote
// (not found applied before).
func written(rs []Result) int {
	n := 0
	for _, r := range rs {
		if !r.Stored {
			n++
		}
	}
	return n
}

// report tells the Observer that the outcomes of hs are stored.
func (p *publisher) report(hs []handled) {
	now := time.Now()
	for _, h := range hs {
		if h.status == Skipped {
			p.obs.Handled(h.status, 0)
			continue
		}
		p.obs.Handled(h.status, now.Sub(h.at))
	}
}

func (p *publisher) publishResults(ctx context.Context, part partition, rs []Result, entries []Entry, sync bool) error {
	if !sync {
		p.obs.Transaction(written(rs)) // one committed transaction's commands
	}
	at := make(map[uint64]time.Time, len(entries))
	trace := make(map[uint64]TraceContext)
	for _, e := range entries {
		at[e.Seq] = e.At
		if e.Trace.Parent != "" {
			trace[e.Seq] = e.Trace
		}
	}
	var hs []handled // reported once awaited (sync)
	// sync: the outcomes sent here are awaited before returning, all at once.
	var outcomes []jetstream.PubAckFuture
	for _, r := range rs {
		if r.Status == Skipped || r.Stored {
			hs = append(hs, handled{status: Skipped}) // handled before
			continue
		}
		if p.changes && r.Status == journal.StatusApplied {
			for _, ch := range r.Changes {
				msg, err := changeMsg(part, r, ch, at[r.Seq])
				if err != nil {
					return err
				}
				trace[r.Seq].set(msg.Header)
				if err := p.sendChange(ctx, part, ch.RK, msg); err != nil {
					return fmt.Errorf("change event of %s: %w", r.ID, err)
				}
			}
		}
		o := journal.Outcome{
			ID: r.ID, Seq: r.Seq, Table: part.table, PK: part.pk,
			Status: r.Status, Reason: r.Reason, Code: r.Code, Rule: r.Rule, Rows: r.Rows, At: at[r.Seq],
		}
		msg, err := journal.OutcomeMsg(o)
		if err != nil {
			return err
		}
		trace[r.Seq].set(msg.Header)
		h := handled{status: r.Status, at: at[r.Seq]}
		if !sync {
			p.mu.Lock()
			p.outcomes = append(p.outcomes, msg)
			p.handled = append(p.handled, h)
			p.mu.Unlock()
			continue
		}
		hs = append(hs, h)
		// This outcome's change events are stored before it is sent.
		if err := p.settle(ctx, part); err != nil {
			return err
		}
		f, err := p.js.PublishMsgAsync(msg, jetstream.WithStallWait(asyncStallWait))
		if err != nil {
			return fmt.Errorf("outcome of %s: %w", r.ID, err)
		}
		outcomes = append(outcomes, f)
	}
	if err := p.await(ctx, outcomes); err != nil {
		return err
	}
	p.report(hs)
	return nil
}

// sendChange publishes a change event of row rk asynchronously, first
// waiting for the partition's events in flight if one of them is of the
// same row: events of one row reach the stream in journal order even when
// one of them must be sent again.
func (p *publisher) sendChange(ctx context.Context, part partition, rk string, msg *nats.Msg) error {
	fl := p.partition(part)
	if fl.rows[rk] {
		if err := p.settle(ctx, part); err != nil {
			return err
		}
	}
	f, err := p.js.PublishMsgAsync(msg, jetstream.WithStallWait(asyncStallWait))
	if err != nil {
		return err
	}
	fl.futures = append(fl.futures, f)
	fl.rows[rk] = true
	return nil
}

// partition returns the change events in flight of part.
func (p *publisher) partition(part partition) *inflight {
	p.mu.Lock()
	defer p.mu.Unlock()
	fl := p.inflight[part]
	if fl == nil {
		fl = &inflight{rows: make(map[string]bool)}
		p.inflight[part] = fl
	}
	return fl
}

// settle waits until every change event of part in flight is stored.
func (p *publisher) settle(ctx context.Context, part partition) error {
	fl := p.partition(part)
	fs := fl.futures
	fl.futures = nil
	clear(fl.rows)
	return p.await(ctx, fs)
}

// asyncStallWait is how long a publish waits for room in the connection's
// window of outstanding async publishes (jetstream's PublishAsyncMaxPending,
// 4,000 by default) before failing. Sixteen shards of up to 1,024 commands,
// each with an outcome and change events, fill that window at once under
// load; waiting for acks to free it is the flow control between fetch
// size, shards and the window, where the library's default of 200 ms made
// whole batches fail and be retried with a warning (issue 8, item 9).
const asyncStallWait = 30 * time.Second

// asyncAckTimeout bounds the wait for one asynchronous publish's ack; an
// async publish can be dropped under load, so after it the message is sent
// again synchronously (its Nats-Msg-Id makes that idempotent).
var asyncAckTimeout = 10 * time.Second

// closedChan is always ready.
var closedChan = func() <-chan time.Time {
	c := make(chan time.Time)
	close(c)
	return c
}()

// wait returns once every change event and then every outcome is stored.
func (p *publisher) wait(ctx context.Context) error {
	p.mu.Lock()
	parts := make([]partition, 0, len(p.inflight))
	for part := range p.inflight {
		parts = append(parts, part)
	}
	outcomes, hs := p.outcomes, p.handled
	p.outcomes, p.handled = nil, nil
	p.mu.Unlock()
	for _, part := range parts {
		if err := p.settle(ctx, part); err != nil {
			return err
		}
	}
	fs := make([]jetstream.PubAckFuture, 0, len(outcomes))
	for _, msg := range outcomes {
		f, err := p.js.PublishMsgAsync(msg, jetstream.WithStallWait(asyncStallWait))
		if err != nil {
			return err
		}
		fs = append(fs, f)
	}
	if err := p.await(ctx, fs); err != nil {
		return err
	}
	p.report(hs)
	return nil
}

// await waits for fs. The timeout is for all of them together: acks lost
// in a reconnect are lost together, and waiting for each in turn held a
// shard for ten seconds per message.
func (p *publisher) await(ctx context.Context, fs []jetstream.PubAckFuture) error {
	var errs []error
	expired := time.After(asyncAckTimeout)
	for _, f := range fs {
		var failed error
		select {
		case <-f.Ok():
			continue
		case failed = <-f.Err():
		case <-expired:
			expired = closedChan // every later future without its ack is re-sent at once
			failed = fmt.Errorf("no ack within %v", asyncAckTimeout)
		case <-ctx.Done():
			return ctx.Err()
		}
		if _, err := p.js.PublishMsg(ctx, f.Msg()); err != nil {
			errs = append(errs, fmt.Errorf("publish %s: %w (retry: %w)", f.Msg().Subject, failed, err))
		}
	}
	return errors.Join(errs...)
}

func changeMsg(part partition, r Result, ch Change, at time.Time) (*nats.Msg, error) {
	ev := ChangeEvent{
		Table: part.table, PK: part.pk, RK: ch.RK, Op: ch.Kind, Version: ch.Version,
		Cmd: r.ID, Seq: r.Seq, At: at,
	}
	var err error
	if ch.Before != nil {
		if ev.Before, err = events.MarshalEntityJSON(ch.Before); err != nil {
			return nil, err
		}
	}
	if ch.After != nil {
		if ev.After, err = events.MarshalEntityJSON(ch.After); err != nil {
			return nil, err
		}
	}
	data, err := json.Marshal(ev)
	if err != nil {
		return nil, err
	}
	msg := nats.NewMsg(ChangeSubject(part.table, part.pk))
	msg.Data = data
	msg.Header.Set(events.HeaderContentType, events.ContentTypeJSON)
	// One event per (command, row version): a republish is deduplicated.
	msg.Header.Set(jetstream.MsgIDHeader, fmt.Sprintf("chg-%d-%d-%s", r.Seq, ch.Version,
		base64.RawURLEncoding.EncodeToString([]byte(ch.RK))))
	return msg, nil
}

// lastChangeSeq returns the journal sequence of the newest change event of
// a partition, or 0 if it has none.
func lastChangeSeq(ctx context.Context, js jetstream.JetStream, part partition) (uint64, error) {
	s, err := js.Stream(ctx, ChangeStream)
	if err != nil {
		return 0, fmt.Errorf("change feed stream: %w", err)
	}
	msg, err := s.GetLastMsgForSubject(ctx, ChangeSubject(part.table, part.pk))
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("newest change event of %s/%q: %w", part.table, part.pk, err)
	}
	var ev struct {
		Seq uint64 `json:"seq"`
	}
	if err := json.Unmarshal(msg.Data, &ev); err != nil {
		return 0, fmt.Errorf("newest change event of %s/%q: %w", part.table, part.pk, err)
	}
	return ev.Seq, nil
}

// logStreamChanges says what starting the projector changed in an existing
// stream's configuration: never silently.
func logStreamChanges(log *slog.Logger, stream string, changes []string) {
	for _, c := range changes {
		log.Warn("stream configuration updated", "stream", stream, "change", c)
	}
}
