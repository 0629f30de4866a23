package arena

import (
	"fmt"
	"testing"
)

// BenchmarkLocalFrame measures one frame of the game in the Local runner
// (every bot, rocket and item thinks once), on federated rect maps of 768
// and 10,000 bots, after a 30 s warm-up so that fights and rockets are in
// their steady state.
func BenchmarkLocalFrame(b *testing.B) {
	for _, n := range []int{768, 10000} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			g := mustGame(b, Federated(n/8, Rect))
			l := mustRun(b, g, 1)
			for range 300 {
				l.Step()
			}
			b.ReportAllocs()
			for b.Loop() {
				l.Step()
			}
			b.ReportMetric(float64(l.Len()), "objects")
		})
	}
}

// BenchmarkNewGame measures building a game (map and waypoint graph).
func BenchmarkNewGame(b *testing.B) {
	for _, n := range []int{768, 10000} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				mustGame(b, Federated(n/8, Rect))
			}
		})
	}
}

// BenchmarkPath measures one A* search between waypoints about a goal
// radius apart.
func BenchmarkPath(b *testing.B) {
	g := mustGame(b, Federated(96, Rect))
	m := g.Map
	var dst []int32
	pairs := [][2]int{}
	for i := 0; i < len(m.Waypoints) && len(pairs) < 256; i += 7 {
		pairs = append(pairs, [2]int{i, m.NearestWaypoint(m.Waypoints[i].X+goalRadius*0.7, m.Waypoints[i].Y)})
	}
	b.ReportAllocs()
	k := 0
	for b.Loop() {
		p := pairs[k%len(pairs)]
		dst = m.Path(dst[:0], p[0], p[1])
		k++
	}
}
