package control

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/overworld/overworld/geo"
	"github.com/overworld/overworld/place/core"
	"github.com/overworld/overworld/wire"
)

// region is what the plane knows of one region of the grid.
type region struct {
	core     int // node index
	players  map[string]struct{}
	churn    int
	arrivals []time.Duration
	last     time.Duration
	selected bool
}

// maxArrivals bounds the arrival times a region keeps between selections.
const maxArrivals = 1024

// RegionState is what an activation Policy sees of one region at a Tick.
type RegionState struct {
	Region int
	// Core is the node hosting the region.
	Core wire.NodeID
	// Players is the number of players in the region.
	Players int
	// Churn counts the players that joined, left, entered or left the
	// region since its last core selection.
	Churn int
	// Arrivals holds the times players joined or entered the region since
	// its last selection (the latest 1,024), oldest first.
	Arrivals []time.Duration
	// CoreLoad is the players on the core node over its capacity.
	CoreLoad float64
	// LastSelection is when core selection last ran for the region;
	// Selected is false when it never has.
	LastSelection time.Duration
	Selected      bool
}

// Policy is an activation policy (the region-migration paper's §7.4, first
// stage): it decides, at each Tick and for each region with players,
// whether core selection re-runs. Whether the region then migrates is the
// second stage, the same for every policy: the aggregate latency gain must
// reach Config.MigrationCost. A Policy must be a pure function of its
// arguments.
type Policy interface {
	Name() string
	Due(now time.Duration, r RegionState) bool
}

// Churn re-runs selection once Events players have joined, left, entered
// or left the region since the last selection.
type Churn struct{ Events int }

func (c Churn) Name() string { return "churn" }

func (c Churn) Due(_ time.Duration, r RegionState) bool { return r.Churn >= max(c.Events, 1) }

// ArrivalRate re-runs selection when players arrive in the region (join
// or enter it) at PerSecond or more, averaged over the last Window.
type ArrivalRate struct {
	Window    time.Duration
	PerSecond float64
}

func (a ArrivalRate) Name() string { return "arrivals" }

func (a ArrivalRate) Due(now time.Duration, r RegionState) bool {
	if a.Window <= 0 {
		return false
	}
	n := 0
	for _, t := range r.Arrivals {
		if t > now-a.Window {
			n++
		}
	}
	return float64(n)/a.Window.Seconds() >= a.PerSecond
}

// Load re-runs selection when the load of the region's core node leaves
// [Low, High] (a loaded server sheds regions; an emptying one is a sign
// that its players have gone elsewhere), at most once per Every.
type Load struct {
	Low, High float64
	Every     time.Duration
}

func (l Load) Name() string { return "load" }

func (l Load) Due(now time.Duration, r RegionState) bool {
	if r.Selected && now-r.LastSelection < l.Every {
		return false
	}
	return r.CoreLoad < l.Low || r.CoreLoad > l.High
}

// Periodic re-runs selection every Every (the paper's time of day, at the
// granularity the operator chooses).
type Periodic struct{ Every time.Duration }

func (p Periodic) Name() string { return "periodic" }

func (p Periodic) Due(now time.Duration, r RegionState) bool {
	return !r.Selected || now-r.LastSelection >= p.Every
}

// PolicyNames lists the policies PolicyNamed knows, the default first.
var PolicyNames = []string{"periodic", "churn", "arrivals", "load", "never"}

// PolicyNamed returns the activation policy named s with the settings
// the demos use: periodic (every 10 s; also for ""), churn (8 players
// joined, left, entered or left the region), arrivals (0.5 per second over
// 10 s), load (the core below 25% or above 90% of its seats, at most
// every 10 s), or never (nil: regions move only when their core dies).
func PolicyNamed(s string) (Policy, error) {
	switch s {
	case "", "periodic":
		return Periodic{Every: 10 * time.Second}, nil
	case "churn":
		return Churn{Events: 8}, nil
	case "arrivals":
		return ArrivalRate{Window: 10 * time.Second, PerSecond: 0.5}, nil
	case "load":
		return Load{Low: 0.25, High: 0.9, Every: 10 * time.Second}, nil
	case "never":
		return nil, nil
	}
	return nil, fmt.Errorf("%w: region policy %q: want one of %s", ErrConfig, s, strings.Join(PolicyNames, ", "))
}

