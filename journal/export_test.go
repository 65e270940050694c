package journal

// Test hooks: knobs the tests of this package turn, which no caller
// outside it needs (the retry schedule, its notifications, the ack timeout)
// and the one-call outcome publish the projector does not use (it publishes
// OutcomeMsg asynchronously).
var (
	WithBackOff     = withBackOff
	WithRetryNotify = withRetryNotify
	WithAckTimeout  = withAckTimeout
	PublishOutcome  = publishOutcome
)
