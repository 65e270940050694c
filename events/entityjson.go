package events

import "github.com/tablejournal/tablejournal/events/edm"

// MarshalEntityJSON renders an entity alone in the OData minimal-metadata
// JSON form commands use, annotations included, so a consumer decodes it
// exactly as a command's entity (for example the change feed's before and
// after images).
func MarshalEntityJSON(e edm.Entity) ([]byte, error) {
	// A guess at the size, so that the buffer rarely grows: names and
	// text, and room for the punctuation, numbers and annotations.
	size := 2
	for name, v := range e {
		size += 2*len(name) + len(v.Str) + 4*len(v.Bytes)/3 + 48
	}
	w := &jsonWriter{b: make([]byte, 0, size)}
	var keys [32]string
	w.raw("{")
	for i, name := range appendSortedKeys(keys[:0], e) {
		if i > 0 {
			w.raw(",")
		}
		w.property(name, e[name])
	}
	w.raw("}")
	return w.b, nil
}
