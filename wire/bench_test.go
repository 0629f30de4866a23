package wire

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// BenchmarkEncode measures the encode path of each message type into a
// reused buffer: it must not allocate.
func BenchmarkEncode(b *testing.B) {
	for _, c := range codecs {
		r := rand.New(rand.NewPCG(1, 1))
		// The largest of a few random messages: one with entries where
		// the type has any (a bounded search; some types are fixed-size).
		var m any
		size := -1
		for range 64 {
			cand := c.gen(r)
			if n := len(c.encode(nil, cand)); n > size {
				m, size = cand, n
			}
		}
		b.Run(c.typ.String(), func(b *testing.B) {
			b.ReportAllocs()
			buf := make([]byte, 0, 4096)
			for b.Loop() {
				buf = c.encode(buf[:0], m)
			}
			b.SetBytes(int64(len(buf)))
		})
	}
}

// BenchmarkOutbox measures batching n update frames into packets: one
// allocation per call (the payload arena handed to the driver).
func BenchmarkOutbox(b *testing.B) {
	r := rand.New(rand.NewPCG(2, 2))
	m := randUpdates(r)
	for _, n := range []int{8, 100} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			var o Outbox
			ps := make([]Packet, 0, n)
			for b.Loop() {
				for i := range n {
					o.Commit(NodeID(i%8), ClassUpdate, AppendUpdates(o.Buf(), m))
				}
				ps = o.Packets(0, ps[:0])
			}
		})
	}
}

func TestEncodeDoesNotAllocate(t *testing.T) {
	for _, c := range codecs {
		m := c.gen(rand.New(rand.NewPCG(3, 3)))
		buf := make([]byte, 0, 1<<16)
		if a := testing.AllocsPerRun(100, func() { buf = c.encode(buf[:0], m) }); a != 0 {
			t.Errorf("%v: %v allocations per encode", c.typ, a)
		}
	}
}

func TestDecodeDoesNotAllocate(t *testing.T) {
	for _, c := range codecs {
		m := c.gen(rand.New(rand.NewPCG(4, 4)))
		b := c.encode(nil, m)
		fr, err := OpenFrames(append(AppendHeader(nil), b...))
		if err != nil {
			t.Fatal(err)
		}
		_, body, _ := fr.Next()
		dst, _ := c.decode(body) // grows dst's slices once
		redecode := func() {
			switch d := dst.(type) {
			case *Updates:
				_ = d.Decode(body)
			case *Acks:
				_ = d.Decode(body)
			case *Writes:
				_ = d.Decode(body)
			case *IDs:
				_ = d.Decode(body)
			case *Handoffs:
				_ = d.Decode(body)
			case *Pubs:
				_ = d.Decode(body)
			case *Subscribe:
				_ = d.Decode(body)
			case *Epochs:
				_ = d.Decode(body)
			case *Where:
				_ = d.Decode(body)
			case *BackupAcks:
				_ = d.Decode(body)
			case *WriteAcks:
				_ = d.Decode(body)
			case *Heartbeat:
				_ = d.Decode(body)
			case *Probe:
				_ = d.Decode(body)
			}
		}
		if a := testing.AllocsPerRun(100, redecode); a != 0 {
			t.Errorf("%v: %v allocations per decode into a reused message", c.typ, a)
		}
	}
}
