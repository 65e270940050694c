package projection

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/internal/wirejson"
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
	// Partition is set on the notice of a whole-partition erase (op
	// "erase", changefeed_erase.go); RK is then "".
	Partition bool `json:"partition,omitempty"`
}

// marshal is json.Marshal(ev), byte for byte (TestChangeEventMarshal),
// without reflection: one per row a command changes.
func (ev ChangeEvent) marshal() ([]byte, error) {
	b := make([]byte, 0, 160+len(ev.Table)+len(ev.PK)+len(ev.RK)+len(ev.Cmd)+len(ev.Before)+len(ev.After))
	b = wirejson.Key(append(b, '{'), "table")
	b = wirejson.String(b, ev.Table)
	b = wirejson.Key(append(b, ','), "pk")
	b = wirejson.String(b, ev.PK)
	b = wirejson.Key(append(b, ','), "rk")
	b = wirejson.String(b, ev.RK)
	b = wirejson.Key(append(b, ','), "op")
	b = wirejson.String(b, string(ev.Op))
	b = wirejson.Key(append(b, ','), "version")
	b = wirejson.Int(b, ev.Version)
	b = wirejson.Key(append(b, ','), "cmd")
	b = wirejson.String(b, ev.Cmd)
	b = wirejson.Key(append(b, ','), "seq")
	b = wirejson.Uint(b, ev.Seq)
	b = wirejson.Key(append(b, ','), "at")
	b, err := wirejson.Time(b, ev.At)
	if err != nil {
		return nil, fmt.Errorf("json: error calling MarshalJSON for type time.Time: %w", err)
	}
	if len(ev.Before) > 0 {
		b = wirejson.Raw(wirejson.Key(append(b, ','), "before"), ev.Before)
	}
	if len(ev.After) > 0 {
		b = wirejson.Raw(wirejson.Key(append(b, ','), "after"), ev.After)
	}
	if ev.Partition {
		b = append(wirejson.Key(append(b, ','), "partition"), "true"...)
	}
	return append(b, '}'), nil
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

func changeMsg(part partition, r Result, ch Change, at time.Time) (*nats.Msg, error) {
	ev := ChangeEvent{
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
	data, err := ev.marshal()
	if err != nil {
		return nil, err
	}
	msg := nats.NewMsg(ChangeSubject(part.table, part.pk))
	msg.Data = data
	msg.Header.Set(events.HeaderContentType, events.ContentTypeJSON)
	// One event per (command, row version): a republish is deduplicated.
	id := make([]byte, 0, 48+base64.RawURLEncoding.EncodedLen(len(ch.RK)))
	id = append(id, "chg-"...)
	id = strconv.AppendUint(id, r.Seq, 10)
	id = append(id, '-')
	id = strconv.AppendInt(id, ch.Version, 10)
	id = append(id, '-')
	id = base64.RawURLEncoding.AppendEncode(id, []byte(ch.RK))
	msg.Header.Set(jetstream.MsgIDHeader, string(id)) // chg-<seq>-<version>-<base64url(rk)>
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
	err := journal.ScanSubject(ctx, js, ChangeStream, ChangeSubject(part.table, part.pk), from, func(_ uint64, data []byte) (bool, error) {
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
