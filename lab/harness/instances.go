package harness

import (
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/overworld/overworld/control"
	"github.com/overworld/overworld/discovery"
	"github.com/overworld/overworld/geo"
	"github.com/overworld/overworld/lab"
	"github.com/overworld/overworld/lab/cities"
	"github.com/overworld/overworld/node"
	"github.com/overworld/overworld/place/balance"
	"github.com/overworld/overworld/wire"
	"github.com/overworld/overworld/world"
)

// Instances in the simulated world, overflowing to player hosts. A run
// opens instances (5 to 40 players each, the paper's size mix) of
// GeoNames players through control.Instances on a few server nodes whose
// instance seats are too few for all of them, so that some overflow: the
// plane chooses, among each overflowed instance's players, the host and
// the replicated host (LL by default). Every player of an overflowed
// instance is a simulated node (a player host: the same node core) at
// its WonderNetwork anchor city (the nearest city with no node yet when
// another node is there); it holds its avatar, whose interest
// covers the instance's box, so it keeps a replica of the instance's
// state object and receives its updates. The state object runs on the
// host, its backup pinned to the replicated host and then to the host's
// successor (node.PreferBackup), with failover on.
//
// Players leave by the session model (exponential, mean Session) as a
// crash: the node stops, no goodbye. The plane hears of a departure
// Notice later (the host's or the client's connection timing out), and
// its decisions (PromoteInstance, NewReplica) re-pin the backups, as does
// any other departure that changes the successor (which the plane
// decides nothing about). Every
// WriteEvery, each player writes +1 to its instance's score by ID (a
// player input, exactly once, acknowledged only once backed up).
//
// What a run measures: for every host that leaves while two or more of
// its instance's players remain, the time from the crash to the replica's
// promotion (the node's EvPromoted) and to each remaining player's node
// holding the state of the new epoch, or a replica the new primary feeds
// (sampled every 10 ms); the writes
// acknowledged to the players that the instance's final state lacks (the
// state lost, target 0); the instances lost (their host left with no
// replica); and the share of overflowed instances that fell below two
// players before the end beside the paper's failure probability
// (balance.PaperFailure, Table 5) and the exact one
// (balance.ExactFailure) for the same leave probabilities; and the
// backups chosen on a node the plane knew gone (target 0).

// InstancesConfig configures an instance run (RunInstances).
type InstancesConfig struct {
	// Servers are the server nodes' WonderNetwork cities (default the
	// first 4 of cities.ForNodes).
	Servers []string
	// Capacity is each server's instance seats (default 15).
	Capacity int
	// Instances is how many instances open at the start (default 12).
	Instances int
	// Criterion chooses hosts (default LL).
	Criterion balance.Criterion
	// Duration is the game time (default 60 s); Session the players'
	// mean session (default 150 s; exponential).
	Duration, Session time.Duration
	// Notice is how long the plane takes to hear of a departure (default
	// 1 s); WriteEvery how often each player writes (default 500 ms).
	Notice, WriteEvery time.Duration
	// Seed seeds the players and the world of the first run; Runs is how
	// many runs (default 1), the k-th with seed Seed+k, whose figures add
	// up.
	Seed uint64
	Runs int
	// Workers runs the simulation (see Config.Workers; the run is serial
	// anyway: it reads the authority events).
	Workers int
}