// Locate sets a player's position in the world, which puts it in a region
// of the grid. Entering a region counts as an arrival there.
func (p *Plane) Locate(now time.Duration, id string, x, y float64) error {
	if err := p.checkTime(now); err != nil {
		return err
	}
	pl, ok := p.players[id]
	if !ok {
		return fmt.Errorf("%w: %q is not placed", ErrUnknownPlayer, id)
	}
	if !finite(x) || !finite(y) {
		return fmt.Errorf("%w: player %q at (%v, %v)", ErrBadPosition, id, x, y)
	}
	p.now = now
	pl.located, pl.x, pl.y = true, x, y
	r := p.cfg.Grid.RegionOf(x, y)
	if r == pl.region {
		return nil
	}
	p.unlocate(now, pl)
	pl.region = r
	if r >= 0 {
		rg := &p.regions[r]
		rg.players[id] = struct{}{}
		rg.churn++
		rg.arrivals = append(rg.arrivals, now)
		if len(rg.arrivals) > maxArrivals {
			rg.arrivals = rg.arrivals[len(rg.arrivals)-maxArrivals:]
		}
	}
	return nil
}

// unlocate takes a player out of its region.
func (p *Plane) unlocate(_ time.Duration, pl *player) {
	if pl.region < 0 {
		return
	}
	rg := &p.regions[pl.region]
	delete(rg.players, pl.id)
	rg.churn++
	pl.region = -1
}

// Regions returns the number of regions.
func (p *Plane) Regions() int { return len(p.regions) }

// Core returns the node hosting a region.
func (p *Plane) Core(r int) (wire.NodeID, bool) {
	if r < 0 || r >= len(p.regions) {
		return 0, false
	}
	return p.nodes[p.regions[r].core].ID, true
}

// RegionOf returns the region a player is in (-1 when it has no position
// or there is no grid).
func (p *Plane) RegionOf(id string) (int, bool) {
	pl, ok := p.players[id]
	if !ok {
		return 0, false
	}
	return pl.region, true
}

