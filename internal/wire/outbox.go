package wire

import (
	"cmp"
	"slices"
)

// DefaultMaxPayload is the payload size an Outbox packs frames up to: 1200
// bytes keeps a datagram under the 1280-byte IPv6 minimum MTU with room for
// the IP and UDP headers (and QUIC's, for the live driver).
const DefaultMaxPayload = 1200

// Outbox batches the frames a core produces during one step into as few
// packets as possible: all frames for one destination and traffic class
// share a packet (and its header) until the packet reaches MaxPayload.
//
// Use it as: b := o.Buf(); b = AppendX(b, ...); o.Commit(to, class, b).
// Packets then appends the packets and empties the outbox. The zero value is
// ready to use. Encoding into an Outbox does not allocate once its buffers
// have grown to the steady-state size; Packets allocates one buffer for all
// payloads it returns (their ownership passes to the caller).
type Outbox struct {
	MaxPayload int // 0 means DefaultMaxPayload

	buf    []byte
	frames []outFrame
	keys   []uint64   // Packets' sort keys
	sorted []outFrame // Packets' frames in packet order
}

type outFrame struct {
	to       NodeID
	class    Class
	off, end int
}

// Buf returns the outbox's buffer to append one frame to.
func (o *Outbox) Buf() []byte { return o.buf }

// Commit records the frame appended to the buffer Buf returned (b is the
// extended buffer) as one frame for node to, of class c. Committing an
// unchanged buffer records nothing.
func (o *Outbox) Commit(to NodeID, c Class, b []byte) {
	off := len(o.buf)
	o.buf = b
	if len(b) > off {
		o.frames = append(o.frames, outFrame{to: to, class: c, off: off, end: len(b)})
	}
}

// Len returns the number of frames waiting.
func (o *Outbox) Len() int { return len(o.frames) }

// Reset drops every waiting frame.
func (o *Outbox) Reset() {
	o.buf = o.buf[:0]
	o.frames = o.frames[:0]
}

// Packets appends the waiting frames to dst as packets from node from,
// ordered by destination then class, and empties the outbox. Frames for one
// destination and class keep their commit order.
func (o *Outbox) Packets(from NodeID, dst []Packet) []Packet {
	if len(o.frames) == 0 {
		return dst
	}
	maxp := o.MaxPayload
	if maxp <= 0 {
		maxp = DefaultMaxPayload
	}
	o.sort()
	// One pass to size the arena, one to fill it.
	total := 0
	for i := 0; i < len(o.frames); {
		j, size := o.pack(i, maxp)
		total += size
		i = j
	}
	arena := make([]byte, 0, total)
	for i := 0; i < len(o.frames); {
		j, _ := o.pack(i, maxp)
		s := len(arena)
		arena = AppendHeader(arena)
		for _, f := range o.frames[i:j] {
			arena = append(arena, o.buf[f.off:f.end]...)
		}
		dst = append(dst, Packet{From: from, To: o.frames[i].to, Class: o.frames[i].class,
			Payload: arena[s:len(arena):len(arena)]})
		i = j
	}
	o.Reset()
	return dst
}

// sort orders the frames by destination, then class, then commit order.
func (o *Outbox) sort() {
	n := len(o.frames)
	if n >= 1<<keyIndexBits {
		slices.SortStableFunc(o.frames, func(a, b outFrame) int {
			if c := cmp.Compare(a.to, b.to); c != 0 {
				return c
			}
			return cmp.Compare(a.class, b.class)
		})
		return
	}
	// Sort keys (destination, class, commit index): distinct, so an
	// unstable sort of plain integers gives the stable order, without a
	// comparator call per comparison.
	keys := o.keys[:0]
	inOrder := true
	for i, f := range o.frames {
		k := uint64(f.to)<<32 | uint64(f.class)<<keyIndexBits | uint64(i)
		if i > 0 && k < keys[i-1] {
			inOrder = false
		}
		keys = append(keys, k)
	}
	o.keys = keys
	if inOrder {
		return
	}
	slices.Sort(keys)
	sorted := slices.Grow(o.sorted[:0], n)[:n]
	for i, k := range keys {
		sorted[i] = o.frames[k&(1<<keyIndexBits-1)]
	}
	o.frames, o.sorted = sorted, o.frames
}

// keyIndexBits is the width of the commit index in a sort key (a class
// takes the 8 bits above it, a destination the upper 32).
const keyIndexBits = 24

// pack returns the end of the packet starting at frame i and its payload
// size: frames of the same destination and class while they fit (a frame
// larger than maxp travels alone).
func (o *Outbox) pack(i, maxp int) (int, int) {
	size := 1 + o.frames[i].end - o.frames[i].off
	j := i + 1
	for ; j < len(o.frames); j++ {
		f := o.frames[j]
		if f.to != o.frames[i].to || f.class != o.frames[i].class || size+f.end-f.off > maxp {
			break
		}
		size += f.end - f.off
	}
	return j, size
}

// MoveTo commits every waiting frame to dst, in commit order, with its
// destination and class, and empties o. A component with an outbox of its
// own (the ring under a locator) hands its frames to its node's this way.
func (o *Outbox) MoveTo(dst *Outbox) {
	for _, f := range o.frames {
		dst.Commit(f.to, f.class, append(dst.Buf(), o.buf[f.off:f.end]...))
	}
	o.Reset()
}
