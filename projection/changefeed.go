package projection

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/journal"
	"github.com/tablejournal/tablejournal/wire"
)

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
		Name:        wire.ChangesStream,
		Description: "tablejournal change feed: before and after images of every applied row change (changes.<table>.<pk-token>)",
		Subjects:    []string{wire.ChangesPrefix + ".>"},
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

func changeMsg(part partition, r Result, ch Change, at time.Time) (*nats.Msg, error) {
	ev := wire.ChangeEvent{
		Table: part.table, PK: part.pk, RK: ch.RK, Op: ch.Kind, Version: ch.Version,
		Cmd: r.ID, Seq: r.Seq, At: at, Partition: ch.Partition,
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
	data, err := ev.Encode()
	if err != nil {
		return nil, err
	}
	msg := nats.NewMsg(wire.ChangeSubject(part.table, part.pk))
	msg.Data = data
	msg.Header.Set(events.HeaderContentType, events.ContentTypeJSON)
	// One event per (command, row version): a republish is deduplicated.
	msg.Header.Set(jetstream.MsgIDHeader, wire.ChangeMsgID(r.Seq, ch.Version, ch.RK))
	return msg, nil
}

// storedChanges reports which of rks already have a change event of
// journal sequence seq or later in the partition's change feed. It reads
// the partition's events from the stream's leader (read-your-writes), from
// a little before the command's journal time at on, until every row is
// found or the events end: one request per event read, for crash recovery
// only. A row's events are sent in journal order with at most one in flight
// (changeFeed.send), so a row with a later event has none missing before it.
func storedChanges(ctx context.Context, js jetstream.JetStream, part partition, seq uint64, at time.Time, rks []string) (map[string]bool, error) {
	want := make(map[string]bool, len(rks))
	for _, rk := range rks {
		want[rk] = true
	}
	found := make(map[string]bool, len(rks))
	// Events are stored after their command, but the journal's and the
	// change feed's leaders may be different servers with clocks apart.
	from := at.Add(-changeClockSkew)
	err := journal.ScanSubject(ctx, js, wire.ChangesStream, wire.ChangeSubject(part.table, part.pk), from, func(_ uint64, data []byte) (bool, error) {
		var ev struct {
			RK  string `json:"rk"`
			Seq uint64 `json:"seq"`
		}
		if err := json.Unmarshal(data, &ev); err != nil {
			return false, fmt.Errorf("change event of %s/%q: %w", part.table, part.pk, err)
		}
		if want[ev.RK] && ev.Seq >= seq {
			found[ev.RK] = true
		}
		return len(found) < len(want), nil
	})
	if err != nil {
		return nil, fmt.Errorf("change events of %s/%q: %w", part.table, part.pk, err)
	}
	return found, nil
}

// changeClockSkew is how far apart the clocks of two JetStream servers may
// be for storedChanges to find an event stored before its command's
// journal time by another server's clock.
const changeClockSkew = time.Minute

// logStreamChanges says what starting the projector changed in an existing
// stream's configuration: never silently.
func logStreamChanges(log *slog.Logger, stream string, changes []string) {
	for _, c := range changes {
		log.Warn("stream configuration updated", "stream", stream, "change", c)
	}
}
