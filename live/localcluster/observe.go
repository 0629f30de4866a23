package localcluster

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"time"

	"github.com/overworld/overworld/live"
	"github.com/overworld/overworld/truth"
	"github.com/overworld/overworld/wire"
	"github.com/overworld/overworld/world"
)

// ObserveConfig says how Observe samples a running cluster.
type ObserveConfig struct {
	// Every is the period of the world snapshots fed to Truth (0: every
	// frame; longer lightens the nodes' CPU).
	Every time.Duration
	// Truth receives the nodes' snapshots (every frame of every node,
	// truth.Observer.Frame in time order; or, with Every longer than a
	// frame, a truth.Observer.Sample of every node; nil: no snapshots are
	// taken). Its Infra must be the cluster's Rendezvous.
	Truth *truth.Observer
	// Kinds names the game's kinds (schema name → kind), so that Truth's
	// per-kind measures (truth.Observer.TrackKinds) know each primary's;
	// nil: every kind unknown.
	Kinds map[string]world.Kind
	// Progress, if set, is called with the time since the epoch,
	// truncated to the second, whenever that changes at a sample.
	Progress func(elapsed time.Duration)
	// Faults are signals to send to nodes while the cluster runs (a
	// SIGKILL fails a node, a SIGTERM drains and stops it).
	Faults []Fault
	// Died, if set, is called as soon as Observe sees a node process end
	// (Death's first fields: which node, when, how, its primaries).
	Died func(Death)
}

// Fault is a signal Observe sends node process Index (an index of IDs)
// After it began.
type Fault struct {
	Index  int
	After  time.Duration
	Signal os.Signal
}

// Measure is what Observe measured.
type Measure struct {
	// Elapsed is the time from the epoch to the final scrape.
	Elapsed time.Duration
	// Nodes holds each node's figures from the final scrape, in the order
	// of IDs (zero for a node whose scrape failed).
	Nodes []Figures
	// Steady is the time from the base scrape (the first sample at least
	// a second after Observe began: start-up, the map, the TLS handshakes
	// excluded) to the final one; 0 if no base scrape was taken. CPU is
	// the node processes' CPU seconds over it.
	Steady time.Duration
	CPU    float64
	// Deaths lists the node processes that ended while Observe ran, in
	// the order they did, with what became of their objects.
	Deaths []Death
}

// Death is a node process that ended while the cluster ran, and what
// became of its objects (a SIGKILLed node's are promoted by their backups
// on the survivors; a SIGTERMed node migrates them before it exits).
type Death struct {
	Index int         // index of IDs
	Node  wire.NodeID // its ID
	City  string
	At    time.Duration // when its process ended (this process's wait for it returned), since the epoch
	How   string        // "exit status 0", "signal: killed"
	// Signal is the fault Observe sent it, if any.
	Signal os.Signal
	// Primaries counts its primaries in its last world snapshot (before
	// the fault, for a node Observe signalled), by kind (empty without
	// snapshots: ObserveConfig.Truth nil).
	Primaries map[string]int
	// TakenOver counts those that are primaries on another node at the
	// end; Gone, those no node holds at the end (deleted by the game, or
	// lost), by kind.
	TakenOver map[string]int
	Gone      map[string]int
	// Promoted lists the survivors' promotions of its objects (backups
	// that took over, EvPromoted naming it), each the time from At to the
	// promotion (negative: the promotion's clock reading was before At:
	// the process ended before Observe saw it); Installed counts the
	// objects it migrated to survivors (EvInstalled).
	Promoted  []time.Duration
	Installed int
	// DeclaredDead is when the first survivor declared it dead, from At
	// (0: none did; negative: before its process ended, as after a drain,
	// when its frames stop while it sends what is queued).
	DeclaredDead time.Duration
	// Drain is its drain report (from last-run.json), when it stopped
	// gracefully; nil otherwise.
	Drain *live.DrainReport

	objs []live.SnapObject // its primaries in its last snapshot
}

