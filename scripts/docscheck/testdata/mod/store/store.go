package store

// Store is a table store.
type Store interface {
	Get(pk string) (Entity, error)
}

// Entity is a stored row.
type Entity struct {
	PK   string
	ETag string
}

// Open opens a store.
func Open() Store { return nil }

// Keys returns the row's keys.
func (e Entity) Keys() (string, string) { return e.PK, "" }