func (c InstancesConfig) validate() (InstancesConfig, error) {
	if len(c.Servers) == 0 {
		c.Servers = cities.ForNodes(4)
	}
	if c.Capacity == 0 {
		c.Capacity = 15
	}
	if c.Instances == 0 {
		c.Instances = 12
	}
	if c.Duration == 0 {
		c.Duration = 60 * time.Second
	}
	if c.Session == 0 {
		c.Session = 150 * time.Second
	}
	if c.Notice == 0 {
		c.Notice = time.Second
	}
	if c.WriteEvery == 0 {
		c.WriteEvery = 500 * time.Millisecond
	}
	if c.Runs == 0 {
		c.Runs = 1
	}
	bad := func(format string, args ...any) (InstancesConfig, error) {
		return c, fmt.Errorf("%w: instances: %s", lab.ErrConfig, fmt.Sprintf(format, args...))
	}
	switch {
	case len(c.Servers) > 64:
		return bad("%d servers: want at most 64", len(c.Servers))
	case c.Capacity < 1 || c.Capacity > 10_000:
		return bad("capacity %d: want 1 to 10000", c.Capacity)
	case c.Instances < 1 || c.Instances > 200:
		return bad("%d instances: want 1 to 200", c.Instances)
	case c.Duration < 10*time.Second || c.Duration > time.Hour:
		return bad("duration %v: want 10s to 1h", c.Duration)
	case c.Session < time.Second:
		return bad("session %v: want at least 1s", c.Session)
	case c.Notice < 0 || c.Notice > time.Minute:
		return bad("notice %v: want 0 to 1m", c.Notice)
	case c.WriteEvery < 100*time.Millisecond || c.WriteEvery > time.Minute:
		return bad("write period %v: want 100ms to 1m", c.WriteEvery)
	case c.Runs < 1 || c.Runs > 1000:
		return bad("%d runs: want 1 to 1000", c.Runs)
	case !slices.Contains(balance.Criteria(), c.Criterion):
		return bad("criterion %v", c.Criterion)
	}
	return c, nil
}

// Latencies are the 50th and 99th percentiles and the maximum of a set of
// durations, and how many there are.
type Latencies struct {
	N             int
	P50, P99, Max time.Duration
}

func latenciesOf(xs []time.Duration) Latencies {
	if len(xs) == 0 {
		return Latencies{}
	}
	ys := slices.Clone(xs)
	slices.Sort(ys)
	q := func(p float64) time.Duration { return ys[max(0, int(math.Ceil(p*float64(len(ys))))-1)] }
	return Latencies{N: len(ys), P50: q(0.5), P99: q(0.99), Max: ys[len(ys)-1]}
}

// InstancesReport is what an instance run measured.
type InstancesReport struct {
	Config InstancesConfig
	// Plane counts the plane's decisions: instances placed on servers,
	// overflowed to player hosts, replicas promoted, new replicas, lost.
	Plane control.InstanceStats
	// Opened counts the instances opened; Nodes the simulated nodes
	// (servers, player hosts, the directory's), over every run.
	Opened, Nodes int
	// HostDepartures counts hosts that left while two or more players
	// remained; Promotion is, for them, the crash to the replica's
	// promotion; Recovery the crash to each remaining player's node
	// holding the new primary's state (a sample per player).
	HostDepartures      int
	Promotion, Recovery Latencies
	// Unrecovered counts players that did not receive the new state
	// within 10 s.
	Unrecovered int
	// Writes sent, acknowledged, and acknowledged but missing from the
	// final state of an instance still running (StateLost); Duplicated
	// counts writes the final states hold beyond those sent.
	Writes, Acked, StateLost, Duplicated int64
	// DoubleLost counts hosted instances lost because the nodes of their
	// state's primary and backup both crashed before a promotion (a host
	// and its replica leaving within the failover window: the failure the
	// paper's Table 5 estimates); LostWithPlayers those whose state no
	// live node held at the end, while two or more players remained, for
	// any other reason (target 0).
	DoubleLost, LostWithPlayers int
	// StaleBackups counts the backups a hosted instance's primary chose on
	// a node that had crashed Notice or more before (the plane knew it
	// gone): until the primary finds it dead, about a second, the state
	// has no live backup (target 0).
	StaleBackups int
	// Hosted counts overflowed instances; BelowTwo those that fell below
	// two players before the end; PaperFailure and ExactFailure the
	// paper's and the exact failure probabilities, averaged over them,
	// for each player's probability of leaving before the end.
	Hosted, BelowTwo           int
	PaperFailure, ExactFailure float64
}