// Observe samples the cluster until ctx ends. Sampling every frame
// (cfg.Every 0 or a frame), it asks every node for each of its frames
// (its first frame after the one it last gave, at once if that has
// passed) and feeds them to cfg.Truth one Frame each, in the order of
// their node times, as the simulator does (timeline: a node whose frames
// stop coming for a second is no longer waited for; a node that ended is
// fed to its last frame, then taken Down). Sampling less often, every
// cfg.Every it gives cfg.Truth one Sample of every node's next frame
// (the snapshots at most a frame apart). A node that fails to answer, or
// whose answer DecodeWorld rejects, is left out. Observe also scrapes
// every node's metrics once a second (the first, a second after it began,
// is the base scrape), sends cfg.Faults, and notices the node processes
// that end (cfg.Died). When ctx ends it
// scrapes every running node again and returns their figures (a node that
// ended keeps its last scrape's), the CPU per frame measured from the base
// scrape, and the deaths with what became of the dead nodes' objects (from
// a last round of world snapshots and the survivors' /debug/authority).
// The error joins the final scrapes of running nodes that failed; the
// figures of the others are still returned. A Truth whose Infra is not
// the Rendezvous, and a fault naming no node, are rejected before
// anything is sampled.
func (c *Cluster) Observe(ctx context.Context, cfg ObserveConfig) (Measure, error) {
	if cfg.Truth != nil && cfg.Truth.Infra() != c.infra {
		return Measure{}, fmt.Errorf("%w: the observer's infrastructure node is %d, the rendezvous %d", ErrConfig, cfg.Truth.Infra(), c.infra)
	}
	for _, f := range cfg.Faults {
		if f.Index < 0 || f.Index >= len(c.ids) || f.Signal == nil {
			return Measure{}, fmt.Errorf("%w: fault for node index %d (want 0 to %d) with signal %v", ErrConfig, f.Index, len(c.ids)-1, f.Signal)
		}
	}
	begin := time.Now()
	frame := c.Frame()
	every := cfg.Every
	if every == 0 {
		every = frame
	}
	base := make([]map[string]float64, len(c.ids))
	last := make([]map[string]float64, len(c.ids)) // the latest scrape
	lastAt := make([]time.Time, len(c.ids))
	bufs := make([]truth.Snapshot, len(c.ids))
	sample := make([]*truth.Snapshot, len(c.ids))
	lastSnap := make([]*live.WorldSnapshot, len(c.ids))
	// Sampling every frame, each round asks every node for its first
	// frame after the last one it gave, and the timeline feeds the frames
	// to the observer in time order; sampling less often, each round is
	// one Sample of every node's next frame.
	lastNs := make([]int64, len(c.ids))
	for i := range lastNs {
		lastNs[i] = -1
	}
	var tl *timeline
	if cfg.Truth != nil && every <= frame {
		tl = newTimeline(cfg.Truth, c.ids, timelineStall)
	}
	atSignal := make([]*live.WorldSnapshot, len(c.ids)) // a node's last snapshot before its fault
	dead := make([]bool, len(c.ids))
	sent := make([]os.Signal, len(c.ids))
	faults := slices.Clone(cfg.Faults)
	var deaths []Death
	var baseAt, scrapedAt, sampledAt time.Time
	// Faults and deaths are looked at every 100 ms at least.
	tick := time.NewTicker(min(every, 100*time.Millisecond))
	lastShown := time.Duration(-1)
	scrape := func() {
		for i := range c.ids {
			if !c.Alive(i) {
				continue
			}
			if m, err := c.Metrics(i); err == nil {
				last[i], lastAt[i] = m, time.Now()
			}
		}
		scrapedAt = time.Now()
	}
	for ctx.Err() == nil {
		select {
		case <-tick.C:
			for k := 0; k < len(faults); k++ {
				if f := faults[k]; time.Since(begin) >= f.After {
					if c.Alive(f.Index) && c.Signal(f.Index, f.Signal) == nil {
						sent[f.Index] = f.Signal
						if atSignal[f.Index] == nil {
							atSignal[f.Index] = lastSnap[f.Index]
						}
					}
					faults = slices.Delete(faults, k, k+1)
					k--
				}
			}
			for i := range c.ids {
				if dead[i] || c.Alive(i) {
					continue
				}
				dead[i] = true
				if tl != nil {
					tl.wentDown(i)
				}
				d := c.death(i, sent[i], cmp.Or(atSignal[i], lastSnap[i]))
				deaths = append(deaths, d)
				if cfg.Died != nil {
					cfg.Died(d)
				}
			}
			if time.Since(scrapedAt) >= time.Second && time.Since(begin) >= time.Second {
				scrape()
				if base[0] == nil {
					copy(base, last)
					baseAt = scrapedAt
				}
			}
			// A sample that got a node's kept frame (one behind its latest)
			// is followed at once by another, up to a few: the samples catch
			// up rather than let the node's history run out.
			if cfg.Truth != nil && time.Since(sampledAt) >= every-every/10 {
				for range maxCatchUp {
					var after []int64
					if tl != nil {
						after = lastNs
					}
					sampledAt = time.Now()
					snaps, _ := c.WorldsAfter(after)
					behind := false
					for i, s := range snaps {
						sample[i] = nil
						if s == nil {
							continue
						}
						lastSnap[i] = s
						lastNs[i] = s.NowNs
						if tl == nil {
							if DecodeWorldKinds(s, cfg.Truth.Dims(), cfg.Kinds, &bufs[i]) == nil {
								sample[i] = &bufs[i]
							}
							continue
						}
						behind = behind || time.Since(c.epoch)-time.Duration(s.NowNs) > frame
						if b := tl.buffer(); DecodeWorldKinds(s, cfg.Truth.Dims(), cfg.Kinds, b) == nil {
							tl.push(i, b)
						} else {
							tl.discard(b)
						}
					}
					// Each node answers with a frame after the one it last
					// answered with, so no report is older than the node's
					// previous one: the recorder accepts them all.
					if tl != nil {
						_ = tl.feed(false)
					} else {
						_ = cfg.Truth.Sample(sample)
					}
					if !behind {
						break
					}
				}
			}
			if el := time.Since(c.epoch).Truncate(time.Second); cfg.Progress != nil && el != lastShown {
				cfg.Progress(el)
				lastShown = el
			}
		case <-ctx.Done():
		}
	}
	tick.Stop()
	if tl != nil {
		_ = tl.feed(false)
	}
	m := Measure{Nodes: make([]Figures, len(c.ids)), Elapsed: time.Since(c.epoch)}
	if base[0] != nil {
		m.Steady = time.Since(baseAt)
	}
	var scrapeErr error
	for i := range c.ids {
		mt, at := last[i], lastAt[i]
		if c.Alive(i) {
			fresh, err := c.Metrics(i)
			switch {
			case err == nil:
				mt, at = fresh, time.Now()
			case sent[i] != nil:
				// Told to stop: it closed its endpoint as it drained, and
				// its last scrape stands.
			default:
				scrapeErr = errors.Join(scrapeErr, fmt.Errorf("node %d: %w", c.ids[i], err))
				continue
			}
		}
		if mt == nil {
			continue
		}
		m.Nodes[i] = FiguresOf(mt, at.Sub(c.epoch).Seconds())
		if b := base[i]; b != nil && mt["overworld_frames_total"] > b["overworld_frames_total"] {
			m.Nodes[i].CPUPerFrame = (mt["process_cpu_seconds_total"] - b["process_cpu_seconds_total"]) /
				(mt["overworld_frames_total"] - b["overworld_frames_total"])
			m.CPU += mt["process_cpu_seconds_total"] - b["process_cpu_seconds_total"]
		}
	}
	for i := range c.ids {
		if !dead[i] && !c.Alive(i) {
			dead[i] = true
			deaths = append(deaths, c.death(i, sent[i], cmp.Or(atSignal[i], lastSnap[i])))
		}
	}
	if len(deaths) > 0 {
		c.settle(deaths)
	}
	m.Deaths = deaths
	return m, scrapeErr
}

