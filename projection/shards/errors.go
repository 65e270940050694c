package shards

import "errors"

// Errors of the package, checked with errors.Is.
var (
	// ErrNotOwner means this instance does not hold the shard's lease (any
	// more): another instance may be applying it.
	ErrNotOwner = errors.New("shard lease not held")

	// ErrBucket means the ownership bucket exists but cannot hold leases:
	// it was not created with per-key TTLs.
	ErrBucket = errors.New("ownership bucket unusable")
)
