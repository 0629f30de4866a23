package wire

import (
	"cmp"
	"slices"
	"time"
)

// DefaultMaxPayload is the payload size an Outbox packs frames up to: 1200
// bytes keeps a datagram under the 1280-byte IPv6 minimum MTU with room for
// the IP and UDP headers (and QUIC's, for the live driver).
const DefaultMaxPayload = 1200

// Outbox batches the frames a core produces during one step into as few
// packets as possible: all frames for one destination share a packet (and
// its header) until the packet reaches MaxPayload, whatever their traffic
// classes (Packet.Parts then says how many bytes each class took). Frames
// that may wait (CommitLater: probes, refreshes, soft state on a timer)
// ride in the next packet to their destination, or go when Release finds
// them due.
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
	ready  int        // frames not waiting (Commit, or released)
	keys   []uint64   // Packets' sort keys
	sorted []outFrame // Packets' frames in packet order
	keep   []outFrame // Packets: waiting frames that stay
}

type outFrame struct {
	to       NodeID
	class    Class
	later    bool // CommitLater, not yet released
	off, end int
	due      time.Duration // CommitLater: sent by then (Release)
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
		o.ready++
	}
}

// CommitLater records the frame appended to the buffer Buf returned as one
// frame for node to, of class c, that may wait until due: it rides in the
// first packet Packets makes for node to (which then carries a frame
// committed with Commit or released), or goes once Release finds it due.
// A frame that refreshes soft state on a timer saves its own packet's
// header this way.
func (o *Outbox) CommitLater(to NodeID, c Class, b []byte, due time.Duration) {
	off := len(o.buf)
	o.buf = b
	if len(b) > off {
		o.frames = append(o.frames, outFrame{to: to, class: c, later: true, off: off, end: len(b), due: due})
	}
}

// Release makes every frame committed with CommitLater and due at or
// before now ready to send.
func (o *Outbox) Release(now time.Duration) {
	for i := range o.frames {
		if f := &o.frames[i]; f.later && f.due <= now {
			f.later = false
			o.ready++
		}
	}
}

// Len returns the number of frames ready to send (Packets sends them, and
// the waiting frames for the same destinations).
func (o *Outbox) Len() int { return o.ready }

// Waiting returns the number of frames committed with CommitLater and not
// sent yet.
func (o *Outbox) Waiting() int { return len(o.frames) - o.ready }

// Reset drops every frame, waiting ones included.
func (o *Outbox) Reset() {
	o.buf = o.buf[:0]
	o.frames = o.frames[:0]
	o.ready = 0
}

// Packets appends the frames ready to send to dst as packets from node
// from, with the waiting frames (CommitLater) for the same destinations,
// ordered by destination then class; frames of one destination and class
// keep their commit order. Waiting frames for other destinations stay. A
// packet's Class is its first frame's; a packet of several classes has
// Parts.
func (o *Outbox) Packets(from NodeID, dst []Packet) []Packet {
	if o.ready == 0 {
		return dst
	}
	maxp := o.MaxPayload
	if maxp <= 0 {
		maxp = DefaultMaxPayload
	}
	o.sort()
	// Set aside the waiting frames of destinations with nothing ready.
	o.keep = o.keep[:0]
	if o.ready < len(o.frames) {
		out := o.frames[:0]
		for i := 0; i < len(o.frames); {
			j, ready := i, false
			for ; j < len(o.frames) && o.frames[j].to == o.frames[i].to; j++ {
				ready = ready || !o.frames[j].later
			}
			if ready {
				out = append(out, o.frames[i:j]...)
			} else {
				o.keep = append(o.keep, o.frames[i:j]...)
			}
			i = j
		}
		o.frames = out
	}
	// One pass to size the arena, one to fill it.
	total, mixed := 0, 0
	for i := 0; i < len(o.frames); {
		j, size := o.pack(i, maxp)
		total += size
		if o.frames[j-1].class != o.frames[i].class {
			mixed++
		}
		i = j
	}
	arena := make([]byte, 0, total)
	var parts [][NumClasses]uint32
	if mixed > 0 {
		parts = make([][NumClasses]uint32, mixed)
	}
	for i := 0; i < len(o.frames); {
		j, _ := o.pack(i, maxp)
		s := len(arena)
		arena = AppendHeader(arena)
		p := Packet{From: from, To: o.frames[i].to, Class: o.frames[i].class}
		if o.frames[j-1].class != p.Class {
			p.Parts, parts = &parts[0], parts[1:]
		}
		for _, f := range o.frames[i:j] {
			arena = append(arena, o.buf[f.off:f.end]...)
			if p.Parts != nil {
				p.Parts[f.class] += uint32(f.end - f.off)
			}
		}
		p.Payload = arena[s:len(arena):len(arena)]
		dst = append(dst, p)
		i = j
	}
	o.frames = o.frames[:0]
	o.ready = 0
	o.compact()
	return dst
}

// compact moves the frames Packets kept to the front of the buffer, in
// commit order.
func (o *Outbox) compact() {
	if len(o.keep) == 0 {
		o.buf = o.buf[:0]
		return
	}
	slices.SortFunc(o.keep, func(a, b outFrame) int { return cmp.Compare(a.off, b.off) })
	n := 0
	for _, f := range o.keep {
		l := copy(o.buf[n:], o.buf[f.off:f.end])
		f.off, f.end = n, n+l
		n += l
		o.frames = append(o.frames, f)
	}
	o.buf = o.buf[:n]
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
// size: frames of the same destination while they fit (a frame larger
// than maxp travels alone).
func (o *Outbox) pack(i, maxp int) (int, int) {
	size := 1 + o.frames[i].end - o.frames[i].off
	j := i + 1
	for ; j < len(o.frames); j++ {
		f := o.frames[j]
		if f.to != o.frames[i].to || size+f.end-f.off > maxp {
			break
		}
		size += f.end - f.off
	}
	return j, size
}

// MoveTo commits every frame to dst, in commit order, with its destination,
// class and (CommitLater) due time, and empties o. A component with an outbox of its
// own (the ring under a locator) hands its frames to its node's this way.
func (o *Outbox) MoveTo(dst *Outbox) {
	for _, f := range o.frames {
		if f.later {
			dst.CommitLater(f.to, f.class, append(dst.Buf(), o.buf[f.off:f.end]...), f.due)
		} else {
			dst.Commit(f.to, f.class, append(dst.Buf(), o.buf[f.off:f.end]...))
		}
	}
	o.Reset()
}
