// Package retry holds the waits of the module's retry loops: the one
// backoff every retry loop waits by (exponential, with the library's ±50%
// jitter), and Sleep, a fixed wait that ends early with its context.
package retry

import (
	"time"

	"github.com/cenkalti/backoff/v4"
)

// Backoff returns an exponential backoff starting at initial, each wait at
// most maxWait (give or take the jitter), for maxElapsed in all (0:
// forever, until the caller's context ends).
func Backoff(initial, maxWait, maxElapsed time.Duration) *backoff.ExponentialBackOff {
	return backoff.NewExponentialBackOff(
		backoff.WithInitialInterval(initial),
		backoff.WithMaxInterval(maxWait),
		backoff.WithMaxElapsedTime(maxElapsed),
	)
}
