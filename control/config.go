package control

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/overworld/overworld/wire"
)

// Sentinel errors. Every error the plane returns wraps one of these, so
// callers can test with errors.Is; the message names the offending player,
// node or value.
var (
	// ErrConfig reports an invalid Config.
	ErrConfig = errors.New("control: bad configuration")
	// ErrUnknownPlayer reports an event about a player the plane does not
	// know.
	ErrUnknownPlayer = errors.New("control: unknown player")
	// ErrDuplicatePlayer reports a join of a player already placed.
	ErrDuplicatePlayer = errors.New("control: duplicate player")
	// ErrBadPlayer reports an empty or reserved player ID.
	ErrBadPlayer = errors.New("control: bad player ID")
	// ErrUnknownNode reports a node that is not in the configuration.
	ErrUnknownNode = errors.New("control: unknown node")
	// ErrNodeState reports NodeDown of a node already down, or NodeUp of a
	// node already up.
	ErrNodeState = errors.New("control: node state")
	// ErrBadRTT reports a negative, too large, missing or duplicated RTT
	// sample.
	ErrBadRTT = errors.New("control: bad RTT")
	// ErrNoCapacity reports a join while every node that is up is full.
	ErrNoCapacity = errors.New("control: no capacity")
	// ErrBadPosition reports a NaN or infinite position.
	ErrBadPosition = errors.New("control: bad position")
	// ErrTime reports an event earlier than the previous one.
	ErrTime = errors.New("control: time went backwards")
	// ErrRebuild reports a Rebuild of a plane that already holds players,
	// or reports that contradict each other.
	ErrRebuild = errors.New("control: bad rebuild")
)

// MaxRTT is the largest RTT sample accepted. No Internet path is slower;
// bounding it lets the plane keep a dead node's seats out of reach (see
// NodeDown).
const MaxRTT = 10 * time.Second

// Node is one game server the plane places players and regions on.
type Node struct {
	// ID is the node's wire ID, unique in the configuration.
	ID wire.NodeID
	// Site names where the node runs (a city); informative only.
	Site string
	// Capacity is the most players the node may serve (at least 1).
	Capacity int
}

// Grid divides the world's plane into Cols × Rows equal rectangular
// regions covering [X0, X0+Width) × [Y0, Y0+Height). Region c + r·Cols is
// column c, row r; a position outside the grid belongs to the nearest
// region on its edge. The zero Grid has no regions.
type Grid struct {
	X0, Y0, Width, Height float64
	Cols, Rows            int
}

// Regions returns the number of regions.
func (g Grid) Regions() int { return g.Cols * g.Rows }

// RegionOf returns the region holding (x, y), or -1 when the grid is
// empty.
func (g Grid) RegionOf(x, y float64) int {
	if g.Cols <= 0 || g.Rows <= 0 {
		return -1
	}
	c := int(math.Floor((x - g.X0) / g.Width * float64(g.Cols)))
	r := int(math.Floor((y - g.Y0) / g.Height * float64(g.Rows)))
	c = min(max(c, 0), g.Cols-1)
	r = min(max(r, 0), g.Rows-1)
	return c + r*g.Cols
}

// Config configures a Plane.
type Config struct {
	// Nodes are the game servers, in the order every per-node slice of
	// the plane follows. At most 1,000.
	Nodes []Node
	// NodeRTT is the node-to-node RTT matrix in ms, in the order of
	// Nodes (finite, ≥ 0, at most MaxRTT; the diagonal is ignored; a
	// missing pair may be NaN and is not sampled). It places the nodes in
	// network coordinates, from which the RTT of a player to a node it
	// did not measure is estimated. nil turns estimation off: every
	// player must then measure every node in its Join samples.
	NodeRTT [][]float64
	// EstimateMargin is the share added to an estimated RTT before CMA
	// sees it (default 0: none). Choosing the least of noisy estimates
	// favours the nodes they underestimate; a margin makes an unmeasured
	// node win only when it looks better than a measured one by more than
	// the margin.
	EstimateMargin float64
	// Probes is how many unmeasured nodes an Admit asks the client to
	// ping: the node it joins, then the least estimated RTT plus shadow
	// price first (default 3; 0 takes the default, a negative value asks
	// for none).
	Probes int
	// ProbeSlack is how far (a share) an unmeasured RTT estimate may be
	// too high: at each Tick, a player is asked to ping (a Probe
	// decision) every unmeasured node that would beat its own if its
	// estimate were lowered by this share (default 0.5; negative: never).
	// The estimates' median error is about 11% on the embedded data, but
	// the capacitated optimum turns on differences of a few ms between a
	// player's second- and fifth-best nodes: on 16 nodes, 0.3 leaves the
	// assignment a few percent above the optimum on true RTTs, 0.5 within
	// about 2%, 0.7 within 0.3% with nearly every pair measured.
	ProbeSlack float64
	// Hysteresis is the least change, in ms, of a player's known RTT to
	// some node that makes a Measure re-seat the player (default 0: any
	// change). A driver feeding raw pings should smooth them (a minimum
	// over a window) or set this, so noise does not move players.
	Hysteresis float64
	// Grid divides the world into regions; the zero Grid has none.
	Grid Grid
	// RegionHome is the node every region starts on (default: the first
	// node).
	RegionHome wire.NodeID
	// Policy decides when a region's core selection re-runs; nil never
	// re-runs it (regions then move only when their core dies).
	Policy Policy
	// RegionSlack is how far (a share) a node's aggregate RTT over a
	// region's players, on what the plane knows, may be above the best
	// node's and still contend for the region's core: at each Tick, with
	// a Policy, the region's players are asked to ping (Probe decisions)
	// the contenders and the current core they have not measured, so that
	// core selection compares measured RTTs where it is a close call
	// (default 0.1; negative: never).
	RegionSlack float64
	// MigrationCost is the least aggregate latency gain, in ms summed
	// over a region's players, for which a region migrates to the best
	// core selection found (default 1,000: 50 players gaining 20 ms
	// each). It stands for the cost of moving the region's state and
	// handing its players over.
	MigrationCost float64
	// Seed seeds the network coordinates of the nodes (any value).
	Seed uint64
}

