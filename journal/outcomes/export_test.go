package outcomes

// PublishOutcome is the one-call outcome publish the tests use; the
// projector publishes Message asynchronously.
var PublishOutcome = publishOutcome
