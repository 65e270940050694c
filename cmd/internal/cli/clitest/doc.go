// Package clitest is what the command tests share: golden scripts
// (RunGolden), a pipeline of a JetStream server, the embedded store and a
// projector (StartPipeline), and Run, which runs a command on buffers. The
// tests of cmd/*/…cmd and cmd/tests use it; no production code imports it.
package clitest
