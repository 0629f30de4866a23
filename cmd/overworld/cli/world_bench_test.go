package cli

import (
	"fmt"
	"testing"
	"time"

	"github.com/overworld/overworld/discovery"
	"github.com/overworld/overworld/lab"
	"github.com/overworld/overworld/lab/harness"
)

// BenchmarkWorld simulates the model game on node cores in the simulator
// (lab/harness) as the simulation commands run it, with their heap
// tuning: one op is one second of game time, after a 2 s warm-up (the
// initial full-state transfers). It reports simulated events per wall
// second and the speed factor (game time ÷ wall time, and ÷ CPU time of
// the process, which load from other work on a shared machine disturbs
// less).
func BenchmarkWorld(b *testing.B) {
	defer lab.HugePages(250 * time.Millisecond)() // as the simulation commands run (OVERWORLD_HUGEPAGES=off: not)
	defer lab.SimGC()()                           // as the simulation commands run (GOGC set: as set)
	for _, sz := range []struct {
		arch           discovery.Arch
		nodes, perNode int
	}{
		{discovery.Directory, 16, 8},
		{discovery.Directory, 96, 8},
		{discovery.Broadcast, 96, 1},
		{discovery.Directory, 1250, 8},
	} {
		for _, workers := range []int{1, 2} {
			b.Run(fmt.Sprintf("%s/nodes=%d/players=%d/workers=%d", sz.arch, sz.nodes, sz.nodes*sz.perNode, workers), func(b *testing.B) {
				cfg := harness.DefaultArenaConfig()
				cfg.Arch, cfg.Nodes, cfg.PlayersPerNode, cfg.Duration = sz.arch, sz.nodes, sz.perNode, time.Hour
				cfg.Workers = workers
				w, err := harness.NewArena(cfg)
				if err != nil {
					b.Fatal(err)
				}
				if err := w.Sim().RunFor(2 * time.Second); err != nil {
					b.Fatal(err)
				}
				b.ReportAllocs()
				ev0, start, ops := w.Events(), time.Now(), 0
				cpu0, cpuOK := cpuTime()
				for b.Loop() {
					if err := w.Sim().RunFor(time.Second); err != nil {
						b.Fatal(err)
					}
					ops++
				}
				el := time.Since(start).Seconds()
				b.ReportMetric(float64(w.Events()-ev0)/el, "events/s")
				b.ReportMetric(float64(ops)/el, "x_realtime")
				b.ReportMetric(float64(w.Events()-ev0)/float64(ops), "events/op")
				if cpu1, ok := cpuTime(); ok && cpuOK {
					b.ReportMetric(float64(ops)/(cpu1-cpu0).Seconds(), "x_realtime_cpu")
				}
				b.ReportMetric(float64(w.Sim().ParallelWindows())/float64(ops+2), "windows/op")
			})
		}
	}
}
