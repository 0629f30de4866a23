package live

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/overworld/overworld/wire"
)

// Errors.
var (
	ErrConfig    = errors.New("live: bad config")
	ErrClosed    = errors.New("live: closed")
	ErrTooLarge  = errors.New("live: datagram too large")
	ErrMalformed = errors.New("live: malformed frame")
)

// Conn is one authenticated connection to a peer node: the peer's identity
// was checked before the connection was handed out.
type Conn interface {
	// Peer is the node at the other end (from its certificate).
	Peer() wire.NodeID
	// SendDatagram sends b unreliably; ErrTooLarge if it does not fit.
	SendDatagram(b []byte) error
	// ReceiveDatagram blocks for the next datagram.
	ReceiveDatagram(ctx context.Context) ([]byte, error)
	// OpenStream opens a reliable, ordered stream to the peer.
	OpenStream(ctx context.Context) (io.ReadWriteCloser, error)
	// AcceptStream blocks for a stream the peer opened.
	AcceptStream(ctx context.Context) (io.ReadWriteCloser, error)
	// Done is closed when the connection is closed, by either side or by
	// the network (a silent peer's idle timeout).
	Done() <-chan struct{}
	// Close closes the connection and its streams.
	Close() error
}

// RTTer is a Conn that measures the round-trip time of its path (QUIC's
// does; the in-memory network's does not). RTT returns 0 until it has a
// measurement.
type RTTer interface {
	RTT() time.Duration
}

// Network connects a node to its peers. Dial and Accept return only
// connections whose peer passed authentication.
type Network interface {
	// Dial connects to node peer at addr.
	Dial(ctx context.Context, peer wire.NodeID, addr string) (Conn, error)
	// Accept blocks for the next incoming connection.
	Accept(ctx context.Context) (Conn, error)
	// Close stops accepting and closes the network's socket.
	Close() error
}

// A datagram carries one or more packets, each a record: one class byte,
// the uvarint length of the payload, the payload. A stream frame is the
// uint32 big-endian length of what follows, one class byte, the payload.
const (
	// MaxFrame bounds a stream frame's payload: a larger length prefix is
	// malformed (and closes the stream), so a peer cannot make us allocate
	// more.
	MaxFrame = 1 << 20
	// MaxDatagram is the largest datagram the mesh sends: packets queued
	// together for one peer share a datagram up to this size, and a
	// packet that does not fit alone goes on the stream. 1200 bytes fit a
	// QUIC DATAGRAM frame in a 1280-byte-MTU path's packet.
	MaxDatagram = 1200
)

// recordLen is the size of p's datagram record.
func recordLen(p wire.Packet) int {
	return 1 + uvarintLen(uint64(len(p.Payload))) + len(p.Payload)
}

func uvarintLen(x uint64) int {
	n := 1
	for x >= 0x80 {
		x >>= 7
		n++
	}
	return n
}

// appendRecord appends p as a datagram record.
func appendRecord(b []byte, p wire.Packet) []byte {
	b = append(b, byte(p.Class))
	b = binary.AppendUvarint(b, uint64(len(p.Payload)))
	return append(b, p.Payload...)
}

// parseDatagram checks a received datagram from peer to self and appends
// its packets to dst (their payloads alias d). A datagram with any bad
// record is rejected whole: nothing is appended.
func parseDatagram(dst []wire.Packet, d []byte, from, to wire.NodeID) ([]wire.Packet, error) {
	n0 := len(dst)
	if len(d) == 0 {
		return dst, fmt.Errorf("%w: empty datagram", ErrMalformed)
	}
	for len(d) > 0 {
		c := wire.Class(d[0])
		if !c.Valid() {
			return dst[:n0], fmt.Errorf("%w: traffic class %d", ErrMalformed, d[0])
		}
		n, k := binary.Uvarint(d[1:])
		if k <= 0 || k != uvarintLen(n) || n == 0 || n > uint64(len(d)-1-k) { // minimal lengths only
			return dst[:n0], fmt.Errorf("%w: bad record length", ErrMalformed)
		}
		start := 1 + k
		dst = append(dst, wire.Packet{From: from, To: to, Class: c, Payload: d[start : start+int(n) : start+int(n)]})
		d = d[start+int(n):]
	}
	return dst, nil
}

// appendFrame appends p as a stream frame.
func appendFrame(b []byte, p wire.Packet) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(1+len(p.Payload)))
	return append(append(b, byte(p.Class)), p.Payload...)
}

// readFrame reads one stream frame from r into a fresh buffer.
func readFrame(r io.Reader, hdr *[4]byte, from, to wire.NodeID) (wire.Packet, error) {
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return wire.Packet{}, err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n < 2 || n > 1+MaxFrame {
		return wire.Packet{}, fmt.Errorf("%w: stream frame of %d bytes", ErrMalformed, n)
	}
	buf := make([]byte, n)
	if _, err := io.ReadFull(r, buf); err != nil {
		return wire.Packet{}, err
	}
	c := wire.Class(buf[0])
	if !c.Valid() {
		return wire.Packet{}, fmt.Errorf("%w: traffic class %d", ErrMalformed, buf[0])
	}
	return wire.Packet{From: from, To: to, Class: c, Payload: buf[1:]}, nil
}
