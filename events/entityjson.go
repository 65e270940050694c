package events

import "github.com/tablejournal/tablejournal/events/edm"

// MarshalEntityJSON renders an entity alone in the OData minimal-metadata
// JSON form commands use, annotations included, so a consumer decodes it
// exactly as a command's entity (for example the change feed's before and
// after images).
func MarshalEntityJSON(e edm.Entity) ([]byte, error) {
	w := &jsonWriter{}
	w.raw("{")
	for i, name := range appendSortedKeys(nil, e) {
		if i > 0 {
			w.raw(",")
		}
		w.property(name, e[name])
	}
	w.raw("}")
	return w.b, nil
}
