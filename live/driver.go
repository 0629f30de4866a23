package live

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/overworld/overworld/node"
	"github.com/overworld/overworld/wire"
	"github.com/overworld/overworld/world"
)

// FrameHook is code that runs on the driver's goroutine once per frame,
// after n.Tick(now) and before the driver drains the node's outputs, so it
// may call n.Spawn, Write, Delete, Objects and Lookup safely (the node is
// not safe for concurrent use; a hook must not keep n past the call). The
// player side's gateway is a FrameHook; so is the daemon's metrics
// sampler.
type FrameHook interface {
	Frame(now time.Duration, n *node.Node)
}

// FrameHookFunc adapts a function to FrameHook.
type FrameHookFunc func(now time.Duration, n *node.Node)

// Frame implements FrameHook.
func (f FrameHookFunc) Frame(now time.Duration, n *node.Node) { f(now, n) }

// DriverConfig configures a Driver.
type DriverConfig struct {
	// Node is the core to drive (required). The driver is its only user
	// from NewDriver on.
	Node *node.Node
	// Transport carries its packets (required).
	Transport Transport
	// Frame is the frame period. Default world.DefaultFrame (100 ms, 10 Hz).
	Frame time.Duration
	// Epoch is the wall-clock instant the core's time counts from, so
	// that nodes started apart share one clock (staleness across nodes
	// is then meaningful on one machine). Zero: when Run starts.
	Epoch time.Time
	// Aligned runs the frames at the core times Phase + k·Frame (the
	// wall-clock instants Epoch + Phase + k·Frame), so that a node keeps
	// a given phase, such as the one the simulator gave the same node in
	// a run to compare with (sim.Sim.Phase). Otherwise the frames run
	// every Frame from when Run starts. Phase must be in [0, Frame).
	Aligned bool
	Phase   time.Duration
	// Logger. Default: discard.
	Logger *slog.Logger
	// Counters receives Frames and Steps. Default: a fresh set.
	Counters *Counters
	// FrameTime, if set, is called after every frame with the wall-clock
	// time the Tick and the hooks took.
	FrameTime func(time.Duration)
	// Inspect, if set, is called on the driver's goroutine with every
	// received packet just before the node steps it (it must not keep or
	// modify the payload): the daemon's drain reads migration
	// acknowledgements with it.
	Inspect func(now time.Duration, p wire.Packet)
}

// Driver runs one node core in real time. Build it with NewDriver, add
// hooks, then call Run; Run may be called again after it returned (the
// daemon runs its drain's frames so), never twice at once.
type Driver struct {
	cfg    DriverConfig
	n      *node.Node
	mu     sync.Mutex
	hooks  []FrameHook
	out    []wire.Packet
	origin time.Time // the wall-clock instant of the core's time 0, set by the first Run
}

// NewDriver validates cfg and returns a driver.
func NewDriver(cfg DriverConfig) (*Driver, error) {
	if cfg.Node == nil || cfg.Transport == nil {
		return nil, fmt.Errorf("%w: driver needs a node and a transport", ErrConfig)
	}
	if cfg.Frame == 0 {
		cfg.Frame = world.DefaultFrame
	}
	if cfg.Frame < time.Millisecond || cfg.Frame > 10*time.Second {
		return nil, fmt.Errorf("%w: frame period %v: want 1ms to 10s", ErrConfig, cfg.Frame)
	}
	if cfg.Aligned && (cfg.Phase < 0 || cfg.Phase >= cfg.Frame) {
		return nil, fmt.Errorf("%w: frame phase %v: want 0 to under the frame period %v", ErrConfig, cfg.Phase, cfg.Frame)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Counters == nil {
		cfg.Counters = new(Counters)
	}
	return &Driver{cfg: cfg, n: cfg.Node}, nil
}

// AddHook registers h; hooks run in the order added, from the next frame.
// Safe to call while Run runs.
func (d *Driver) AddHook(h FrameHook) {
	d.mu.Lock()
	d.hooks = append(d.hooks, h)
	d.mu.Unlock()
}

// Run runs frames every Frame period and delivers received packets until
// ctx is done. It returns nil when ctx ends it. After Run returns the node
// may be read by the caller again (Run is its only user while it runs).
// The core's time goes on across calls: it counts from Epoch, or from the
// first Run's start.
func (d *Driver) Run(ctx context.Context) error {
	if d.origin.IsZero() {
		start := time.Now()
		if !d.cfg.Epoch.IsZero() {
			base := start.Sub(d.cfg.Epoch)
			if base < 0 {
				return fmt.Errorf("%w: epoch %v is in the future", ErrConfig, d.cfg.Epoch)
			}
			// start carries the monotonic clock, and so does start − base:
			// the core's time never goes back with the wall clock.
			start = start.Add(-base)
		}
		d.origin = start
	}
	origin := d.origin
	now := func() time.Duration { return time.Since(origin) }
	// The first frame comes a period after the start, or at the next
	// aligned instant; the ticker starts there.
	first := time.NewTimer(d.untilFirst(now()))
	defer first.Stop()
	var tick *time.Ticker
	var ticks <-chan time.Time
	defer func() {
		if tick != nil {
			tick.Stop()
		}
	}()
	recv := d.cfg.Transport.Recv()
	var hooks []FrameHook
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-first.C:
			tick = time.NewTicker(d.cfg.Frame)
			ticks = tick.C
			d.frame(now(), &hooks)
		case <-ticks:
			d.frame(now(), &hooks)
		case p := <-recv:
			at := now()
			d.step(at, p)
			// Deliver what else is waiting (a bounded batch, so frames
			// keep their rate) before draining once.
			for more, k := true, 0; more && k < maxBatch; k++ {
				select {
				case p := <-recv:
					d.step(at, p)
				default:
					more = false
				}
			}
			d.flush()
		}
	}
}

// untilFirst returns how long after core time now the first frame of a
// Run comes: a period, or, Aligned, until the next core time Phase +
// k·Frame (at once when now is one).
func (d *Driver) untilFirst(now time.Duration) time.Duration {
	f := d.cfg.Frame
	if !d.cfg.Aligned {
		return f
	}
	wait := (d.cfg.Phase - now) % f
	if wait < 0 {
		wait += f
	}
	return wait
}

// frame runs one frame at core time at: the Tick, the hooks (hooks is
// their scratch), the drain.
func (d *Driver) frame(at time.Duration, hooks *[]FrameHook) {
	t0 := time.Now()
	d.n.Tick(at)
	d.mu.Lock()
	*hooks = append((*hooks)[:0], d.hooks...)
	d.mu.Unlock()
	for _, h := range *hooks {
		h.Frame(at, d.n)
	}
	d.flush()
	d.cfg.Counters.Frames.Add(1)
	if d.cfg.FrameTime != nil {
		d.cfg.FrameTime(time.Since(t0))
	}
}

func (d *Driver) step(at time.Duration, p wire.Packet) {
	if d.cfg.Inspect != nil {
		d.cfg.Inspect(at, p)
	}
	d.n.Step(at, p)
	d.cfg.Counters.Steps.Add(1)
}

// maxBatch bounds the received packets stepped between two drains.
const maxBatch = 256

func (d *Driver) flush() {
	d.out = d.n.Drain(d.out[:0])
	for i, p := range d.out {
		d.cfg.Transport.Send(p)
		d.out[i] = wire.Packet{}
	}
}
