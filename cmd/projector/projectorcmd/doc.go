// Package projectorcmd is the projector command: it applies the journal
// to tables, with an embedded JetStream server (journal/embedded) when no
// --nats is given, and projector status. Run is the command; cmd/projector
// only calls cli.Main(projectorcmd.Run, ...). It is the only command
// package that imports journal/embedded, so nats-server links into the
// projector binary alone.
package projectorcmd
