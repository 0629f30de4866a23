package live

import (
	"sync/atomic"

	"github.com/overworld/overworld/wire"
)

// Counters are a live node's transport and driver counters (metrics as
// data: the daemon exports them to Prometheus, tests read them directly).
// Every field only grows except the gauges noted. Safe for concurrent use.
type Counters struct {
	// BytesIn/Out and MsgsIn/Out count packets (payload bytes, without the
	// class byte and framing) by traffic class.
	BytesIn, BytesOut [wire.NumClasses]atomic.Int64
	MsgsIn, MsgsOut   [wire.NumClasses]atomic.Int64

	QueueDrops  atomic.Int64 // packets dropped from a full send queue (coalesced or refused)
	Unroutable  atomic.Int64 // packets for a node with no known address
	SendErrors  atomic.Int64 // packets lost because the connection failed while sending
	InboxDrops  atomic.Int64 // received packets dropped because the driver fell behind
	Malformed   atomic.Int64 // received datagrams or stream frames rejected before reaching the core
	Refused     atomic.Int64 // TLS handshakes refused (unknown CA, expired, wrong node, no certificate, not a member, revoked)
	Dials       atomic.Int64 // connection attempts
	DialErrors  atomic.Int64 // failed connection attempts
	Accepted    atomic.Int64 // authenticated incoming connections
	LostOnClose atomic.Int64 // packets still queued when the mesh closed
	// EmulatedLoss counts packets the WAN emulation lost (MeshConfig.Net),
	// also counted as sent.
	EmulatedLoss atomic.Int64
	Connected    atomic.Int64 // gauge: peers with an open outgoing connection

	// AdminRefused counts admin requests refused: a missing or wrong
	// bearer secret, or a sensitive path asked from off loopback without
	// a secret.
	AdminRefused atomic.Int64

	Frames atomic.Int64 // frames run by the driver
	Steps  atomic.Int64 // packets delivered to the core
}

// countIn counts a received packet's bytes under each class it carries,
// the packet under its header's class. The sender's split
// (wire.Packet.Parts) does not travel: the receiver reads it off the
// frames (inSizes).
func (c *Counters) countIn(p wire.Packet) {
	for cl, n := range inSizes(p) {
		if n > 0 {
			c.BytesIn[cl].Add(int64(n))
		}
	}
	c.MsgsIn[p.Class].Add(1)
}

// inSizes splits a received payload's bytes by class: a frame whose type
// has one class (wire.Type.Class) counts under it, the version byte, ring
// routes and locates (whose class is their sender's choice) and anything
// unreadable under the packet's class, as the sender's
// wire.Packet.ClassSizes counts them.
func inSizes(p wire.Packet) (sizes [wire.NumClasses]int) {
	if !p.Class.Valid() {
		return sizes
	}
	rest := len(p.Payload)
	if fr, err := wire.OpenFrames(p.Payload); err == nil {
		for t, body, ok := fr.Next(); ok; t, body, ok = fr.Next() {
			cl := t.Class()
			if cl == p.Class || t == wire.TypeRingRoute || t == wire.TypeLocate {
				continue
			}
			n := 1 + uvarintLen(uint64(len(body))) + len(body)
			sizes[cl] += n
			rest -= n
		}
	}
	sizes[p.Class] += rest
	return sizes
}

// countOut counts a sent packet's bytes under each class it carries, the
// packet under its header's class.
func (c *Counters) countOut(p wire.Packet) {
	for cl, n := range p.ClassSizes(0) {
		if n > 0 {
			c.BytesOut[cl].Add(int64(n))
		}
	}
	c.MsgsOut[p.Class].Add(1)
}
