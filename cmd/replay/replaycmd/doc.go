// Package replaycmd is the replay command: time travel over the projected
// tables (as-of reads, history, blame, rebuild, undo, restore, snapshot,
// load, verify, diff). Run is the command; cmd/replay only calls
// cli.Main(replaycmd.Run, ...). Each subcommand is a type on top of
// replayBase, listed once in replayCommands (replay.go), which every usage
// text is generated from.
package replaycmd
