//go:build !unix

package sim

import "time"

func cpuTime() (time.Duration, bool) { return 0, false }
