package control

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/overworld/overworld/place/cma"
	"github.com/overworld/overworld/wire"
)

// tieBreak is the delay, in ms, added to every node but a player's own
// while the assigner is rebuilt for a changed node set: it makes the
// current (optimal) assignment the only optimum, so the rebuilt assigner
// holds every player where it was instead of trading players whose RTTs
// tie. It is far above the assigner's rounding slack (1e-9 ms) and far
// below any RTT difference worth a move.
const tieBreak = 1e-6

// AddNode adds a node at run time (an enrolled game server that became
// ready). rtt holds its RTT in ms to every node of Nodes, in their order
// (NaN where unmeasured; ignored, and may be nil, when estimation is
// off): with estimation on, the node is placed in network coordinates by
// the same fit a player gets (the second node of a plane that had one:
// both are fitted anew from their RTT, a lone node's coordinate having no
// geometry), and every player's RTT to it is estimated from there; with
// no RTT to a node placed in the coordinates, it is not placed, and a
// player's RTT to it counts as MaxRTT until the player measures it or
// SetNodeRTT places it; with estimation off,
// a player's RTT to it counts as MaxRTT until the client measures it, and
// AddNode returns a Probe decision asking each player to ping it. The
// moves it returns (Move) bring the placement to the optimum over the new
// node set: the players for whom the new node pays are pulled into it.
// A bad node (ID 0 or in use, capacity < 1, bad RTTs) is an error and
// changes nothing.
func (p *Plane) AddNode(now time.Duration, n Node, rtt []float64) ([]Decision, error) {
	if err := p.checkTime(now); err != nil {
		return nil, err
	}
	if n.ID == 0 {
		return nil, fmt.Errorf("%w: node ID 0", ErrConfig)
	}
	if _, dup := p.index[n.ID]; dup {
		return nil, fmt.Errorf("%w: node %d is already a node", ErrConfig, n.ID)
	}
	if n.Capacity < 1 || n.Capacity > math.MaxInt32 {
		return nil, fmt.Errorf("%w: node %d capacity %d (want 1…%d)", ErrConfig, n.ID, n.Capacity, math.MaxInt32)
	}
	if len(p.nodes) >= math.MaxInt16 {
		return nil, fmt.Errorf("%w: %d nodes already, at most %d", ErrConfig, len(p.nodes), math.MaxInt16)
	}
	var pos []float64
	var hgt float64
	if p.coords != nil {
		if len(rtt) != len(p.nodes) {
			return nil, fmt.Errorf("%w: %d RTTs for node %d, want one per node (%d)", ErrBadRTT, len(rtt), n.ID, len(p.nodes))
		}
		measured := 0
		for j, v := range rtt {
			if math.IsNaN(v) {
				continue
			}
			if math.IsInf(v, 0) || v < 0 || v > ms(MaxRTT) {
				return nil, fmt.Errorf("%w: RTT %v ms from node %d to node %d (want 0…%v ms, or NaN)", ErrBadRTT, v, n.ID, p.nodes[j].ID, ms(MaxRTT))
			}
			measured++
		}
		if measured > 0 {
			pos, hgt = p.coords.fit(rtt)
		}
	}
	known := pos != nil // else placed when its RTTs come (SetNodeRTT)
	if p.coords != nil && pos == nil {
		pos = make([]float64, p.coords.dim)
	}
	var refit *coords
	if p.coords != nil && len(p.nodes) == 1 {
		// A lone node's coordinate carries no geometry: a node fitted
		// to it alone would sit on it. The pair is fitted anew from
		// their RTT (the one measured); every player's row follows.
		var err error
		if refit, err = newCoords([][]float64{{0, rtt[0]}, {rtt[0], 0}}, p.cfg.Seed); err != nil {
			return nil, err
		}
	}
	p.now = now
	old := p.a.Assignment()
	m := len(p.nodes)
	p.nodes = append(p.nodes, nodeState{Node: n, up: true})
	p.index[n.ID] = m
	p.cfg.Nodes = append(slices.Clip(p.cfg.Nodes), n)
	if p.coords != nil {
		p.coords.pos = append(p.coords.pos, pos)
		p.coords.hgt = append(p.coords.hgt, hgt)
		p.coords.known = append(p.coords.known, known)
		for i := range p.cfg.NodeRTT {
			p.cfg.NodeRTT[i] = append(slices.Clip(p.cfg.NodeRTT[i]), rtt[i])
		}
		p.cfg.NodeRTT = append(slices.Clip(p.cfg.NodeRTT), append(slices.Clone(rtt), 0))
		if refit != nil {
			p.coords = refit
		}
	}
	for _, pl := range p.players {
		if p.coords == nil {
			// No estimate: the RTT counts as the worst until measured.
			pl.meas = append(pl.meas, ms(MaxRTT))
		} else {
			pl.meas = append(pl.meas, math.NaN())
		}
		pl.asked = append(pl.asked, false)
		pl.row = append(pl.row, p.big) // out of reach until re-seated
	}
	tx := p.begin()
	if err := p.reassign(old, tx); err != nil {
		return nil, err
	}
	// Every player gets its real RTT to the new node, one re-seat at a
	// time: each keeps the assignment optimal for the rows held, so after
	// the last it is the optimum over the new node set.
	for _, id := range p.Players() {
		pl := p.players[id]
		row := p.row(pl.meas)
		d, err := p.a.Leave(id)
		if err != nil {
			return nil, fmt.Errorf("control: internal error: add node %d: %w", n.ID, err)
		}
		tx.note(d)
		pl.row = row
		if d, err = p.a.Join(id, row); err != nil {
			return nil, fmt.Errorf("control: internal error: add node %d: %w", n.ID, err)
		}
		tx.note(d)
	}
	out := tx.commit("")
	if p.coords == nil && p.cfg.Probes > 0 {
		for _, id := range p.Players() {
			p.players[id].asked[m] = true
			out = append(out, Decision{Kind: Probe, Player: id, Probe: []wire.NodeID{n.ID}})
			p.stats.Probes++
		}
	}
	return out, nil
}

