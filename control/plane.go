package control

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/overworld/overworld/place/cma"
	"github.com/overworld/overworld/wire"
)

// Kind is what a Decision asks the driver to do.
type Kind uint8

const (
	// Admit seats a joining player on To.
	Admit Kind = iota + 1
	// Move hands a connected player over from From to To
	// (make-before-break: the client connects to To, receives its state
	// there, then leaves From).
	Move
	// Readmit re-seats on To a player whose node From died; the driver
	// keeps its avatar (failover).
	Readmit
	// Drop disconnects a player from From because the nodes that are up
	// cannot seat everyone (after a NodeDown or a Rebuild); drops come
	// first among a call's decisions.
	Drop
	// MigrateRegion moves region Region's state from node From to node
	// To.
	MigrateRegion
	// Probe asks the client of Player to ping the nodes in Probe and
	// report the RTTs with Measure.
	Probe
	// PlaceInstance opens instance Instance on server To (Instances).
	PlaceInstance
	// MoveInstance migrates instance Instance's objects (its box) from
	// server From to server To; Failover marks the re-placement of a dead
	// server's instance.
	MoveInstance
	// OverflowInstance moves instance Instance from server From (0: it
	// opens) to the player host To of player Player, with its replicated
	// host on Replica (ReplicaPlayer's machine; 0: none): the driver pins
	// the objects' backups to Replica (node.PreferBackup) and migrates
	// them.
	OverflowInstance
	// PromoteInstance records that instance Instance's host From left and
	// its replica To (Player's machine) took over; Replica is its new
	// replica (0: none). The nodes' failover promotes the backups; the
	// driver pins the backups to the new replica.
	PromoteInstance
	// NewReplica names instance Instance's new replica Replica after the
	// old one left; To is the host.
	NewReplica
	// LoseInstance reports an instance lost: its host From left with no
	// replica while players remained, or a dead server's instance fits
	// nowhere.
	LoseInstance
	// EndInstance reports an instance whose last player left.
	EndInstance
)

var kindNames = []string{Admit: "admit", Move: "move", Readmit: "readmit", Drop: "drop", MigrateRegion: "migrate-region", Probe: "probe",
	PlaceInstance: "place-instance", MoveInstance: "move-instance", OverflowInstance: "overflow-instance",
	PromoteInstance: "promote-instance", NewReplica: "new-replica", LoseInstance: "lose-instance", EndInstance: "end-instance"}

func (k Kind) String() string {
	if int(k) < len(kindNames) && kindNames[k] != "" {
		return kindNames[k]
	}
	return "Kind(" + strconv.Itoa(int(k)) + ")"
}

// Decision is one thing the driver must carry out.
type Decision struct {
	Kind Kind
	// Player is the player admitted, moved, re-admitted or dropped.
	Player string
	// Region is the region migrated (MigrateRegion only).
	Region int
	// From is the node the player or region leaves (not set for Admit).
	From wire.NodeID
	// To is the node the player or region goes to (not set for Drop).
	To wire.NodeID
	// Failover marks a MigrateRegion forced by the death of From.
	Failover bool
	// Probe lists, for Admit and Probe, the nodes the client should ping and report
	// with Measure, among those it has not measured: To first, then the
	// nodes with the least estimated RTT plus shadow price, the ones the
	// optimum could put it on (at most Config.Probes in all).
	Probe []wire.NodeID
	// Swap marks moves that form a cycle between full nodes (players
	// trading places, which a re-seat or a rebuild can find worthwhile):
	// no order of them keeps every node within capacity, so the driver
	// carries the swaps of one call out together, and each overfills its
	// destination by one player until the others are done. They come
	// after every other move of the call.
	Swap bool
	// Gain is, for MigrateRegion, the aggregate latency the migration
	// saves (ms summed over the region's players, on the plane's RTTs).
	Gain float64
	// Instance names the instance of the instance decisions; Replica is
	// the player host keeping its replica (ReplicaPlayer's machine), 0
	// for none.
	Instance      string
	Replica       wire.NodeID
	ReplicaPlayer string
}

