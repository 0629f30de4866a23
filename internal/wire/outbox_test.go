package wire

import (
	"bytes"
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"
)

// refPackets is Packets as it was written first: a stable sort of the
// frames by destination and class, then packing.
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
			if f.to != frames[i].to || f.class != frames[i].class || size+f.end-f.off > maxp {
				break
			}
			size += f.end - f.off
		}
		p := AppendHeader(nil)
		for _, f := range frames[i:j] {
			p = append(p, buf[f.off:f.end]...)
		}
		out = append(out, Packet{From: from, To: frames[i].to, Class: frames[i].class, Payload: p})
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
			if g.From != w.From || g.To != w.To || g.Class != w.Class || !bytes.Equal(g.Payload, w.Payload) {
				t.Fatalf("round %d: packet %d is %v/%v/%d bytes, want %v/%v/%d bytes", round, k,
					g.To, g.Class, len(g.Payload), w.To, w.Class, len(w.Payload))
			}
		}
		if o.Len() != 0 {
			t.Fatalf("round %d: %d frames left", round, o.Len())
		}
	}
}
