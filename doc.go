// Package tablejournal is the client a service uses to write to and read
// from tables projected by tablejournal (docs/SPEC.md), without knowing the
// row layout or the journal's wire format, and without linking the
// embedded NATS server, the projector or the replay tools.
//
// A service builds a Command of typed row operations, publishes it
// (Client.Publish returns its Position in the journal), and may Wait for
// its outcome: a rejection is a *Rejection that errors.Is matches against
// ErrVersionMismatch, ErrExists, ErrNotFound, ErrInvalid or ErrTooLarge.
// It reads current rows (Client.Get, Client.Partition, Client.Query) from
// either table store, optionally only once the projector has applied a
// given position (AfterSeq: read-your-writes), and follows the change feed
// of a table or partition with a durable, resumable checkpoint
// (Client.Follow). The W3C trace context of the context.Context a command
// is published with travels with it, through OpenTelemetry's propagator,
// to its outcome and change events.
//
// docs/client.md walks through it; examples/ holds a small service.
package tablejournal
