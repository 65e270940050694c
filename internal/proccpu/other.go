//go:build !unix

package proccpu

import "time"

// Used returns 0: the CPU time of the process is not read here.
func Used() time.Duration { return 0 }
