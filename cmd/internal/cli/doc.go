// Package cli is what the three commands (cmd/projector/projectorcmd,
// cmd/writer/writercmd, cmd/replay/replaycmd) share: the Command
// signature, IO and Main (signal context, exit code); exit codes and
// their errors; the command tables' Spec and the usage texts built from
// them; flag parsing, --help and --version; the NATS connection flags and
// secret redaction; and the text, JSON and progress-bar output. It holds
// no command of its own.
package cli
