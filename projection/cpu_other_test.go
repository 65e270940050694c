//go:build !unix

package projection_test

import "time"

// processCPU: unknown here.
func processCPU() time.Duration { return 0 }
