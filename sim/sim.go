package sim

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/overworld/overworld/geo"
	"github.com/overworld/overworld/wire"
	"github.com/overworld/overworld/world"
)

// Core is what the simulator drives: one node's deterministic protocol
// core, seen through an adapter. The simulator calls Step with each packet
// addressed to the node when it arrives and Tick once per frame, and after
// every Step and Tick (and on Flush) it calls Drain and sends what the core
// appended. Ownership of a drained packet's Payload passes to the
// simulator, which hands it to the destination's Step; the receiving core
// may keep it.
type Core interface {
	// Step delivers one packet addressed to this node at virtual time now.
	Step(now time.Duration, p wire.Packet)
	// Tick runs one frame (think functions, timers) at virtual time now.
	Tick(now time.Duration)
	// Drain appends the packets the core wants sent to dst and returns the
	// extended slice; the core forgets them.
	Drain(dst []wire.Packet) []wire.Packet
}

// A Wrapper is a Core that wraps another only to act around its frames
// (package lab's wrapper takes a snapshot of the node after each Tick):
// its Step and Drain must be the wrapped core's. The simulator then steps
// and drains the wrapped core (Unwrap) directly, and ticks the wrapper,
// which saves a packet's delivery reading the wrapper.
type Wrapper interface {
	Core
	Unwrap() Core
}

// Sentinel errors of the simulator's API; errors wrap them with details.
var (
	// ErrConfig reports an invalid Config.
	ErrConfig = errors.New("sim: bad config")
	// ErrUnknownNode reports a node ID that was never added.
	ErrUnknownNode = errors.New("sim: unknown node")
	// ErrDuplicateNode reports a node ID that was already added (IDs are
	// never reused within one run, even after a crash).
	ErrDuplicateNode = errors.New("sim: duplicate node")
	// ErrNodeDown reports an operation on a node that crashed or left.
	ErrNodeDown = errors.New("sim: node is down")
	// ErrTime reports a time in the past or a negative duration.
	ErrTime = errors.New("sim: bad time")
	// ErrReentrant reports Run or RunFor called from inside an event.
	ErrReentrant = errors.New("sim: Run called from inside an event")
	// ErrBadArgument reports any other invalid argument (a nil core, an
	// unknown site, a partition with fewer than two sides, ...).
	ErrBadArgument = errors.New("sim: bad argument")
)

// Config configures a simulator. Start from DefaultConfig; New validates a
// copy and fills the zero FramePeriod and nil Grace with their defaults.
type Config struct {
	// Seed seeds every random choice: tick phases, jitter, loss and
	// duplication. Same seed, same inputs ⇒ the same run, event for event.
	Seed uint64
	// FramePeriod is the interval between a node's Ticks. Default
	// world.DefaultFrame (100 ms, 10 Hz).
	FramePeriod time.Duration
	// SameSite is the one-way delay between two nodes at one site (and from
	// a node to itself). Default geo.SameSiteDelay (0.5 ms): one LAN hop in
	// a data centre, as the live mesh emulates it.
	SameSite time.Duration
	// HeaderBytes is added to every packet's payload length in the traffic
	// accounting. Default 28: an IPv4 header (20) plus a UDP header (8).
	HeaderBytes int
	// Jitter is the mean of an exponentially distributed extra delay drawn
	// independently for every packet (so packets between a pair may be
	// reordered, as UDP allows). Default 0: no jitter.
	Jitter time.Duration
	// Loss is the probability that a packet is lost, independently per
	// packet, in [0, 1). Default 0.
	Loss float64
	// Duplicate is the probability that a packet that was not lost is
	// delivered twice (the copy with its own jitter), in [0, 1). Default 0.
	Duplicate float64
	// Reorder is the probability that a packet (each copy of a duplicated
	// one alike) is held back by an extra delay drawn uniformly from 0 to
	// ReorderDelay, so that packets sent after it on the same path may
	// overtake it, in [0, 1). Default 0.
	Reorder float64
	// ReorderDelay bounds the extra delay of a held-back packet (Reorder).
	// Default (0) DefaultReorderDelay.
	ReorderDelay time.Duration
	// Workers is how many goroutines run events in parallel (0 or 1: one,
	// serially). Events less than the lookahead apart — the least one-way
	// delay between the sites of any two nodes, the same-site delay
	// included — cannot affect each other unless they are at one node, so
	// a window of that length runs node by node on the workers, and the
	// run is identical, event for event, to a serial one (see runParallel).
	// It needs cores that share no mutable state, and observers that read
	// cores only in scenario functions or through snapshots the cores take
	// themselves: the observer sees a window's events after the window.
	Workers int
	// Grace lists the grace periods after an object enters a node's interest
	// during which its missing replica is not counted (ARCHITECTURE.md,
	// "missing replicas"). Ascending, distinct, ≥ 0, at most 8. Default
	// 0, 100 ms, 400 ms as in Colyseus Fig. 11.
	Grace []time.Duration
	// Warmup is the virtual time before which view reports do not count in
	// the view measures (missing replicas, discovery latency, replicas held
	// on entry, lost): they still track when objects entered and were
	// discovered, and the per-second series shows them, so the first
	// seconds in which an empty cluster fills its views can be left out of
	// steady-state figures. Default 0 (everything counts); ≥ 0.
	Warmup time.Duration
}