// String prints a decision in the form the package's scenario scripts
// use: "move p1 2→3", "migrate-region 4 1→2 gain=812.5".
func (d Decision) String() string {
	var b strings.Builder
	b.WriteString(d.Kind.String())
	switch d.Kind {
	case Admit, Probe:
		if d.Kind == Admit {
			fmt.Fprintf(&b, " %s →%d", d.Player, d.To)
		} else {
			fmt.Fprintf(&b, " %s", d.Player)
		}
		if len(d.Probe) > 0 {
			b.WriteString(" probe=")
			for i, n := range d.Probe {
				if i > 0 {
					b.WriteByte(',')
				}
				b.WriteString(strconv.FormatUint(uint64(n), 10))
			}
		}
	case Move, Readmit:
		fmt.Fprintf(&b, " %s %d→%d", d.Player, d.From, d.To)
		if d.Swap {
			b.WriteString(" swap")
		}
	case Drop:
		fmt.Fprintf(&b, " %s %d→", d.Player, d.From)
	case PlaceInstance, MoveInstance, OverflowInstance, PromoteInstance, NewReplica, LoseInstance, EndInstance:
		instanceString(&b, d)
	case MigrateRegion:
		fmt.Fprintf(&b, " %d %d→%d", d.Region, d.From, d.To)
		if d.Failover {
			b.WriteString(" failover")
		} else {
			fmt.Fprintf(&b, " gain=%.1f", d.Gain)
		}
	}
	return b.String()
}

// Sample is one RTT a client measured to a node.
type Sample struct {
	Node wire.NodeID
	RTT  time.Duration
}

// Stats counts what the plane decided since New.
type Stats struct {
	Admits, Moves, Readmits, Drops int
	// Reseats counts Measure and SetNodeRTT calls' re-runs of the
	// assignment of a player; Probes the nodes Probe decisions asked
	// clients to ping.
	Reseats, Probes int
	// NodeRTTs counts the node RTT matrices SetNodeRTT took.
	NodeRTTs int
	// Selections counts core selections run for regions; Migrations the
	// region migrations decided (Failovers of them forced by a dead
	// core).
	Selections, Migrations, Failovers int
}

// player is what the plane knows of one player.
type player struct {
	id      string
	meas    []float64 // per node: measured RTT in ms, NaN when unmeasured
	row     []float64 // per node: the RTTs CMA was given, ms
	asked   []bool    // per node: a Probe decision asked the client to ping it
	located bool
	x, y    float64
	region  int // -1 when not located or no grid
}

type nodeState struct {
	Node
	up       bool
	phantoms []string // placeholders holding a dead node's seats
}

// Plane is the control plane's state. Create one with New.
type Plane struct {
	cfg     Config
	nodes   []nodeState
	index   map[wire.NodeID]int
	coords  *coords // nil without NodeRTT
	a       *cma.Assigner
	players map[string]*player
	regions []region
	big     float64 // a dead node's placeholder's delay to any other node
	now     time.Duration
	stats   Stats
	scratch []float64
}

// phantomPrefix starts the IDs of the placeholders that hold a dead node's
// seats; player IDs may not start with it.
const phantomPrefix = "\x00down/"

// New returns a plane for the configuration (validated, copied) with every
// node up, no players, and every region on Config.RegionHome.
func New(cfg Config) (*Plane, error) {
	cfg, err := cfg.Validate()
	if err != nil {
		return nil, err
	}
	m := len(cfg.Nodes)
	p := &Plane{cfg: cfg, index: make(map[wire.NodeID]int, m), players: map[string]*player{}}
	mirrors := make([]cma.Mirror, m)
	for i, n := range cfg.Nodes {
		p.nodes = append(p.nodes, nodeState{Node: n, up: true})
		p.index[n.ID] = i
		mirrors[i] = cma.Mirror{ID: strconv.Itoa(i), Capacity: n.Capacity}
	}
	if p.a, err = cma.New(mirrors, cma.SA); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrConfig, err)
	}
	if cfg.NodeRTT != nil {
		if p.coords, err = newCoords(cfg.NodeRTT, cfg.Seed); err != nil {
			return nil, err
		}
	}
	// A placeholder's move off its dead node costs big; any chain of
	// moves through every node gains less than (m+1)·MaxRTT, so none
	// ever pays.
	p.big = float64(m+2) * ms(MaxRTT)
	home := p.index[cfg.RegionHome]
	p.regions = make([]region, cfg.Grid.Regions())
	for r := range p.regions {
		p.regions[r] = region{core: home, players: map[string]struct{}{}}
	}
	return p, nil
}