// RemoveNode takes a node out of the node set for good (a game server
// drained, revoked or gone). If it is up, it is drained first: its players
// move (Move, make-before-break: the node still serves them) to the
// optimum over the other nodes, others may move to make room, the players
// that fit nowhere are dropped (Drop), and its regions move to their best
// node (MigrateRegion). A node that is down already had its players
// re-admitted (NodeDown) and is only forgotten. The last node up cannot be
// removed; an unknown node is an error. Both change nothing.
func (p *Plane) RemoveNode(now time.Duration, n wire.NodeID) ([]Decision, error) {
	if err := p.checkTime(now); err != nil {
		return nil, err
	}
	j, ok := p.index[n]
	if !ok {
		return nil, fmt.Errorf("%w: node %d", ErrUnknownNode, n)
	}
	if p.nodes[j].up && p.upCount() == 1 {
		return nil, fmt.Errorf("%w: node %d is the last node up", ErrNodeState, n)
	}
	if len(p.nodes) == 1 {
		return nil, fmt.Errorf("%w: node %d is the last node", ErrNodeState, n)
	}
	p.now = now
	var out []Decision
	if p.nodes[j].up {
		ds, err := p.fillDeadAs(j, true)
		if err != nil {
			return nil, err
		}
		out = append(out, ds...)
		out = append(out, p.failRegions(now, j, false)...)
	}
	// Forget column j: every index past it shifts down by one.
	old := p.a.Assignment()
	for id, at := range old {
		if strings.HasPrefix(id, phantomPrefix) {
			delete(old, id) // the phantoms are re-made from nodeState
			continue
		}
		if k := p.mirror(at); k > j {
			old[id] = strconv.Itoa(k - 1)
		}
	}
	p.nodes = slices.Delete(p.nodes, j, j+1)
	p.cfg.Nodes = slices.Delete(slices.Clone(p.cfg.Nodes), j, j+1)
	delete(p.index, n)
	for k, ns := range p.nodes {
		p.index[ns.ID] = k
	}
	if p.coords != nil {
		p.coords.pos = slices.Delete(p.coords.pos, j, j+1)
		p.coords.hgt = slices.Delete(p.coords.hgt, j, j+1)
		p.coords.known = slices.Delete(p.coords.known, j, j+1)
		p.cfg.NodeRTT = slices.Delete(slices.Clone(p.cfg.NodeRTT), j, j+1)
		for i := range p.cfg.NodeRTT {
			p.cfg.NodeRTT[i] = slices.Delete(slices.Clone(p.cfg.NodeRTT[i]), j, j+1)
		}
	}
	for id, pl := range p.players {
		pl.meas = slices.Delete(pl.meas, j, j+1)
		pl.row = slices.Delete(pl.row, j, j+1)
		pl.asked = slices.Delete(pl.asked, j, j+1)
		if !slices.ContainsFunc(pl.meas, func(v float64) bool { return !math.IsNaN(v) }) {
			// The player measured only the removed node: the estimate
			// of its RTT to its own node stands as its sample until the
			// client measures (estimates need one sample).
			k := p.mirror(old[id])
			pl.meas[k] = pl.row[k]
		}
	}
	for r := range p.regions {
		if p.regions[r].core > j {
			p.regions[r].core--
		}
	}
	if p.cfg.RegionHome == n {
		for _, ns := range p.nodes {
			if ns.up {
				p.cfg.RegionHome = ns.ID
				break
			}
		}
	}
	tx := p.begin()
	if err := p.reassign(old, tx); err != nil {
		return nil, err
	}
	return append(out, tx.commit("")...), nil
}

