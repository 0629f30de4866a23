//go:build !unix

package live

import "time"

func cpuTime() (time.Duration, bool) { return 0, false }