// defaults for Config's zero fields.
const (
	defaultProbes        = 3
	defaultProbeSlack    = 0.5
	defaultMigrationCost = 1000
	defaultRegionSlack   = 0.1
	maxNodes             = 1000
)

// Validate checks the configuration and returns a copy with the defaults
// filled in. Errors wrap ErrConfig.
func (c Config) Validate() (Config, error) {
	if len(c.Nodes) == 0 {
		return c, fmt.Errorf("%w: no nodes", ErrConfig)
	}
	if len(c.Nodes) > maxNodes {
		return c, fmt.Errorf("%w: %d nodes, at most %d", ErrConfig, len(c.Nodes), maxNodes)
	}
	c.Nodes = append([]Node(nil), c.Nodes...)
	seen := make(map[wire.NodeID]int, len(c.Nodes))
	for i, n := range c.Nodes {
		if j, dup := seen[n.ID]; dup {
			return c, fmt.Errorf("%w: node %d listed at %d and %d", ErrConfig, n.ID, j, i)
		}
		seen[n.ID] = i
		if n.Capacity < 1 || n.Capacity > math.MaxInt32 {
			return c, fmt.Errorf("%w: node %d has capacity %d, want 1…%d", ErrConfig, n.ID, n.Capacity, math.MaxInt32)
		}
	}
	if c.NodeRTT != nil {
		if len(c.NodeRTT) != len(c.Nodes) {
			return c, fmt.Errorf("%w: %d rows of node RTTs for %d nodes", ErrConfig, len(c.NodeRTT), len(c.Nodes))
		}
		rows := make([][]float64, len(c.NodeRTT))
		for i, row := range c.NodeRTT {
			if len(row) != len(c.Nodes) {
				return c, fmt.Errorf("%w: node RTT row %d has %d entries for %d nodes", ErrConfig, i, len(row), len(c.Nodes))
			}
			for j, v := range row {
				if i != j && !math.IsNaN(v) && (math.IsInf(v, 0) || v < 0 || v > ms(MaxRTT)) {
					return c, fmt.Errorf("%w: RTT %v ms from node %d to node %d (want 0…%v ms, or NaN when unmeasured)", ErrConfig, v, c.Nodes[i].ID, c.Nodes[j].ID, ms(MaxRTT))
				}
			}
			rows[i] = append([]float64(nil), row...)
		}
		c.NodeRTT = rows
	}
	for _, sl := range []struct {
		v    *float64
		def  float64
		name string
	}{{&c.ProbeSlack, defaultProbeSlack, "probe"}, {&c.RegionSlack, defaultRegionSlack, "region"}} {
		switch {
		case *sl.v == 0:
			*sl.v = sl.def
		case *sl.v < 0:
			*sl.v = 0 // never
		}
		if !finite(*sl.v) || *sl.v >= 1 {
			return c, fmt.Errorf("%w: %s slack %v, want below 1", ErrConfig, sl.name, *sl.v)
		}
	}
	if !finite(c.EstimateMargin) || c.EstimateMargin < 0 || c.EstimateMargin > 10 {
		return c, fmt.Errorf("%w: estimate margin %v, want 0…10", ErrConfig, c.EstimateMargin)
	}
	switch {
	case c.Probes == 0:
		c.Probes = defaultProbes
	case c.Probes < 0:
		c.Probes = 0
	}
	if math.IsNaN(c.Hysteresis) || math.IsInf(c.Hysteresis, 0) || c.Hysteresis < 0 {
		return c, fmt.Errorf("%w: hysteresis %v ms, want finite and ≥ 0", ErrConfig, c.Hysteresis)
	}
	g := c.Grid
	if g.Cols != 0 || g.Rows != 0 {
		switch {
		case g.Cols < 1 || g.Rows < 1 || g.Cols*g.Rows > 1<<16:
			return c, fmt.Errorf("%w: grid of %d × %d regions, want 1…65536 regions", ErrConfig, g.Cols, g.Rows)
		case !(g.Width > 0) || !(g.Height > 0) || math.IsInf(g.Width, 0) || math.IsInf(g.Height, 0) || !finite(g.X0) || !finite(g.Y0):
			return c, fmt.Errorf("%w: grid %v×%v at (%v, %v): want a finite origin and positive size", ErrConfig, g.Width, g.Height, g.X0, g.Y0)
		}
	}
	if c.RegionHome == 0 {
		if _, ok := seen[0]; !ok {
			c.RegionHome = c.Nodes[0].ID
		}
	}
	if _, ok := seen[c.RegionHome]; !ok {
		return c, fmt.Errorf("%w: region home %d is not a node", ErrConfig, c.RegionHome)
	}
	if c.MigrationCost == 0 {
		c.MigrationCost = defaultMigrationCost
	}
	if !finite(c.MigrationCost) || c.MigrationCost < 0 {
		return c, fmt.Errorf("%w: migration cost %v, want finite and ≥ 0", ErrConfig, c.MigrationCost)
	}
	return c, nil
}

func finite(x float64) bool { return !math.IsNaN(x) && !math.IsInf(x, 0) }

// ms converts a duration to milliseconds.
func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
