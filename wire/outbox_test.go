package wire

import (
	"bytes"
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// refPackets is Packets as it was written first: a stable sort of the
// frames by destination and class, then packing each destination's frames
// while they fit.
func refPackets(from NodeID, frames []outFrame, buf []byte, maxp int) []Packet {
	frames = slices.Clone(frames)
	slices.SortStableFunc(frames, func(a, b outFrame) int {
		if c := cmp.Compare(a.to, b.to); c != 0 {
			return c
		}
		return cmp.Compare(a.class, b.class)
	})
	var out []Packet
	for i := 0; i < len(frames); {
		size := 1 + frames[i].end - frames[i].off
		j := i + 1
		for ; j < len(frames); j++ {
			f := frames[j]
			if f.to != frames[i].to || size+f.end-f.off > maxp {
				break
			}
			size += f.end - f.off
		}
		p := AppendHeader(nil)
		var parts [NumClasses]uint32
		for _, f := range frames[i:j] {
			p = append(p, buf[f.off:f.end]...)
			parts[f.class] += uint32(f.end - f.off)
		}
		pk := Packet{From: from, To: frames[i].to, Class: frames[i].class, Payload: p}
		if frames[j-1].class != frames[i].class {
			pk.Parts = &parts
		}
		out = append(out, pk)
		i = j
	}
	return out
}

// TestOutboxOrderMatchesStableSort checks Packets against the stable sort
// on random outboxes, reused across rounds (its scratch slices swap), with
// few and many destinations, in order and shuffled, and large node IDs.
func TestOutboxOrderMatchesStableSort(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 15))
	var o Outbox
	for round := range 2000 {
		o.MaxPayload = 1 + r.IntN(300)
		ndst := 1 + r.IntN(40)
		dsts := make([]NodeID, ndst)
		for k := range dsts {
			if r.IntN(4) == 0 {
				dsts[k] = NodeID(r.Uint32())
			} else {
				dsts[k] = NodeID(r.IntN(64))
			}
		}
		n := r.IntN(200)
		ordered := r.IntN(4) == 0
		for i := range n {
			to := dsts[r.IntN(ndst)]
			if ordered {
				to = dsts[i*ndst/max(n, 1)]
			}
			c := Class(r.IntN(NumClasses))
			b := o.Buf()
			for range 1 + r.IntN(120) {
				b = append(b, byte(r.IntN(256)))
			}
			o.Commit(to, c, b)
		}
		want := refPackets(9, o.frames, o.buf, o.MaxPayload)
		got := o.Packets(9, nil)
		if len(got) != len(want) {
			t.Fatalf("round %d: %d packets, want %d", round, len(got), len(want))
		}
		for k := range got {
			g, w := got[k], want[k]
			if g.From != w.From || g.To != w.To || g.Class != w.Class || !bytes.Equal(g.Payload, w.Payload) ||
				(g.Parts == nil) != (w.Parts == nil) || g.Parts != nil && *g.Parts != *w.Parts {
				t.Fatalf("round %d: packet %d is %v/%v/%d bytes, want %v/%v/%d bytes", round, k,
					g.To, g.Class, len(g.Payload), w.To, w.Class, len(w.Payload))
			}
		}
		if o.Len() != 0 {
			t.Fatalf("round %d: %d frames left", round, o.Len())
		}
	}
}

// TestOutboxLater: a frame committed with CommitLater rides in the next
// packet to its node, waits while no packet goes there, goes alone once
// released, survives rounds of other packets byte for byte, and MoveTo
// keeps it waiting; a mixed packet's Parts and ClassSizes add up.
func TestOutboxLater(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 17))
	for round := range 500 {
		var o, sub Outbox
		o.MaxPayload = 40 + r.IntN(400)
		type want struct {
			to   NodeID
			body []byte
			due  time.Duration
			step int
		}
		var waiting []want
		now := time.Duration(0)
		for step := range 30 {
			now += time.Duration(r.IntN(100)) * time.Millisecond
			o.Release(now)
			ready := map[NodeID]bool{}
			for _, f := range o.frames {
				if !f.later {
					ready[f.to] = true
				}
			}
			for range r.IntN(4) {
				to := NodeID(r.IntN(5))
				body := []byte{byte(TypeRingPing), 1, byte(round), byte(step)}[:2+r.IntN(3)]
				body[1] = byte(len(body) - 2)
				due := now + time.Duration(r.IntN(300))*time.Millisecond
				target := &o
				if r.IntN(2) == 0 {
					target = &sub
				}
				target.CommitLater(to, ClassMaintenance, append(target.Buf(), body...), due)
				waiting = append(waiting, want{to, body, due, step})
			}
			sub.MoveTo(&o)
			for range r.IntN(3) {
				to := NodeID(r.IntN(5))
				o.Commit(to, ClassUpdate, append(o.Buf(), byte(TypeUpdates), 1, 0))
				ready[to] = true
			}
			got := o.Packets(1, nil)
			// Every waiting frame for a node a packet went to went with it;
			// the others still wait.
			sent := map[NodeID][]byte{}
			for _, p := range got {
				sent[p.To] = append(sent[p.To], p.Payload[1:]...)
				sz := p.ClassSizes(28)
				var sum uint64
				for _, n := range sz {
					sum += n
				}
				if sum != uint64(len(p.Payload))+28 {
					t.Fatalf("round %d: class sizes %v add up to %d, want %d", round, sz, sum, len(p.Payload)+28)
				}
			}
			kept := waiting[:0]
			for _, w := range waiting {
				if sent[w.to] != nil {
					if !bytes.Contains(sent[w.to], w.body) {
						t.Fatalf("round %d step %d: waiting frame % x for %d not in its packet % x", round, step, w.body, w.to, sent[w.to])
					}
					continue
				}
				if ready[w.to] {
					t.Fatalf("round %d step %d: frame for %d was ready but not sent", round, step, w.to)
				}
				kept = append(kept, w)
			}
			waiting = kept
			if o.Waiting() != len(waiting) || o.Len() != 0 {
				t.Fatalf("round %d step %d: %d waiting, %d ready; want %d, 0", round, step, o.Waiting(), o.Len(), len(waiting))
			}
			for _, w := range waiting {
				if w.due <= now && w.step < step { // released at this step's start
					t.Fatalf("round %d step %d: frame due %v still waits at %v", round, step, w.due, now)
				}
			}
		}
	}
}