// DefaultConfig returns a WAN configuration: 10 Hz frames, 0.5 ms same-site
// delay, 28-byte IPv4+UDP headers, no jitter, loss or duplication, and
// grace periods of 0, 100 and 400 ms; seed 1.
func DefaultConfig() Config {
	return Config{
		Seed:        1,
		FramePeriod: world.DefaultFrame,
		SameSite:    geo.SameSiteDelay,
		HeaderBytes: 28,
		Grace:       []time.Duration{0, 100 * time.Millisecond, 400 * time.Millisecond},
	}
}

const maxGrace = 8

// DefaultReorderDelay is the default bound of the extra delay of a packet
// held back to be reordered (Config.ReorderDelay): half a frame period,
// enough for a node's next packet on the path to overtake it.
const DefaultReorderDelay = 50 * time.Millisecond

// maxWorkers bounds Config.Workers.
const maxWorkers = 256

// validate checks c and returns a copy with defaults filled in.
func (c Config) validate() (Config, error) {
	if c.FramePeriod == 0 {
		c.FramePeriod = world.DefaultFrame
	}
	if c.Grace == nil {
		c.Grace = DefaultConfig().Grace
	}
	if c.ReorderDelay == 0 {
		c.ReorderDelay = DefaultReorderDelay
	}
	c.Grace = slices.Clone(c.Grace)
	switch {
	case c.FramePeriod < 0:
		return c, fmt.Errorf("%w: FramePeriod %v is negative", ErrConfig, c.FramePeriod)
	case c.Warmup < 0:
		return c, fmt.Errorf("%w: Warmup %v is negative", ErrConfig, c.Warmup)
	case c.SameSite < 0:
		return c, fmt.Errorf("%w: SameSite %v is negative", ErrConfig, c.SameSite)
	case c.Workers < 0 || c.Workers > maxWorkers:
		return c, fmt.Errorf("%w: Workers %d: want 0 to %d", ErrConfig, c.Workers, maxWorkers)
	case c.HeaderBytes < 0:
		return c, fmt.Errorf("%w: HeaderBytes %d is negative", ErrConfig, c.HeaderBytes)
	case c.Jitter < 0:
		return c, fmt.Errorf("%w: Jitter %v is negative", ErrConfig, c.Jitter)
	case !(c.Loss >= 0 && c.Loss < 1):
		return c, fmt.Errorf("%w: Loss %g not in [0, 1)", ErrConfig, c.Loss)
	case !(c.Duplicate >= 0 && c.Duplicate < 1):
		return c, fmt.Errorf("%w: Duplicate %g not in [0, 1)", ErrConfig, c.Duplicate)
	case !(c.Reorder >= 0 && c.Reorder < 1):
		return c, fmt.Errorf("%w: Reorder %g not in [0, 1)", ErrConfig, c.Reorder)
	case c.ReorderDelay < 0:
		return c, fmt.Errorf("%w: ReorderDelay %v is negative", ErrConfig, c.ReorderDelay)
	case len(c.Grace) > maxGrace:
		return c, fmt.Errorf("%w: %d grace periods, at most %d", ErrConfig, len(c.Grace), maxGrace)
	}
	for i, g := range c.Grace {
		if g < 0 || (i > 0 && g <= c.Grace[i-1]) {
			return c, fmt.Errorf("%w: Grace %v: want distinct non-negative periods in ascending order", ErrConfig, c.Grace)
		}
	}
	return c, nil
}

