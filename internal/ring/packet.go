package ring

import (
	"fmt"
	"time"

	"github.com/overworld/overworld/wire"
)

// StepPacket delivers one whole packet of ring frames, as a driver that
// runs the ring on its own (without a node core) receives them. Every frame
// is checked first: a packet addressed elsewhere, with a bad header or
// frame, or with a frame that is not a ring message is dropped whole
// (Stats.Malformed counts it once) and changes nothing.
func (n *Node) StepPacket(now time.Duration, p wire.Packet) error {
	if p.To != n.cfg.ID {
		n.stats.Malformed++
		return fmt.Errorf("%w: packet for node %d delivered to %d", wire.ErrMalformed, p.To, n.cfg.ID)
	}
	fr, err := wire.OpenFrames(p.Payload)
	if err != nil {
		n.stats.Malformed++
		return err
	}
	for {
		t, body, ok := fr.Next()
		if !ok {
			break
		}
		if err := n.decode(t, body); err != nil {
			n.stats.Malformed++
			return err
		}
	}
	if err := fr.Err(); err != nil {
		n.stats.Malformed++
		return err
	}
	fr, _ = wire.OpenFrames(p.Payload)
	for {
		t, body, ok := fr.Next()
		if !ok {
			return nil
		}
		_ = n.Step(now, p.From, t, body) // cannot fail after the check
	}
}

// PacketCore adapts a Node to drivers that deliver whole packets and whose
// cores have no error to return (sim.Core): Step is StepPacket with the
// error dropped (it is counted in Stats.Malformed).
type PacketCore struct{ *Node }

// Step delivers one packet (see StepPacket).
func (c PacketCore) Step(now time.Duration, p wire.Packet) { _ = c.StepPacket(now, p) }
