package locate

import (
	"fmt"
	"slices"
	"time"

	"github.com/overworld/overworld/wire"
)

// Broadcast is the broadcast architecture: every node holds a replica of
// every object, so every primary's updates go to every other node. There is
// no discovery traffic: each frame the node pushes each of its primaries to
// every member.
type Broadcast struct {
	self    wire.NodeID
	members []wire.NodeID
}

// NewBroadcast returns the broadcast locator of node self in a cluster of
// the given members (self may be among them; duplicates are an error).
func NewBroadcast(self wire.NodeID, members []wire.NodeID) (*Broadcast, error) {
	b := &Broadcast{self: self}
	if err := b.SetMembers(members); err != nil {
		return nil, err
	}
	return b, nil
}

// SetMembers replaces the members the node pushes to, from the next Tick
// (a cluster whose membership changes at run time). It refuses a list
// that names a node twice, changing nothing; self may be among them.
func (b *Broadcast) SetMembers(members []wire.NodeID) error {
	m := slices.Clone(members)
	slices.Sort(m)
	for i := 1; i < len(m); i++ {
		if m[i] == m[i-1] {
			return fmt.Errorf("%w: broadcast member %d listed twice", ErrLocateConfig, m[i])
		}
	}
	b.members = slices.DeleteFunc(m, func(n wire.NodeID) bool { return n == b.self || n == 0 })
	return nil
}

// Members appends the members the node pushes to (not itself), in ID
// order, to dst.
func (b *Broadcast) Members(dst []wire.NodeID) []wire.NodeID { return append(dst, b.members...) }

// Tick pushes every local primary to every other member.
func (b *Broadcast) Tick(f *Frame, out *Out) {
	for i := range f.Primaries {
		for _, m := range b.members {
			out.Push = append(out.Push, Push{ID: f.Primaries[i].ID, To: m})
		}
	}
}

// Handles reports false: broadcast has no discovery messages.
func (b *Broadcast) Handles(wire.Type) bool { return false }

// Step rejects every frame: broadcast has no discovery messages.
func (b *Broadcast) Step(now time.Duration, from wire.NodeID, t wire.Type, body []byte, out *Out) error {
	return fmt.Errorf("%w: broadcast expects no %v frames", wire.ErrMalformed, t)
}
