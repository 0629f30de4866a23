package cli

import (
	"testing"
	"time"
)

// TestHugePagesStops: hugePages returns at once, its stop function
// waits for the advisor and may be called twice, and the switch in the
// environment turns it off.
func TestHugePagesStops(t *testing.T) {
	stop := hugePages(time.Millisecond)
	buf := make([]byte, 8<<20) // something to advise
	buf[0] = 1
	stop()
	stop()
	t.Setenv("OVERWORLD_HUGEPAGES", "off")
	hugePages(time.Millisecond)()
	_ = buf[0]
}
