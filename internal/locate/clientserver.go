package locate

import (
	"cmp"
	"fmt"
	"slices"
	"time"

	"github.com/overworld/overworld/wire"
	"github.com/overworld/overworld/world"
)

// ClientServer is the client-server architecture: one server node holds the
// primary of every object and runs every think function; player nodes
// (clients) hold no primaries. A client's objects (its players' avatars) are
// created on the client and handed off to the server, which records the
// client as their controller. Each frame the server pushes to each client
// a replica of every object inside the interests of the objects that client
// controls (its view), plus the controlled objects themselves; attached
// objects follow through the replica layer. Player input reaches the server
// as tentative writes: a client writes to its replica of its avatar and the
// write is forwarded to the server, like a client's command packet.
type ClientServer struct {
	self, server wire.NodeID
	views        []clientView // sorted by client (linear)
	idx          *Boxes       // this frame's view boxes, by client
	owners       []wire.NodeID
	// linear makes the server test every object against every client's
	// view: the reference the index is tested and benchmarked against.
	linear bool
}

type clientView struct {
	node  wire.NodeID
	boxes []world.Box
}

// NewClientServer returns the client-server locator of node self.
func NewClientServer(self, server wire.NodeID) *ClientServer {
	return &ClientServer{self: self, server: server}
}

// Server returns the server node.
func (c *ClientServer) Server() wire.NodeID { return c.server }

// Host reports where this node's new primaries must live: on a client, the
// server (handoff is true); on the server, itself.
func (c *ClientServer) Host() (server wire.NodeID, handoff bool) { return c.server, !c.IsServer() }

// Handles reports false: client-server has no discovery messages.
func (c *ClientServer) Handles(wire.Type) bool { return false }

// IsServer reports whether this node is the server.
func (c *ClientServer) IsServer() bool { return c.self == c.server }

// Tick, on the server, pushes to each client what its view covers. It does
// nothing on a client.
func (c *ClientServer) Tick(f *Frame, out *Out) {
	if !c.IsServer() {
		return
	}
	if !c.linear {
		c.tickIndexed(f, out)
		return
	}
	for i := range c.views {
		c.views[i].boxes = c.views[i].boxes[:0]
	}
	for i := range f.Primaries {
		p := &f.Primaries[i]
		if p.Controller == c.self {
			continue
		}
		j, ok := slices.BinarySearchFunc(c.views, p.Controller, func(v clientView, n wire.NodeID) int { return cmp.Compare(v.node, n) })
		if !ok {
			c.views = slices.Insert(c.views, j, clientView{node: p.Controller})
		}
		c.views[j].boxes = append(c.views[j].boxes, p.Interest...)
		c.views[j].boxes = append(c.views[j].boxes, p.Anticipated...)
	}
	for i := range f.Primaries {
		p := &f.Primaries[i]
		for _, v := range c.views {
			if p.Controller == v.node || inAny(p.Loc, v.boxes, f.Dims) {
				out.Push = append(out.Push, Push{ID: p.ID, To: v.node})
			}
		}
	}
}

// tickIndexed is Tick with the clients' view boxes in a grid: each object
// is tested only against the boxes around it, O(objects + boxes + pushes)
// instead of O(objects × boxes). It pushes exactly what the linear scan
// pushes, in the same order.
func (c *ClientServer) tickIndexed(f *Frame, out *Out) {
	if c.idx == nil || c.idx.Dims() != f.Dims {
		c.idx = NewBoxes(f.Dims, DefaultCell)
	}
	c.idx.Reset()
	for i := range f.Primaries {
		p := &f.Primaries[i]
		if p.Controller == c.self {
			continue
		}
		for _, b := range p.Interest {
			c.idx.Add(p.Controller, b)
		}
		for _, b := range p.Anticipated {
			c.idx.Add(p.Controller, b)
		}
	}
	if cell := AutoCell(c.idx.MeanWidth(), c.idx.Cell()); cell != c.idx.Cell() {
		c.idx.SetCell(cell)
	}
	for i := range f.Primaries {
		p := &f.Primaries[i]
		c.owners = c.idx.Owners(p.Loc, c.owners[:0])
		ctl := p.Controller != c.self // the controller holds its objects
		for _, n := range c.owners {
			if ctl && p.Controller < n {
				out.Push = append(out.Push, Push{ID: p.ID, To: p.Controller})
				ctl = false
			}
			if n == p.Controller {
				ctl = false
			}
			out.Push = append(out.Push, Push{ID: p.ID, To: n})
		}
		if ctl {
			out.Push = append(out.Push, Push{ID: p.ID, To: p.Controller})
		}
	}
}

// Step rejects every frame: client-server has no discovery messages (the
// server knows every object and every view).
func (c *ClientServer) Step(now time.Duration, from wire.NodeID, t wire.Type, body []byte, out *Out) error {
	return fmt.Errorf("%w: client-server expects no %v frames", wire.ErrMalformed, t)
}

// SetLinear makes the server test every object against every client's
// view instead of using its index (same results; for tests and
// benchmarks).
func (c *ClientServer) SetLinear(on bool) { c.linear = on }
