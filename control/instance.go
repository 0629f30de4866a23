package control

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/overworld/overworld/place/balance"
	"github.com/overworld/overworld/wire"
	gw "github.com/overworld/overworld/world"
)

// Instances is the control plane's core for instances: auxiliary games of
// a few players (dungeons, raids, matches: 5 to 40 players), each played
// in a box of the world space of its own (instance areas laid out outside
// the main map), placed on the server nodes as whole units by place/balance
// and overflowed, when the servers are full, to a machine of one of the
// instance's own players (a player host: the same node daemon, run by the
// player's client) with a replicated host on another player's machine.
// It is sans-IO like Plane: time is an argument, and the same events give
// the same decisions.
//
// # Capacity: instance seats apart from the main world's
//
// Each server node has a capacity in instance players (InstanceConfig.Nodes'
// Capacity), apart from the main world's seats that Plane assigns players
// to by CMA. Sharing one capacity would make every instance event change
// the capacities CMA's exact assignment is computed on (every open a chain
// of L-SA moves pushing main-world players off a node), so that opening a
// dungeon could hand over players far away in the world; with apart seats
// the two placements stay exact on their own terms and an operator sizes
// each. A node's instance players and main-world players are distinct
// clients, so its load is the sum.
//
// # Placement: Algorithm 1 on every open
//
// Open puts the new instance on the up server with the most free seats
// (Algorithm 1's least-loaded receiver), then runs balance.Balance on the
// cluster: when that server is now above its capacity, it sheds whole
// instances (the largest not above its excess, else the smallest) to the
// least-loaded server they fit, or overflows them to player hosts. The
// servers' capacities may differ: Balance's single MaxLoad is the largest,
// and a smaller server carries the difference as fixed load. The shed
// instance need not be the new one: Algorithm 1 may move or overflow a
// running instance instead (MoveInstance, OverflowInstance from a
// server). An instance none of whose players can host (no player host
// node) is never shed; when the server the new instance was put on stays
// over its capacity after the round, Open fails with ErrNoCapacity and
// changes nothing. Margin is Algorithm 1's margin (the paper's 10 %; 0 by
// default here: with seats apart, a server only overloads when an
// instance opens, and shedding more than the excess would overflow
// instances the servers could run).
//
// # Player hosts: LL or PD, and Algorithm 4 on departure
//
// An overflowed instance's host and replicated host are chosen among its
// players that run a player host (InstancePlayer.Host) by
// balance.Group.Distribute: LL, the least total RTT to the other players
// (the default), PD, the longest predicted minimum uptime, or Score. The
// host runs the instance's objects; the replicated host keeps their warm
// backup (node.PreferBackup pins it there) and is promoted by the nodes'
// failover when the host's node dies. When a player leaves (Leave, or
// NodeDown of its player host node: a crash, no goodbye), Restructure
// (Algorithm 4) promotes the replica if the host left (PromoteInstance),
// chooses a new replica by the same criterion if the host or the replica
// left (NewReplica, or the promotion's Replica), and reports the instance
// lost when its host left with no replica (LoseInstance). Overflowed
// instances stay on their player hosts until they close: the paper moves
// no instance back, and doing so would cost a migration for no latency.
//
// # Server failures
//
// NodeDown of a server re-places each instance it ran, largest first, as
// Open would (MoveInstance with Failover set, or OverflowInstance): the
// nodes' failover has already promoted the objects' backups somewhere, and
// the driver migrates them to the chosen node.
//
// What the caller must do: build an InstanceConfig and call NewInstances;
// pass each event with its time (Open, Leave, Close, NodeDown, NodeUp);
// carry out the returned decisions in order (see the Kind constants).
// The plane keeps no state the nodes do not also have: a restarted plane
// rebuilds it from their reports (RebuildInstances, instance_rebuild.go)
// and then decides as one that never went down. An Instances is not safe
// for concurrent use.
type Instances struct {
	cfg   InstanceConfig
	index map[wire.NodeID]int
	up    []bool
	load  []int // instance players per server index
	insts map[string]*inst
	hosts map[wire.NodeID][]string // player host node → instances where one of the players runs it
	now   time.Duration
	stats InstanceStats
}