// instance schemas' fields.
const (
	ixX, ixY, ixScore, ixFrames = 0, 1, 2, 3
	avX, avY, avBox             = 0, 1, 2
)

// instGame is the run's game: an instance's state object counts frames
// and adds up its players' writes; an avatar sees its instance's box.
type instGame struct {
	state, avatar *world.Schema
	reg           *world.Registry
}

const instSpacing = 100.0 // m between instance boxes; each is 50 m wide

func instBox(k int) world.Box {
	return world.Box{Min: world.Point{float64(k) * instSpacing, 0}, Max: world.Point{float64(k)*instSpacing + 50, 50}}
}

type instState struct{ st *world.State }

func (o *instState) State() *world.State                  { return o.st }
func (o *instState) Interest(dst []world.Box) []world.Box { return dst }
func (o *instState) Think(world.Context)                  { o.st.SetInt(ixFrames, o.st.Int(ixFrames)+1) }

type instAvatar struct{ st *world.State }

func (o *instAvatar) State() *world.State { return o.st }
func (o *instAvatar) Interest(dst []world.Box) []world.Box {
	return append(dst, instBox(int(o.st.Int(avBox))))
}
func (o *instAvatar) Think(world.Context) {}

func newInstGame() (*instGame, error) {
	g := &instGame{}
	sp := world.MustSpace("x", "y")
	var err error
	if g.state, err = world.NewSchema("instance", sp, []world.Field{{Name: "x", Type: world.Float}, {Name: "y", Type: world.Float},
		{Name: "score", Type: world.Int}, {Name: "frames", Type: world.Int}}, func(st *world.State) world.Object { return &instState{st} }); err != nil {
		return nil, err
	}
	if g.avatar, err = world.NewSchema("instance-player", sp, []world.Field{{Name: "x", Type: world.Float}, {Name: "y", Type: world.Float},
		{Name: "box", Type: world.Int}}, func(st *world.State) world.Object { return &instAvatar{st} }); err != nil {
		return nil, err
	}
	g.reg, err = world.NewRegistry(sp, g.state, g.avatar)
	return g, err
}

// runInst is one instance of a run.
type runInst struct {
	a       control.Instance
	hosted  bool
	obj     world.ObjectID
	nodes   []wire.NodeID // per player: its simulated node (hosted instances)
	left    []bool        // per player: departed
	sent    []int64       // per player: writes sent
	lost    bool
	crashAt time.Duration // the host's crash being recovered, or -1
	// primary and backup are the nodes holding the state object's
	// primary and its backup, as the authority events tell.
	primary, backup wire.NodeID
	double          bool          // lost: its primary's and backup's nodes both crashed
	gone            bool          // lost otherwise
	epoch           uint32        // the epoch at the crash
	waiting         []wire.NodeID // players not yet holding the new state
	pinned          []wire.NodeID // the preferred backups last pinned
}

// RunInstances runs the instance experiment of cfg, Runs times, and adds
// their figures up. progress, if not nil, is called after each run.
func RunInstances(cfg InstancesConfig, progress func(done, total int)) (*InstancesReport, error) {
	cfg, err := cfg.validate()
	if err != nil {
		return nil, err
	}
	rep := &InstancesReport{Config: cfg}
	var prom, recov []time.Duration
	for k := range cfg.Runs {
		r, err := runInstances(cfg, cfg.Seed+uint64(k), rep)
		if err != nil {
			return nil, fmt.Errorf("seed %d: %w", cfg.Seed+uint64(k), err)
		}
		prom, recov = append(prom, r.prom...), append(recov, r.recov...)
		if progress != nil {
			progress(k+1, cfg.Runs)
		}
	}
	rep.Promotion, rep.Recovery = latenciesOf(prom), latenciesOf(recov)
	if rep.Hosted > 0 {
		rep.PaperFailure /= float64(rep.Hosted)
		rep.ExactFailure /= float64(rep.Hosted)
	}
	return rep, nil
}

