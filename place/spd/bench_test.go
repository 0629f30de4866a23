package spd

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// benchSizes are the sizes: 25 servers × 120 players (the paper's
// largest session) and 100 × 1,000.
var benchSizes = [][2]int{{25, 120}, {100, 1000}}

func benchInstance(b *testing.B, n, m int) (*Instance, float64) {
	in, err := Generate(GenConfig{Servers: n, Players: m}, rand.New(rand.NewPCG(uint64(n), uint64(m))))
	if err != nil {
		b.Fatal(err)
	}
	in, err = in.Scaled(500 / in.Gamma())
	if err != nil {
		b.Fatal(err)
	}
	return in, 1.3 * 500
}

func BenchmarkAlgorithms(b *testing.B) {
	for _, sz := range benchSizes {
		n, m := sz[0], sz[1]
		in, bound := benchInstance(b, n, m)
		cs, err := SPDCSH(in, bound)
		if err != nil {
			b.Fatal(err)
		}
		p2p, err := SPDP2PH(in, bound)
		if err != nil {
			b.Fatal(err)
		}
		name := fmt.Sprintf("n=%d/m=%d", n, m)
		run := func(algo string, f func() error) {
			b.Run(name+"/"+algo, func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if err := f(); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
		run("matching", func() error { Matching(in, CS); return nil })
		run("spdcs-h", func() error { _, err := SPDCSH(in, bound); return err })
		run("spdp2p-h", func() error { _, err := SPDP2PH(in, bound); return err })
		run("zizo-p2p", func() error { _, err := ZIZO(in, P2P, bound); return err })
		run("kbest-cs", func() error { _, err := KBest(in, CS, bound, len(cs.Servers), 0); return err })
		run("spdvr-cs", func() error { _, err := SPDVRCS(in, cs, bound); return err })
		run("spdvr-p2p", func() error { _, err := SPDVRP2P(in, p2p, bound); return err })
		mp := Matching(in, P2P) // many contact servers: SPDVR-P2P's slow case
		run("spdvr-p2p-from-alg-mp", func() error { _, err := SPDVRP2P(in, mp, bound); return err })
		b.Logf("%s: Γ=500 bound=%v spdcs-h %d servers, spdp2p-h %d servers", name, bound, len(cs.Servers), len(p2p.Servers))
	}
}

// BenchmarkExact measures the exact solver on the small instances the
// tests and the lab's gap table use.
func BenchmarkExact(b *testing.B) {
	for _, sz := range [][2]int{{8, 8}, {12, 10}} {
		in, bound := benchInstance(b, sz[0], sz[1])
		for _, model := range []Model{CS, P2P} {
			b.Run(fmt.Sprintf("n=%d/m=%d/%s", sz[0], sz[1], model), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					if _, err := Exact(in, model, bound, ExactOptions{}); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
