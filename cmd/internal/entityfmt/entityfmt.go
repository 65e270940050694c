package entityfmt

import (
	"encoding/json"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/tablejournal/tablejournal/events"
	"github.com/tablejournal/tablejournal/events/edm"
)

// Value renders a value with its EDM type: Edm.Int64(9007199254740993),
// strings quoted.
func Value(v edm.Value) string {
	if v.Type == edm.TypeString {
		return v.Type.String() + "(" + strconv.Quote(v.Str) + ")"
	}
	return v.GoString()
}

// Props renders properties as name=Edm.Type(value), by name.
func Props(e edm.Entity) string {
	names := slices.Sorted(maps.Keys(e))
	parts := make([]string, len(names))
	for i, n := range names {
		parts[i] = n + "=" + Value(e[n])
	}
	return strings.Join(parts, " ")
}

// JSON is an entity in the OData JSON form commands use, so every EDM
// type survives; nil stays absent.
func JSON(e edm.Entity) json.RawMessage {
	if e == nil {
		return nil
	}
	b, _ := events.MarshalEntityJSON(e)
	return b
}