// runInstances runs one world of seed, adding its counts to rep.
func runInstances(cfg InstancesConfig, seed uint64, rep *InstancesReport) (*runner, error) {
	cfg.Seed = seed
	pop, pings, err := cities.Population()
	if err != nil {
		return nil, err
	}
	if _, err := cities.Indices(pings, cfg.Servers); err != nil {
		return nil, fmt.Errorf("%w: %w", lab.ErrConfig, err)
	}
	rng := rand.New(rand.NewPCG(cfg.Seed, 0x696e7374)) // "inst"
	S := len(cfg.Servers)
	var servers []control.Node
	for i := range S {
		servers = append(servers, control.Node{ID: wire.NodeID(i + 1), Site: cfg.Servers[i], Capacity: cfg.Capacity})
	}
	// The instances and their players.
	sizes, weights := []int{5, 10, 20, 25, 40}, []float64{0.40, 0.30, 0.12, 0.10, 0.08}
	insts := make([]*runInst, cfg.Instances)
	var players [][]geo.Player
	for k := range insts {
		u, size := rng.Float64(), sizes[len(sizes)-1]
		for i, w := range weights {
			if u < w {
				size = sizes[i]
				break
			}
			u -= w
		}
		ps := pop.Draw(size, rng)
		players = append(players, ps)
		a := control.Instance{ID: fmt.Sprintf("i%02d", k), Box: instBox(k), RTT: make([]float64, size*size)}
		for i := range ps {
			ps[i].ID = fmt.Sprintf("%s.p%02d", a.ID, i)
			a.Players = append(a.Players, control.InstancePlayer{ID: ps[i].ID})
			for j := range i {
				v := (pop.RTT(ps[i], ps[j].Anchor) + pop.RTT(ps[j], ps[i].Anchor)) / 2
				a.RTT[i*size+j], a.RTT[j*size+i] = v, v
			}
		}
		insts[k] = &runInst{a: a, crashAt: -1}
	}
	// The lobby, twice: which instances overflow does not depend on the
	// host nodes' IDs, so a first pass finds them and the second numbers
	// their players' nodes after the servers.
	open := func(ids func(k, i int) wire.NodeID) (*control.Instances, [][]control.Decision, error) {
		x, err := control.NewInstances(control.InstanceConfig{Nodes: servers, Criterion: cfg.Criterion})
		if err != nil {
			return nil, nil, fmt.Errorf("%w: %w", lab.ErrConfig, err)
		}
		var all [][]control.Decision
		for k, in := range insts {
			for i := range in.a.Players {
				in.a.Players[i].Host = ids(k, i)
			}
			ds, err := x.Open(0, in.a)
			if err != nil {
				return nil, nil, fmt.Errorf("lab/harness: instances: open %s: %w", in.a.ID, err)
			}
			all = append(all, ds)
		}
		return x, all, nil
	}
	x, _, err := open(func(k, i int) wire.NodeID { return wire.NodeID(10_000 + 100*k + i) })
	if err != nil {
		return nil, err
	}
	var where []string
	for _, s := range cfg.Servers {
		where = append(where, s)
	}
	next := wire.NodeID(S)
	for _, in := range insts {
		w, ok := x.Where(in.a.ID)
		in.hosted = ok && w.Hosted
		if in.hosted {
			for range in.a.Players {
				next++
				in.nodes = append(in.nodes, next)
			}
		}
	}
	x, _, err = open(func(k, i int) wire.NodeID {
		if insts[k].hosted {
			return insts[k].nodes[i]
		}
		return wire.NodeID(10_000 + 100*k + i)
	})
	if err != nil {
		return nil, err
	}
	// Each player host at its anchor city, or, when another node is there
	// already, at the nearest WonderNetwork city with no node (the
	// simulator gives each node its own city).
	taken := map[string]bool{}
	for _, s := range where {
		taken[s] = true
	}
	all := pings.Cities()
	// fits: the city has measured RTTs to every city with a node.
	fits := func(name string) bool {
		a, _ := pings.CityIndex(name)
		for _, o := range where {
			b, _ := pings.CityIndex(o)
			if _, ok := pings.PairRTT(a, b); !ok {
				return false
			}
		}
		return true
	}
	for k, in := range insts {
		in.left, in.sent = make([]bool, len(in.a.Players)), make([]int64, len(in.a.Players))
		if in.hosted {
			if w, _ := x.Where(in.a.ID); !w.Hosted {
				return nil, fmt.Errorf("lab/harness: instances: internal error: %s placed differently on the second pass", in.a.ID)
			}
			for i := range in.a.Players {
				pc := players[k][i].City
				name := pings.City(players[k][i].Anchor).Name
				if taken[name] || !fits(name) {
					best := math.Inf(1)
					for _, c := range all {
						if d := geo.GreatCircleKm(pc.Lat, pc.Lon, c.Lat, c.Lon); !taken[c.Name] && d < best && fits(c.Name) {
							name, best = c.Name, d
						}
					}
				}
				if taken[name] || !fits(name) {
					return nil, fmt.Errorf("%w: instances: more player hosts than WonderNetwork cities", lab.ErrConfig)
				}
				taken[name] = true
				where = append(where, name)
			}
		}
	}
	g, err := newInstGame()
	if err != nil {
		return nil, err
	}
	hc := DefaultConfig()
	hc.Arch, hc.Nodes, hc.Seed, hc.Duration, hc.Data, hc.Cities, hc.Failover, hc.Workers =
		discovery.Directory, len(where), cfg.Seed, cfg.Duration, SitesWonder, where, true, cfg.Workers
	bounds := world.Box{Min: world.Point{0, 0}, Max: world.Point{float64(cfg.Instances) * instSpacing, instSpacing}}
	w, err := New(hc, Game{Registry: g.reg, Bounds: bounds, Interest: 50, Speed: 1})
	if err != nil {
		return nil, err
	}
	rep.Nodes += len(w.Nodes())
	r := &runner{cfg: cfg, w: w, g: g, x: x, insts: insts, rep: rep,
		crashed: map[wire.NodeID]time.Duration{}, acked: map[[2]uint64]uint32{}, byObj: map[world.ObjectID]*runInst{},
		rng: rand.New(rand.NewPCG(cfg.Seed, 0x6c656176))} // "leav"
	if err := r.start(); err != nil {
		return nil, err
	}
	if err := w.Run(nil); err != nil {
		return nil, err
	}
	return r, r.finish()
}

