// Package jsapi holds what the packages that own tablejournal's streams
// (journal, journal/outcomes) need from JetStream beyond the nats.go
// jetstream package: gets that read their writes on a replicated stream
// (a leader get, a multi_last direct get with a sentinel), batched direct
// gets answered on one kept subscription, and the creation of a stream that
// brings an existing one to the wanted configuration without changing it
// silently, and ordered reads that end when nothing is left to read.
//
// It is internal: its callers re-export what their users need (the errors,
// the ensure options).
package jsapi
