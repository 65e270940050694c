package events

import "unicode/utf16"

// EntitySize is the size Azure Tables charges an entity against its 1 MiB
// limit: 4 bytes, plus each key in UTF-16, plus per property 8 bytes, its
// name in UTF-16 and its value (String: UTF-16 + 4; Binary: bytes + 4;
// Int32 4; Int64, Double, DateTime 8; Boolean 1; Guid 16).
func EntitySize(pk, rk string, props Entity) int {
	n := 4 + utf16Len(pk)*2 + utf16Len(rk)*2
	for name, v := range props {
		n += PropertySize(name, v)
	}
	return n
}

// PropertySize is what one property adds to EntitySize: so the size of an
// entity with properties added is known without building it.
func PropertySize(name string, v Value) int {
	return 8 + utf16Len(name)*2 + v.size()
}

func (v Value) size() int {
	switch v.Type {
	case TypeString:
		return utf16Len(v.Str)*2 + 4
	case TypeBinary:
		return len(v.Bytes) + 4
	case TypeBoolean:
		return 1
	case TypeInt32:
		return 4
	case TypeGuid:
		return 16
	default: // Int64, Double, DateTime
		return 8
	}
}

func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		n += utf16.RuneLen(r)
	}
	return n
}

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