type runner struct {
	cfg     InstancesConfig
	w       *World
	g       *instGame
	x       *control.Instances
	insts   []*runInst
	byObj   map[world.ObjectID]*runInst
	crashed map[wire.NodeID]time.Duration
	acked   map[[2]uint64]uint32 // (writer node, object) → highest sequence acknowledged
	rng     *rand.Rand
	prom    []time.Duration
	recov   []time.Duration
	rep     *InstancesReport
	failed  error
}

func (r *runner) node(id wire.NodeID) *node.Node { return r.w.nodes[id-1] }

// start spawns the instances' objects, pins their backups and schedules
// the departures, the writes and the recovery sampling.
func (r *runner) start() error {
	now := time.Duration(0)
	for k, in := range r.insts {
		p, _ := r.x.Where(in.a.ID)
		box := in.a.Box
		if in.hosted {
			r.pin(in)
			for i := range in.a.Players {
				id := in.nodes[i]
				if _, err := r.node(id).Spawn(now, r.g.avatar, func(st *world.State) {
					st.SetFloat(avX, box.Max[0]+10+float64(i%20))
					st.SetFloat(avY, float64(i))
					st.SetInt(avBox, int64(k))
				}); err != nil {
					return err
				}
				if err := r.w.sim.Flush(id); err != nil {
					return err
				}
			}
		}
		obj, err := r.node(p.Node).Spawn(now, r.g.state, func(st *world.State) {
			st.SetFloat(ixX, box.Min[0]+25)
			st.SetFloat(ixY, 25)
		})
		if err != nil {
			return err
		}
		in.obj = obj.State().ID()
		in.primary = p.Node
		r.byObj[in.obj] = in
		if err := r.w.sim.Flush(p.Node); err != nil {
			return err
		}
		if !in.hosted {
			continue
		}
		for i := range in.a.Players {
			at := time.Duration(r.rng.ExpFloat64() * float64(r.cfg.Session))
			if at < r.cfg.Duration-5*time.Second {
				if err := r.w.Schedule(at, func(*World) error { return r.depart(in, i) }); err != nil {
					return err
				}
			}
			first := time.Second + time.Duration(r.rng.Int64N(int64(r.cfg.WriteEvery)))
			if err := r.w.Schedule(first, func(*World) error { return r.write(in, i) }); err != nil {
				return err
			}
		}
	}
	r.w.SetOnEvent(r.event)
	return nil
}