// nodeState is a node's life-cycle state.
type nodeState uint8

const (
	nodeUp nodeState = iota
	nodeCrashed
	nodeLeft
)

func (s nodeState) String() string {
	return [...]string{"up", "crashed", "left"}[s]
}

// node is one simulated node and its traffic accounting.
type node struct {
	// What delivering a packet reads and writes comes first: the bytes
	// received in the current second add up in inAcc, and go to secIn
	// when the second changes (inBytes reads both).
	core     Core // stepped and drained: the core added, or what it wraps (Wrapper)
	id       wire.NodeID
	site     int32
	firstSec int64    // second of added
	inSec    int32    // the second since firstSec that inAcc counts
	inAcc    uint32   // bytes received in second inSec, not yet in secIn
	secIn    []uint32 // bytes received per second of virtual time since firstSec (see inAcc)
	in, out  [wire.NumClasses]Counts
	seq      uint64     // events this node's processing scheduled (see nodeSeq)
	rng      *rand.Rand // the node's network randomness: jitter, loss, duplication of what it sends
	state    nodeState
	ticks    uint64
	secOut   []uint32 // bytes sent per second since firstSec
	added    int64    // ns, when first added
	since    int64    // ns, when the current (or last) incarnation came up
	down     int64    // ns, when state != nodeUp
	ticked   Core     // ticked: the core added
	gen      uint16   // incarnation: restarts so far (see Restart)
	phase    int64    // the frames' phase in [0, period): ticks at phase + k·period (Phase)
	past     []span   // the earlier incarnations' time up, when restarted
}

// span is a time interval [from, to), ns.
type span struct{ from, to int64 }

// received counts size bytes received in second sec since firstSec.
func (n *node) received(sec int64, size uint64) {
	if sec == int64(n.inSec) {
		n.inAcc += uint32(size)
		return
	}
	if n.inAcc != 0 {
		bump(&n.secIn, int64(n.inSec), uint64(n.inAcc))
	}
	n.inSec, n.inAcc = int32(sec), uint32(size)
}

// inBytes returns the bytes received in second j since firstSec.
func (n *node) inBytes(j int64) uint32 {
	var b uint32
	if j >= 0 && j < int64(len(n.secIn)) {
		b = n.secIn[j]
	}
	if j == int64(n.inSec) {
		b += n.inAcc
	}
	return b
}

// hot is the part of a node that send reads for the destination of every
// packet, kept apart from node so that it stays in cache.
type hot struct {
	site  int32
	state nodeState
	gen   uint16 // the node's incarnation (node.gen)
}

// partition is an active network partition.
type partition struct {
	id   int
	side []int32 // by node index; -1 (or past the end) means not in the partition
}

// Sim is a deterministic discrete-event simulator of nodes over an emulated
// WAN. Create it with New; it is not safe for concurrent use.
type Sim struct {
	cfg    Config
	sites  *geo.Sites
	q      queue
	now    int64
	period int64
	jitter float64 // mean ns
	header uint64

	nodes []node
	hot   []hot // by node index: what send reads of the destination, packed to stay in cache
	byID  map[wire.NodeID]int32
	small []int32 // byID for IDs below len(small), -1 if absent: avoids the map on the hot path

	phaseRNG *rand.Rand

	parts    []partition
	nextPart int

	funcs    []func(now time.Duration) // scheduled scenario functions, by slot
	freeFn   []int32
	gseq     uint64 // events scheduled outside any node's processing (see nodeSeq)
	running  bool
	observer func(Event)
	observed uint8  // bit k set: the observer wants events of kind k (see ObserveOnly)
	events   uint64 // events run (see Events)

	serial  lane // runs events one at a time, pushing and observing at once
	workers int  // lanes of a parallel window (Config.Workers, at least 1)
	planned int  // nodes when the clusters were last planned (see plan)
	par     parallel

	tr  traffic
	rec *Recorder
}

