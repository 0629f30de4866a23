package localcluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/overworld/overworld/truth"
)

// ObserveConfig says how Observe samples a running cluster.
type ObserveConfig struct {
	// Every is the period of the world snapshots fed to Truth (0: every
	// frame; longer lightens the nodes' CPU).
	Every time.Duration
	// Truth receives every sample of the nodes' snapshots
	// (truth.Observer.Sample; nil: no snapshots are taken). Its Infra
	// must be the cluster's Rendezvous.
	Truth *truth.Observer
	// Progress, if set, is called with the time since the epoch,
	// truncated to the second, whenever that changes at a sample.
	Progress func(elapsed time.Duration)
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
}

// Observe samples the cluster until ctx ends: every cfg.Every it takes
// every node's world snapshot (each node answers at its next frame: the
// snapshots are at most a frame apart; a node that fails to answer, or
// whose answer DecodeWorld rejects, is left out of that sample) into
// cfg.Truth, and a second after it began a
// base scrape of every node's metrics. When ctx ends it scrapes every node
// again and returns their figures, the CPU per frame measured from the
// base scrape. The error joins the final scrapes that failed; the figures
// of the others are still returned. A Truth whose Infra is not the
// Rendezvous is rejected before anything is sampled.
func (c *Cluster) Observe(ctx context.Context, cfg ObserveConfig) (Measure, error) {
	if cfg.Truth != nil && cfg.Truth.Infra() != c.infra {
		return Measure{}, fmt.Errorf("%w: the observer's infrastructure node is %d, the rendezvous %d", ErrConfig, cfg.Truth.Infra(), c.infra)
	}
	begin := time.Now()
	frame := c.Frame()
	every := cfg.Every
	if every == 0 {
		every = frame
	}
	base := make([]map[string]float64, len(c.ids))
	bufs := make([]truth.Snapshot, len(c.ids))
	sample := make([]*truth.Snapshot, len(c.ids))
	var baseAt time.Time
	tick := time.NewTicker(every)
	lastShown := time.Duration(-1)
	for ctx.Err() == nil {
		select {
		case <-tick.C:
			if base[0] == nil && time.Since(begin) >= time.Second {
				for i := range c.ids {
					base[i], _ = c.Metrics(i)
				}
				baseAt = time.Now()
			}
			if cfg.Truth != nil {
				snaps, _ := c.Worlds()
				for i, s := range snaps {
					sample[i] = nil
					if s != nil && DecodeWorld(s, cfg.Truth.Dims(), &bufs[i]) == nil {
						sample[i] = &bufs[i]
					}
				}
				// Each node answers at its next frame, so no report is older
				// than the node's previous one: the recorder accepts them all.
				_ = cfg.Truth.Sample(sample)
			}
			if el := time.Since(c.epoch).Truncate(time.Second); cfg.Progress != nil && el != lastShown {
				cfg.Progress(el)
				lastShown = el
			}
		case <-ctx.Done():
		}
	}
	tick.Stop()
	m := Measure{Nodes: make([]Figures, len(c.ids)), Elapsed: time.Since(c.epoch)}
	elapsed := m.Elapsed.Seconds()
	if base[0] != nil {
		m.Steady = time.Since(baseAt)
	}
	var scrapeErr error
	for i := range c.ids {
		mt, err := c.Metrics(i)
		if err != nil {
			scrapeErr = errors.Join(scrapeErr, fmt.Errorf("node %d: %w", c.ids[i], err))
			continue
		}
		m.Nodes[i] = FiguresOf(mt, elapsed)
		if b := base[i]; b != nil && mt["overworld_frames_total"] > b["overworld_frames_total"] {
			m.Nodes[i].CPUPerFrame = (mt["process_cpu_seconds_total"] - b["process_cpu_seconds_total"]) /
				(mt["overworld_frames_total"] - b["overworld_frames_total"])
			m.CPU += mt["process_cpu_seconds_total"] - b["process_cpu_seconds_total"]
		}
	}
	return m, scrapeErr
}