// order returns the preferred backups of a hosted instance: its
// replicated host, then its successor (none if not hosted).
func (r *runner) order(in *runInst) []wire.NodeID {
	p, ok := r.x.Where(in.a.ID)
	if !ok || !p.Hosted || p.Replica == 0 {
		return nil
	}
	order := []wire.NodeID{p.Replica}
	if s := r.x.Successor(in.a.ID); s != 0 {
		order = append(order, s)
	}
	return order
}

// pin sets the preferred backups of a hosted instance's box, on its host,
// its replica and its successor: the replica, then the successor.
func (r *runner) pin(in *runInst) {
	p, ok := r.x.Where(in.a.ID)
	if !ok || !p.Hosted {
		return
	}
	order := r.order(in)
	in.pinned = order
	for _, n := range append([]wire.NodeID{p.Node}, order...) {
		if r.w.sim.Up(n) {
			// The box is valid and the order has no node 0.
			_ = r.node(n).PreferBackup(in.a.Box, order)
		}
	}
}

// depart crashes player i of a hosted instance; the plane hears of it
// Notice later.
func (r *runner) depart(in *runInst, i int) error {
	id := in.nodes[i]
	if in.left[i] || !r.w.sim.Up(id) {
		return nil
	}
	now := r.w.sim.Now()
	remain := 0
	for j, gone := range in.left {
		if !gone && j != i {
			remain++
		}
	}
	p, ok := r.x.Where(in.a.ID)
	if ok && p.Hosted && p.Node == id && remain >= 2 && !in.lost {
		r.rep.HostDepartures++
		in.crashAt = now
		in.epoch, _ = r.node(id).Epoch(in.obj)
		in.waiting = in.waiting[:0]
		for j, n := range in.nodes {
			if j != i && !in.left[j] {
				in.waiting = append(in.waiting, n)
			}
		}
		if err := r.w.Schedule(now+10*time.Millisecond, func(*World) error { return r.sample(in) }); err != nil {
			return err
		}
	}
	in.left[i] = true
	r.crashed[id] = now
	if err := r.w.Crash(id); err != nil {
		return err
	}
	return r.w.Schedule(now+r.cfg.Notice, func(*World) error {
		ds, err := r.x.NodeDown(r.w.sim.Now(), id)
		if err != nil {
			return fmt.Errorf("lab/harness: instances: %w", err)
		}
		for _, d := range ds {
			switch d.Kind {
			case control.PromoteInstance, control.NewReplica:
				r.pin(in)
			case control.LoseInstance:
				in.lost = true
			}
		}
		// A player leaving who is neither the host nor the replicated host
		// may still be the successor, the second preferred backup: the
		// plane makes no decision then, but the order must not keep it, or
		// a replica promoted later backs up on a node long gone and has no
		// backup until it finds that node dead (about a second).
		if !in.lost && !slices.Equal(in.pinned, r.order(in)) {
			r.pin(in)
		}
		return nil
	})
}

