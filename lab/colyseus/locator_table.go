package colyseus

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/overworld/overworld/arena"
	"github.com/overworld/overworld/discovery"
	"github.com/overworld/overworld/internal/locate"
	"github.com/overworld/overworld/lab/harness"
	"github.com/overworld/overworld/lab/report"
	"github.com/overworld/overworld/sim"
	"github.com/overworld/overworld/wire"
)

// WriteTable prints every selected experiment beside the paper's numbers.
func (r *Report) WriteTable(w io.Writer) error {
	c := r.Config
	fmt.Fprintf(w, "Colyseus (Bharambe et al., NSDI 2006) §5–§7: the distributed object locator (locate.Mercury on internal/ring)\n")
	fmt.Fprintf(w, "network   PlanetLab slice %d, seed %d; bandwidth = bytes/s incl. 28-byte IPv4/UDP headers; p2p = 1 bot per node, fed = %d\n",
		c.Slice, c.Seed, c.FedPlayers)
	if !c.Net.Perfect() {
		fmt.Fprintf(w, "          beside the latencies, every packet: %s\n", c.Net)
	}
	fmt.Fprintf(w, "runs      %d worlds; scale sweep %v each, federated %v (load balancing: %v); the paper's runs are 8 min, measured over 5\n\n",
		len(r.Runs), c.ScaleDuration, c.FedDuration, c.BalanceDuration)
	t := &tables{w: w}
	for _, sec := range []struct {
		on    bool
		write func(*tables) error
	}{
		{c.has(ExpFig7b), r.writeFig7b}, {c.has(ExpTable1), r.writeTable1}, {c.has(ExpFig8), r.writeFig8},
		{c.has(ExpFig9, ExpFig10, ExpFig11), r.writeScale}, {c.has(ExpTable2), r.writeTable2}, {c.has(ExpFig12), r.writeFig12},
	} {
		if sec.on {
			if err := sec.write(t); err != nil {
				return err
			}
		}
	}
	return nil
}

// tables prints a report's tables one after another to w, each through
// a fresh tabwriter (start) and followed by a blank line (flush).
type tables struct {
	w  io.Writer
	tw *tabwriter.Writer
}

func (t *tables) start()                       { t.tw = tabwriter.NewWriter(t.w, 0, 0, 2, ' ', 0) }
func (t *tables) p(format string, args ...any) { fmt.Fprintf(t.tw, format, args...) }

func (t *tables) flush() error {
	if err := t.tw.Flush(); err != nil {
		return err
	}
	_, err := fmt.Fprintln(t.w)
	return err
}

// msText formats a duration in whole milliseconds.
func msText(d time.Duration) string { return fmt.Sprintf("%.0f", float64(d)/float64(time.Millisecond)) }

// writeFig7b prints Fig. 7(b): the share of updates that bypass discovery, per kind.
func (r *Report) writeFig7b(t *tables) error {
	c, w := r.Config, t.w
	p, flush, newTW, pct := t.p, t.flush, t.start, report.Pct
	m := c.fig7bMap()
	fmt.Fprintf(w, "Fig. 7(b): updates that bypass discovery (object already in the node's view at its previous frame), p2p-%s, %s\n", m, c.KeyMaps[0])
	fmt.Fprintf(w, "          (the paper: 96-fed-rect as if every player were on its own node); held = already replicated when it entered the view\n")
	newTW()
	p("nodes\tbots direct\tmissiles direct\titems direct\tall direct\tbots held\tmissiles held\titems held\t\n")
	for _, n := range c.ScaleNodes {
		run := r.scale(m, c.KeyMaps[0], n)
		if run == nil {
			continue
		}
		var upd, dir uint64
		cells := make([]string, 0, 7)
		for _, k := range []string{kindBot, kindMissile, kindItem} {
			kv, _ := run.Kind(k)
			upd += kv.Updates
			dir += kv.Direct
			cells = append(cells, pct(kv.DirectShare()))
		}
		cells = append(cells, pct(ratio(dir, upd)))
		for _, k := range []string{kindBot, kindMissile, kindItem} {
			kv, _ := run.Kind(k)
			cells = append(cells, pct(kv.HeldOnEntryShare()))
		}
		p("%d\t%s\t\n", n, strings.Join(cells, "\t"))
	}
	p("paper\t%.2f%%\t%.2f%%\t–\t%.2f%%\t\t\t\t\n", paperDirect[kindBot], paperDirect[kindMissile], paperDirect["all"])
	return flush()
}