// maxCatchUp bounds the samples Observe takes in a row to catch up with
// the nodes' frames.
const maxCatchUp = 4

// timelineStall is how far a node's newest frame may fall behind the
// newest of any node before the timeline stops waiting for it: a process
// that gives no frame for ten frames of 100 ms is taken as stopped or
// starved, and the others' frames are not held back for it.
const timelineStall = time.Second

// death records node process i's end: when, how, and its primaries in its
// last snapshot s (nil: none taken).
func (c *Cluster) death(i int, sig os.Signal, s *live.WorldSnapshot) Death {
	at, how, _ := c.Exited(i)
	d := Death{Index: i, Node: c.ids[i], City: c.cities[i], At: at.Sub(c.epoch), How: how, Signal: sig, Primaries: map[string]int{}}
	if s != nil {
		for _, o := range s.Objects {
			if o.Primary {
				d.Primaries[o.Kind]++
				d.objs = append(d.objs, o)
			}
		}
	}
	return d
}

// settle completes the deaths with what became of the dead nodes'
// objects: a last round of world snapshots (which node is primary of
// each), the survivors' authority events, and the drain reports.
func (c *Cluster) settle(deaths []Death) {
	snaps, _ := c.Worlds()
	primaryOn := map[uint64]wire.NodeID{}
	held := map[uint64]bool{}
	for _, s := range snaps {
		if s == nil {
			continue
		}
		for _, o := range s.Objects {
			held[o.ID] = true
			if o.Primary {
				primaryOn[o.ID] = wire.NodeID(s.Node)
			}
		}
	}
	var logs []*live.AuthorityLog
	for i := range c.ids {
		if c.Alive(i) {
			if a, err := c.Authority(i); err == nil {
				logs = append(logs, a)
			}
		}
	}
	for k := range deaths {
		d := &deaths[k]
		d.TakenOver, d.Gone = map[string]int{}, map[string]int{}
		if r, err := c.LastRun(d.Index); err == nil && r.Drain.Primaries > 0 {
			d.Drain = &r.Drain
		}
		for _, a := range logs {
			for _, e := range a.Events {
				if wire.NodeID(e.Node) != d.Node {
					continue
				}
				switch e.Kind {
				case "promoted":
					d.Promoted = append(d.Promoted, time.Duration(e.AtNs)-d.At)
				case "installed":
					d.Installed++
				case "dead":
					if dd := time.Duration(e.AtNs) - d.At; d.DeclaredDead == 0 || dd < d.DeclaredDead {
						d.DeclaredDead = dd
					}
				}
			}
		}
		slices.Sort(d.Promoted)
		// The dead node's primaries in its last snapshot.
		for _, s := range d.objs {
			if p, ok := primaryOn[s.ID]; ok && p != d.Node {
				d.TakenOver[s.Kind]++
			} else if !held[s.ID] {
				d.Gone[s.Kind]++
			}
		}
	}
}

// Kinds returns the kinds of m in order, for printing.
func Kinds(m map[string]int) []string { return slices.Sorted(maps.Keys(m)) }
