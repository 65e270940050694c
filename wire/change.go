package wire

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/events/edm"
)

// ChangeOp is the operation of a change event.
type ChangeOp string

// Change-feed operations (SPEC §5).
const (
	// ChangeCreate: the row did not exist (or was a tombstone); Before is
	// absent.
	ChangeCreate ChangeOp = "c"
	// ChangeUpdate: the row existed and still does.
	ChangeUpdate ChangeOp = "u"
	// ChangeDelete: the row was deleted; After is absent, Version is the
	// tombstone's.
	ChangeDelete ChangeOp = "d"
	// ChangeErase is the notice of an erase (SPEC §10): one event on the
	// partition's subject carrying the key and no values (no before, no
	// after), so that consumers erase their copies. The erase of one row
	// names its RK and has Partition false; the erase of a whole partition
	// has Partition true and RK "". An erase of the row whose key is ""
	// therefore has RK "" and Partition false: tell the two apart by
	// Partition, never by RK.
	ChangeErase ChangeOp = "erase"
)

// ChangeEvent is one applied row change, as published on the change feed
// (ChangesStream, ChangeSubject). Before and After are entities in the same
// OData JSON form commands use (events.MarshalEntityJSON).
type ChangeEvent struct {
	Table   string          `json:"table"`
	PK      string          `json:"pk"`
	RK      string          `json:"rk"`
	Op      ChangeOp        `json:"op"`
	Version int64           `json:"version"`
	Cmd     string          `json:"cmd"`
	Seq     uint64          `json:"seq"`
	At      time.Time       `json:"at"`
	Before  json.RawMessage `json:"before,omitempty"`
	After   json.RawMessage `json:"after,omitempty"`
	// Partition is set on the notice of a whole-partition erase (Op
	// ChangeErase); RK is then "".
	Partition bool `json:"partition,omitempty"`
}

// MaxChangeEventBytes bounds a change event: one row's before and after
// images, each at most events.MaxEntityJSONBytes (the row fits Azure's
// 1 MiB entity), and the rest of the event (keys, command ID, time) under
// 8 KiB. It is within journal.MinMaxPayload, which the projector checks
// the server's max_payload against when it starts, so every change event
// of an applied command can be published. About 6 MiB.
const MaxChangeEventBytes = 2*events.MaxEntityJSONBytes + 8<<10

// ChangeSubject is the subject of the change events of one partition:
// changes.<table-token>.<pk-token> (TableToken: one table, one subject,
// however its commands spell it).
func ChangeSubject(table, pk string) string {
	return ChangesPrefix + "." + TableToken(table) + "." + PKToken(pk)
}

// ChangeSubjects returns ChangeSubject(table, pk) and, when table has
// upper-case letters, the subject of table as spelled: change feeds
// written before the table token was canonical hold its events there.
func ChangeSubjects(table, pk string) []string {
	return withLegacy(ChangeSubject(table, pk), table, func(t string) string { return ChangesPrefix + "." + t + "." + PKToken(pk) })
}

// ChangeFilter is the subject filter of the change events of every
// partition of table.
func ChangeFilter(table string) string {
	return ChangesPrefix + "." + TableToken(table) + ".>"
}

// ChangeMsgID is the Nats-Msg-Id of the change event of row rk at version
// made by journal sequence seq, chg-<seq>-<version>-<base64url(rk)>: one
// event per (command, row version), so a republish is deduplicated.
func ChangeMsgID(seq uint64, version int64, rk string) string {
	id := make([]byte, 0, 48+base64.RawURLEncoding.EncodedLen(len(rk)))
	id = append(id, "chg-"...)
	id = strconv.AppendUint(id, seq, 10)
	id = append(id, '-')
	id = strconv.AppendInt(id, version, 10)
	id = append(id, '-')
	id = base64.RawURLEncoding.AppendEncode(id, []byte(rk))
	return string(id)
}

// Encode returns the body of ev's message: ev as JSON.
func (ev ChangeEvent) Encode() ([]byte, error) { return ev.marshal() }

// marshal is json.Marshal(ev), byte for byte (TestChangeEventMarshal),
// without reflection: one per row a command changes.
func (ev ChangeEvent) marshal() ([]byte, error) {
	b := make([]byte, 0, 160+len(ev.Table)+len(ev.PK)+len(ev.RK)+len(ev.Cmd)+len(ev.Before)+len(ev.After))
	b = appendKey(append(b, '{'), "table")
	b = appendString(b, ev.Table)
	b = appendKey(append(b, ','), "pk")
	b = appendString(b, ev.PK)
	b = appendKey(append(b, ','), "rk")
	b = appendString(b, ev.RK)
	b = appendKey(append(b, ','), "op")
	b = appendString(b, string(ev.Op))
	b = appendKey(append(b, ','), "version")
	b = appendInt(b, ev.Version)
	b = appendKey(append(b, ','), "cmd")
	b = appendString(b, ev.Cmd)
	b = appendKey(append(b, ','), "seq")
	b = appendUint(b, ev.Seq)
	b = appendKey(append(b, ','), "at")
	b, err := appendTime(b, ev.At)
	if err != nil {
		return nil, fmt.Errorf("json: error calling MarshalJSON for type time.Time: %w", err)
	}
	if len(ev.Before) > 0 {
		b = appendRaw(appendKey(append(b, ','), "before"), ev.Before)
	}
	if len(ev.After) > 0 {
		b = appendRaw(appendKey(append(b, ','), "after"), ev.After)
	}
	if ev.Partition {
		b = append(appendKey(append(b, ','), "partition"), "true"...)
	}
	return append(b, '}'), nil
}

// DecodeChangeEvent decodes the body of a change event message.
func DecodeChangeEvent(data []byte) (ChangeEvent, error) {
	var ev ChangeEvent
	if err := json.Unmarshal(data, &ev); err != nil {
		return ChangeEvent{}, fmt.Errorf("change event: %w", err)
	}
	return ev, nil
}

// Images decodes ev's Before and After: nil where the event has none. An
// image is read by the command decoder (events.UnmarshalJSON), so that its
// property types are read exactly as a command's.
func (ev ChangeEvent) Images() (before, after edm.Entity, err error) {
	if before, err = decodeImage(ev.Before); err != nil {
		return nil, nil, fmt.Errorf("change event before image: %w", err)
	}
	if after, err = decodeImage(ev.After); err != nil {
		return nil, nil, fmt.Errorf("change event after image: %w", err)
	}
	return before, after, nil
}

// decodeImage decodes an entity image by wrapping it in a command.
func decodeImage(raw json.RawMessage) (edm.Entity, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	doc := `{"id":"x","table":"img","pk":"p","ops":[{"op":"upsert","rk":"r","entity":` + string(raw) + `}]}`
	c, err := events.UnmarshalJSON([]byte(doc))
	if err != nil {
		return nil, err
	}
	return c.Ops[0].Entity, nil
}
