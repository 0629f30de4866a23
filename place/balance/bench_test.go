package balance

import (
	"fmt"
	"testing"
)

// fullCluster is the target state: 10 servers × 5,500 players
// (55,000), the §5 instance mix, hot spots, several servers overloaded.
func fullCluster(b *testing.B) *Cluster {
	cfg := ScenarioA()
	cfg.Hours = 0
	r, err := Simulate(cfg)
	if err != nil {
		b.Fatal(err)
	}
	return r.Snapshot
}

func BenchmarkRound(b *testing.B) {
	c := fullCluster(b)
	total := 0
	for _, l := range c.Loads() {
		total += l
	}
	b.Logf("%d servers, %d players, %d instances", len(c.Main), total, len(c.Instances))
	for _, m := range []string{"balance", "pack"} {
		b.Run(fmt.Sprintf("method=%s/players=%d", m, total), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var err error
				if m == "pack" {
					_, err = Pack(c, DefaultConfig())
				} else {
					_, err = Balance(c, DefaultConfig())
				}
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
	b.Run("method=classic", func(b *testing.B) {
		cfg := ScenarioA()
		cfg.Hours = 0
		r, err := Simulate(cfg)
		if err != nil {
			b.Fatal(err)
		}
		b.ReportAllocs()
		for b.Loop() {
			if _, err := Classic(r.Grid, cfg.Servers, cfg.MaxLoad); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkScenarioB runs one whole scenario B simulation (2 simulated
// hours, 49,500 players growing to about 60,000); speedup is simulated
// time over wall time.
func BenchmarkScenarioB(b *testing.B) {
	cfg := ScenarioB()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Simulate(cfg); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(cfg.Hours*3600/(b.Elapsed().Seconds()/float64(b.N)), "speedup")
}
