package control

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/overworld/overworld/place/cma"
	"github.com/overworld/overworld/wire"
)

// Report is what a live node tells a returning plane: the players it
// serves, with the RTTs their clients measured and their positions, and
// the regions it is core of.
type Report struct {
	Node    wire.NodeID
	Players []Held
	Regions []int
}

// Held is one player a node serves.
type Held struct {
	ID      string
	Samples []Sample
	// Located is true when X and Y hold the player's position.
	Located bool
	X, Y    float64
}

// Snapshot returns the reports the nodes that are up would send for the
// current placement (players and regions sorted), as Rebuild takes them.
func (p *Plane) Snapshot() []Report {
	var out []Report
	for j, n := range p.nodes {
		if !n.up {
			continue
		}
		rep := Report{Node: n.ID}
		for r := range p.regions {
			if p.regions[r].core == j {
				rep.Regions = append(rep.Regions, r)
			}
		}
		out = append(out, rep)
	}
	at := map[wire.NodeID]int{}
	for i, r := range out {
		at[r.Node] = i
	}
	for _, id := range p.Players() {
		pl := p.players[id]
		n, _ := p.NodeOf(id)
		h := Held{ID: id, Located: pl.located, X: pl.x, Y: pl.y}
		for j, v := range pl.meas {
			if !math.IsNaN(v) {
				h.Samples = append(h.Samples, Sample{Node: p.nodes[j].ID, RTT: time.Duration(math.Round(v * float64(time.Millisecond)))})
			}
		}
		out[at[n]].Players = append(out[at[n]].Players, h)
	}
	return out
}

// Rebuild rebuilds a new plane's state from the reports of every live
// node: a node that sends no report is down, each reported player is
// where its node says, and each region on the node that claims it (the
// others on Config.RegionHome). It returns the decisions that bring the
// placement to the optimum over the live nodes: Move for a player CMA
// places elsewhere, Drop for one nobody can seat, and MigrateRegion
// (Failover) for a region whose core is down. The plane must be new (no
// players, every node up); reports that contradict each other (a node or
// a player reported twice, a region claimed twice, an unknown node, a bad
// sample or position) are an error and change nothing.
func (p *Plane) Rebuild(now time.Duration, reports []Report) ([]Decision, error) {
	if err := p.checkTime(now); err != nil {
		return nil, err
	}
	if len(p.players) > 0 || p.upCount() < len(p.nodes) {
		return nil, fmt.Errorf("%w: the plane already holds state (%d players, %d nodes down)", ErrRebuild, len(p.players), len(p.nodes)-p.upCount())
	}
	if len(reports) == 0 {
		return nil, fmt.Errorf("%w: no node reported", ErrRebuild)
	}
	type seat struct {
		h    Held
		node int
		meas []float64
	}
	reported := map[int]bool{}
	claimed := map[int]int{}
	var seats []seat
	byID := map[string]bool{}
	for _, rep := range reports {
		j, ok := p.index[rep.Node]
		if !ok {
			return nil, fmt.Errorf("%w: report from node %d", ErrUnknownNode, rep.Node)
		}
		if reported[j] {
			return nil, fmt.Errorf("%w: node %d reported twice", ErrRebuild, rep.Node)
		}
		reported[j] = true
		for _, r := range rep.Regions {
			if r < 0 || r >= len(p.regions) {
				return nil, fmt.Errorf("%w: node %d claims region %d of %d", ErrRebuild, rep.Node, r, len(p.regions))
			}
			if k, dup := claimed[r]; dup {
				return nil, fmt.Errorf("%w: region %d claimed by nodes %d and %d", ErrRebuild, r, p.nodes[k].ID, rep.Node)
			}
			claimed[r] = j
		}
		for _, h := range rep.Players {
			if err := checkID(h.ID); err != nil {
				return nil, fmt.Errorf("%w (reported by node %d)", err, rep.Node)
			}
			if byID[h.ID] {
				return nil, fmt.Errorf("%w: player %q reported twice", ErrRebuild, h.ID)
			}
			byID[h.ID] = true
			if h.Located && (!finite(h.X) || !finite(h.Y)) {
				return nil, fmt.Errorf("%w: player %q at (%v, %v)", ErrBadPosition, h.ID, h.X, h.Y)
			}
			meas, err := p.checkSamples(h.ID, h.Samples, nil)
			if err != nil {
				return nil, err
			}
			seats = append(seats, seat{h: h, node: j, meas: meas})
		}
	}
	p.now = now
	var out []Decision
	for j := range p.nodes {
		if !reported[j] {
			if _, err := p.fillDead(j); err != nil {
				return nil, err
			}
		}
	}
	slices.SortFunc(seats, func(a, b seat) int { return strings.Compare(a.h.ID, b.h.ID) })
	tx := p.begin()
	var dropped []Decision
	for _, s := range seats {
		pl := &player{id: s.h.ID, meas: s.meas, row: p.row(s.meas), region: -1, asked: make([]bool, len(p.nodes))}
		if _, err := p.a.Join(pl.id, pl.row); err != nil {
			if errors.Is(err, cma.ErrNoCapacity) {
				dropped = append(dropped, Decision{Kind: Drop, Player: pl.id, From: p.nodes[s.node].ID})
				p.stats.Drops++
				continue
			}
			return nil, fmt.Errorf("control: internal error: rebuild %q: %w", pl.id, err)
		}
		p.players[pl.id] = pl
		tx.start[pl.id] = s.node
		if s.h.Located {
			pl.located, pl.x, pl.y = true, s.h.X, s.h.Y
			if r := p.cfg.Grid.RegionOf(pl.x, pl.y); r >= 0 {
				pl.region = r
				p.regions[r].players[pl.id] = struct{}{}
			}
		}
	}
	out = append(out, tx.commit("")...)
	out = append(out, dropped...)
	for r, j := range claimed {
		p.regions[r].core = j
	}
	for j := range p.nodes {
		if !p.nodes[j].up {
			out = append(out, p.failRegions(now, j, true)...)
		}
	}
	return out, nil
}