// InstanceConfig configures an Instances.
type InstanceConfig struct {
	// Nodes are the server nodes; Capacity is the instance players each
	// may run (at least 1).
	Nodes []Node
	// Criterion chooses an overflowed instance's host and replicated host
	// (balance.LL by default: its zero value).
	Criterion balance.Criterion
	// Margin is Algorithm 1's margin, a share of the largest capacity
	// (0 to 0.5; default 0).
	Margin float64
}

// InstancePlayer is one player of an instance.
type InstancePlayer struct {
	// ID names the player (unique within the instance).
	ID string
	// Host is the node the player's machine runs as a player host (its
	// own node ID, not a server's), or 0 if it runs none: it cannot host
	// the instance nor keep its replica.
	Host wire.NodeID
	// Uptime is the player's predicted uptime interval in hours (PD).
	Uptime balance.Uptime
}

// Instance is what Open places.
type Instance struct {
	// ID names the instance (non-empty, unique among the open ones).
	ID string
	// Box is where in the world space the instance is played: its objects
	// are the primaries whose location lies in it.
	Box gw.Box
	// Players are the instance's players (1 to 1,000).
	Players []InstancePlayer
	// RTT is the players' RTT matrix in ms, row-major (RTT[i·N+j] between
	// players i and j), finite and ≥ 0; nil counts every pair as 0 (LL
	// then falls back to the lowest index).
	RTT []float64
}

// InstanceStats counts what an Instances decided since NewInstances.
type InstanceStats struct {
	// Placed counts instances opened on a server; Moved instances a
	// round moved between servers (Failover ones included); Overflowed
	// instances sent to player hosts.
	Placed, Moved, Overflowed int
	// Promoted counts replicas promoted to host; NewReplicas replicas
	// chosen after a host or replica left; Lost hosted instances whose
	// host left with no replica while players remained.
	Promoted, NewReplicas, Lost int
}

// Errors of Instances, beside ErrConfig, ErrUnknownNode, ErrNodeState,
// ErrNoCapacity, ErrUnknownPlayer and ErrTime.
var (
	// ErrBadInstance reports a malformed Instance (no ID, no players, a
	// bad RTT matrix or uptime, a duplicated player or host node, a host
	// node that is a server).
	ErrBadInstance = errors.New("control: bad instance")
	// ErrUnknownInstance reports an event about an instance that is not
	// open.
	ErrUnknownInstance = errors.New("control: unknown instance")
)

// maxInstancePlayers bounds an instance's players (the Group's RTT matrix
// is N²).
const maxInstancePlayers = 1000

type inst struct {
	id      string
	box     gw.Box
	players []InstancePlayer
	present []bool
	n       int // players present
	server  int // server index, or balance.Hosted
	group   balance.Group
	hosting balance.Hosting // player indices, when hosted
}

// NewInstances returns an instance plane with every server up and no
// instances. It may start with no server (AddServer adds them; until one
// is up, every Open fails with ErrNoCapacity). Bad configuration is an
// error wrapping ErrConfig.
func NewInstances(cfg InstanceConfig) (*Instances, error) {
	if len(cfg.Nodes) > maxNodes {
		return nil, fmt.Errorf("%w: %d server nodes, want at most %d", ErrConfig, len(cfg.Nodes), maxNodes)
	}
	if !(cfg.Margin >= 0 && cfg.Margin <= 0.5) {
		return nil, fmt.Errorf("%w: instance margin %v, want 0…0.5", ErrConfig, cfg.Margin)
	}
	if !slices.Contains(balance.Criteria(), cfg.Criterion) {
		return nil, fmt.Errorf("%w: host criterion %v", ErrConfig, cfg.Criterion)
	}
	cfg.Nodes = slices.Clone(cfg.Nodes)
	x := &Instances{cfg: cfg, index: map[wire.NodeID]int{}, insts: map[string]*inst{}, hosts: map[wire.NodeID][]string{}}
	for i, n := range cfg.Nodes {
		if n.ID == 0 {
			return nil, fmt.Errorf("%w: server node %d has ID 0", ErrConfig, i)
		}
		if _, dup := x.index[n.ID]; dup {
			return nil, fmt.Errorf("%w: server node %d listed twice", ErrConfig, n.ID)
		}
		if n.Capacity < 1 || n.Capacity > 1<<30 {
			return nil, fmt.Errorf("%w: server node %d has instance capacity %d, want 1…%d", ErrConfig, n.ID, n.Capacity, 1<<30)
		}
		x.index[n.ID] = i
	}
	x.up = make([]bool, len(cfg.Nodes))
	for i := range x.up {
		x.up[i] = true
	}
	x.load = make([]int, len(cfg.Nodes))
	return x, nil
}

