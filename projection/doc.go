// Package projection applies journal commands to tables with in-place
// versioning (SPEC §4, §5): each logical row is a tip row plus version and
// tombstone rows in the same partition, written in one transaction and
// tagged with the command ID and journal sequence that produced them.
//
// layout.go holds the row layout, apply.go the pure versioned apply of a
// batch of commands, and projector.go the JetStream consumers that drive it
// with exactly-once effect and publish outcomes and the change feed.
package projection