// New returns a simulator at virtual time 0 with no nodes over the given
// sites. It rejects an invalid config or nil sites.
func New(cfg Config, sites *geo.Sites) (*Sim, error) {
	cfg, err := cfg.validate()
	if err != nil {
		return nil, err
	}
	if sites == nil {
		return nil, fmt.Errorf("%w: nil sites", ErrBadArgument)
	}
	s := &Sim{
		cfg:      cfg,
		sites:    sites,
		period:   int64(cfg.FramePeriod),
		jitter:   float64(cfg.Jitter),
		header:   uint64(cfg.HeaderBytes),
		byID:     map[wire.NodeID]int32{},
		phaseRNG: rand.New(rand.NewPCG(cfg.Seed, 0x7068617365)), // "phase"
		workers:  max(1, cfg.Workers),
		observed: allKinds,
	}
	s.serial = lane{s: s, tr: &s.tr, direct: true}
	s.rec = newRecorder(cfg.Grace, cfg.Warmup, s)
	return s, nil
}

// Config returns the validated configuration (defaults filled in).
func (s *Sim) Config() Config {
	c := s.cfg
	c.Grace = slices.Clone(c.Grace)
	return c
}

// Sites returns the latency table.
func (s *Sim) Sites() *geo.Sites { return s.sites }

// Now returns the current virtual time.
func (s *Sim) Now() time.Duration { return time.Duration(s.now) }

// Recorder returns the metrics recorder the integrator feeds.
func (s *Sim) Recorder() *Recorder { return s.rec }

// SetObserver sets a function called after every event the scheduler runs
// (nil removes it); ObserveOnly narrows it to some kinds. It may read the
// simulator and the cores (to check invariants) but must not change them
// or call Run.
func (s *Sim) SetObserver(f func(Event)) { s.observer = f }

// allKinds has a bit for every EventKind.
const allKinds = 1<<(EventHeal+1) - 1

// ObserveOnly makes the observer see only events of the given kinds (none
// given: every kind, the default). A parallel window holds back each
// observed event until the window ends and replays them in order, on one
// goroutine: an observer that needs only the ticks (the lab's ground
// truth) keeps that serial work to a fraction of the events. Events
// counts every event whatever the observer sees.
func (s *Sim) ObserveOnly(kinds ...EventKind) {
	if len(kinds) == 0 {
		s.observed = allKinds
		return
	}
	s.observed = 0
	for _, k := range kinds {
		if k <= EventHeal {
			s.observed |= 1 << k
		}
	}
}

// Events returns the number of events run so far: ticks of nodes that
// were up, deliveries, drops on arrival, scenario functions and heals
// (what the observer would have been called for without ObserveOnly).
func (s *Sim) Events() uint64 { return s.events }

func (s *Sim) lookup(id wire.NodeID) (int32, bool) {
	if int(id) < len(s.small) {
		i := s.small[id]
		return i, i >= 0
	}
	i, ok := s.byID[id]
	return i, ok
}

// node returns the index of a known node or an ErrUnknownNode error.
func (s *Sim) node(id wire.NodeID) (int32, error) {
	i, ok := s.lookup(id)
	if !ok {
		return 0, fmt.Errorf("%w: %d", ErrUnknownNode, id)
	}
	return i, nil
}

// AddNode adds a node with the given ID at the named site, driven by core,
// at the current virtual time. Its first Tick comes after a random phase in
// [0, FramePeriod) drawn from the seed, then every FramePeriod. It rejects
// a duplicate ID (also of a node that is down), an unknown site and a nil
// core, changing nothing.
func (s *Sim) AddNode(id wire.NodeID, site string, core Core) error {
	if _, dup := s.lookup(id); dup {
		return fmt.Errorf("%w: %d", ErrDuplicateNode, id)
	}
	si, ok := s.sites.Index(site)
	if !ok {
		return fmt.Errorf("%w: node %d: unknown site %q", ErrBadArgument, id, site)
	}
	if core == nil {
		return fmt.Errorf("%w: node %d: nil core", ErrBadArgument, id)
	}
	idx := int32(len(s.nodes))
	if idx >= maxNodes {
		return fmt.Errorf("%w: node %d: at most %d nodes", ErrBadArgument, id, maxNodes)
	}
	stepped := core
	if w, ok := core.(Wrapper); ok && w.Unwrap() != nil {
		stepped = w.Unwrap()
	}
	s.nodes = append(s.nodes, node{id: id, site: int32(si), core: stepped, ticked: core, added: s.now, since: s.now, firstSec: s.now / int64(time.Second),
		rng: rand.New(rand.NewPCG(s.cfg.Seed, 0x6e6574^uint64(id)<<24))}) // "net", per sender
	s.hot = append(s.hot, hot{site: int32(si)})
	if id < 1<<16 {
		for int(id) >= len(s.small) {
			s.small = append(s.small, -1)
		}
		s.small[id] = idx
	} else {
		s.byID[id] = idx
	}
	phase := s.phaseRNG.Int64N(s.period)
	s.nodes[idx].phase = (s.now + phase) % s.period
	s.q.push(s.now+phase, entry{kind: evTick, ref: idx, seq: s.nodeSeq(idx)})
	return nil
}

