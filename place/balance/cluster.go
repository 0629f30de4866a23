package balance

import (
	"errors"
	"fmt"
	"math"
	"slices"
)

// Bounds that keep sums far from overflow.
const (
	maxPlayers = 1 << 40 // per server
	maxSize    = 1 << 20 // per instance
)

// Hosted is the Server of an instance that runs on player hosts (the
// paper's Distributed Area), and the To of a Move that overflows there.
const Hosted = -1

// Instance is one instance (auxiliary game) as a balancing round sees it.
type Instance struct {
	Size   int // players in it, at least 1
	Server int // cluster server running it, or Hosted
}

// Cluster is the state one balancing round reads: N servers with the same
// capacity, the main-world players of each (they stay where their region
// is), and the instances. It is not modified by Balance or Pack.
type Cluster struct {
	MaxLoad   int   // max_S_load: players one server may serve
	Main      []int // main-world players per server; len(Main) = N
	Instances []Instance
}

// Errors returned for bad input; all are wrapped with details.
var (
	ErrCluster = errors.New("balance: bad cluster")
	ErrConfig  = errors.New("balance: bad config")
	// ErrTooLarge reports a Pack whose exact subset sum would need more
	// than 64 million table cells on one server.
	ErrTooLarge = errors.New("balance: cluster too large for the exact packing")
)

// Validate reports the first problem with c: no server, a capacity below 1,
// a negative main-world count, or an instance with no players or a server
// out of range.
func (c *Cluster) Validate() error {
	if len(c.Main) == 0 {
		return fmt.Errorf("%w: no servers", ErrCluster)
	}
	if c.MaxLoad < 1 || c.MaxLoad > maxPlayers {
		return fmt.Errorf("%w: max load %d (want 1..%d)", ErrCluster, c.MaxLoad, maxPlayers)
	}
	for i, m := range c.Main {
		if m < 0 || m > maxPlayers {
			return fmt.Errorf("%w: server %d has %d main-world players (want 0..%d)", ErrCluster, i, m, maxPlayers)
		}
	}
	for k, in := range c.Instances {
		if in.Size < 1 || in.Size > maxSize {
			return fmt.Errorf("%w: instance %d has size %d (want 1..%d)", ErrCluster, k, in.Size, maxSize)
		}
		if in.Server != Hosted && (in.Server < 0 || in.Server >= len(c.Main)) {
			return fmt.Errorf("%w: instance %d is on server %d (want 0..%d or Hosted)", ErrCluster, k, in.Server, len(c.Main)-1)
		}
	}
	return nil
}

// Loads returns the players each server serves: its main-world players and
// the players of the instances it runs.
func (c *Cluster) Loads() []int {
	l := slices.Clone(c.Main)
	for _, in := range c.Instances {
		if in.Server >= 0 {
			l[in.Server] += in.Size
		}
	}
	return l
}

// Config parameterises a balancing round.
type Config struct {
	// Margin is the extra share of MaxLoad an overloaded server sheds
	// beyond its excess, so that balancing runs less often (§3.2: 10 %). A
	// server that sheds ends at or below MaxLoad − Margin·MaxLoad (the
	// target).
	Margin float64
	// FillToTarget limits receivers to the target too; by default (the
	// paper's "server with room") a receiver takes instances while it stays
	// at or below MaxLoad.
	FillToTarget bool
	// Overflow sends the instances the cluster cannot take to player hosts
	// (Algorithm 2); without it they stay, and the server stays overloaded.
	Overflow bool
}

// DefaultConfig is the paper's 10 % margin with overflow to player hosts,
// and receivers filled to the target only: with the paper's "server with
// room" (up to MaxLoad) a cluster near capacity thrashes, receivers at
// MaxLoad overloading again at the next arrival (see the package
// documentation).
func DefaultConfig() Config { return Config{Margin: 0.10, Overflow: true, FillToTarget: true} }

// PaperConfig is DefaultConfig with receivers filled up to MaxLoad.
func PaperConfig() Config { return Config{Margin: 0.10, Overflow: true} }

// limit returns the most a receiving server may hold.
func (cfg Config) limit(maxLoad int) int {
	if cfg.FillToTarget {
		return cfg.Target(maxLoad)
	}
	return maxLoad
}

// Target returns the load an overloaded server is brought down to:
// MaxLoad − round(Margin·MaxLoad).
func (cfg Config) Target(maxLoad int) int {
	return maxLoad - int(math.Round(cfg.Margin*float64(maxLoad)))
}

