package topo

import (
	"fmt"
	"testing"
)

func BenchmarkWaxman(b *testing.B) {
	for _, n := range []int{100, 1000, 5000} {
		for _, growth := range []Growth{GrowthIncremental, GrowthAllAtOnce} {
			b.Run(fmt.Sprintf("n=%d/%s", n, growth), func(b *testing.B) {
				c := DefaultWaxmanConfig()
				c.N, c.Growth = n, growth
				r := rng(1)
				b.ReportAllocs()
				for b.Loop() {
					if _, err := Waxman(c, r); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

func BenchmarkBarabasiAlbert(b *testing.B) {
	for _, n := range []int{1000, 10000, 100000} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			c := DefaultBAConfig()
			c.N = n
			r := rng(1)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := BarabasiAlbert(c, r); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkHierarchical(b *testing.B) {
	for _, as := range []int{10, 50, 200} {
		c := CMAPaper()
		c.AS.N = as
		b.Run(fmt.Sprintf("n=%d", as*c.Router.N), func(b *testing.B) {
			r := rng(1)
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Hierarchical(c, r); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func BenchmarkShortestFrom(b *testing.B) {
	for _, as := range []int{10, 50, 200} {
		c := CMAPaper()
		c.AS.N = as
		g, err := Hierarchical(c, rng(1))
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("n=%d", g.N()), func(b *testing.B) {
			b.ReportAllocs()
			src := 0
			for b.Loop() {
				ShortestFrom(g, src)
				src = (src + 7919) % g.N()
			}
		})
	}
}

// BenchmarkDelayMatrix times players × mirrors on the CMA paper's 5,000-node
// topology (the shapes of its §4: 1,000 or 1,300 players, 5 to 20 mirrors).
func BenchmarkDelayMatrix(b *testing.B) {
	g, err := Hierarchical(CMAPaper(), rng(1))
	if err != nil {
		b.Fatal(err)
	}
	nodes := rng(2).Perm(g.N())
	for _, shape := range [][2]int{{1000, 5}, {1000, 20}, {1300, 20}, {20, 1300}} {
		rows, cols := nodes[:shape[0]], nodes[shape[0]:shape[0]+shape[1]]
		b.Run(fmt.Sprintf("n=%d/%dx%d", g.N(), shape[0], shape[1]), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := DelayMatrix(g, rows, cols); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkCMAPaperSetup is what a lab run of the CMA paper pays before any
// assignment: generate the 5,000-node topology and the 1,300 × 20 delays.
func BenchmarkCMAPaperSetup(b *testing.B) {
	b.ReportAllocs()
	seed := uint64(0)
	for b.Loop() {
		seed++
		r := rng(seed)
		g, err := Hierarchical(CMAPaper(), r)
		if err != nil {
			b.Fatal(err)
		}
		nodes := r.Perm(g.N())
		if _, err := DelayMatrix(g, nodes[:1300], nodes[1300:1320]); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkAllPairs(b *testing.B) {
	for _, n := range []int{100, 1000} {
		c := CoreSelectionPaper()
		c.N = n
		g, err := Waxman(c, rng(1))
		if err != nil {
			b.Fatal(err)
		}
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := AllPairs(g); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
