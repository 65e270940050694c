// Package wire is the NATS side of the tablejournal contract (docs/SPEC.md),
// in one place: the names of the streams (JOURNAL, OUTCOMES, CHANGES), the
// subjects and subject filters and how a partition key becomes a subject
// token, the names of durable consumers, every header of a journal message
// (content type, schema version, command kind, body hash) with its values
// and the checks of those values, the stream metadata keys, and the two messages the projector publishes, the Outcome of a
// command and the ChangeEvent of a row (with the erase notice).
//
// It holds facts and pure functions only, no I/O: the journal package
// creates and reads the streams, the projector publishes outcomes and change
// events, replay, the command line and the client read them, and all of them
// take these facts from here rather than keep a copy. It imports only the
// standard library and events (for the command's limits and operations,
// and the validation error of a bad header value). The events codecs take
// a content type as a string; the one copy of the two media types outside
// this package is events' unexported one, which its tests hold to these.
package wire