// writeTable1 prints Table 1: missing missiles with proactive replication on and off.
func (r *Report) writeTable1(t *tables) error {
	c, w := r.Config, t.w
	p, flush, newTW, pct := t.p, t.flush, t.start, report.Pct
	fmt.Fprintf(w, "Table 1: missing missiles, proactive replication on / off, fed-rect (%d bots per node), %s\n", c.FedPlayers, c.KeyMaps[0])
	newTW()
	p("nodes\tplayers\ton 0 ms\toff 0 ms\ton 100 ms\toff 100 ms\tpaper on / off (0 ms)\tall objects on / off\t\n")
	for _, n := range c.ProactiveNodes {
		on := r.fed(n, c.KeyMaps[0], c.FedDuration, discovery.DefaultPredTime, false, false)
		off := r.fed(n, c.KeyMaps[0], c.FedDuration, discovery.DefaultPredTime, false, true)
		if on == nil || off == nil {
			continue
		}
		kon, _ := on.Kind(kindMissile)
		koff, _ := off.Kind(kindMissile)
		paper := "–"
		if v, ok := paperProactive[n]; ok {
			paper = fmt.Sprintf("%.1f%% / %.1f%%", v[0], v[1])
		}
		p("%d\t%d\t%s\t%s\t%s\t%s\t%s\t%s / %s\t\n", n, n*c.FedPlayers, pct(kon.MissingAt(0)), pct(koff.MissingAt(0)),
			pct(kon.MissingAt(1)), pct(koff.MissingAt(1)), paper,
			pct(on.Result.Summary.Views.Missing[0].Fraction), pct(off.Result.Summary.Views.Missing[0].Fraction))
	}
	if err := flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "paper (on / off): 28 nodes %.1f%% / %.1f%%, 50 nodes %.1f%% / %.1f%%, 96 nodes %.1f%% / %.1f%%; at 400 players, 100 ms after\n",
		paperProactive[28][0], paperProactive[28][1], paperProactive[50][0], paperProactive[50][1], paperProactive[96][0], paperProactive[96][1])
	fmt.Fprintf(w, "creation, 3.4%% of missiles missing on vs 28%% off\n\n")
	return nil
}

// writeFig8 prints Fig. 8: the PredTime sweep.
func (r *Report) writeFig8(t *tables) error {
	c, w := r.Config, t.w
	p, flush, newTW, pct := t.p, t.flush, t.start, report.Pct
	fmt.Fprintf(w, "Fig. 8: PredTime sweep, %d-fed-rect, %s (paper: bandwidth lowest near 1 s; missing players flat)\n", c.PredNodes, c.KeyMaps[0])
	newTW()
	p("PredTime\tnode kB/s\trouting\tmatching\tmaintenance\tupdate\tmissing bots 0 ms\t100 ms\tall 0 ms\t\n")
	best, bestBW := time.Duration(-1), 0.0
	for _, pt := range c.PredTimes {
		run := r.fed(c.PredNodes, c.KeyMaps[0], c.FedDuration, predTime(pt), false, false)
		if run == nil {
			continue
		}
		res := run.Result
		kv, _ := run.Kind(kindBot)
		bc := res.Players.ByClass
		p("%v\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%s\t%s\t%s\t\n", pt, res.Players.Mean.Total/1e3, bc[wire.ClassDiscovery].Total/1e3,
			bc[wire.ClassMatching].Total/1e3, bc[wire.ClassMaintenance].Total/1e3, bc[wire.ClassUpdate].Total/1e3,
			pct(kv.MissingAt(0)), pct(kv.MissingAt(1)), pct(res.Summary.Views.Missing[0].Fraction))
		if best < 0 || res.Players.Mean.Total < bestBW {
			best, bestBW = pt, res.Players.Mean.Total
		}
	}
	if err := flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "sweet spot (least bandwidth): %v (paper ≈ 1 s)\n\n", best)
	return nil
}