// Crash stops a node at the current time: it is not stepped, ticked or
// drained again unless it restarts (Restart), and packets in flight to it
// are dropped on arrival (counted as DropDown). Its ID is not reused by
// another node. Crashing a node that is down is an error (ErrNodeDown).
func (s *Sim) Crash(id wire.NodeID) error { return s.stop(id, nodeCrashed) }

// maxRestarts bounds the restarts of one node (the incarnation an event
// is for is kept in 16 bits).
const maxRestarts = 1<<16 - 1

// Restart brings a crashed node back at the current time as a new
// incarnation driven by core (a fresh core: the crashed one's state is
// lost, as a process's is): at the same site and ID, with its first Tick
// after a random phase in [0, FramePeriod) drawn from the seed, then
// every FramePeriod. Packets sent to the node before the restart and
// still in flight are dropped on arrival (DropDown: they were for the
// incarnation that crashed); packets sent after it are delivered. The
// node's traffic accounting continues (its time up is the sum of its
// incarnations'), its interest state in the Recorder starts afresh, and
// the summary counts the restart. It rejects an unknown ID
// (ErrUnknownNode), a node that is up or that left (Remove), a nil core
// and a node restarted 65535 times already (ErrBadArgument), changing
// nothing.
func (s *Sim) Restart(id wire.NodeID, core Core) error {
	i, err := s.node(id)
	if err != nil {
		return err
	}
	n := &s.nodes[i]
	switch {
	case n.state == nodeUp:
		return fmt.Errorf("%w: restart node %d: it is up (crash it first)", ErrBadArgument, id)
	case n.state != nodeCrashed:
		return fmt.Errorf("%w: restart node %d: it %s (only a crashed node restarts)", ErrBadArgument, id, n.state)
	case core == nil:
		return fmt.Errorf("%w: restart node %d: nil core", ErrBadArgument, id)
	case n.gen == maxRestarts:
		return fmt.Errorf("%w: restart node %d: restarted %d times already", ErrBadArgument, id, n.gen)
	}
	stepped := core
	if w, ok := core.(Wrapper); ok && w.Unwrap() != nil {
		stepped = w.Unwrap()
	}
	n.past = append(n.past, span{n.since, n.down})
	n.core, n.ticked = stepped, core
	n.state, n.since, n.down = nodeUp, s.now, 0
	n.gen++
	s.hot[i].state, s.hot[i].gen = nodeUp, n.gen
	phase := s.phaseRNG.Int64N(s.period)
	n.phase = (s.now + phase) % s.period
	s.q.push(s.now+phase, entry{kind: evTick, ref: i, seq: s.nodeSeq(i), gen: n.gen})
	return nil
}

// Phase returns the phase of a known node's frames: it ticks at the
// virtual times Phase + k·FramePeriod (its current incarnation's, after a
// Restart). A live run that means to reproduce the simulated one gives
// each node this phase (live.DriverConfig.Phase).
func (s *Sim) Phase(id wire.NodeID) (time.Duration, error) {
	i, err := s.node(id)
	if err != nil {
		return 0, err
	}
	return time.Duration(s.nodes[i].phase), nil
}

// Restarts returns how many times a known node restarted (Restart).
func (s *Sim) Restarts(id wire.NodeID) (int, error) {
	i, err := s.node(id)
	if err != nil {
		return 0, err
	}
	return int(s.nodes[i].gen), nil
}

