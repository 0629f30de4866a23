package placement

import (
	"fmt"
	"math"
	"math/rand/v2"
	"time"

	"github.com/overworld/overworld/control"
	"github.com/overworld/overworld/geo"
	"github.com/overworld/overworld/wire"
)

// RegionRun is the region scenario under one activation policy.
type RegionRun struct {
	// Policy is the policy's name ("none": selection never re-runs).
	Policy string
	// Ratio holds, for each hour, the region's aggregate true RTT on its
	// core at the end of the hour over that of the best core then.
	Ratio []float64
	// Europe holds the share of the region's players in Europe at the end
	// of each hour.
	Europe []float64
	// Core holds the core's city at the end of each hour.
	Core []string
	// Migrations and Selections count the plane's region migrations and
	// core selections.
	Migrations, Selections int
	// Probes counts the pings the plane asked the region's players for
	// beyond an Admit's: the nodes that contend for the core.
	Probes int
}

// WorstRatio returns the largest hourly ratio.
func (r *RegionRun) WorstRatio() float64 {
	x := 0.0
	for _, v := range r.Ratio {
		x = max(x, v)
	}
	return x
}

// inEurope and inAmerica are coarse boxes around Europe and North
// America.
func inEurope(c geo.City) bool  { return c.Lat > 35 && c.Lat < 72 && c.Lon > -25 && c.Lon < 45 }
func inAmerica(c geo.City) bool { return c.Lat > 15 && c.Lat < 72 && c.Lon > -170 && c.Lon < -50 }

// regionPolicies returns the policies compared, tuned to the scenario's
// scale: N players, arrivals at N per hour.
func regionPolicies(cfg *Config) []control.Policy {
	n := cfg.RegionPlayers
	rate := float64(n) / cfg.Hour.Seconds()
	return []control.Policy{
		nil,
		control.Churn{Events: max(1, n/5)},
		control.ArrivalRate{Window: cfg.Hour / 5, PerSecond: 1.2 * rate},
		control.Load{Low: 0.3, High: 0.95, Every: cfg.Hour},
		control.Periodic{Every: cfg.Hour / 2},
	}
}

// PolicyLabel describes a policy with its parameters.
func PolicyLabel(p control.Policy) string {
	switch p := p.(type) {
	case nil:
		return "none"
	case control.Churn:
		return fmt.Sprintf("churn (%d events)", p.Events)
	case control.ArrivalRate:
		return fmt.Sprintf("arrivals (≥ %.2f/s over %v)", p.PerSecond, p.Window)
	case control.Load:
		return fmt.Sprintf("load (outside %.0f–%.0f%%, ≤ 1 per %v)", 100*p.Low, 100*p.High, p.Every)
	case control.Periodic:
		return fmt.Sprintf("periodic (every %v)", p.Every)
	}
	return p.Name()
}

type regionEvent struct {
	at   time.Duration
	kind evKind
	p    int
}

// regionScript draws the scenario once: the players and their arrivals and
// departures, shared by every policy.
func regionScript(cfg *Config, w *world) ([]geo.Player, []regionEvent, error) {
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x7265))
	var eu, am []geo.Player
	for _, pl := range w.pop.Draw(40000, rng) {
		switch {
		case inEurope(pl.City):
			eu = append(eu, pl)
		case inAmerica(pl.City):
			am = append(am, pl)
		}
	}
	if len(eu) == 0 || len(am) == 0 {
		return nil, nil, fmt.Errorf("lab/placement: the population has no players in Europe or North America")
	}
	day := time.Duration(cfg.Hours) * cfg.Hour
	share := func(t time.Duration) float64 {
		h := min(int(t/cfg.Hour), cfg.Hours-1)
		return cfg.EuropeFrom + (cfg.EuropeTo-cfg.EuropeFrom)*float64(h)/float64(cfg.Hours-1)
	}
	var players []geo.Player
	var q queue
	arrive := func(at time.Duration) {
		var pl geo.Player
		if rng.Float64() < share(at) {
			pl = eu[rng.IntN(len(eu))]
		} else {
			pl = am[rng.IntN(len(am))]
		}
		pl.ID = fmt.Sprintf("r%06d", len(players))
		players = append(players, pl)
		p := len(players) - 1
		q.add(event{at: at, kind: evJoin, p: p})
		q.add(event{at: at + cfg.ProbeDelay, kind: evProbe, p: p})
		q.add(event{at: at + time.Duration(rng.ExpFloat64()*float64(cfg.Hour)), kind: evLeave, p: p})
	}
	for range cfg.RegionPlayers {
		arrive(time.Duration(rng.Float64() * float64(time.Minute)))
	}
	rate := float64(cfg.RegionPlayers) / cfg.Hour.Seconds()
	for t := time.Duration(rng.ExpFloat64() / rate * float64(time.Second)); t < day; t += time.Duration(rng.ExpFloat64() / rate * float64(time.Second)) {
		arrive(t)
	}
	for t := 10 * time.Second; t <= day; t += 10 * time.Second {
		q.add(event{at: t, kind: evSnap})
	}
	var out []regionEvent
	for q.Len() > 0 {
		e := q.next()
		if e.at > day {
			continue
		}
		out = append(out, regionEvent{at: e.at, kind: e.kind, p: e.p})
	}
	return players, out, nil
}