// writeScale prints Figs. 9–11: the peer-to-peer scale sweep and the claims at
// its headline node count (and, with PaperRouting, writeRouting).
func (r *Report) writeScale(t *tables) error {
	c, w := r.Config, t.w
	p, flush, newTW, ms := t.p, t.flush, t.start, msText
	fmt.Fprintf(w, "Figs. 9–11: p2p scale sweep. out = per-node outbound kB/s (Fig. 9); discovery = median ms from sending a publication or\n")
	fmt.Fprintf(w, "subscription to receiving its match, and its routing and matching parts (Fig. 10); missing at 0/100/400 ms grace (Fig. 11)\n")
	newTW()
	p("map\tkeymap\tnodes\tout kB/s\trouting\tmatching\tmaint.\tupdate\tdisc. ms\trouting\tmatching\thops\tmissing 0/100/400 ms\tentry→held mean ms\t× real time\t\n")
	for _, m := range c.ScaleMaps {
		for _, km := range c.KeyMaps {
			for _, n := range c.ScaleNodes {
				run := r.scale(m, km, n)
				if run == nil {
					continue
				}
				st, s := &run.Ring.Stats, run.Result.Summary
				o := run.Out
				p("%s\t%s\t%d\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t%s\t%s\t%s\t%.2f\t%s\t%.0f\t%s\t\n", m, km, n, run.OutTotal/1e3,
					o[wire.ClassDiscovery]/1e3, o[wire.ClassMatching]/1e3, o[wire.ClassMaintenance]/1e3, o[wire.ClassUpdate]/1e3,
					ms(st.Latency.Quantile(0.5)), ms(st.Routing.Quantile(0.5)), ms(st.Matching.Quantile(0.5)), run.Ring.Hops,
					missing3(s.Views.Missing), s.Views.Discovery.Mean, speedText(run.Result.SpeedFactor()))
			}
		}
	}
	if err := flush(); err != nil {
		return err
	}
	newTW()
	p("claim\tpaper\toverworld\t\n")
	at := headlineNodes(c.ScaleNodes, 64)
	for _, m := range c.ScaleMaps {
		for _, km := range c.KeyMaps {
			run := r.scale(m, km, at)
			if run == nil {
				continue
			}
			st := &run.Ring.Stats
			if c.has(ExpFig11) {
				paper := "–"
				if m == arena.Sqr && at == 64 {
					paper = fmt.Sprintf("≈ %.0f%% / %.0f%% / %.0f%% (target ≤ %.0f%% / %.0f%% / %.1f%%)", paperMissing64[0], paperMissing64[1],
						paperMissing64[2], paperMissing64[0]/2, paperMissing64[1]/2, paperMissing64[2]/2)
				}
				p("missing 0/100/400 ms, p2p-%s, %s, %d nodes\t%s\t%s\t\n", m, km, at, paper, missing3(run.Result.Summary.Views.Missing))
				if ow := r.overworld(at); ow != nil && m == arena.Sqr && km == c.KeyMaps[0] {
					p("missing 0/100/400 ms, p2p-sqr, %s + prefetch %g m and pushes, %d nodes (%.1f kB/s per node)\t%s\t%s\t\n", km, c.Prefetch, at,
						ow.Result.Players.Mean.Total/1e3, "target ≤ 2% / 1% / 0.5%", missing3(ow.Result.Summary.Views.Missing))
				}
			}
			if c.has(ExpFig10) {
				p("median discovery, p2p-%s, %s, %d nodes\ttarget < 200 ms; hops ≤ 3\t%s ms; hops mean %.2f, p99 %d\t\n", m, km, at,
					ms(st.Latency.Quantile(0.5)), run.Ring.Hops, run.Ring.HopsP99)
			}
		}
	}
	if c.has(ExpFig9) && slices.Contains(c.KeyMaps, locate.KeyMapRegions) {
		hi := c.ScaleNodes[len(c.ScaleNodes)-1]
		for _, m := range c.ScaleMaps {
			d := r.scale(m, locate.KeyMapRegions, hi)
			for _, km := range c.KeyMaps {
				rr := r.scale(m, km, hi)
				if km == locate.KeyMapRegions || d == nil || rr == nil {
					continue
				}
				p("locator out (routing+matching+maint.), p2p-%s, %d nodes: %s ÷ dht\t< 1 (rangedht cheaper)\t%.2f\t\n", m, hi, km,
					locatorOut(rr)/max(locatorOut(d), 1e-9))
				dp, rp := r.scaleRouting(m, locate.KeyMapRegions, hi, true), r.scaleRouting(m, km, hi, true)
				if c.PaperRouting && dp != nil && rp != nil {
					p("same, the paper's routing (no route cache, 4 long links)\t< 1 (rangedht cheaper)\t%.2f\t\n",
						locatorOut(rp)/max(locatorOut(dp), 1e-9))
				}
			}
		}
	}
	if err := flush(); err != nil {
		return err
	}
	if c.has(ExpFig9) && c.PaperRouting {
		if err := r.writeRouting(w); err != nil {
			return err
		}
	}
	return nil
}

