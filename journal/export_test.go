package journal

// Test hooks: knobs the tests of this package turn, which no caller
// outside it needs (the retry schedule, its notifications, the ack timeout).
var (
	WithBackOff     = withBackOff
	WithRetryNotify = withRetryNotify
	WithAckTimeout  = withAckTimeout
)
