// Package latency measures what a service that writes through tablejournal
// waits for: the latency of Client.Apply, of read-your-writes (Publish then
// Get with AfterSeq) and of a change-feed follower, against the real
// projector command on the embedded store and on Azurite, next to the
// parts they are made of (an acknowledged JetStream publish and a direct
// one-row store transaction) measured in the same run. It holds only
// benchmarks and the tests that keep them honest; `make bench` runs them
// (cmd/benchreport, suite "latency").
package latency