// runRegion runs the scenario under one policy. tick is called after
// every event.
func runRegion(cfg *Config, w *world, players []geo.Player, script []regionEvent, pol control.Policy, tick func()) (*RegionRun, error) {
	m := len(w.servers)
	home := -1
	for j, n := range w.names {
		if n == cfg.RegionHome {
			home = j
		}
	}
	if home < 0 {
		return nil, fmt.Errorf("lab/placement: region home %q is not one of the servers", cfg.RegionHome)
	}
	capacity := int(math.Ceil(float64(cfg.RegionPlayers) / 4))
	nodes := make([]control.Node, m)
	for j := range nodes {
		nodes[j] = control.Node{ID: wire.NodeID(j + 1), Site: w.names[j], Capacity: capacity}
	}
	plane, err := control.New(control.Config{Nodes: nodes, NodeRTT: w.nodeRTT(), Probes: cfg.Probes, Seed: cfg.Seed,
		Grid: control.Grid{Width: 1, Height: 1, Cols: 1, Rows: 1}, RegionHome: wire.NodeID(home + 1),
		Policy: pol, MigrationCost: cfg.MigrationCost, ProbeSlack: -1, RegionSlack: cfg.RegionSlack})
	if err != nil {
		return nil, fmt.Errorf("lab/placement: %w", err)
	}
	run := &RegionRun{Policy: PolicyLabel(pol)}
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x7069))
	rows := make([][]float64, len(players))
	online := map[int]bool{}
	probe := map[int][]wire.NodeID{}
	byID := make(map[string]int, len(players))
	for i, pl := range players {
		byID[pl.ID] = i
	}
	next := cfg.Hour
	for _, ev := range script {
		p := ev.p
		switch ev.kind {
		case evJoin:
			if rows[p] == nil {
				rows[p] = w.trueRow(players[p])
			}
			var ss []control.Sample
			for j := range cfg.JoinProbes {
				ss = append(ss, control.Sample{Node: wire.NodeID(j + 1), RTT: ping(rng, rows[p][j], cfg.Jitter)})
			}
			ds, err := plane.Join(ev.at, players[p].ID, ss)
			if err != nil {
				continue // no room: the player does not play
			}
			probe[p] = ds[len(ds)-1].Probe
			online[p] = true
			if err := plane.Locate(ev.at, players[p].ID, 0.5, 0.5); err != nil {
				return nil, fmt.Errorf("lab/placement: %w", err)
			}
		case evProbe:
			if !online[p] {
				continue
			}
			for _, n := range probe[p] {
				if _, err := plane.Measure(ev.at, players[p].ID, n, ping(rng, rows[p][int(n)-1], cfg.Jitter)); err != nil {
					return nil, fmt.Errorf("lab/placement: %w", err)
				}
			}
		case evLeave:
			if !online[p] {
				continue
			}
			if _, err := plane.Leave(ev.at, players[p].ID); err != nil {
				return nil, fmt.Errorf("lab/placement: %w", err)
			}
			delete(online, p)
		case evSnap:
			ds, err := plane.Tick(ev.at)
			if err != nil {
				return nil, fmt.Errorf("lab/placement: %w", err)
			}
			// The pings the plane asks for (close calls of core
			// selection) come back before the next Tick.
			for _, d := range ds {
				if d.Kind != control.Probe {
					continue
				}
				q, ok := byID[d.Player]
				if !ok || !online[q] {
					continue
				}
				for _, n := range d.Probe {
					if _, err := plane.Measure(ev.at, d.Player, n, ping(rng, rows[q][int(n)-1], cfg.Jitter)); err != nil {
						return nil, fmt.Errorf("lab/placement: %w", err)
					}
				}
			}
			if ev.at >= next {
				next += cfg.Hour
				ratio, europe := regionRatio(plane, w, players, rows, online)
				c, _ := plane.Core(0)
				run.Ratio = append(run.Ratio, ratio)
				run.Europe = append(run.Europe, europe)
				run.Core = append(run.Core, w.names[int(c)-1])
			}
		}
		if tick != nil {
			tick()
		}
	}
	st := plane.Stats()
	run.Migrations, run.Selections, run.Probes = st.Migrations, st.Selections, st.Probes
	return run, nil
}

// regionRatio returns the region's aggregate true RTT to its core over
// that to the best core, and the share of its players in Europe.
func regionRatio(plane *control.Plane, w *world, players []geo.Player, rows [][]float64, online map[int]bool) (ratio, europe float64) {
	c, _ := plane.Core(0)
	agg := make([]float64, len(w.servers))
	n, eu := 0, 0
	for p := range players {
		if !online[p] {
			continue
		}
		n++
		if inEurope(players[p].City) {
			eu++
		}
		for j, v := range rows[p] {
			agg[j] += v
		}
	}
	if n == 0 {
		return 1, 0
	}
	best := math.Inf(1)
	for _, v := range agg {
		best = min(best, v)
	}
	return agg[int(c)-1] / best, float64(eu) / float64(n)
}
