// Package edm holds the typed property values of an Azure Table row: the
// eight EDM (Entity Data Model) types, a Value of one of them, an Entity
// (a row's properties without its keys), their literal forms, the size
// Azure charges for them, and the binary encoding the embedded store and
// snapshot files keep them in. Package events carries Entities in
// commands; the store, rows and wire layers use them as they are. It does
// no I/O.
package edm
