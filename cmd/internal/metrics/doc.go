// Package metrics is how an operator sees a running projector (SPEC §9):
// Prometheus metrics, health probes, operator logs and the status the
// projector publishes to NATS for `projector status`. [Start] runs all of
// it beside a projector ([Ops]); the projector command and the benchmarks
// wire it the same way.
//
//   - [Metrics] implements [projection.Observer]: the projector reports its
//     shards, fetches, batches, outcomes and retries to it, and it keeps the
//     per-shard lag state and the Prometheus collectors. Lag comes from the
//     metadata of the messages the projector fetches anyway (the journal
//     time of the oldest unapplied message and how many wait behind the
//     last one): no request to NATS per command, none at all per scrape.
//   - [Metrics.Store] wraps a [store.Store] so that both backends' round
//     trips are measured alike (tablejournal_store_request_seconds) and the
//     store's answers feed readiness and throttling warnings.
//   - [Server] serves /metrics, /healthz and /readyz.
//   - [Metrics.Report] logs a one-line summary while there is work and a
//     warning while the store throttles; [Metrics.PublishStatus] writes each
//     running shard's rate and position to the status bucket.
//
// The metric names are a contract (SPEC §9); docs/operating.md lists them.
package metrics