// writeTable2 prints Table 2: load balancing, on the model and the hot-spot workloads.
func (r *Report) writeTable2(t *tables) error {
	c, w := r.Config, t.w
	p, flush, newTW := t.p, t.flush, t.start
	fmt.Fprintf(w, "Table 2: load balancing, %d-fed-rect, %v: per-node bandwidth (in + out) normalised by the mean; missing at 0 ms, mean ± std over nodes;\n",
		c.BalanceNodes, c.BalanceDuration)
	fmt.Fprintf(w, "ring load (publications and subscriptions routed to a node per second, 30 s window) max ÷ mean when the window first fills\n")
	fmt.Fprintf(w, "(before any move) and at the end; a node moves when it is below 0.5× and a sampled peer above 2× the mean it sees\n")
	newTW()
	p("workload\tsetting\ttotal std\ttotal max\tmatching std\tmatching max\tmissing\tnode kB/s\tmoves\tload max before → after\t\n")
	for _, z := range c.balanceTiles() {
		var dhtMat float64
		wl := "model"
		if z > 0 {
			wl = fmt.Sprintf("hot spots (tile Zipf %g)", z)
		}
		for _, b := range balanceRuns {
			run := r.fedTiles(c.BalanceNodes, b.keyMap, c.BalanceDuration, discovery.DefaultPredTime, b.balance, false, z)
			if run == nil {
				continue
			}
			ts, tm := run.Total.Norm()
			mstd, mm := run.Matching.Norm()
			label := b.keyMap
			if b.balance {
				label += " + loadbal"
			}
			if b.keyMap == locate.KeyMapRegions {
				dhtMat = mm
			}
			rel := ""
			if dhtMat > 0 && b.keyMap != locate.KeyMapRegions {
				rel = fmt.Sprintf(" (%+.0f%% vs dht)", 100*(mm/dhtMat-1))
			}
			_, lb := run.LoadBefore.Norm()
			_, la := run.LoadAfter.Norm()
			p("%s\t%s\t%.2f\t%.2f\t%.2f\t%.2f%s\t%.0f%% ± %.0f%%\t%.1f\t%d\t%.2f → %.2f\t\n", wl, label, ts, tm, mstd, mm, rel,
				100*run.MissingNodes.Mean, 100*run.MissingNodes.Std, run.Total.Mean/1e3, run.Moves, lb, la)
		}
	}
	for _, pb := range paperBalance {
		p("paper\t%s\t%.2f\t%.2f\t%.2f\t%.2f\t%s\t\t\t\t\n", pb.label, pb.totStd, pb.totMax, pb.matStd, pb.matMax, pb.missing)
	}
	p("paper\tloadbal max matching vs dht\t\t\t\t−42%%\t\t\t\t\t\n")
	if err := flush(); err != nil {
		return err
	}
	var moves uint64
	loadMax := 0.0
	for _, b := range balanceRuns {
		run := r.fedTiles(c.BalanceNodes, b.keyMap, c.BalanceDuration, discovery.DefaultPredTime, b.balance, false, 0)
		if run == nil || b.keyMap == locate.KeyMapRegions {
			continue
		}
		moves += run.Moves
		_, lb := run.LoadBefore.Norm()
		loadMax = max(loadMax, lb)
	}
	fmt.Fprintf(w, "The model workload: %d moves in all under rangedht, whose ring load is at most %.2f× the mean before any move.\n", moves, loadMax)
	fmt.Fprintf(w, "Popularity is ranked per 16-player tile and bots choose nearby goals, so player density is the same in every tile\n")
	fmt.Fprintf(w, "and a node's range averages over part of one; the rule wants a light node to sample a peer above 2× its mean.\n")
	fmt.Fprintf(w, "Hot-spot tiles (a few tiles get most spawns, respawns and visits) skew the load as the paper's traces do.\n\n")
	return nil
}

