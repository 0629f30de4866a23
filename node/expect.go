package node

import (
	"fmt"
	"time"

	"github.com/overworld/overworld/world"
)

// expected is a box the node fetches replicas for until a time (Expect).
type expected struct {
	box   world.Box
	until time.Duration
}

// MaxExpected bounds the boxes a node expects at once (Expect).
const MaxExpected = 1024

// Expect has the node fetch and keep the replicas inside box until game
// time until, as it does for the boxes its primaries anticipate
// (world.Anticipator): the box joins the node's subscriptions and its view
// kept for prefetching from the next frame on. A driver about to migrate
// an object here — a player's avatar handed over by the control plane —
// calls it with the object's interest, widened by how far the object can
// move meanwhile, so that the node holds what the object sees when it
// arrives: the handoff is make-before-break for the node as it is for the
// player's client. Under the directory and client-server architectures
// the node subscribes the box at once; the colyseus locator subscribes
// per primary and takes the box into the node's kept view only, so that
// replicas pushed or fetched for it are not dropped.
//
// It rejects a box with a NaN bound or empty, an until not after now, and refuses more
// than MaxExpected boxes at once; expired boxes are forgotten at the
// frames.
func (n *Node) Expect(now time.Duration, box world.Box, until time.Duration) error {
	n.advance(now)
	if err := box.Validate(n.dims); err != nil {
		return fmt.Errorf("node: expect: %w", err)
	}
	if box.Empty(n.dims) {
		return fmt.Errorf("node: expect: empty box %v", box)
	}
	if until <= n.now {
		return fmt.Errorf("node: expect: until %v is not after now (%v)", until, n.now)
	}
	n.expect = n.dropExpired(n.expect, n.now)
	if len(n.expect) >= MaxExpected {
		return fmt.Errorf("node: expect: %d boxes expected already, at most %d", len(n.expect), MaxExpected)
	}
	n.expect = append(n.expect, expected{box: box, until: until})
	return nil
}

// Expected returns the number of boxes the node expects (Expect) at now.
func (n *Node) Expected() int {
	c := 0
	for _, e := range n.expect {
		if e.until > n.now {
			c++
		}
	}
	return c
}

func (n *Node) dropExpired(es []expected, now time.Duration) []expected {
	out := es[:0]
	for _, e := range es {
		if e.until > now {
			out = append(out, e)
		}
	}
	return out
}

// appendExpected forgets the expired boxes and appends the others to dst.
func (n *Node) appendExpected(dst []world.Box, now time.Duration) []world.Box {
	if len(n.expect) == 0 {
		return dst
	}
	n.expect = n.dropExpired(n.expect, now)
	for _, e := range n.expect {
		dst = append(dst, e.box)
	}
	return dst
}