// sample checks which remaining players hold the state of the epoch
// after the host's crash.
func (r *runner) sample(in *runInst) error {
	now := r.w.sim.Now()
	keep := in.waiting[:0]
	for _, n := range in.waiting {
		if !r.w.sim.Up(n) {
			continue
		}
		if r.recovered(in, n) {
			r.recov = append(r.recov, now-in.crashAt)
			continue
		}
		keep = append(keep, n)
	}
	in.waiting = keep
	if len(keep) == 0 {
		return nil
	}
	if now-in.crashAt >= 10*time.Second {
		if !r.alive(in) {
			r.lose(in)
		} else {
			r.rep.Unrecovered += len(keep)
		}
		in.waiting = nil
		return nil
	}
	return r.w.Schedule(now+10*time.Millisecond, func(*World) error { return r.sample(in) })
}

// recovered reports whether player node n holds the state of in's
// primary after the host's crash: its copy is of a newer epoch, or a
// replica fed by a live node that holds the primary at a newer epoch (a
// replica fetched afresh from the new primary, by a player whose
// registration the crashed host never answered, does not know its
// epoch).
func (r *runner) recovered(in *runInst, n wire.NodeID) bool {
	if ep, ok := r.node(n).Epoch(in.obj); ok && ep != in.epoch {
		return true
	}
	info, ok := r.node(n).Object(in.obj)
	if !ok || info.Primary || info.From == 0 || int(info.From) > len(r.w.nodes) || !r.w.sim.Up(info.From) {
		return false
	}
	ep, ok := r.node(info.From).Epoch(in.obj)
	_, primary, held := r.node(info.From).Lookup(in.obj)
	return ok && held && primary && ep != in.epoch
}

// alive reports whether a live node holds the primary of in's state.
func (r *runner) alive(in *runInst) bool {
	for _, n := range r.w.nodes {
		if _, primary, ok := n.Lookup(in.obj); ok && primary && r.w.sim.Up(n.ID()) {
			return true
		}
	}
	return false
}

// lose records a hosted instance whose state no live node holds: its
// host's and backup's nodes both crashed before a promotion (the paper's
// failure), or else an unexplained loss.
func (r *runner) lose(in *runInst) {
	if in.double || in.gone {
		return
	}
	_, pc := r.crashed[in.primary]
	_, bc := r.crashed[in.backup]
	if pc && (bc || in.backup == 0) {
		in.double = true
		r.rep.DoubleLost++
		return
	}
	in.gone = true
	r.rep.LostWithPlayers++
}

// write has player i write +1 to its instance's score, and schedules the
// next.
func (r *runner) write(in *runInst, i int) error {
	id := in.nodes[i]
	if in.left[i] || in.lost || !r.w.sim.Up(id) {
		return nil
	}
	if err := r.node(id).WriteTo(in.obj, r.g.state, func(st *world.State) { st.SetInt(ixScore, st.Int(ixScore)+1) }); err == nil {
		in.sent[i]++
		r.rep.Writes++
		if err := r.w.sim.Flush(id); err != nil {
			return err
		}
	}
	return r.w.Schedule(r.w.sim.Now()+r.cfg.WriteEvery, func(*World) error { return r.write(in, i) })
}

// event reads the nodes' authority events: promotions of instances'
// objects, and writes acknowledged.
func (r *runner) event(ev node.AuthorityEvent) {
	in := r.byObj[ev.ID]
	if in == nil {
		return
	}
	switch ev.Kind {
	case node.EvPromoted, node.EvInstalled:
		in.primary, in.backup = ev.Self, 0
		if at, ok := r.crashed[ev.Node]; ok && in.crashAt == at && ev.Kind == node.EvPromoted {
			r.prom = append(r.prom, ev.At-at)
		}
	case node.EvBackup:
		if ev.Self == in.primary {
			in.backup = ev.Node
		}
		if at, ok := r.crashed[ev.Node]; ok && in.hosted && ev.At-at >= r.cfg.Notice {
			r.rep.StaleBackups++
		}
	case node.EvWriteAcked:
		k := [2]uint64{uint64(ev.Self), uint64(ev.ID)}
		r.acked[k] = max(r.acked[k], ev.Seq)
	}
}

