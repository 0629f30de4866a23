package locate

import (
	"slices"
	"testing"
	"time"

	"github.com/overworld/overworld/wire"
	"github.com/overworld/overworld/world"
)

// dirNet is a cluster of directory locators on a fake network, driven
// frame by frame: every live node delivers the packets due, then Ticks,
// and its packets leave with a delay the test picks. A killed node gets
// and sends nothing; what a node's failure detector says is set by the
// test (dead). Nodes are 1 to n.
type dirNet struct {
	t     testing.TB
	cfg   DirectoryConfig
	frame time.Duration
	now   time.Duration
	delay func(from, to wire.NodeID) time.Duration // a packet's one-way delay

	dirs   []*Directory
	obs    []wire.Outbox
	outs   []Out
	down   []bool
	dead   [][]wire.NodeID // each node's Frame.Dead
	prims  [][]Primary
	views  [][]world.Box
	found  []map[world.ObjectID]Found // what each node heard, the longest-lived finding of each object
	flight []dirPacket
	seq    int
	// sent, if set, sees every packet a node sends, as it leaves.
	sent func(p wire.Packet, now time.Duration)
	// learn, if set, is told when node id gets a finding of an object it
	// held no live finding of, in a match from node from.
	learn func(id, from wire.NodeID, f Found)
}

type dirPacket struct {
	at  time.Duration
	seq int
	p   wire.Packet
}

func newDirNet(t testing.TB, n int, cfg DirectoryConfig) *dirNet {
	t.Helper()
	c := &dirNet{t: t, cfg: cfg, frame: 50 * time.Millisecond,
		obs: make([]wire.Outbox, n), outs: make([]Out, n), down: make([]bool, n), dead: make([][]wire.NodeID, n),
		prims: make([][]Primary, n), views: make([][]world.Box, n), found: make([]map[world.ObjectID]Found, n)}
	c.delay = func(wire.NodeID, wire.NodeID) time.Duration { return c.frame }
	for i := range n {
		c.dirs = append(c.dirs, nil)
		c.restart(wire.NodeID(i + 1))
	}
	return c
}

// restart gives node id a fresh locator (a new run of the node) and
// brings it up: packets reach it again.
func (c *dirNet) restart(id wire.NodeID) {
	c.t.Helper()
	d, err := NewDirectory(id, c.cfg)
	if err != nil {
		c.t.Fatal(err)
	}
	i := id - 1
	c.dirs[i], c.down[i] = d, false
	c.obs[i].Reset()
	c.outs[i] = Out{Outbox: &c.obs[i]}
	c.found[i] = map[world.ObjectID]Found{}
	for k := range c.prims[i] {
		c.prims[i][k].New = true
	}
}

// kill stops node id: it no longer ticks, and packets to and from it
// (those on the way too) are lost.
func (c *dirNet) kill(id wire.NodeID) { c.down[id-1] = true }

// setDead makes node at's failure detector declare id dead (or, with
// dead false, alive again).
func (c *dirNet) setDead(at, id wire.NodeID, dead bool) {
	l := c.dead[at-1]
	i, ok := slices.BinarySearch(l, id)
	switch {
	case dead && !ok:
		l = slices.Insert(l, i, id)
	case !dead && ok:
		l = slices.Delete(l, i, i+1)
	}
	c.dead[at-1] = l
}

// step runs one frame: deliveries, then every live node's Tick in ID
// order, then sends.
func (c *dirNet) step() {
	c.t.Helper()
	c.now += c.frame
	slices.SortFunc(c.flight, func(a, b dirPacket) int {
		if a.at != b.at {
			return int(a.at - b.at)
		}
		return a.seq - b.seq
	})
	k := 0
	for k < len(c.flight) && c.flight[k].at <= c.now {
		p := c.flight[k].p
		k++
		if c.down[p.From-1] || c.down[p.To-1] {
			continue
		}
		d, out := c.dirs[p.To-1], &c.outs[p.To-1]
		fr, err := wire.OpenFrames(p.Payload)
		if err != nil {
			c.t.Fatal(err)
		}
		for {
			typ, body, ok := fr.Next()
			if !ok {
				break
			}
			if !d.Handles(typ) {
				continue
			}
			if err := d.Check(typ, body); err != nil {
				c.t.Fatal(err)
			}
			if err := d.StepChecked(c.now, p.From, typ, body, out); err != nil {
				c.t.Fatal(err)
			}
		}
		c.collect(p.To, p.From)
	}
	c.flight = c.flight[k:]
	for i, d := range c.dirs {
		if c.down[i] {
			continue
		}
		id := wire.NodeID(i + 1)
		c.obs[i].Release(c.now)
		d.Tick(&Frame{Now: c.now, Self: id, Dims: 2, Primaries: c.prims[i], View: c.views[i], Dead: c.dead[i]}, &c.outs[i])
		for k := range c.prims[i] {
			c.prims[i][k].New = false
		}
		c.collect(id, 0)
		for _, p := range c.obs[i].Packets(id, nil) {
			p.From = id
			if c.sent != nil {
				c.sent(p, c.now)
			}
			c.seq++
			c.flight = append(c.flight, dirPacket{at: c.now + c.delay(id, p.To), seq: c.seq, p: p})
		}
	}
}

// collect moves node id's findings, from a match of node from (0: its
// Tick), into its found map.
func (c *dirNet) collect(id, from wire.NodeID) {
	out := &c.outs[id-1]
	m := c.found[id-1]
	for _, f := range out.Found {
		g, ok := m[f.ID]
		if c.learn != nil && (!ok || g.Until <= c.now) {
			c.learn(id, from, f)
		}
		if !ok || f.Until > g.Until {
			m[f.ID] = f
		}
	}
	out.Reset()
}

// forget empties every node's findings.
func (c *dirNet) forget() {
	for i := range c.found {
		clear(c.found[i])
	}
}

// knows reports whether node id holds a finding of obj that lives past
// now.
func (c *dirNet) knows(id wire.NodeID, obj world.ObjectID) bool {
	f, ok := c.found[id-1][obj]
	return ok && f.Until > c.now
}
