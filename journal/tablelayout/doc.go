// Package tablelayout reads and sets a table's row layout (SPEC §3, "A
// table's layout setting"; SPEC §4): a message in the journal on
// wire.LayoutSubject(table), which holds only when it comes before the
// table's first command, so that the projector, a rebuild and every replay
// tool decide a table's layout alike, from sequences alone. No setting is
// the versioned layout.
package tablelayout
