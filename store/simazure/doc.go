// Package simazure is a simulated Azure Tables account for benchmarks: a
// store.Store that wraps another one (the embedded store, store/sqlite) and
// adds what a real account has and a local store lacks, a network round
// trip and throttling.
//
//	inner, _ := sqlite.Open(ctx, path)
//	s := simazure.New(inner, simazure.Config{}) // 5 ms, 500 and 5,000 entities/s
//
// # Latency
//
// Every request waits Config.Latency (5 ms by default) before the simulated
// service answers it, throttled requests included, as a round trip would.
//
// # Throttling
//
// Azure publishes scalability targets for Table storage: 2,000 entities per
// second for one partition and 20,000 per second for an account (1 KiB
// entities). Beyond them the service answers 503 ServerBusy. Scaled down
// by four to fit two cores, the defaults are 500 entities/s per partition
// (table and PartitionKey; table names are case-insensitive) and 5,000
// entities/s per account. Each is a token bucket holding Config.Burst worth
// of its rate (one second by default, and never less than one full
// transaction of store.MaxOps entities) that starts empty, so a benchmark
// measures the sustained rate from its first request rather than a burst
// saved up before it. A request is admitted when both its partition's bucket
// and the account's hold its cost, which both then pay; otherwise it is
// answered with store.ErrBusy and pays nothing. Costs, in entities:
//
//   - Transact: its operations (at least one);
//   - Get: one;
//   - Query: the entities it returns, at least one; a request is admitted
//     when the buckets hold one and pays the rest after it has run, which may
//     leave them in debt (Azure cannot know a query's size beforehand
//     either); a query across partitions charges the account only;
//   - CreateTable, DeleteTable, ListTables: one, to the account.
//
// Azure states the account target in requests of 1 KiB entities; counting
// entities instead, as here, makes the account limit no looser for large
// transactions.
//
// # Client retries
//
// The service answers ErrBusy at once. store/azure never shows a caller the
// first few: the Azure SDK retries 503s with exponential backoff (see the
// store/azure package doc). Config.Retry simulates that client policy, and
// AzureSDKRetry is store/azure's default, so that a benchmark sees what the
// projector sees against a real account.
//
// Stats counts what the simulated service answered; Config.Clock makes the
// latency and the buckets testable without sleeping.
package simazure
