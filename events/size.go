package events

import "unicode/utf16"

// Bounds on the encoded size of what is valid, for sizing messages (a NATS
// server's max_payload). EntitySize counts a UTF-16 code unit as 2 bytes and
// a Binary byte as 1. As msgpack (UTF-8 strings, raw binaries) a code unit
// takes at most 3 bytes (U+0800..U+FFFF): 1.5 times what EntitySize counts.
// As JSON a code unit takes at most 6 bytes (a control character, or '<',
// '>' and '&', which encoding/json writes as \u00XX) and a Binary byte 4/3
// (base64): 3 times. Beside that come what EntitySize does not count: the
// "@odata.type" annotations, and the command's other fields. The tests
// build the worst cases and check both bounds.
const (
	// MaxMsgpackCommandBytes bounds MarshalMsgpack of a valid command: 1.5
	// times MaxCommandBytes for the entities, and 512 KiB for the rest
	// (annotations of up to 8,118 properties, 33 row keys, 64 meta entries
	// of 1 KiB, the issuer). About 6.5 MiB.
	MaxMsgpackCommandBytes = MaxCommandBytes*3/2 + 512<<10
	// MaxEntityJSONBytes bounds the JSON of the properties of a stored row
	// (EntitySize at most MaxEntityBytes), as MarshalEntityJSON writes it
	// and as encoding/json re-escapes it: 3 times MaxEntityBytes and 64
	// bytes of annotation per property. About 3 MiB.
	MaxEntityJSONBytes = MaxEntityBytes*3 + MaxStoreProperties*64
)

// utf16Len is the length of s in UTF-16 code units, as Azure counts keys
// and names.
func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		n += utf16.RuneLen(r)
	}
	return n
}