// Stats returns the counters since NewInstances.
func (x *Instances) Stats() InstanceStats { return x.stats }

// Load returns the instance players a server runs (0 for a node that is
// not a server).
func (x *Instances) Load(n wire.NodeID) int {
	j, ok := x.index[n]
	if !ok {
		return 0
	}
	return x.load[j]
}

// InstanceIDs returns the open instances' IDs, sorted.
func (x *Instances) InstanceIDs() []string {
	out := make([]string, 0, len(x.insts))
	for id := range x.insts {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}

// Placement is where an instance runs: on server Node (Hosted false), or
// on the player host Node of player Player with its replica on the player
// host Replica (0: none, fewer than two of its players can host).
type Placement struct {
	Node    wire.NodeID
	Hosted  bool
	Player  string
	Replica wire.NodeID
	// ReplicaPlayer is the player whose machine keeps the replica.
	ReplicaPlayer string
	// Players is the number of players present.
	Players int
}

// Where returns where an open instance runs.
func (x *Instances) Where(id string) (Placement, bool) {
	in, ok := x.insts[id]
	if !ok {
		return Placement{}, false
	}
	p := Placement{Players: in.n}
	if in.server >= 0 {
		p.Node = x.cfg.Nodes[in.server].ID
		return p, true
	}
	p.Hosted = true
	p.Node, p.Player = in.players[in.hosting.Server].Host, in.players[in.hosting.Server].ID
	if r := in.hosting.Replica; r >= 0 {
		p.Replica, p.ReplicaPlayer = in.players[r].Host, in.players[r].ID
	}
	return p, true
}

// Successor returns the replica Algorithm 4 would choose should an
// overflowed instance's host leave now (its replica promoted): the player
// host to prefer next for the instance's backups (node.PreferBackup), or
// 0 when there is none. Any player's leaving may change it, and no
// decision reports that (the leaving player is neither the host nor the
// replica): a driver that pins it compares it after every Leave and
// NodeDown.
func (x *Instances) Successor(id string) wire.NodeID {
	in, ok := x.insts[id]
	if !ok || in.server >= 0 || in.hosting.Replica < 0 {
		return 0
	}
	alive := slices.Clone(in.present)
	alive[in.hosting.Server] = false
	next, _ := in.group.Restructure(in.hosting, in.hosting.Server, x.cfg.Criterion, alive)
	if next.Replica < 0 {
		return 0
	}
	return in.players[next.Replica].Host
}

// hostable returns, per player, whether it is present and runs a host.
func (in *inst) hostable() []bool {
	a := make([]bool, len(in.players))
	for i, p := range in.players {
		a[i] = in.present[i] && p.Host != 0
	}
	return a
}

func (x *Instances) checkTime(now time.Duration) error {
	if now < x.now {
		return fmt.Errorf("%w: event at %v after one at %v", ErrTime, now, x.now)
	}
	return nil
}

// check validates an Instance and returns its internal form.
func (x *Instances) check(a Instance) (*inst, error) {
	bad := func(format string, args ...any) (*inst, error) {
		return nil, fmt.Errorf("%w: %q: %s", ErrBadInstance, a.ID, fmt.Sprintf(format, args...))
	}
	if a.ID == "" {
		return bad("empty ID")
	}
	if _, dup := x.insts[a.ID]; dup {
		return bad("already open")
	}
	n := len(a.Players)
	if n < 1 || n > maxInstancePlayers {
		return bad("%d players, want 1…%d", n, maxInstancePlayers)
	}
	for d := range gw.MaxDims {
		if math.IsNaN(a.Box.Min[d]) || math.IsNaN(a.Box.Max[d]) || a.Box.Min[d] > a.Box.Max[d] {
			return bad("box %v…%v: want Min ≤ Max in every dimension", a.Box.Min, a.Box.Max)
		}
	}
	ids := map[string]bool{}
	hosts := map[wire.NodeID]bool{}
	for i, p := range a.Players {
		switch {
		case p.ID == "":
			return bad("player %d has no ID", i)
		case ids[p.ID]:
			return bad("player %q listed twice", p.ID)
		case p.Host != 0 && hosts[p.Host]:
			return bad("player host node %d given for two players", p.Host)
		}
		if _, srv := x.index[p.Host]; srv {
			return bad("player %q's host node %d is a server", p.ID, p.Host)
		}
		ids[p.ID], hosts[p.Host] = true, p.Host != 0
	}
	rtt := a.RTT
	if rtt == nil {
		rtt = make([]float64, n*n)
	} else {
		rtt = slices.Clone(rtt)
	}
	in := &inst{id: a.ID, box: a.Box, players: slices.Clone(a.Players), present: make([]bool, n), n: n,
		server: balance.Hosted, hosting: balance.Hosting{Server: -1, Replica: -1},
		group: balance.Group{N: n, RTT: rtt, Uptime: make([]balance.Uptime, n), CanHost: make([]bool, n)}}
	for i := range in.present {
		in.present[i] = true
		in.group.CanHost[i] = a.Players[i].Host != 0
		in.group.Uptime[i] = a.Players[i].Uptime
	}
	if err := in.group.Validate(); err != nil {
		return bad("%v", err)
	}
	if ms := ms(MaxRTT); slices.ContainsFunc(rtt, func(v float64) bool { return v > ms }) {
		return bad("an RTT above %v", MaxRTT)
	}
	for h := range hosts {
		if h == 0 {
			continue
		}
		for _, other := range x.hosts[h] {
			if oi := x.insts[other]; oi != nil {
				for i, p := range oi.players {
					if p.Host == h && oi.present[i] && !ids[p.ID] {
						return bad("player host node %d belongs to player %q of instance %q", h, p.ID, other)
					}
				}
			}
		}
	}
	return in, nil
}

// Open places a new instance (see Instances): its decision (PlaceInstance
// or OverflowInstance) comes last, after the moves and overflows of other
// instances that made room for it.
func (x *Instances) Open(now time.Duration, a Instance) ([]Decision, error) {
	if err := x.checkTime(now); err != nil {
		return nil, err
	}
	in, err := x.check(a)
	if err != nil {
		return nil, err
	}
	ds, err := x.place(in, 0, false)
	if err != nil {
		return nil, err
	}
	x.now = now
	return ds, nil
}

// place runs a balancing round with in (not yet open) on the up server
// with the most room, and commits it; from is the server in comes from
// (0: it opens), failover whether from died (its objects failed over to
// their backups) or still runs it.
func (x *Instances) place(in *inst, from wire.NodeID, failover bool) ([]Decision, error) {
	m := len(x.cfg.Nodes)
	tent := -1
	for j := range m {
		if x.up[j] && (tent < 0 || x.room(j) > x.room(tent)) {
			tent = j
		}
	}
	if tent < 0 {
		return nil, fmt.Errorf("%w: no server node is up", ErrNoCapacity)
	}
	// The cluster: the open instances on servers, then in.
	maxCap := 0
	for _, n := range x.cfg.Nodes {
		maxCap = max(maxCap, n.Capacity)
	}
	main := make([]int, m)
	for j, n := range x.cfg.Nodes {
		main[j] = maxCap - n.Capacity
		if !x.up[j] {
			main[j] = maxCap
		}
	}
	var ids []string
	var items []balance.Instance
	for _, id := range x.InstanceIDs() {
		o := x.insts[id]
		if o.server < 0 {
			continue
		}
		if o.canHost() {
			ids = append(ids, id)
			items = append(items, balance.Instance{Size: o.n, Server: o.server})
		} else {
			main[o.server] += o.n // never shed
		}
	}
	if in.canHost() {
		ids = append(ids, in.id)
		items = append(items, balance.Instance{Size: in.n, Server: tent})
	} else {
		main[tent] += in.n
	}
	c := &balance.Cluster{MaxLoad: maxCap, Main: main, Instances: items}
	r, err := balance.Balance(c, balance.Config{Margin: x.cfg.Margin, Overflow: true, FillToTarget: true})
	if err != nil {
		return nil, fmt.Errorf("control: internal error: balance: %w", err)
	}
	if r.Loads[tent] > maxCap {
		return nil, fmt.Errorf("%w: instance %q (%d players) fits on no server, and the overloaded server's instances cannot move or overflow (no player of theirs runs a player host)", ErrNoCapacity, in.id, in.n)
	}
	// Commit: in opens on tent, then the round's moves in order.
	x.insts[in.id] = in
	for _, p := range in.players {
		if p.Host != 0 {
			x.hosts[p.Host] = append(x.hosts[p.Host], in.id)
		}
	}
	in.server = tent
	x.load[tent] += in.n
	var out []Decision
	final := map[string]bool{}
	for _, mv := range r.Moves {
		o := x.insts[ids[mv.Instance]]
		x.load[mv.From] -= o.n
		if o == in {
			final[o.id] = true
		}
		if mv.To >= 0 {
			x.load[mv.To] += o.n
			o.server = mv.To
			if o != in {
				x.stats.Moved++
				out = append(out, Decision{Kind: MoveInstance, Instance: o.id, From: x.cfg.Nodes[mv.From].ID, To: x.cfg.Nodes[mv.To].ID})
			}
			continue
		}
		o.server = balance.Hosted
		o.hosting = o.group.Distribute(x.cfg.Criterion, o.present)
		x.stats.Overflowed++
		d := x.hostDecision(OverflowInstance, o)
		d.From = x.cfg.Nodes[mv.From].ID
		if o == in {
			d.From = from
			d.Failover = failover
		}
		out = append(out, d)
	}
	if in.server >= 0 {
		kind := PlaceInstance
		if from != 0 {
			kind = MoveInstance
			x.stats.Moved++
		} else {
			x.stats.Placed++
		}
		out = append(out, Decision{Kind: kind, Instance: in.id, From: from, To: x.cfg.Nodes[in.server].ID, Failover: failover})
	} else {
		// The new instance's overflow comes last.
		for i, d := range out {
			if d.Instance == in.id {
				out = append(append(out[:i:i], out[i+1:]...), d)
				break
			}
		}
	}
	return out, nil
}

// room is server j's free instance seats.
func (x *Instances) room(j int) int { return x.cfg.Nodes[j].Capacity - x.load[j] }

// canHost reports whether some present player of the instance runs a
// player host.
func (in *inst) canHost() bool { return slices.Contains(in.hostable(), true) }

// hostDecision returns a decision of kind k naming in's host (To, Player)
// and replica (Replica, ReplicaPlayer).
func (x *Instances) hostDecision(k Kind, in *inst) Decision {
	d := Decision{Kind: k, Instance: in.id, Player: in.players[in.hosting.Server].ID, To: in.players[in.hosting.Server].Host}
	if r := in.hosting.Replica; r >= 0 {
		d.Replica, d.ReplicaPlayer = in.players[r].Host, in.players[r].ID
	}
	return d
}

// Leave records that player left instance id (it quit, or its machine is
// gone): the decisions Algorithm 4 makes for a hosted instance follow
// (PromoteInstance, NewReplica, LoseInstance). The last player's leaving
// closes the instance (EndInstance).
func (x *Instances) Leave(now time.Duration, id, player string) ([]Decision, error) {
	if err := x.checkTime(now); err != nil {
		return nil, err
	}
	in, ok := x.insts[id]
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownInstance, id)
	}
	i := slices.IndexFunc(in.players, func(p InstancePlayer) bool { return p.ID == player })
	if i < 0 || !in.present[i] {
		return nil, fmt.Errorf("%w: %q is not in instance %q", ErrUnknownPlayer, player, id)
	}
	x.now = now
	return x.leave(in, i), nil
}