// Remove takes a node out as a graceful leave: to the network it is the same
// as Crash (the core sends its goodbyes itself before the integrator removes
// it; Flush sends them), but the summary lists the node as "left", and it
// cannot restart.
func (s *Sim) Remove(id wire.NodeID) error { return s.stop(id, nodeLeft) }

func (s *Sim) stop(id wire.NodeID, st nodeState) error {
	i, err := s.node(id)
	if err != nil {
		return err
	}
	n := &s.nodes[i]
	if n.state != nodeUp {
		return fmt.Errorf("%w: node %d is %s", ErrNodeDown, id, n.state)
	}
	n.state, n.down = st, s.now
	s.hot[i].state = st
	s.rec.Forget(id)
	return nil
}

// Up reports whether the node exists and is up.
func (s *Sim) Up(id wire.NodeID) bool {
	i, ok := s.lookup(id)
	return ok && s.nodes[i].state == nodeUp
}

// Core returns the core of a known node (up or down: its latest
// incarnation's), for observers and scenario functions.
func (s *Sim) Core(id wire.NodeID) (Core, error) {
	i, err := s.node(id)
	if err != nil {
		return nil, err
	}
	return s.nodes[i].ticked, nil
}

// Nodes returns the IDs of all nodes ever added, in the order they were
// added.
func (s *Sim) Nodes() []wire.NodeID {
	out := make([]wire.NodeID, len(s.nodes))
	for i := range s.nodes {
		out[i] = s.nodes[i].id
	}
	return out
}

// BaseDelay returns the one-way delay the simulator gives every packet
// from node a to node b before jitter and reordering add to it: the site
// table's, or SameSite for two nodes at one site. It rejects an unknown
// node.
func (s *Sim) BaseDelay(a, b wire.NodeID) (time.Duration, error) {
	i, err := s.node(a)
	if err != nil {
		return 0, err
	}
	j, err := s.node(b)
	if err != nil {
		return 0, err
	}
	if sa, sb := s.nodes[i].site, s.nodes[j].site; sa != sb {
		return s.sites.OneWay(int(sa), int(sb)), nil
	}
	return s.cfg.SameSite, nil
}

// Flush drains a node's core now and sends what it emitted. Scenario
// functions call it after acting on a core directly (a player joins, a
// command arrives) so its packets leave at once instead of at its next Tick.
func (s *Sim) Flush(id wire.NodeID) error {
	i, err := s.node(id)
	if err != nil {
		return err
	}
	if s.nodes[i].state != nodeUp {
		return fmt.Errorf("%w: node %d is %s", ErrNodeDown, id, s.nodes[i].state)
	}
	s.serial.now = s.now
	s.serial.drain(i)
	return nil
}

// Schedule runs fn at virtual time at (at ≥ Now()), after every tick and
// delivery due at that instant and after the functions already scheduled
// for it. Scenario events (players joining,
// churn, crashes, partitions) are scheduled this way.
func (s *Sim) Schedule(at time.Duration, fn func(now time.Duration)) error {
	if fn == nil {
		return fmt.Errorf("%w: nil function", ErrBadArgument)
	}
	if int64(at) < s.now {
		return fmt.Errorf("%w: schedule at %v, before now (%v)", ErrTime, at, s.Now())
	}
	slot := len(s.funcs)
	if n := len(s.freeFn); n > 0 {
		slot = int(s.freeFn[n-1])
		s.freeFn = s.freeFn[:n-1]
		s.funcs[slot] = fn
	} else {
		s.funcs = append(s.funcs, fn)
	}
	s.q.push(int64(at), entry{kind: evFunc, ref: int32(slot), seq: s.globalSeq()})
	return nil
}