// finish checks every running instance's final state against the writes
// acknowledged, and adds to the report.
func (r *runner) finish() error {
	rep := r.rep
	st := r.x.Stats()
	rep.Plane.Placed += st.Placed
	rep.Plane.Moved += st.Moved
	rep.Plane.Overflowed += st.Overflowed
	rep.Plane.Promoted += st.Promoted
	rep.Plane.NewReplicas += st.NewReplicas
	rep.Plane.Lost += st.Lost
	rep.Opened += len(r.insts)
	for _, in := range r.insts {
		var acked, sent int64
		for i, n := range in.nodes {
			// A writer's sequence numbers count its writes to this object
			// (it writes to no other).
			a := int64(r.acked[[2]uint64{uint64(n), uint64(in.obj)}])
			if a > in.sent[i] {
				return fmt.Errorf("lab/harness: instances: internal error: node %d acknowledged %d writes of %d", n, a, in.sent[i])
			}
			acked += a
			sent += in.sent[i]
		}
		rep.Acked += acked
		if !in.hosted {
			continue
		}
		rep.Hosted++
		q := make([]float64, len(in.a.Players))
		span := r.cfg.Duration - 5*time.Second
		left := 0
		for i := range q {
			q[i] = 1 - math.Exp(-span.Seconds()/r.cfg.Session.Seconds())
			if in.left[i] {
				left++
			}
		}
		rep.PaperFailure += balance.PaperFailure(q)
		rep.ExactFailure += balance.ExactFailure(q)
		if len(q)-left < 2 {
			rep.BelowTwo++
		}
		if in.lost {
			continue
		}
		var score int64 = -1
		for _, n := range r.w.nodes {
			if obj, primary, ok := n.Lookup(in.obj); ok && primary && r.w.sim.Up(n.ID()) {
				score = obj.State().Int(ixScore)
			}
		}
		if score < 0 {
			if len(q)-left >= 2 {
				r.lose(in)
			}
			continue
		}
		rep.StateLost += max(0, acked-score)
		rep.Duplicated += max(0, score-sent)
	}
	return nil
}

// WriteLines prints the report as the demo's lines.
func (r *InstancesReport) WriteLines(w io.Writer) {
	fmt.Fprintf(w, "instances: %d opened (%d run(s)) on %d servers of %d instance seats: %d ran on servers, %d overflowed to player hosts (%s), %d moves; %d nodes simulated\n",
		r.Opened, r.Config.Runs, len(r.Config.Servers), r.Config.Capacity, r.Opened-r.Hosted, r.Hosted, r.Config.Criterion, r.Plane.Moved, r.Nodes)
	fmt.Fprintf(w, "           hosts left with 2+ players: %d; replica promoted p50 %s p99 %s; players had state again p50 %s p99 %s (%d samples, %d not within 10 s)\n",
		r.HostDepartures, ms1(r.Promotion.P50), ms1(r.Promotion.P99), ms1(r.Recovery.P50), ms1(r.Recovery.P99), r.Recovery.N, r.Unrecovered)
	fmt.Fprintf(w, "           promoted %d, new replicas %d; lost: host and its backup both crashed before a promotion %d, otherwise with 2+ players %d; acknowledged writes %d, lost %d, applied twice %d; backups chosen on nodes gone %v before %d\n",
		r.Plane.Promoted, r.Plane.NewReplicas, r.DoubleLost, r.LostWithPlayers, r.Acked, r.StateLost, r.Duplicated, r.Config.Notice, r.StaleBackups)
	fmt.Fprintf(w, "           fell below 2 players: %d of %d hosted; failure probability: paper (Table 5) %.3f, exact %.3f\n",
		r.BelowTwo, r.Hosted, r.PaperFailure, r.ExactFailure)
}

func ms1(d time.Duration) string { return fmt.Sprintf("%.0f ms", float64(d)/float64(time.Millisecond)) }
