package events

import (
	"crypto/sha256"
	"encoding/hex"
	"mime"
	"strings"
	"time"

	"github.com/tablejournal/tablejournal/events/rules"
)

// The media types of the two wire forms. The headers that carry them, and
// these values as the contract names them (wire.contentTypeJSON,
// wire.contentTypeMsgpack), are package wire's: wire imports this package,
// so this one keeps its own unexported copy, checked equal by
// TestEncodeDecodeContentTypes.
const (
	contentTypeJSON    = "application/json"
	contentTypeMsgpack = "application/msgpack"
	// headerContentType names the header in a content type's error.
	headerContentType = "Content-Type"
)

// annotationSuffix marks an OData type annotation key: "qty@odata.type".
const annotationSuffix = "@odata.type"

// Encode encodes c in the wire form named by contentType
// (wire.contentTypeJSON or wire.contentTypeMsgpack); "" means msgpack.
// An unknown content type is a *rules.ValidationError with rules.ContentType.
//
// Encoding checks only what the wire form needs to carry c exactly (valid
// UTF-8, known types, Int32 range, DateTime in years 1601..9999 at 100 ns,
// canonical Guids), so that decoding the result always gives back a command
// Equal to c. It does not check the limits of SPEC §2: call Validate for
// those. IssuedAt is carried at 100 ns and truncated to it.
func Encode(c *Command, contentType string) ([]byte, error) {
	ct, err := parseContentType(contentType)
	if err != nil {
		return nil, err
	}
	if ct == contentTypeJSON {
		return MarshalJSON(c)
	}
	return MarshalMsgpack(c)
}

// Decode decodes a command from the wire form named by contentType; ""
// means msgpack. Media type parameters ("; charset=utf-8") are ignored. Any
// bad input, including an unknown content type, gives a *rules.ValidationError
// wrapping rules.ErrInvalid.
//
// Decode checks the form and every literal, not the limits of SPEC §2: a
// caller that accepts commands calls Validate on the result.
func Decode(data []byte, contentType string) (*Command, error) {
	ct, err := parseContentType(contentType)
	if err != nil {
		return nil, err
	}
	if ct == contentTypeJSON {
		return UnmarshalJSON(data)
	}
	return UnmarshalMsgpack(data)
}

// parseContentType maps a Content-Type header to contentTypeJSON or
// contentTypeMsgpack.
func parseContentType(s string) (string, error) {
	switch s {
	case "", contentTypeMsgpack:
		return contentTypeMsgpack, nil
	case contentTypeJSON:
		return contentTypeJSON, nil
	}
	mt, _, err := mime.ParseMediaType(s)
	if err == nil {
		switch strings.ToLower(mt) {
		case contentTypeMsgpack:
			return contentTypeMsgpack, nil
		case contentTypeJSON:
			return contentTypeJSON, nil
		}
	}
	return "", rules.Errorf(headerContentType, rules.ContentType, "unknown content type %q; want %q or %q",
		s, contentTypeMsgpack, contentTypeJSON)
}

// Digest identifies what the command does, all but when it was issued: the
// hex SHA-256 (first 16 bytes) of its msgpack encoding, which is
// deterministic, with IssuedAt cleared. Two commands are Equal but for
// IssuedAt exactly when their digests are equal (up to the hash). Applied
// outcomes carry it (wire.Outcome.Digest), so that a command ID published
// again with another body is refused at any distance in time (SPEC §5).
func (c *Command) Digest() string {
	x := *c
	x.IssuedAt = time.Time{}
	data, err := MarshalMsgpack(&x)
	if err != nil {
		return ""
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:16])
}

// Equal reports whether c and o are the same command: equal fields, equal
// operations in the same order, and property values equal by Value.Equal.
// A nil and an empty Entity or Meta are equal; IssuedAt compares as an
// instant (time.Time.Equal).
func (c *Command) Equal(o *Command) bool {
	if c == nil || o == nil {
		return c == o
	}
	if c.ID != o.ID || c.Table != o.Table || c.PK != o.PK || c.Issuer != o.Issuer ||
		!c.IssuedAt.Equal(o.IssuedAt) || len(c.Ops) != len(o.Ops) || len(c.Meta) != len(o.Meta) || !c.Prune.equal(o.Prune) {
		return false
	}
	for i := range c.Ops {
		if !c.Ops[i].equal(&o.Ops[i]) {
			return false
		}
	}
	for k, v := range c.Meta {
		if w, ok := o.Meta[k]; !ok || v != w {
			return false
		}
	}
	return true
}

func (op *RowOp) equal(o *RowOp) bool {
	if op.Op != o.Op || op.RK != o.RK || !op.Entity.Equal(o.Entity) {
		return false
	}
	if op.IfVersion == nil || o.IfVersion == nil {
		return op.IfVersion == nil && o.IfVersion == nil
	}
	return *op.IfVersion == *o.IfVersion
}