// writeFig12 prints Fig. 12(a): per-node bandwidth of colyseus and the baselines.
func (r *Report) writeFig12(t *tables) error {
	c, w := r.Config, t.w
	p, flush, newTW := t.p, t.flush, t.start
	fmt.Fprintf(w, "Fig. 12(a): per-node bandwidth (in + out), p2p-rect; colyseus with the key mapping the map's shape picks (%s from 32 nodes on)\n",
		harness.AutoKeyMap(arena.Rect, 32))
	newTW()
	p("nodes\tcolyseus kB/s\taggregate kB/s\tbroadcast kB/s\tclient-server node\tcentral server\tbroadcast ÷ colyseus\tserver ÷ colyseus\taggregate ÷ server\t\n")
	for _, n := range c.ScaleNodes {
		co, bc, cs := r.baseline(discovery.Colyseus, n), r.baseline(discovery.Broadcast, n), r.baseline(discovery.ClientServer, n)
		if co == nil || bc == nil || cs == nil {
			continue
		}
		cn := co.Result.Players.Mean.Total
		p("%d\t%.2f\t%.1f\t%.2f\t%.2f\t%.1f\t%.2f×\t%.2f×\t%.2f×\t\n", n, cn/1e3, co.Result.Aggregate/1e3,
			bc.Result.Players.Mean.Total/1e3, cs.Result.Players.Mean.Total/1e3, cs.Result.Infra.Mean.Total/1e3,
			bc.Result.Players.Mean.Total/cn, cs.Result.Infra.Mean.Total/cn, co.Result.Aggregate/cs.Result.Infra.Mean.Total)
	}
	p("paper\t\t\t\t\t\t≈ 10× at scale (< 1 at 9)\t≈ 10×\t≈ 5\t\n")
	p("target\t\t\t\t\t\t≥ 10× at 96+ nodes\t\t\t\n")
	return flush()
}