func (x *Instances) leave(in *inst, i int) []Decision {
	in.present[i] = false
	in.n--
	if in.server >= 0 {
		x.load[in.server]--
	}
	if in.n == 0 {
		where := wire.NodeID(0)
		if in.server >= 0 {
			where = x.cfg.Nodes[in.server].ID
		} else if s := in.hosting.Server; s >= 0 && s != i {
			where = in.players[s].Host
		}
		x.remove(in)
		return []Decision{{Kind: EndInstance, Instance: in.id, From: where}}
	}
	if in.server >= 0 || (i != in.hosting.Server && i != in.hosting.Replica) {
		return nil
	}
	old := in.hosting
	next, lost := in.group.Restructure(old, i, x.cfg.Criterion, in.present)
	if lost || next.Server < 0 {
		x.stats.Lost++
		x.remove(in)
		return []Decision{{Kind: LoseInstance, Instance: in.id, From: in.players[old.Server].Host, Player: in.players[old.Server].ID}}
	}
	in.hosting = next
	if i == old.Server {
		x.stats.Promoted++
		d := x.hostDecision(PromoteInstance, in)
		d.From = in.players[old.Server].Host
		if next.Replica >= 0 {
			x.stats.NewReplicas++
		}
		return []Decision{d}
	}
	if next.Replica < 0 {
		return []Decision{x.hostDecision(NewReplica, in)}
	}
	x.stats.NewReplicas++
	return []Decision{x.hostDecision(NewReplica, in)}
}

