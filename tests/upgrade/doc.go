// Package upgrade tests the upgrade in place (issue 39, item 5): it builds
// the previous release's projector, writer and replay from the git history
// (commit PreviousRelease, before contract v2) and this tree's, and runs
// them as processes against one JetStream server and Azurite — the old
// release writing first, this release continuing its journal in place, the
// old one taken back (a rollback) — checking at each step that what one
// release wrote every reader of the other reads. The package has no code of
// its own; `go test ./tests/upgrade` (and `make test`) runs it. It needs the
// repository's git history: a shallow clone fails it, saying so.
package upgrade
