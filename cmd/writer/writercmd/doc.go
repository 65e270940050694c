// Package writercmd is the writer command: it publishes commands into the
// journal, one from flags (insert, replace, merge, upsert, upsert-merge,
// delete) or many from a file of JSON lines (apply), and optionally waits
// for their outcomes. Run is the command; cmd/writer only calls
// cli.Main(writercmd.Run, ...).
package writercmd
