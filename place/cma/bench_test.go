package cma

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
	"time"
)

// benchWorld is a synthetic but structured workload: mirrors and players are
// points in a 200 ms × 200 ms plane (delay = distance + up to 10 ms of
// access noise), players cluster around a few hot spots, and mirror
// capacities are uneven, so at 95% load most mirrors are full and joins and
// leaves need chains.
type benchWorld struct {
	mirrors []Mirror
	mx, my  []float64
	r       *rand.Rand
	hot     [][2]float64
}

func newBenchWorld(n, m int, seed uint64) *benchWorld {
	r := rand.New(rand.NewPCG(seed, 42))
	w := &benchWorld{r: r}
	capTotal := int(math.Ceil(float64(n) / 0.95))
	weights := make([]float64, m)
	sum := 0.0
	for j := range weights {
		weights[j] = 0.5 + r.Float64()
		sum += weights[j]
	}
	given := 0
	for j := 0; j < m; j++ {
		c := int(float64(capTotal) * weights[j] / sum)
		if j == m-1 {
			c = capTotal - given
		}
		c = max(c, 1)
		given += c
		w.mirrors = append(w.mirrors, Mirror{ID: fmt.Sprintf("M%d", j), Capacity: c})
		w.mx = append(w.mx, r.Float64()*200)
		w.my = append(w.my, r.Float64()*200)
	}
	for range 5 {
		w.hot = append(w.hot, [2]float64{r.Float64() * 200, r.Float64() * 200})
	}
	return w
}

func (w *benchWorld) delays(d []float64) []float64 {
	h := w.hot[w.r.IntN(len(w.hot))]
	x := h[0] + w.r.NormFloat64()*40
	y := h[1] + w.r.NormFloat64()*40
	d = d[:0]
	for j := range w.mirrors {
		d = append(d, math.Hypot(x-w.mx[j], y-w.my[j])+w.r.Float64()*10)
	}
	return d
}

// populate returns an assigner of the given method holding n players. Exact
// methods are populated with SA (the state is optimal either way) and then
// switched, so the setup of a re-solving method does not take n re-solves.
func populate(tb testing.TB, w *benchWorld, n int, method Method) (*Assigner, []string) {
	tb.Helper()
	start := SA
	if !method.Exact() {
		start = method
	}
	a, err := New(w.mirrors, start)
	if err != nil {
		tb.Fatal(err)
	}
	ids := make([]string, n)
	buf := make([]float64, 0, len(w.mirrors))
	for i := range ids {
		ids[i] = fmt.Sprintf("p%d", i)
		buf = w.delays(buf)
		if _, err := a.Join(ids[i], buf); err != nil {
			tb.Fatal(err)
		}
	}
	switch method {
	case Optimal:
		a.s.idx = nil
		a.eng = &optimalEngine{s: a.s}
	case SARebuild:
		a.s.idx = nil
		a.eng = newRebuild(a.s)
	}
	a.method = method
	return a, ids
}

// BenchmarkEvent measures one steady-state event pair (a random player
// leaves, a new one joins) per method and size, and reports the median and
// 99th percentile of each operation separately, and the players moved per
// event.
func BenchmarkEvent(b *testing.B) {
	for _, n := range []int{1_000, 10_000, 100_000, 1_000_000} {
		for _, m := range []int{5, 20, 100} {
			for _, method := range []Method{SA, SARebuild, Greedy, Ignore, Optimal} {
				if method == Optimal && n > 100_000 {
					continue // one re-solve of 1M players takes tens of seconds; see BenchmarkResolve
				}
				b.Run(fmt.Sprintf("method=%v/n=%d/m=%d", method, n, m), func(b *testing.B) {
					benchEvents(b, n, m, method)
				})
			}
		}
	}
}

func benchEvents(b *testing.B, n, m int, method Method) {
	w := newBenchWorld(n, m, uint64(n*1000+m))
	a, ids := populate(b, w, n, method)
	var joins, leaves []time.Duration
	moves := 0
	next := n
	buf := make([]float64, 0, m)
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		i := w.r.IntN(len(ids))
		t0 := time.Now()
		dl, err := a.Leave(ids[i])
		t1 := time.Now()
		if err != nil {
			b.Fatal(err)
		}
		ids[i] = fmt.Sprintf("p%d", next)
		next++
		buf = w.delays(buf)
		t2 := time.Now()
		dj, err := a.Join(ids[i], buf)
		t3 := time.Now()
		if err != nil {
			b.Fatal(err)
		}
		leaves = append(leaves, t1.Sub(t0))
		joins = append(joins, t3.Sub(t2))
		moves += len(dl.Moves) + len(dj.Moves)
	}
	b.StopTimer()
	b.ReportMetric(float64(pct(joins, 0.5).Nanoseconds()), "join-p50-ns")
	b.ReportMetric(float64(pct(joins, 0.99).Nanoseconds()), "join-p99-ns")
	b.ReportMetric(float64(pct(leaves, 0.5).Nanoseconds()), "leave-p50-ns")
	b.ReportMetric(float64(pct(leaves, 0.99).Nanoseconds()), "leave-p99-ns")
	b.ReportMetric(float64(moves)/float64(2*len(joins)), "moves/event")
}

func pct(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, int(q*float64(len(s))))]
}

// BenchmarkResolve compares, in one run and on the same state, an
// incremental SA event with re-solving the whole assignment from scratch
// (the Optimal method's work per event), at n = 100k, m = 20.
func BenchmarkResolve(b *testing.B) {
	for _, n := range []int{10_000, 100_000} {
		m := 20
		w := newBenchWorld(n, m, 7)
		a, ids := populate(b, w, n, SA)
		b.Run(fmt.Sprintf("incremental/n=%d/m=%d", n, m), func(b *testing.B) {
			next := n
			buf := make([]float64, 0, m)
			for b.Loop() {
				i := w.r.IntN(len(ids))
				if _, err := a.Leave(ids[i]); err != nil {
					b.Fatal(err)
				}
				ids[i] = fmt.Sprintf("q%d", next)
				next++
				buf = w.delays(buf)
				if _, err := a.Join(ids[i], buf); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(2*b.N), "ns/event")
		})
		b.Run(fmt.Sprintf("resolve/n=%d/m=%d", n, m), func(b *testing.B) {
			o := &optimalEngine{s: a.s}
			for b.Loop() {
				o.resolve(-1, -1)
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/event")
		})
	}
}

// TestMemoryPerPlayer reports the heap bytes per player of the SA method at
// n = 1M, m = 20 (run with -run MemoryPerPlayer -v; skipped with -short).
func TestMemoryPerPlayer(t *testing.T) {
	if testing.Short() {
		t.Skip("populates 1M players")
	}
	if testing.CoverMode() != "" || raceEnabled {
		t.Skip("instrumented build")
	}
	for _, c := range []struct{ n, m int }{{1_000_000, 20}} {
		w := newBenchWorld(c.n, c.m, 3)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		a, ids := populate(t, w, c.n, SA)
		runtime.GC()
		runtime.ReadMemStats(&after)
		perPlayer := float64(after.HeapAlloc-before.HeapAlloc) / float64(c.n)
		t.Logf("SA n=%d m=%d: %.0f bytes/player (heap in use %.1f MiB, incl. %d player ID strings)",
			c.n, c.m, perPlayer, float64(after.HeapAlloc-before.HeapAlloc)/(1<<20), len(ids))
		if perPlayer > 2000 {
			t.Errorf("SA uses %.0f bytes/player at m=%d; budget 2000", perPlayer, c.m)
		}
		runtime.KeepAlive(a)
		runtime.KeepAlive(ids)
	}
}
