package agones

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"regexp"
	"strconv"
	"sync"
	"time"
)

// Status is what the agent reads of its node; every method must be safe
// to call from the agent's goroutine at any time.
type Status interface {
	// Ready reports whether the node runs frames and reaches its peers
	// (the daemon's /readyz), and why not.
	Ready() (bool, string)
	// LastFrame is when the node's frame loop last ran a frame (zero:
	// never).
	LastFrame() time.Time
	// Primaries is how many primaries the node holds.
	Primaries() int
	// Players is how many players are in game on the node.
	Players() int
}

// Protect is how the agent keeps a node that holds primaries from being
// deleted by a fleet's scale-down.
type Protect string

// The protections.
const (
	// ProtectAllocate marks the server Allocated while it holds primaries,
	// and Ready again when it holds none.
	ProtectAllocate Protect = "allocate"
	// ProtectReserve renews a reservation (AgentConfig.ReserveFor) while it
	// holds primaries; the last one lapses by itself, back to Ready.
	ProtectReserve Protect = "reserve"
	// ProtectNone leaves the state alone after Ready.
	ProtectNone Protect = "none"
)

// AgentConfig configures an Agent; zero fields take the defaults.
type AgentConfig struct {
	// Region labels the GameServer (LabelPrefix+"region"); "" sets none.
	// A Kubernetes label value: at most 63 of [A-Za-z0-9._-], starting and
	// ending with a letter or digit.
	Region string
	// HealthEvery is the health ping period (default 2 s): keep it below
	// the GameServer's health periodSeconds.
	HealthEvery time.Duration
	// StallAfter is how long without a frame counts as a stalled loop,
	// which stops the health pings (default 2 s).
	StallAfter time.Duration
	// Protect defaults to ProtectAllocate.
	Protect Protect
	// ReserveFor is each reservation's length with ProtectReserve
	// (default 30 s; whole seconds).
	ReserveFor time.Duration
	// PlayersCounter names the beta Counter kept equal to the node's
	// players ("" none). A GameServer that declares no such counter is
	// logged once and left alone.
	PlayersCounter string
	// Poll is how often the agent reads its node (default 250 ms).
	Poll time.Duration
	// Log receives the agent's events (nil: none).
	Log *slog.Logger
}

var labelValue = regexp.MustCompile(`^([A-Za-z0-9]([A-Za-z0-9._-]{0,61}[A-Za-z0-9])?)?$`)

// Validate fills in the defaults and checks c.
func (c AgentConfig) Validate() (AgentConfig, error) {
	if !labelValue.MatchString(c.Region) {
		return c, fmt.Errorf("agones: region %q: want a Kubernetes label value (at most 63 of A-Z a-z 0-9 . _ -, alphanumeric at both ends)", c.Region)
	}
	def := func(d *time.Duration, v time.Duration, name string) error {
		if *d == 0 {
			*d = v
		}
		if *d < time.Millisecond || *d > 10*time.Minute {
			return fmt.Errorf("agones: %s %v: want 1ms to 10m", name, *d)
		}
		return nil
	}
	for _, e := range []error{def(&c.HealthEvery, 2*time.Second, "health period"), def(&c.StallAfter, 2*time.Second, "stall bound"),
		def(&c.ReserveFor, 30*time.Second, "reservation"), def(&c.Poll, 250*time.Millisecond, "poll period")} {
		if e != nil {
			return c, e
		}
	}
	if c.ReserveFor < time.Second {
		return c, fmt.Errorf("agones: reservation %v: want at least 1s (Agones reserves whole seconds)", c.ReserveFor)
	}
	switch c.Protect {
	case "":
		c.Protect = ProtectAllocate
	case ProtectAllocate, ProtectReserve, ProtectNone:
	default:
		return c, fmt.Errorf("agones: protect %q: want allocate, reserve or none", c.Protect)
	}
	if c.Log == nil {
		c.Log = slog.New(slog.DiscardHandler)
	}
	return c, nil
}

// Endpoint is where players and peers reach the node, as Agones published
// it: the GameServer's address and its ports by name.
type Endpoint struct {
	Address string
	Ports   map[string]int
}

// The GameServer ports players reach a node's QUIC and WebSocket
// endpoints at (as the chart's Fleet names them).
const (
	PlayerPortQUIC = "player-quic"
	PlayerPortWS   = "player-ws"
)