// writeRouting prints Fig. 9's comparison of overworld's routing with the
// paper's, per map and key mapping at 64 nodes (or the nearest) and the
// largest node count, with the explanation.
func (r *Report) writeRouting(w io.Writer) error {
	c := r.Config
	fmt.Fprintf(w, "Fig. 9, routing: overworld's ring (a route cache of 2·log2(n) entries, %d long links) against the paper's\n", discovery.RingLinks)
	fmt.Fprintf(w, "(no route cache, %d long links). hops = to a publication's or a range's first owner; cache = share of routes that\n", discovery.PaperRingLinks)
	fmt.Fprintf(w, "took a route-cache hop; frames/sub = route frames per subscription: its key ranges × hops, plus one per further\n")
	fmt.Fprintf(w, "owner a range walk reaches\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "map\tkeymap\tnodes\trouting\tlocator out kB/s\trouting\tmatching\tmaint.\thops\tcache\tranges/sub\towners/sub\tframes/sub\t÷ dht\t\n")
	nodes := []int{headlineNodes(c.ScaleNodes, 64)}
	if hi := c.ScaleNodes[len(c.ScaleNodes)-1]; hi != nodes[0] {
		nodes = append(nodes, hi)
	}
	for _, m := range c.ScaleMaps {
		for _, n := range nodes {
			for _, paper := range []bool{false, true} {
				d := r.scaleRouting(m, locate.KeyMapRegions, n, paper)
				for _, km := range c.KeyMaps {
					run := r.scaleRouting(m, km, n, paper)
					if run == nil {
						continue
					}
					name, rel := "overworld", "–"
					if paper {
						name = "paper"
					}
					if d != nil && km != locate.KeyMapRegions {
						rel = fmt.Sprintf("%.2f", locatorOut(run)/max(locatorOut(d), 1e-9))
					}
					st, o := &run.Ring.Stats, run.Out
					fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t%.0f%%\t%.2f\t%.2f\t%.1f\t%s\t\n", m, km, n, name,
						locatorOut(run)/1e3, o[wire.ClassDiscovery]/1e3, o[wire.ClassMatching]/1e3, o[wire.ClassMaintenance]/1e3, run.Ring.Hops,
						100*ratio(run.Ring.CacheHits, run.Ring.Routed), ratio(st.RangesRouted, st.SubsSent), ratio(st.SubsStored, st.SubsSent),
						run.Ring.FramesPerSub(), rel)
				}
			}
		}
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("lab/colyseus: %w", err)
	}
	for _, line := range []string{
		"Why (the columns above): dht splits a subscription into one lookup per region it meets (ranges/sub), rangedht-x",
		"routes one range that walks every owner it covers (owners/sub: constant on rect maps, growing as √n on sqr ones).",
		"Without a route cache every lookup pays the ring's full hop count, so dht's lookups cost more route frames than a",
		"range walk wherever the walk is short, and the paper's ranking appears (÷ dht < 1; not for rangedht-x on large sqr",
		"maps, whose walks grow). With overworld's cache a lookup takes about one hop under every key",
		"mapping: a player's regions stay the same for seconds, so their few owners stay cached although the keys are",
		"hashed (the paper's \"lack of locality\" does not defeat a route cache), and dht's lookups become nearly direct",
		"while a range walk still costs one frame per owner. The cache decides, not the long links (README).",
	} {
		fmt.Fprintln(w, line)
	}
	fmt.Fprintln(w)
	return nil
}

// locatorOut is a run's per-node outbound locator bandwidth: routing,
// matching and maintenance.
func locatorOut(run *WorldRun) float64 {
	return run.Out[wire.ClassDiscovery] + run.Out[wire.ClassMatching] + run.Out[wire.ClassMaintenance]
}

func missing3(m []sim.Missing) string {
	s := ""
	for k, x := range m {
		if k > 0 {
			s += " / "
		}
		s += fmt.Sprintf("%.1f%%", 100*x.Fraction)
	}
	return s
}

// ratio is a over b, 0 when b is 0.
func ratio(a, b uint64) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}