// reassign replaces the assigner by one over the current node set and
// seats every player where old says (mirror IDs of the new set), noting
// that start in tx, and every down node's placeholders on that node.
// Players are joined with tieBreak added off their node, which makes old
// the only optimum, so the rebuilt assigner holds the same (optimal)
// assignment; their true rows are then restored by re-seats, which keep
// it optimal (and, but for exact ties, move nobody: tx records any move).
func (p *Plane) reassign(old map[string]string, tx *tx) error {
	m := len(p.nodes)
	mirrors := make([]cma.Mirror, m)
	for j, ns := range p.nodes {
		mirrors[j] = cma.Mirror{ID: strconv.Itoa(j), Capacity: ns.Capacity}
	}
	a, err := cma.New(mirrors, cma.SA)
	if err != nil {
		return fmt.Errorf("control: internal error: node set: %w", err)
	}
	p.big = float64(m+2) * ms(MaxRTT)
	for j := range p.nodes {
		ns := &p.nodes[j]
		if ns.up {
			continue
		}
		prow := make([]float64, m)
		for k := range prow {
			prow[k] = p.big
		}
		prow[j] = 0
		for i := range ns.phantoms {
			id := phantomPrefix + strconv.Itoa(j) + "/" + strconv.Itoa(i)
			if _, err := a.Join(id, prow); err != nil {
				return fmt.Errorf("control: internal error: hold node %d: %w", ns.ID, err)
			}
			ns.phantoms[i] = id
		}
	}
	ids := p.Players()
	for _, id := range ids {
		pl := p.players[id]
		at := p.mirror(old[id])
		tx.start[id] = at
		row := slices.Clone(pl.row)
		for k := range row {
			if k != at {
				row[k] += tieBreak
			}
		}
		d, err := a.Join(id, row)
		if err != nil {
			return fmt.Errorf("control: internal error: re-seat %q: %w", id, err)
		}
		p.a = a
		tx.note(d)
	}
	p.a = a
	for _, id := range ids {
		d, err := a.Leave(id)
		if err != nil {
			return fmt.Errorf("control: internal error: re-seat %q: %w", id, err)
		}
		tx.note(d)
		if d, err = a.Join(id, p.players[id].row); err != nil {
			return fmt.Errorf("control: internal error: re-seat %q: %w", id, err)
		}
		tx.note(d)
	}
	return nil
}