// PlayerEndpoints returns the player endpoints e publishes: its address
// with the ports PlayerPortQUIC (host:port) and PlayerPortWS
// (ws://host:port/), each empty when there is no such port or no address
// yet.
func (e Endpoint) PlayerEndpoints() (quic, ws string) {
	if e.Address == "" {
		return "", ""
	}
	if p, ok := e.Ports[PlayerPortQUIC]; ok {
		quic = net.JoinHostPort(e.Address, strconv.Itoa(p))
	}
	if p, ok := e.Ports[PlayerPortWS]; ok {
		ws = "ws://" + net.JoinHostPort(e.Address, strconv.Itoa(p)) + "/"
	}
	return quic, ws
}

// Endpoint returns the address and ports g publishes.
func (g *GameServer) Endpoint() Endpoint {
	ep := Endpoint{Address: g.Status.Address, Ports: map[string]int{}}
	for _, p := range g.Status.Ports {
		ep.Ports[p.Name] = int(p.Port)
	}
	return ep
}

// WaitEndpoint reads the GameServer every poll until it has an address
// (Agones sets it once the pod is scheduled on a node, which may be after
// the node's container starts) and returns its endpoint; it fails when
// ctx ends first, with the last error read.
func (c *Client) WaitEndpoint(ctx context.Context, poll time.Duration) (Endpoint, error) {
	if poll <= 0 {
		return Endpoint{}, fmt.Errorf("agones: poll %v: want > 0", poll)
	}
	last := errors.New("the GameServer has no address yet")
	for {
		gs, err := c.GameServer(ctx)
		if err == nil && gs.Status.Address != "" {
			return gs.Endpoint(), nil
		}
		if err != nil && ctx.Err() == nil {
			last = err // not a request cut short by ctx: keep the reason
		}
		select {
		case <-ctx.Done():
			return Endpoint{}, fmt.Errorf("agones: the GameServer's address: %w", last)
		case <-time.After(poll):
		}
	}
}

// Agent drives one node's GameServer through its lifecycle (see the
// package documentation). Build it with NewAgent, Run it on its own
// goroutine, call Draining when the node starts to shut down and Done once
// it has drained.
type Agent struct {
	sdk *Client
	st  Status
	cfg AgentConfig

	mu        sync.Mutex
	endpoint  *Endpoint
	state     string // what the agent last asked for: "", Ready, Allocated, Reserved, Shutdown
	draining  bool
	healthy   bool
	pings     int
	errs      int
	counterOK bool
	players   int
	stop      context.CancelFunc
	stopped   chan struct{}
}

// NewAgent returns an agent of the game server behind sdk for the node st.
func NewAgent(sdk *Client, st Status, cfg AgentConfig) (*Agent, error) {
	if sdk == nil || st == nil {
		return nil, errors.New("agones: an agent needs a client and a node status")
	}
	cfg, err := cfg.Validate()
	if err != nil {
		return nil, err
	}
	return &Agent{sdk: sdk, st: st, cfg: cfg, counterOK: cfg.PlayersCounter != "", players: -1, stopped: make(chan struct{})}, nil
}

// Endpoint returns the address and ports read from the GameServer, and
// whether they were read yet.
func (a *Agent) Endpoint() (Endpoint, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.endpoint == nil {
		return Endpoint{}, false
	}
	return Endpoint{Address: a.endpoint.Address, Ports: maps.Clone(a.endpoint.Ports)}, true
}

// AgentStats is what the agent did: the state it last asked for, whether
// the node's loop counted as running at the last poll, the health pings
// sent and the calls that failed.
type AgentStats struct {
	State   string
	Healthy bool
	Pings   int
	Errors  int
}

// Stats returns the agent's figures.
func (a *Agent) Stats() AgentStats {
	a.mu.Lock()
	defer a.mu.Unlock()
	return AgentStats{State: a.state, Healthy: a.healthy, Pings: a.pings, Errors: a.errs}
}

