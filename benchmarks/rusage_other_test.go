//go:build !unix

package benchmarks

import "time"

// processCPU is 0 where getrusage is missing: CPU per Get reads 0 there.
func processCPU() time.Duration { return 0 }