// SetNodeRTT replaces the node-to-node RTT matrix (ms, in the order of
// Config().Nodes, as Config.NodeRTT: NaN where unmeasured) with rtt, as
// the nodes measure it while they run: the nodes' network coordinates are
// fitted anew, every player's estimated RTTs follow, and each player whose
// RTTs change by more than Config.Hysteresis is re-seated (in ID order,
// one at a time, each keeping the assignment optimal), which returns the
// moves that makes worthwhile. Its measured RTTs stay as they are. A plane
// that estimates nothing (Config.NodeRTT nil), a matrix of the wrong shape
// or with an RTT out of range, or a time before the last is an error, and
// changes nothing.
func (p *Plane) SetNodeRTT(now time.Duration, rtt [][]float64) ([]Decision, error) {
	if err := p.checkTime(now); err != nil {
		return nil, err
	}
	if p.coords == nil {
		return nil, fmt.Errorf("%w: node RTTs: this plane estimates no RTT (it was built without NodeRTT)", ErrBadRTT)
	}
	c := p.cfg
	c.NodeRTT = rtt
	c, err := c.Validate()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadRTT, err)
	}
	co, err := newCoords(c.NodeRTT, p.cfg.Seed)
	if err != nil {
		return nil, err
	}
	p.now = now
	p.cfg.NodeRTT, p.coords = c.NodeRTT, co
	p.stats.NodeRTTs++
	var out []Decision
	for _, id := range p.Players() {
		pl := p.players[id]
		row := p.row(pl.meas)
		if !p.moved(row, pl.row) {
			continue
		}
		ds, err := p.reseat(pl, row)
		if err != nil {
			return out, err
		}
		out = append(out, ds...)
	}
	return out, nil
}

// SetCapacity changes a node's seats (an enrolled game server that
// enrolled again with another capacity). More seats pull in the players
// for whom they pay (Move); fewer move players off it, to the optimum
// over the new capacities (Move, make-before-break: it still serves
// them). A node that is down or unknown, a capacity out of 1…MaxInt32,
// fewer seats than the players the nodes up must seat, or a time before
// the last is an error, and changes nothing.
func (p *Plane) SetCapacity(now time.Duration, n wire.NodeID, capacity int) ([]Decision, error) {
	if err := p.checkTime(now); err != nil {
		return nil, err
	}
	j, ok := p.index[n]
	if !ok {
		return nil, fmt.Errorf("%w: node %d", ErrUnknownNode, n)
	}
	if !p.nodes[j].up {
		return nil, fmt.Errorf("%w: node %d is down", ErrNodeState, n)
	}
	if capacity < 1 || capacity > math.MaxInt32 {
		return nil, fmt.Errorf("%w: node %d capacity %d (want 1…%d)", ErrConfig, n, capacity, math.MaxInt32)
	}
	if seats := p.upCapacity() - p.nodes[j].Capacity + capacity; seats < len(p.players) {
		return nil, fmt.Errorf("%w: node %d at %d seats would leave %d seats for %d players", ErrNoCapacity, n, capacity, seats, len(p.players))
	}
	p.now = now
	if capacity == p.nodes[j].Capacity {
		return nil, nil
	}
	old := p.a.Assignment()
	p.nodes[j].Capacity = capacity
	p.cfg.Nodes = slices.Clone(p.cfg.Nodes)
	p.cfg.Nodes[j].Capacity = capacity
	tx := p.begin()
	if err := p.reassign(old, tx); err != nil {
		return nil, err
	}
	return tx.commit(""), nil
}
