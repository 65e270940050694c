// Package rows is the row layout of SPEC §4 and its readers: RowKeys of
// tip and version rows and of the partition's fence, the system columns,
// [Row] and its encoding, the [Reader] services and the replay tools read
// tables with, and the loads the projector decides on ([Load],
// [ReadState]). It depends on the store and the command format only, so
// replay, the CLI and metrics read tables without the projector.
package rows