// remove forgets an instance.
func (x *Instances) remove(in *inst) {
	if in.server >= 0 {
		x.load[in.server] -= in.n
	}
	for _, p := range in.players {
		if p.Host == 0 {
			continue
		}
		l := slices.DeleteFunc(x.hosts[p.Host], func(s string) bool { return s == in.id })
		if len(l) == 0 {
			delete(x.hosts, p.Host)
		} else {
			x.hosts[p.Host] = l
		}
	}
	delete(x.insts, in.id)
}

// Close ends an open instance (its game is over); it frees its seats.
func (x *Instances) Close(now time.Duration, id string) error {
	if err := x.checkTime(now); err != nil {
		return err
	}
	in, ok := x.insts[id]
	if !ok {
		return fmt.Errorf("%w: %q", ErrUnknownInstance, id)
	}
	x.now = now
	x.remove(in)
	return nil
}

// NodeDown reports a node's death. For a server, its instances are
// re-placed, largest first (MoveInstance with Failover, or
// OverflowInstance with Failover); an instance that fits nowhere and
// cannot overflow is lost (LoseInstance). For a player host, its player
// leaves every instance it is in (as Leave). Any other node is an error
// wrapping ErrUnknownNode.
func (x *Instances) NodeDown(now time.Duration, n wire.NodeID) ([]Decision, error) {
	if err := x.checkTime(now); err != nil {
		return nil, err
	}
	if j, ok := x.index[n]; ok {
		if !x.up[j] {
			return nil, fmt.Errorf("%w: server node %d is already down", ErrNodeState, n)
		}
		x.now = now
		x.up[j] = false
		out := x.replaceAll(j, n, true)
		return out, nil
	}
	ids, ok := x.hosts[n]
	if !ok {
		return nil, fmt.Errorf("%w: node %d is neither a server nor a player host of an open instance", ErrUnknownNode, n)
	}
	x.now = now
	var out []Decision
	// In ID order, not the order the instances opened in: a rebuilt
	// plane (RebuildInstances) does not know that one.
	for _, id := range slices.Sorted(slices.Values(ids)) {
		in := x.insts[id]
		if in == nil {
			continue
		}
		for i, p := range in.players {
			if p.Host == n && in.present[i] {
				out = append(out, x.leave(in, i)...)
				break
			}
		}
	}
	return out, nil
}