func (cfg Config) validate() error {
	if !(cfg.Margin >= 0 && cfg.Margin < 1) {
		return fmt.Errorf("%w: margin %g (want 0 ≤ margin < 1)", ErrConfig, cfg.Margin)
	}
	return nil
}

// Move is one decision of a round: instance Instance goes from server From
// to server To, or to player hosts when To is Hosted.
type Move struct {
	Instance, From, To int
}

// Round is the outcome of one balancing round.
type Round struct {
	Moves      []Move // in the order they were decided
	Before     []int  // load per server before the round
	Loads      []int  // load per server after it
	Moved      int    // players moved to another server
	Overflowed int    // players sent to player hosts
	Overloaded []int  // servers above MaxLoad before the round
	Stuck      []int  // servers still above MaxLoad after it
}

// Balance runs Algorithm 1 once: every server above MaxLoad sheds whole
// instances until its load is at most the target (its excess plus the
// margin). Each instance goes to the least-loaded other server that stays
// within MaxLoad (or the target, with FillToTarget) with it; when none can take it, it overflows to player
// hosts (cfg.Overflow) or is kept. An overloaded server sheds, among its
// instances, the largest that does not exceed what is still to shed, or
// else the smallest. Servers are visited in index order, as the paper's
// loop does; the cost is O(N² + I log I) for N servers and I instances.
func Balance(c *Cluster, cfg Config) (Round, error) {
	if err := c.Validate(); err != nil {
		return Round{}, err
	}
	if err := cfg.validate(); err != nil {
		return Round{}, err
	}
	target, limit := cfg.Target(c.MaxLoad), cfg.limit(c.MaxLoad)
	loads := c.Loads()
	r := Round{Before: slices.Clone(loads)}
	var lists [][]int32
	for i := range loads {
		if loads[i] <= c.MaxLoad {
			continue
		}
		if lists == nil {
			lists = byServer(c)
		}
		r.Overloaded = append(r.Overloaded, i)
		cand := lists[i] // sorted by size, largest first
		for need := loads[i] - target; need > 0 && len(cand) > 0; {
			// largest instance not above need, else the smallest
			p := len(cand) - 1
			for q, k := range cand {
				if c.Instances[k].Size <= need {
					p = q
					break
				}
			}
			k := int(cand[p])
			cand = slices.Delete(cand, p, p+1)
			size := c.Instances[k].Size
			to := leastLoaded(loads, i, size, limit)
			if to < 0 && !cfg.Overflow {
				continue
			}
			r.Moves = append(r.Moves, Move{Instance: k, From: i, To: to})
			loads[i] -= size
			need -= size
			if to >= 0 {
				loads[to] += size
				r.Moved += size
			} else {
				r.Overflowed += size
			}
		}
		if loads[i] > c.MaxLoad {
			r.Stuck = append(r.Stuck, i)
		}
	}
	r.Loads = loads
	return r, nil
}

// leastLoaded returns the least-loaded server other than from that stays
// within limit with size more players (lowest index on ties), or -1.
func leastLoaded(loads []int, from, size, limit int) int {
	best := -1
	for j, l := range loads {
		if j != from && l+size <= limit && (best < 0 || l < loads[best]) {
			best = j
		}
	}
	return best
}

// byServer lists each server's instances, largest first (index on ties).
func byServer(c *Cluster) [][]int32 {
	lists := make([][]int32, len(c.Main))
	for k, in := range c.Instances {
		if in.Server >= 0 {
			lists[in.Server] = append(lists[in.Server], int32(k))
		}
	}
	for _, l := range lists {
		slices.SortFunc(l, func(a, b int32) int {
			if d := c.Instances[b].Size - c.Instances[a].Size; d != 0 {
				return d
			}
			return int(a - b)
		})
	}
	return lists
}

// Apply carries out r's moves on c (instances change server; nothing
// else changes). It fails, changing nothing, when a move does not match c.
func (c *Cluster) Apply(r Round) error {
	where := map[int]int{} // instance -> server after the moves so far
	for _, m := range r.Moves {
		if m.Instance < 0 || m.Instance >= len(c.Instances) {
			return fmt.Errorf("%w: move %+v: no instance %d", ErrCluster, m, m.Instance)
		}
		at, ok := where[m.Instance]
		if !ok {
			at = c.Instances[m.Instance].Server
		}
		if at != m.From || (m.To != Hosted && (m.To < 0 || m.To >= len(c.Main))) {
			return fmt.Errorf("%w: move %+v does not match the cluster", ErrCluster, m)
		}
		where[m.Instance] = m.To
	}
	for k, s := range where {
		c.Instances[k].Server = s
	}
	return nil
}
