package geo

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// Network is how an emulated network departs from its latency table:
// every packet waits the table's one-way delay, plus an exponentially
// distributed extra delay of mean Jitter; it is lost with probability
// Loss, delivered twice with probability Duplicate (each copy with its
// own delay), and held back by an extra delay with probability Reorder
// (so packets sent after it may overtake it). The simulator (sim.Config)
// and the live mesh's latency emulation (live.Config) both read it, so a
// profile means the same network in both drivers. The zero Network is a
// perfect one: the table's delays alone.
type Network struct {
	Jitter    time.Duration
	Loss      float64
	Duplicate float64
	Reorder   float64
}

// Network profiles by name (NetworkProfile).
const (
	// NetPerfect is the table's delays alone: no loss, jitter,
	// duplication or reordering.
	NetPerfect = "none"
	// NetWAN is a public-Internet path: 1% loss, 10 ms of exponential
	// jitter (which reorders packets sent less than a few ms apart) and
	// 0.1% duplication.
	NetWAN = "wan"
)

// WAN returns the NetWAN profile.
func WAN() Network {
	return Network{Jitter: 10 * time.Millisecond, Loss: 0.01, Duplicate: 0.001}
}

// NetworkProfile returns the profile of that name: NetPerfect or NetWAN.
// It rejects any other name, naming the known ones.
func NetworkProfile(name string) (Network, error) {
	switch strings.TrimSpace(name) {
	case NetPerfect:
		return Network{}, nil
	case NetWAN:
		return WAN(), nil
	}
	return Network{}, fmt.Errorf("network profile %q: want %s or %s", name, NetPerfect, NetWAN)
}

// Validate rejects a negative or too long jitter (above 10 s) and a
// probability outside [0, 1), naming the field.
func (n Network) Validate() error {
	switch {
	case n.Jitter < 0 || n.Jitter > 10*time.Second:
		return fmt.Errorf("jitter %v: want 0 to 10s", n.Jitter)
	case !prob(n.Loss):
		return fmt.Errorf("loss %v: want a probability in [0, 1)", n.Loss)
	case !prob(n.Duplicate):
		return fmt.Errorf("duplication %v: want a probability in [0, 1)", n.Duplicate)
	case !prob(n.Reorder):
		return fmt.Errorf("reordering %v: want a probability in [0, 1)", n.Reorder)
	}
	return nil
}

func prob(p float64) bool { return p >= 0 && p < 1 && !math.IsNaN(p) }

// Perfect reports whether n is the perfect network (the zero Network).
func (n Network) Perfect() bool { return n == Network{} }

// String describes n in one line: "perfect", or its non-zero parts, such
// as "loss 1%, jitter 10ms, duplication 0.1%".
func (n Network) String() string {
	if n.Perfect() {
		return "perfect"
	}
	var parts []string
	pct := func(name string, p float64) {
		if p > 0 {
			parts = append(parts, fmt.Sprintf("%s %g%%", name, 100*p))
		}
	}
	pct("loss", n.Loss)
	if n.Jitter > 0 {
		parts = append(parts, "jitter "+n.Jitter.String())
	}
	pct("duplication", n.Duplicate)
	pct("reordering", n.Reorder)
	return strings.Join(parts, ", ")
}
