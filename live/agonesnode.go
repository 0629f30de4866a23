package live

import (
	"context"
	"log/slog"
	"time"

	"github.com/overworld/overworld/live/agones"
)

// The daemon as an Agones game server (agones.enabled): the agent reads
// the daemon through agonesStatus, runs from Run's start until the node
// has drained, stops changing the GameServer's state once shutdown begins,
// and calls Shutdown after the drain.

// agentConfig is the agent's configuration for this section.
func (a AgonesConfig) agentConfig(log *slog.Logger) (agones.AgentConfig, error) {
	return agones.AgentConfig{Region: a.Region, Protect: agones.Protect(a.Protect), ReserveFor: a.ReserveFor.Duration,
		HealthEvery: a.HealthEvery.Duration, PlayersCounter: a.PlayersCounter, Log: log}.Validate()
}

// agonesStatus is what the agent reads of the daemon.
type agonesStatus struct{ d *Daemon }

func (s agonesStatus) Ready() (bool, string) { return s.d.Ready() }

func (s agonesStatus) LastFrame() time.Time {
	if ns := s.d.lastFrame.Load(); ns != 0 {
		return time.Unix(0, ns)
	}
	return time.Time{}
}

func (s agonesStatus) Primaries() int { return s.d.metrics.Primaries() }

func (s agonesStatus) Players() int { return int(s.d.PlayerStats().Players) }

// newAgonesAgent builds the daemon's agent (NewDaemon, with
// agones.enabled).
func newAgonesAgent(d *Daemon) (*agones.Agent, error) {
	var sdk *agones.Client
	var err error
	if d.cfg.Agones.SDK != "" {
		sdk, err = agones.NewClient(d.cfg.Agones.SDK)
	} else {
		sdk, err = agones.FromEnv()
	}
	if err != nil {
		return nil, err
	}
	ac, err := d.cfg.Agones.agentConfig(d.log)
	if err != nil {
		return nil, err
	}
	return agones.NewAgent(sdk, agonesStatus{d}, ac)
}

// startAgones runs the agent until stopAgones (Run's start).
func (d *Daemon) startAgones() {
	if d.agones == nil {
		return
	}
	ctx, cancel := context.WithCancel(context.Background())
	d.agonesStop = cancel
	go d.agones.Run(ctx)
}

// stopAgones tells Agones the node has drained (Shutdown) and stops the
// agent.
func (d *Daemon) stopAgones() {
	if d.agones == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := d.agones.Done(ctx); err != nil {
		d.log.Warn("agones", "err", err)
	}
	d.agonesStop()
}

// Agones returns the daemon's Agones agent (nil unless agones.enabled).
func (d *Daemon) Agones() *agones.Agent { return d.agones }