// Partition cuts the network between the given sides from now until heal
// (heal == 0: until Heal is called): a packet sent from a node of one side
// to a node of another is dropped (DropPartition). Nodes not listed are
// unaffected; packets already in flight are delivered. Partitions may
// overlap; a packet is dropped if any active partition separates its ends.
// It returns the partition's ID. It rejects fewer than two sides, an empty
// side, an unknown node, a node on two sides, and a heal time not after now.
func (s *Sim) Partition(heal time.Duration, sides ...[]wire.NodeID) (int, error) {
	if len(sides) < 2 {
		return 0, fmt.Errorf("%w: a partition needs at least two sides, have %d", ErrBadArgument, len(sides))
	}
	if heal != 0 && int64(heal) <= s.now {
		return 0, fmt.Errorf("%w: heal at %v, not after now (%v)", ErrTime, heal, s.Now())
	}
	side := make([]int32, len(s.nodes))
	for i := range side {
		side[i] = -1
	}
	for k, ids := range sides {
		if len(ids) == 0 {
			return 0, fmt.Errorf("%w: partition side %d is empty", ErrBadArgument, k)
		}
		for _, id := range ids {
			i, err := s.node(id)
			if err != nil {
				return 0, fmt.Errorf("partition side %d: %w", k, err)
			}
			if side[i] >= 0 {
				return 0, fmt.Errorf("%w: node %d is on partition sides %d and %d", ErrBadArgument, id, side[i], k)
			}
			side[i] = int32(k)
		}
	}
	s.nextPart++
	id := s.nextPart
	s.parts = append(s.parts, partition{id: id, side: side})
	if heal != 0 {
		s.q.push(int64(heal), entry{kind: evHeal, ref: int32(id), seq: s.globalSeq()})
	}
	return id, nil
}

// Heal ends an active partition now. It is an error if the partition is
// unknown or already healed.
func (s *Sim) Heal(id int) error {
	for k, p := range s.parts {
		if p.id == id {
			s.parts = slices.Delete(s.parts, k, k+1)
			return nil
		}
	}
	return fmt.Errorf("%w: no active partition %d", ErrBadArgument, id)
}

// Run runs every event due at or before until, in (time, scheduling order),
// and leaves the clock at until. It rejects a time before Now() and a call
// from inside an event.
func (s *Sim) Run(until time.Duration) error {
	if s.running {
		return ErrReentrant
	}
	if int64(until) < s.now {
		return fmt.Errorf("%w: run until %v, before now (%v)", ErrTime, until, s.Now())
	}
	s.running = true
	defer func() { s.running = false }()
	end := int64(until)
	if s.workers > 1 && s.plan() {
		s.runParallel(end)
	} else {
		for {
			if e := s.q.next(); e == nil || e.at > end {
				break
			}
			ev := s.q.pop()
			s.now = ev.at
			s.serial.now = ev.at
			s.serial.dispatch(&ev)
		}
	}
	s.now = end
	return nil
}

// SetWorkers changes Config.Workers between runs (not from inside one).
func (s *Sim) SetWorkers(n int) error {
	if s.running {
		return ErrReentrant
	}
	if n < 0 || n > maxWorkers {
		return fmt.Errorf("%w: Workers %d: want 0 to %d", ErrBadArgument, n, maxWorkers)
	}
	s.cfg.Workers, s.workers = n, max(1, n)
	return nil
}

// RunFor runs for d of virtual time (d ≥ 0).
func (s *Sim) RunFor(d time.Duration) error {
	if d < 0 {
		return fmt.Errorf("%w: run for %v", ErrTime, d)
	}
	return s.Run(s.Now() + d)
}

// EventKind says what an observed event was.
type EventKind uint8

// Event kinds.
const (
	EventTick    EventKind = iota // a node's frame ran
	EventDeliver                  // a packet was delivered to its destination
	EventDrop                     // a packet arrived at a node that is down and was dropped
	EventFunc                     // a scheduled scenario function ran
	EventHeal                     // a partition healed
)

func (k EventKind) String() string {
	switch k {
	case EventTick:
		return "tick"
	case EventDeliver:
		return "deliver"
	case EventDrop:
		return "drop"
	case EventFunc:
		return "func"
	case EventHeal:
		return "heal"
	}
	return fmt.Sprintf("EventKind(%d)", uint8(k))
}

// Event describes one event to the observer. For ticks Node is the ticked
// node; for deliveries and drops Node is the destination and From, Class and
// Bytes (payload plus header) describe the packet.
type Event struct {
	Kind  EventKind
	At    time.Duration
	Node  wire.NodeID
	From  wire.NodeID
	Class wire.Class
	Bytes int
}
