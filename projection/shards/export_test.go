package shards

import "github.com/nats-io/nats.go/jetstream"

// WrapKV replaces g's handle on the ownership bucket with wrap's, before
// Run: tests wrap the real bucket to pause or fail its calls.
func WrapKV(g *Group, wrap func(jetstream.KeyValue) jetstream.KeyValue) { g.kv = wrap(g.kv) }