// Run drives the lifecycle until ctx ends or Done is called. It first
// reads the GameServer (retrying while the sidecar starts) and sets the
// region label, then polls the node every AgentConfig.Poll.
func (a *Agent) Run(ctx context.Context) {
	ctx, cancel := context.WithCancel(ctx)
	a.mu.Lock()
	a.stop = cancel
	a.mu.Unlock()
	defer close(a.stopped)
	defer cancel()
	log := a.cfg.Log
	t := time.NewTicker(a.cfg.Poll)
	defer t.Stop()
	for {
		gs, err := a.sdk.GameServer(ctx)
		if err == nil {
			e := gs.Endpoint()
			ep := &e
			a.mu.Lock()
			a.endpoint = ep
			a.mu.Unlock()
			log.Info("agones: game server", "name", gs.ObjectMeta.Name, "namespace", gs.ObjectMeta.Namespace,
				"state", gs.Status.State, "address", ep.Address, "ports", ep.Ports)
			break
		}
		a.failed("reading the GameServer (the sidecar may still be starting)", err)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
	if a.cfg.Region != "" {
		if err := a.sdk.SetLabel(ctx, "region", a.cfg.Region); err != nil {
			a.failed("setting the region label", err)
		}
	}
	var lastPing, lastReserve time.Time
	for {
		now := time.Now()
		last := a.st.LastFrame()
		healthy := !last.IsZero() && now.Sub(last) <= a.cfg.StallAfter
		a.mu.Lock()
		a.healthy = healthy
		a.mu.Unlock()
		if healthy && now.Sub(lastPing) >= a.cfg.HealthEvery {
			if err := a.sdk.Health(ctx); err != nil {
				a.failed("health ping", err)
			} else {
				lastPing = now
				a.mu.Lock()
				a.pings++
				a.mu.Unlock()
			}
		} else if !healthy && !last.IsZero() && now.Sub(lastPing) >= a.cfg.HealthEvery {
			log.Warn("agones: the frame loop is stalled: no health ping", "since_last_frame", now.Sub(last).Round(time.Millisecond))
			lastPing = now // log once per period
		}
		a.step(ctx, now, &lastReserve)
		a.updatePlayers(ctx)
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// step moves the game server's state after the node's.
func (a *Agent) step(ctx context.Context, now time.Time, lastReserve *time.Time) {
	a.mu.Lock()
	state, draining := a.state, a.draining
	a.mu.Unlock()
	if draining || state == "Shutdown" {
		return
	}
	if state == "" {
		if ok, _ := a.st.Ready(); ok {
			a.call(ctx, "Ready", a.sdk.Ready)
		}
		return
	}
	holding := a.st.Primaries() > 0
	switch a.cfg.Protect {
	case ProtectAllocate:
		if holding && state != "Allocated" {
			a.call(ctx, "Allocated", a.sdk.Allocate)
		} else if !holding && state == "Allocated" {
			a.call(ctx, "Ready", a.sdk.Ready)
		}
	case ProtectReserve:
		if holding && now.Sub(*lastReserve) >= a.cfg.ReserveFor/2 {
			if a.call(ctx, "Reserved", func(ctx context.Context) error { return a.sdk.Reserve(ctx, a.cfg.ReserveFor) }) {
				*lastReserve = now
			}
		}
	}
}

// call makes one state change and records the state asked for.
func (a *Agent) call(ctx context.Context, state string, f func(context.Context) error) bool {
	if err := f(ctx); err != nil {
		a.failed("asking for "+state, err)
		return false
	}
	a.mu.Lock()
	a.state = state
	a.mu.Unlock()
	a.cfg.Log.Info("agones: game server state asked for", "state", state)
	return true
}

// updatePlayers keeps the players counter current.
func (a *Agent) updatePlayers(ctx context.Context) {
	a.mu.Lock()
	ok, last := a.counterOK, a.players
	a.mu.Unlock()
	if !ok {
		return
	}
	n := a.st.Players()
	if n == last {
		return
	}
	_, err := a.sdk.SetCounter(ctx, a.cfg.PlayersCounter, int64(n))
	a.mu.Lock()
	defer a.mu.Unlock()
	switch {
	case errors.Is(err, ErrNotFound):
		a.counterOK = false
		a.cfg.Log.Warn("agones: the GameServer declares no players counter: not kept", "counter", a.cfg.PlayersCounter)
	case err != nil:
		a.errs++
		a.cfg.Log.Warn("agones: setting the players counter", "err", err)
	default:
		a.players = n
	}
}

func (a *Agent) failed(what string, err error) {
	a.mu.Lock()
	a.errs++
	n := a.errs
	a.mu.Unlock()
	if n <= 10 || n%100 == 0 {
		a.cfg.Log.Warn("agones: "+what, "err", err, "errors", n)
	}
}

// Draining stops the agent's state changes (the node is shutting down:
// it must neither be made Ready nor allocated again); health pings go on
// while frames run.
func (a *Agent) Draining() {
	a.mu.Lock()
	a.draining = true
	a.mu.Unlock()
}

// Done tells Agones the node has drained (Shutdown: the GameServer is
// deleted) and stops Run. It returns Shutdown's error.
func (a *Agent) Done(ctx context.Context) error {
	a.Draining()
	err := a.sdk.Shutdown(ctx)
	a.mu.Lock()
	if err == nil {
		a.state = "Shutdown"
	}
	stop := a.stop
	a.mu.Unlock()
	if stop != nil {
		stop()
		<-a.stopped
	}
	if err != nil {
		return fmt.Errorf("agones: shutdown after the drain: %w", err)
	}
	a.cfg.Log.Info("agones: game server shut down after the drain")
	return nil
}