// NodeUp brings a server back: it takes new instances again (none moves
// back to it).
func (x *Instances) NodeUp(now time.Duration, n wire.NodeID) error {
	if err := x.checkTime(now); err != nil {
		return err
	}
	j, ok := x.index[n]
	if !ok {
		return fmt.Errorf("%w: node %d is not a server", ErrUnknownNode, n)
	}
	if x.up[j] {
		return fmt.Errorf("%w: server node %d is already up", ErrNodeState, n)
	}
	x.now = now
	x.up[j] = true
	return nil
}

// instanceString prints the instance decisions (see Decision.String).
func instanceString(b *strings.Builder, d Decision) {
	fmt.Fprintf(b, " %s", d.Instance)
	switch d.Kind {
	case PlaceInstance:
		fmt.Fprintf(b, " →%d", d.To)
	case MoveInstance:
		fmt.Fprintf(b, " %d→%d", d.From, d.To)
	case OverflowInstance, PromoteInstance, NewReplica:
		if d.Kind != NewReplica {
			if d.From != 0 {
				fmt.Fprintf(b, " %d→", d.From)
			} else {
				b.WriteString(" →")
			}
		} else {
			b.WriteString(" ")
		}
		fmt.Fprintf(b, "%s@%d", d.Player, d.To)
		if d.Replica != 0 {
			fmt.Fprintf(b, " replica=%s@%d", d.ReplicaPlayer, d.Replica)
		} else {
			b.WriteString(" no-replica")
		}
	case LoseInstance, EndInstance:
		if d.From != 0 {
			fmt.Fprintf(b, " %d→", d.From)
		}
	}
	if d.Failover {
		b.WriteString(" failover")
	}
}
