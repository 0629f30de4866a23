//go:build !unix

package cli

import "time"

func cpuTime() (time.Duration, bool) { return 0, false }
