package adopt

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// IDPrefix starts the ID of every command adoption journals, and of no
// other command: a tip row whose _cmd has it holds a row as adoption
// copied it.
const IDPrefix = "adopt-"

// UpsertID is the ID of the command that adopts the version etag of row
// (pk, rk) of source into into. Table, keys and etag are hashed together,
// each length-prefixed so that no two inputs collide by concatenation.
func UpsertID(source, into, pk, rk, etag string) string {
	return id("upsert", source, into, pk, rk, etag)
}

// DeleteID is the ID of the command that deletes row (pk, rk) from into
// because the source no longer has it; adopted is the _cmd of the version
// it deletes, so the row deleted again after it came back gets a new ID.
func DeleteID(source, into, pk, rk, adopted string) string {
	return id("delete", source, into, pk, rk, adopted)
}

// IsAdoptionID reports whether a command ID is one adoption made.
func IsAdoptionID(id string) bool { return strings.HasPrefix(id, IDPrefix) }

func id(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		var n [8]byte
		for i, l := 0, len(p); i < 8; i, l = i+1, l>>8 {
			n[i] = byte(l)
		}
		h.Write(n[:])
		h.Write([]byte(p))
	}
	return IDPrefix + hex.EncodeToString(h.Sum(nil)[:20])
}