// Config returns the plane's configuration, defaults filled in.
func (p *Plane) Config() Config { return p.cfg }

// Stats returns the counters since New.
func (p *Plane) Stats() Stats { return p.stats }

// Len returns the number of players placed.
func (p *Plane) Len() int { return len(p.players) }

// NodeOf returns the node a player is on.
func (p *Plane) NodeOf(id string) (wire.NodeID, bool) {
	if _, ok := p.players[id]; !ok {
		return 0, false
	}
	j, _ := p.a.MirrorOf(id)
	return p.nodes[p.mirror(j)].ID, true
}

// Assignment returns a snapshot: player → node.
func (p *Plane) Assignment() map[string]wire.NodeID {
	out := make(map[string]wire.NodeID, len(p.players))
	for id := range p.players {
		out[id], _ = p.NodeOf(id)
	}
	return out
}

// Players returns the IDs of the players placed, sorted.
func (p *Plane) Players() []string {
	out := make([]string, 0, len(p.players))
	for id := range p.players {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}

// Delays returns the RTTs (ms) to every node, in the order of
// Config.Nodes, that the assignment of the player was computed on: the
// measured ones and the estimates (with Config.EstimateMargin).
func (p *Plane) Delays(id string) ([]float64, bool) {
	pl, ok := p.players[id]
	if !ok {
		return nil, false
	}
	return slices.Clone(pl.row), true
}

// Load returns the number of players on a node (0 for an unknown node).
func (p *Plane) Load(n wire.NodeID) int {
	j, ok := p.index[n]
	if !ok || !p.nodes[j].up {
		return 0
	}
	return p.a.Load(j)
}

// Up reports whether a node is up.
func (p *Plane) Up(n wire.NodeID) bool {
	j, ok := p.index[n]
	return ok && p.nodes[j].up
}

// TotalDelay returns the sum of every player's RTT (ms, as the plane knows
// it) to its node: the cost CMA minimises.
func (p *Plane) TotalDelay() float64 {
	s := 0.0
	for _, id := range p.Players() {
		d, _ := p.a.Delay(id)
		s += d
	}
	return s
}

func (p *Plane) mirror(id string) int {
	j, _ := strconv.Atoi(id)
	return j
}

func (p *Plane) checkTime(now time.Duration) error {
	if now < p.now {
		return fmt.Errorf("%w: event at %v after one at %v", ErrTime, now, p.now)
	}
	return nil
}

// checkSamples validates samples and returns them as a per-node row of ms
// (NaN where not measured), on top of base when not nil.
func (p *Plane) checkSamples(id string, samples []Sample, base []float64) ([]float64, error) {
	meas := make([]float64, len(p.nodes))
	if base != nil {
		copy(meas, base)
	} else {
		for j := range meas {
			meas[j] = math.NaN()
		}
	}
	seen := make(map[wire.NodeID]bool, len(samples))
	for _, s := range samples {
		j, ok := p.index[s.Node]
		if !ok {
			return nil, fmt.Errorf("%w: player %q measured node %d", ErrUnknownNode, id, s.Node)
		}
		if seen[s.Node] {
			return nil, fmt.Errorf("%w: player %q gives two samples for node %d", ErrBadRTT, id, s.Node)
		}
		seen[s.Node] = true
		if s.RTT < 0 || s.RTT > MaxRTT {
			return nil, fmt.Errorf("%w: player %q measured %v to node %d (want 0…%v)", ErrBadRTT, id, s.RTT, s.Node, MaxRTT)
		}
		meas[j] = ms(s.RTT)
	}
	n := 0
	for _, v := range meas {
		if !math.IsNaN(v) {
			n++
		}
	}
	if n == 0 {
		return nil, fmt.Errorf("%w: player %q has no RTT sample", ErrBadRTT, id)
	}
	if p.coords == nil && n < len(meas) {
		for j, v := range meas {
			if math.IsNaN(v) {
				return nil, fmt.Errorf("%w: player %q has no RTT to node %d and estimation is off (no node RTTs)", ErrBadRTT, id, p.nodes[j].ID)
			}
		}
	}
	return meas, nil
}

// row computes the RTTs CMA is given for measurements meas.
func (p *Plane) row(meas []float64) []float64 {
	row := make([]float64, len(meas))
	if p.coords == nil {
		copy(row, meas)
		return row
	}
	p.coords.fill(meas, row, p.cfg.EstimateMargin)
	return row
}

// upCapacity returns the seats of the nodes that are up.
func (p *Plane) upCapacity() int {
	c := 0
	for _, n := range p.nodes {
		if n.up {
			c += n.Capacity
		}
	}
	return c
}

func checkID(id string) error {
	if id == "" {
		return fmt.Errorf("%w: empty", ErrBadPlayer)
	}
	if strings.HasPrefix(id, phantomPrefix) {
		return fmt.Errorf("%w: %q starts with a reserved prefix", ErrBadPlayer, id)
	}
	return nil
}

// Join admits a new player that measured samples (at least one; with
// estimation off, one per node). It returns the Admit decision last, after
// the moves that make room, which come first in order.
func (p *Plane) Join(now time.Duration, id string, samples []Sample) ([]Decision, error) {
	if err := p.checkTime(now); err != nil {
		return nil, err
	}
	if err := checkID(id); err != nil {
		return nil, err
	}
	if _, dup := p.players[id]; dup {
		return nil, fmt.Errorf("%w: %q is already placed", ErrDuplicatePlayer, id)
	}
	meas, err := p.checkSamples(id, samples, nil)
	if err != nil {
		return nil, err
	}
	if len(p.players) >= p.upCapacity() {
		return nil, fmt.Errorf("%w: the %d seats of the nodes that are up are taken when %q joins", ErrNoCapacity, p.upCapacity(), id)
	}
	p.now = now
	pl := &player{id: id, meas: meas, row: p.row(meas), region: -1, asked: make([]bool, len(p.nodes))}
	tx := p.begin()
	d, err := p.a.Join(id, pl.row)
	if err != nil {
		return nil, fmt.Errorf("control: internal error: join %q: %w", id, err)
	}
	p.players[id] = pl
	tx.note(d)
	out := tx.commit(id)
	to := p.nodes[p.mirror(d.Mirror)].ID
	out = append(out, Decision{Kind: Admit, Player: id, To: to, Probe: p.probes(pl, p.mirror(d.Mirror))})
	p.stats.Admits++
	return out, nil
}

// probes returns the nodes the player should measure: the node it was
// admitted to if it has not measured it, then the up nodes it has not
// measured with the least estimated RTT plus price (see prices), at most
// Config.Probes in all. These are the nodes the optimum could put it on:
// a full node is worth a seat to a player only if the player gains more
// than the seat's price, so the nearest node by RTT alone is not always
// the one to check.
func (p *Plane) probes(pl *player, at int) []wire.NodeID {
	if p.cfg.Probes == 0 {
		return nil
	}
	var out []wire.NodeID
	if math.IsNaN(pl.meas[at]) {
		out = append(out, p.nodes[at].ID)
	}
	u := p.prices()
	var js []int
	for j, v := range pl.meas {
		if math.IsNaN(v) && p.nodes[j].up && j != at {
			js = append(js, j)
		}
	}
	slices.SortStableFunc(js, func(a, b int) int { return cmp.Compare(pl.row[a]+u[a], pl.row[b]+u[b]) })
	for _, j := range js[:min(len(js), p.cfg.Probes-len(out))] {
		out = append(out, p.nodes[j].ID)
	}
	return out
}

// prices returns each node's shadow price in the current (optimal)
// assignment: the least extra delay, in ms, of freeing one of its seats by
// a chain of moves ending at a node with room (0 for a node with room,
// +Inf for a node that is down). It is a shortest path over the nodes
// (Bellman–Ford) on the cost of moving each node's cheapest player to
// another, computed from the rows CMA holds in O(n·m + m³).
func (p *Plane) prices() []float64 {
	m := len(p.nodes)
	inf := math.Inf(1)
	mc := make([]float64, m*m)
	for i := range mc {
		mc[i] = inf
	}
	for id, pl := range p.players {
		at, _ := p.a.MirrorOf(id)
		j := p.mirror(at)
		for k, v := range pl.row {
			if c := v - pl.row[j]; k != j && c < mc[j*m+k] {
				mc[j*m+k] = c
			}
		}
	}
	u := make([]float64, m)
	for j, n := range p.nodes {
		if !n.up || p.a.Load(j) >= n.Capacity {
			u[j] = inf
		}
	}
	for range m {
		changed := false
		for j, n := range p.nodes {
			if !n.up {
				continue
			}
			for k := range m {
				if p.nodes[k].up && u[k]+mc[j*m+k] < u[j] {
					u[j] = u[k] + mc[j*m+k]
					changed = true
				}
			}
		}
		if !changed {
			break
		}
	}
	return u
}

// Leave removes a player; the moves that fill its seat follow.
func (p *Plane) Leave(now time.Duration, id string) ([]Decision, error) {
	if err := p.checkTime(now); err != nil {
		return nil, err
	}
	pl, ok := p.players[id]
	if !ok {
		return nil, fmt.Errorf("%w: %q is not placed", ErrUnknownPlayer, id)
	}
	p.now = now
	tx := p.begin()
	d, err := p.a.Leave(id)
	if err != nil {
		return nil, fmt.Errorf("control: internal error: leave %q: %w", id, err)
	}
	tx.note(d)
	p.unlocate(now, pl)
	delete(p.players, id)
	return tx.commit(""), nil
}

// Measure records a new RTT sample of a player to a node. When it changes
// what the plane knows of the player's RTT to some node by more than
// Config.Hysteresis (an estimate is refitted with every sample), the player
// is re-seated: removed and joined again by CMA, which returns the moves
// (possibly of the player itself) that this makes worthwhile.
func (p *Plane) Measure(now time.Duration, id string, node wire.NodeID, rtt time.Duration) ([]Decision, error) {
	if err := p.checkTime(now); err != nil {
		return nil, err
	}
	pl, ok := p.players[id]
	if !ok {
		return nil, fmt.Errorf("%w: %q is not placed", ErrUnknownPlayer, id)
	}
	meas, err := p.checkSamples(id, []Sample{{Node: node, RTT: rtt}}, pl.meas)
	if err != nil {
		return nil, err
	}
	p.now = now
	pl.meas = meas
	row := p.row(meas)
	if !p.moved(row, pl.row) {
		return nil, nil
	}
	return p.reseat(pl, row)
}

// moved reports whether some RTT of row differs from was's by more than
// Config.Hysteresis.
func (p *Plane) moved(row, was []float64) bool {
	for j := range row {
		if math.Abs(row[j]-was[j]) > p.cfg.Hysteresis {
			return true
		}
	}
	return false
}

// reseat gives CMA a player's new row: an L-SA then a J-SA.
func (p *Plane) reseat(pl *player, row []float64) ([]Decision, error) {
	tx := p.begin()
	from, _ := p.a.MirrorOf(pl.id)
	tx.start[pl.id] = p.mirror(from)
	d, err := p.a.Leave(pl.id)
	if err != nil {
		return nil, fmt.Errorf("control: internal error: reseat %q: %w", pl.id, err)
	}
	tx.note(d)
	pl.row = row
	d, err = p.a.Join(pl.id, row)
	if err != nil {
		return nil, fmt.Errorf("control: internal error: reseat %q: %w", pl.id, err)
	}
	tx.note(d)
	p.stats.Reseats++
	return tx.commit(""), nil
}

// NodeDown takes a node out: its players are re-admitted on the nodes that
// are up (Readmit, the optimum over those nodes), others may move to make
// room (Move), players that fit nowhere are dropped (Drop), and the
// regions it was core of move to their best node (MigrateRegion,
// Failover).
func (p *Plane) NodeDown(now time.Duration, n wire.NodeID) ([]Decision, error) {
	if err := p.checkTime(now); err != nil {
		return nil, err
	}
	j, ok := p.index[n]
	if !ok {
		return nil, fmt.Errorf("%w: node %d", ErrUnknownNode, n)
	}
	if !p.nodes[j].up {
		return nil, fmt.Errorf("%w: node %d is already down", ErrNodeState, n)
	}
	if p.upCount() == 1 {
		return nil, fmt.Errorf("%w: node %d is the last node up", ErrNodeState, n)
	}
	p.now = now
	out, err := p.fillDead(j)
	if err != nil {
		return nil, err
	}
	return append(out, p.failRegions(now, j, true)...), nil
}

func (p *Plane) upCount() int {
	c := 0
	for _, n := range p.nodes {
		if n.up {
			c++
		}
	}
	return c
}

// fillDead marks node j down and fills its seats with placeholders (see
// NodeDown).
func (p *Plane) fillDead(j int) ([]Decision, error) { return p.fillDeadAs(j, false) }

// fillDeadAs is fillDead; drain marks a node that still serves its
// players (RemoveNode), whose players then Move instead of Readmit.
func (p *Plane) fillDeadAs(j int, drain bool) ([]Decision, error) {
	ns := &p.nodes[j]
	ns.up = false
	tx := p.begin()
	tx.dead = j
	tx.drain = drain
	prow := make([]float64, len(p.nodes))
	for k := range prow {
		prow[k] = p.big
	}
	prow[j] = 0
	for len(ns.phantoms) < ns.Capacity {
		id := phantomPrefix + strconv.Itoa(j) + "/" + strconv.Itoa(len(ns.phantoms))
		d, err := p.a.Join(id, prow)
		if errors.Is(err, cma.ErrNoCapacity) {
			// Nobody can make room: drop the dead node's first player.
			// Prefer a player that was on the node before the event.
			victim, original := "", false
			for pid, at := range p.a.Assignment() {
				if p.mirror(at) != j || strings.HasPrefix(pid, phantomPrefix) {
					continue
				}
				from, moved := tx.start[pid]
				orig := !moved || from == j
				if victim == "" || orig && !original || orig == original && pid < victim {
					victim, original = pid, orig
				}
			}
			if victim == "" {
				return nil, fmt.Errorf("control: internal error: node %d full of placeholders", ns.ID)
			}
			if _, ok := tx.start[victim]; !ok {
				tx.start[victim] = j
			}
			ld, err := p.a.Leave(victim)
			if err != nil {
				return nil, fmt.Errorf("control: internal error: drop %q: %w", victim, err)
			}
			tx.note(ld)
			tx.dropped = append(tx.dropped, victim)
			p.unlocate(p.now, p.players[victim])
			delete(p.players, victim)
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("control: internal error: hold node %d: %w", ns.ID, err)
		}
		tx.note(d)
		ns.phantoms = append(ns.phantoms, id)
	}
	return tx.commit(""), nil
}

// NodeUp brings a node back: its seats are freed one by one and CMA pulls
// into them the players for whom that pays (Move).
func (p *Plane) NodeUp(now time.Duration, n wire.NodeID) ([]Decision, error) {
	if err := p.checkTime(now); err != nil {
		return nil, err
	}
	j, ok := p.index[n]
	if !ok {
		return nil, fmt.Errorf("%w: node %d", ErrUnknownNode, n)
	}
	ns := &p.nodes[j]
	if ns.up {
		return nil, fmt.Errorf("%w: node %d is already up", ErrNodeState, n)
	}
	p.now = now
	tx := p.begin()
	for len(ns.phantoms) > 0 {
		id := ns.phantoms[len(ns.phantoms)-1]
		d, err := p.a.Leave(id)
		if err != nil {
			return nil, fmt.Errorf("control: internal error: free node %d: %w", n, err)
		}
		tx.note(d)
		ns.phantoms = ns.phantoms[:len(ns.phantoms)-1]
	}
	ns.up = true
	return tx.commit(""), nil
}

// tx collects the net effect of several CMA decisions that make up one
// event of the plane.
type tx struct {
	p       *Plane
	start   map[string]int // player -> node index before the event
	dead    int            // the node going down in this event, or -1
	drain   bool           // dead still serves its players (RemoveNode)
	dropped []string
	joined  int // node index the joining player was seated on, or -1
}

func (p *Plane) begin() *tx { return &tx{p: p, start: map[string]int{}, dead: -1, joined: -1} }

// note records a CMA decision's moves.
func (t *tx) note(d cma.Decision) {
	for _, mv := range d.Moves {
		if _, ok := t.start[mv.Player]; !ok {
			t.start[mv.Player] = t.p.mirror(mv.From)
		}
	}
}

// commit returns the event's net moves in an order that never overfills a
// node, after its drops; joiner is the ID of the player joining in this
// event ("" for none), whose seat is taken after the moves.
func (t *tx) commit(joiner string) []Decision {
	p := t.p
	type mv struct {
		id       string
		from, to int
	}
	var moves []mv
	for id, from := range t.start {
		if strings.HasPrefix(id, phantomPrefix) || slices.Contains(t.dropped, id) {
			continue
		}
		at, ok := p.a.MirrorOf(id)
		if !ok {
			continue
		}
		if to := p.mirror(at); to != from {
			moves = append(moves, mv{id, from, to})
		}
	}
	slices.SortFunc(moves, func(a, b mv) int { return strings.Compare(a.id, b.id) })
	// Loads before the moves: now minus arrivals plus departures, and
	// without the joiner.
	load := make([]int, len(p.nodes))
	for j := range load {
		load[j] = p.a.Load(j)
	}
	for _, m := range moves {
		load[m.to]--
		load[m.from]++
	}
	if joiner != "" {
		at, _ := p.a.MirrorOf(joiner)
		load[p.mirror(at)]--
	}
	// Drops first: they free their seats.
	var out []Decision
	slices.Sort(t.dropped)
	for _, id := range t.dropped {
		from := t.start[id]
		out = append(out, Decision{Kind: Drop, Player: id, From: p.nodes[from].ID})
		p.stats.Drops++
	}
	done := make([]bool, len(moves))
	emit := func(i int, swap bool) {
		m := moves[i]
		load[m.from]--
		load[m.to]++
		kind := Move
		if m.from == t.dead && !t.drain {
			kind = Readmit
			p.stats.Readmits++
		} else {
			p.stats.Moves++
		}
		out = append(out, Decision{Kind: kind, Player: m.id, From: p.nodes[m.from].ID, To: p.nodes[m.to].ID, Swap: swap})
		done[i] = true
	}
	// Every move whose destination has room, in turn; a cycle between
	// full nodes, if any, last.
	for progress := true; progress; {
		progress = false
		for i, m := range moves {
			if !done[i] && load[m.to] < p.nodes[m.to].Capacity {
				emit(i, false)
				progress = true
				break
			}
		}
	}
	for i := range moves {
		if !done[i] {
			emit(i, true)
		}
	}
	return out
}

// explore returns the Probe decisions of a Tick: for each player, the
// unmeasured nodes that could beat its node if their estimates were
// Config.ProbeSlack too high (an estimated RTT lowered by the slack plus the
// node's price below the player's RTT plus its own node's price, the
// optimality condition of the assignment). A node is asked for once per
// player.
func (p *Plane) explore() []Decision {
	if p.cfg.ProbeSlack <= 0 || len(p.players) == 0 {
		return nil
	}
	u := p.prices()
	var out []Decision
	for _, id := range p.Players() {
		pl := p.players[id]
		at, _ := p.a.MirrorOf(id)
		j := p.mirror(at)
		cur := pl.row[j] + u[j]
		var ns []wire.NodeID
		for k, v := range pl.meas {
			if k != j && math.IsNaN(v) && !pl.asked[k] && p.nodes[k].up && pl.row[k]*(1-p.cfg.ProbeSlack)+u[k] < cur {
				pl.asked[k] = true
				ns = append(ns, p.nodes[k].ID)
			}
		}
		if len(ns) > 0 {
			out = append(out, Decision{Kind: Probe, Player: id, Probe: ns})
			p.stats.Probes += len(ns)
		}
	}
	return out
}
