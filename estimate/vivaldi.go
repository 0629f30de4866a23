package estimate

import (
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/hashicorp/serf/coordinate"
)

// VivaldiConfig configures the Vivaldi estimator. The zero value is not
// valid; start from DefaultVivaldiConfig.
type VivaldiConfig struct {
	// Serf is the coordinate configuration handed to serf's Client. nil
	// means coordinate.DefaultConfig(): 8 dimensions plus a height, the
	// configuration serf and Consul run with.
	Serf *coordinate.Config
}

// DefaultVivaldiConfig returns serf's defaults.
func DefaultVivaldiConfig() VivaldiConfig { return VivaldiConfig{Serf: coordinate.DefaultConfig()} }

// Vivaldi is the paper's multidimensional-scaling estimator (Dabek et al.
// 2004) as implemented by github.com/hashicorp/serf/coordinate: every node
// keeps a serf coordinate.Client and updates it from each RTT sample and
// the probed neighbour's current coordinate; an estimate is the distance
// between two coordinates (Euclidean part + heights + adjustments).
//
// serf draws a random direction from the global math/rand when two
// coordinates coincide, which they all do at the origin where every node
// starts. To stay deterministic, Vivaldi places each new node at a tiny
// random offset (tens of µs, beyond serf's 1 µs coincidence threshold) drawn from its own *rand.Rand, so coordinates
// never coincide and serf never reaches for global randomness.
type Vivaldi struct {
	cfg     *coordinate.Config
	rng     *rand.Rand
	clients []*coordinate.Client
	coords  []*coordinate.Coordinate
	names   []string
	resets  int
}

// NewVivaldi creates n nodes, each with a fresh serf client.
func NewVivaldi(n int, cfg VivaldiConfig, rng *rand.Rand) (*Vivaldi, error) {
	if rng == nil {
		return nil, ErrNilRand
	}
	if n < 2 {
		return nil, fmt.Errorf("%w: %d nodes", ErrTooFew, n)
	}
	c := cfg.Serf
	if c == nil {
		c = coordinate.DefaultConfig()
	}
	if c.Dimensionality == 0 || !(c.VivaldiCC > 0) || !(c.VivaldiCE > 0) || !(c.VivaldiErrorMax > 0) || !(c.GravityRho > 0) || c.LatencyFilterSize == 0 {
		return nil, fmt.Errorf("%w: serf coordinate config needs Dimensionality, VivaldiCC, VivaldiCE, VivaldiErrorMax, GravityRho and LatencyFilterSize > 0", ErrConfig)
	}
	v := &Vivaldi{cfg: c, rng: rng, clients: make([]*coordinate.Client, n), coords: make([]*coordinate.Coordinate, n), names: make([]string, n)}
	for i := range n {
		v.names[i] = strconv.Itoa(i)
		if err := v.reset(i); err != nil {
			return nil, err
		}
	}
	return v, nil
}

// reset gives node i a fresh client at a tiny random offset from the origin.
func (v *Vivaldi) reset(i int) error {
	cl, err := coordinate.NewClient(v.cfg)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrConfig, err)
	}
	c := cl.GetCoordinate()
	for d := range c.Vec {
		c.Vec[d] = (v.rng.Float64() - 0.5) * 1e-4
	}
	if err := cl.SetCoordinate(c); err != nil {
		return fmt.Errorf("%w: %v", ErrConfig, err)
	}
	v.clients[i], v.coords[i] = cl, c
	return nil
}

// Len returns the number of nodes.
func (v *Vivaldi) Len() int { return len(v.clients) }

// Estimate returns the coordinate distance between i and j in ms.
func (v *Vivaldi) Estimate(i, j int) float64 {
	if i == j {
		return 0
	}
	return float64(v.coords[i].DistanceTo(v.coords[j])) / float64(time.Millisecond)
}

// Uncertainty is the mean of the two nodes' Vivaldi error estimates (the
// moving average of their relative prediction errors).
func (v *Vivaldi) Uncertainty(i, j int) float64 {
	return (v.coords[i].Error + v.coords[j].Error) / 2
}

// Resets returns how many times serf reset a coordinate that became
// invalid (NaN or infinite).
func (v *Vivaldi) Resets() int { return v.resets }

// Coordinate returns a copy of node i's serf coordinate.
func (v *Vivaldi) Coordinate(i int) *coordinate.Coordinate { return v.coords[i].Clone() }

// Observe applies churn (a node that leaves or returns starts from a fresh
// client) and then each sample, From updating its coordinate against To's.
func (v *Vivaldi) Observe(samples []Sample, changes []Change) {
	for _, c := range changes {
		_ = v.reset(c.Node) // the config was validated by NewVivaldi
		for _, cl := range v.clients {
			cl.ForgetNode(v.names[c.Node])
		}
	}
	for _, s := range samples {
		rtt := time.Duration(s.RTT * float64(time.Millisecond))
		if s.From == s.To || rtt < 0 || rtt > 10*time.Second || math.IsNaN(s.RTT) {
			continue // serf rejects these; a Truth never yields them
		}
		cl := v.clients[s.From]
		before := cl.Stats().Resets
		c, err := cl.Update(v.names[s.To], v.coords[s.To], rtt)
		if err != nil {
			continue
		}
		v.resets += cl.Stats().Resets - before
		v.coords[s.From] = c
	}
}
