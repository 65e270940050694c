// Package system holds the system tests: they build the real commands
// (cmd/projector) once per test binary and run them as processes against
// in-process JetStream servers and clusters, Azurite and the embedded
// store — killing, stopping and restarting them as an operator or a
// crashing machine would. The package has no code of its own; `go test
// ./tests/system` (and `make test`) runs it.
package system
