// Package events defines the commands that services publish into the journal:
// a command ID, one table, one partition key and 1..N row operations carrying
// typed entity values of the eight Azure Table (EDM) types (package edm).
//
// It holds the two wire codecs (MessagePack, the default, and JSON in the
// Azure Tables OData minimal-metadata entity form) and the validation of every
// limit in SPEC §2. It does no I/O.
//
// A producer validates, then encodes:
//
//	if err := c.Validate(); err != nil { ... }
//	data, err := events.Encode(c, wire.ContentTypeMsgpack)
//
// and sets the wire.HeaderContentType and wire.HeaderSchema message headers (the
// headers and their values are package wire's). A consumer
// decodes, then validates again, since a command can come from any client:
//
//	c, err := events.Decode(data, msg.Header.Get(wire.HeaderContentType))
//	if err == nil {
//		err = c.Validate()
//	}
//
// An erase (SPEC §10) is another message kind, marked by the HeaderCommand
// header (IsErase): an Erase names a row or partition and carries no
// values; EncodeErase, DecodeErase and Erase.Validate are its codec and
// rules.
//
// Decoding checks the form and every literal; Validate checks the limits.
// Either way a bad command gives a *rules.ValidationError naming the field
// and the rule it broke (package rules), which wraps rules.ErrInvalid
// (checked with errors.Is). The typed values a command's entities carry
// are package edm's.
//
// Both encodings are deterministic (properties and meta keys sorted), and
// whatever decodes re-encodes to a command that decodes Equal, in either form:
// Int64 beyond 2^53, DateTime to 100 ns, Doubles such as 12.0, -0 and NaN, and
// binary up to 64 KiB keep their exact type and value.
package events
