package edm

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
