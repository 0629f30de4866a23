package placement

import (
	"github.com/overworld/overworld/lab/cities"
)

// Report is the outcome of Run.
type Report struct {
	// Config is the configuration run, defaults filled in.
	Config Config
	// Players is the run at Config.Headroom; Sweep the runs at the other
	// headrooms, then at the other probe slacks.
	Players *PlayersRun
	Sweep   []*PlayersRun
	// Regions holds one run per activation policy, "none" first.
	Regions []*RegionRun
	// Seconds is the wall-clock time of the run, set by the caller.
	Seconds float64
}

// Run runs both experiments. progress, when not nil, is called with the
// events done and an estimate of the total.
func Run(cfg Config, progress func(done, total int)) (*Report, error) {
	cfg, err := cfg.Validate()
	if err != nil {
		return nil, err
	}
	pop, pings, err := cities.Population()
	if err != nil {
		return nil, err
	}
	idx, err := cities.Indices(pings, cfg.Servers)
	if err != nil {
		return nil, err
	}
	w := &world{pop: pop, pings: pings, servers: idx, names: cfg.Servers}
	players, script, err := regionScript(&cfg, w)
	if err != nil {
		return nil, err
	}
	pols := regionPolicies(&cfg)
	perRun := int(3 * float64(cfg.Players) * (1 + cfg.Duration.Seconds()/cfg.Session.Seconds()))
	total := perRun*(1+len(cfg.Sweep)+len(cfg.SlackSweep)) + len(script)*len(pols)
	done := 0
	tick := func() {
		done++
		if progress != nil && done%500 == 0 {
			progress(min(done, total), total)
		}
	}
	rep := &Report{Config: cfg}
	type variant struct{ headroom, slack float64 }
	vs := []variant{{cfg.Headroom, cfg.ProbeSlack}}
	for _, h := range cfg.Sweep {
		vs = append(vs, variant{h, cfg.ProbeSlack})
	}
	for _, k := range cfg.SlackSweep {
		vs = append(vs, variant{cfg.Headroom, k})
	}
	for i, v := range vs {
		start := done
		r, err := runPlayers(&cfg, w, v.headroom, v.slack, tick)
		if err != nil {
			return nil, err
		}
		done = start + perRun
		if i == 0 {
			rep.Players = r
		} else {
			rep.Sweep = append(rep.Sweep, r)
		}
	}
	for _, pol := range pols {
		r, err := runRegion(&cfg, w, players, script, pol, tick)
		if err != nil {
			return nil, err
		}
		rep.Regions = append(rep.Regions, r)
	}
	if progress != nil {
		progress(total, total)
	}
	return rep, nil
}
