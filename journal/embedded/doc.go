// Package embedded runs a nats-server with JetStream inside the process,
// on loopback, with its store in a folder: the zero-setup journal server
// the projector starts when no NATS URL is given (SPEC §8). It is apart
// from package journal so that a service that only publishes commands does
// not link nats-server.
package embedded