// RegionPlayers returns the players in a region, sorted.
func (p *Plane) RegionPlayers(r int) []string {
	if r < 0 || r >= len(p.regions) {
		return nil
	}
	out := make([]string, 0, len(p.regions[r].players))
	for id := range p.regions[r].players {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}

// State returns what a Policy sees of region r now.
func (p *Plane) State(r int) (RegionState, bool) {
	if r < 0 || r >= len(p.regions) {
		return RegionState{}, false
	}
	rg := &p.regions[r]
	c := rg.core
	load := 0.0
	if p.nodes[c].up {
		load = float64(p.a.Load(c)) / float64(p.nodes[c].Capacity)
	}
	return RegionState{Region: r, Core: p.nodes[c].ID, Players: len(rg.players), Churn: rg.churn,
		Arrivals: slices.Clone(rg.arrivals), CoreLoad: load, LastSelection: rg.last, Selected: rg.selected}, true
}

// Tick asks clients to ping the unmeasured nodes that could matter to
// them (Probe decisions, see Config.ProbeSlack), then runs the activation
// policy on every region with players and returns the region migrations
// that pay.
func (p *Plane) Tick(now time.Duration) ([]Decision, error) {
	if err := p.checkTime(now); err != nil {
		return nil, err
	}
	p.now = now
	out := p.explore()
	if p.cfg.Policy == nil {
		return out, nil
	}
	out = p.exploreRegions(out)
	for r := range p.regions {
		if len(p.regions[r].players) == 0 {
			continue
		}
		st, _ := p.State(r)
		if !p.cfg.Policy.Due(now, st) {
			continue
		}
		best, gain, err := p.selectCore(now, r)
		if err != nil {
			return out, err
		}
		if best != p.regions[r].core && gain >= p.cfg.MigrationCost {
			out = append(out, p.migrate(r, best, gain, false))
		}
	}
	return out, nil
}

// exploreRegions adds to out (a Tick's Probe decisions) the nodes each
// region's players are asked to ping: the current core and every node up
// whose aggregate RTT over the region's players, on what the plane knows,
// is within Config.RegionSlack of the least, where the player's RTT to it
// is an estimate it was never asked to measure. A node is asked for once
// per player.
func (p *Plane) exploreRegions(out []Decision) []Decision {
	if p.cfg.RegionSlack <= 0 {
		return out
	}
	at := map[string]int{} // player → its Probe decision in out
	for i, d := range out {
		at[d.Player] = i
	}
	sum := make([]float64, len(p.nodes))
	for r := range p.regions {
		rg := &p.regions[r]
		if len(rg.players) == 0 {
			continue
		}
		ids := p.RegionPlayers(r)
		clear(sum)
		for _, id := range ids {
			for j, v := range p.players[id].row {
				sum[j] += v
			}
		}
		best := math.Inf(1)
		for j, n := range p.nodes {
			if n.up {
				best = min(best, sum[j])
			}
		}
		for _, id := range ids {
			pl := p.players[id]
			var ns []wire.NodeID
			for j, n := range p.nodes {
				contends := j == rg.core || sum[j]*(1-p.cfg.RegionSlack) <= best
				if n.up && contends && math.IsNaN(pl.meas[j]) && !pl.asked[j] {
					pl.asked[j] = true
					ns = append(ns, n.ID)
				}
			}
			if len(ns) == 0 {
				continue
			}
			p.stats.Probes += len(ns)
			if i, ok := at[id]; ok {
				out[i].Probe = append(out[i].Probe, ns...)
				continue
			}
			at[id] = len(out)
			out = append(out, Decision{Kind: Probe, Player: id, Probe: ns})
		}
	}
	return out
}

// selectCore runs core selection for region r on the nodes that are up
// and returns the best node and the aggregate latency gain of moving
// there (+Inf when the current core is down). It resets the region's
// activation counters.
func (p *Plane) selectCore(now time.Duration, r int) (int, float64, error) {
	rg := &p.regions[r]
	rg.churn, rg.arrivals, rg.last, rg.selected = 0, nil, now, true
	p.stats.Selections++
	var cand []int
	for j, n := range p.nodes {
		if n.up {
			cand = append(cand, j)
		}
	}
	ids := p.RegionPlayers(r)
	if len(ids) == 0 {
		home := p.index[p.cfg.RegionHome]
		if !p.nodes[home].up {
			home = cand[0]
		}
		return home, math.Inf(1), nil
	}
	cols := make([]string, len(cand))
	for k, j := range cand {
		cols[k] = strconv.FormatUint(uint64(p.nodes[j].ID), 10)
	}
	data := make([][]float64, len(ids))
	cur := 0.0
	for i, id := range ids {
		pl := p.players[id]
		row := make([]float64, len(cand))
		for k, j := range cand {
			row[k] = pl.row[j]
		}
		data[i] = row
		cur += pl.row[rg.core]
	}
	m, err := geo.NewMatrix(ids, cols, data)
	if err != nil {
		return 0, 0, fmt.Errorf("control: internal error: region %d latencies: %w", r, err)
	}
	sol, err := core.Exact(core.Problem{PlayerCore: m, K: 1, Objective: core.KMedian})
	if err != nil {
		return 0, 0, fmt.Errorf("control: internal error: region %d core selection: %w", r, err)
	}
	best := cand[sol.Cores[0]]
	if !p.nodes[rg.core].up {
		return best, math.Inf(1), nil
	}
	return best, cur - sol.Sum, nil
}

func (p *Plane) migrate(r, to int, gain float64, failover bool) Decision {
	rg := &p.regions[r]
	d := Decision{Kind: MigrateRegion, Region: r, From: p.nodes[rg.core].ID, To: p.nodes[to].ID, Failover: failover, Gain: gain}
	if failover {
		d.Gain = 0
		p.stats.Failovers++
	}
	rg.core = to
	p.stats.Migrations++
	return d
}

// failRegions moves every region whose core is node j (down, or being
// drained) to its best node; failover marks the migrations as a dead
// core's.
func (p *Plane) failRegions(now time.Duration, j int, failover bool) []Decision {
	var out []Decision
	for r := range p.regions {
		if p.regions[r].core != j {
			continue
		}
		best, _, err := p.selectCore(now, r)
		if err != nil {
			continue // cannot happen: the latencies are valid by construction
		}
		out = append(out, p.migrate(r, best, 0, failover))
	}
	return out
}
