package sim

import (
	"bytes"
	"flag"
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/overworld/overworld/geo"
	"github.com/overworld/overworld/wire"
)

// gossipCore is a deterministic synthetic core: each frame it sends a few
// updates to random peers and, sometimes, a discovery message; it answers
// discovery with matching. It also "holds" objects it has heard from.
type gossipCore struct {
	id    wire.NodeID
	peers int
	rng   *rand.Rand
	out   []wire.Packet
	heard map[wire.NodeID]bool
}

func (c *gossipCore) Step(now time.Duration, p wire.Packet) {
	c.heard[p.From] = true
	if p.Class == wire.ClassDiscovery {
		c.out = append(c.out, wire.Packet{From: c.id, To: p.From, Class: wire.ClassMatching, Payload: make([]byte, 40)})
	}
}

func (c *gossipCore) Tick(now time.Duration) {
	for range 3 {
		to := wire.NodeID(c.rng.IntN(c.peers))
		c.out = append(c.out, wire.Packet{From: c.id, To: to, Class: wire.ClassUpdate, Payload: make([]byte, 20+c.rng.IntN(40))})
	}
	if c.rng.IntN(5) == 0 {
		to := wire.NodeID(c.rng.IntN(c.peers))
		c.out = append(c.out, wire.Packet{From: c.id, To: to, Class: wire.ClassDiscovery, Payload: make([]byte, 30)})
	}
}

func (c *gossipCore) Drain(dst []wire.Packet) []wire.Packet {
	dst = append(dst, c.out...)
	clear(c.out)
	c.out = c.out[:0]
	return dst
}

// runWorld runs a small synthetic world on PlanetLab sites with jitter,
// loss, duplication, a crash, a partition, view reports, staleness samples
// and counters, and returns its three metrics files.
func runWorld(t *testing.T, seed uint64, nodes int, until time.Duration) (summary, series, perNode []byte) {
	t.Helper()
	return runWorldW(t, seed, nodes, until, 1, false)
}

// runWorldW is runWorld on the given number of workers (always: every
// window goes to the workers, however small).
func runWorldW(t *testing.T, seed uint64, nodes int, until time.Duration, workers int, always bool) (summary, series, perNode []byte) {
	t.Helper()
	sites, err := geo.PlanetLabSites(1)
	if err != nil {
		t.Fatal(err)
	}
	cfg := DefaultConfig()
	cfg.Seed = seed
	cfg.Jitter = 5 * time.Millisecond
	cfg.Loss = 0.02
	cfg.Duplicate = 0.01
	cfg.Workers = workers
	s := newSim(t, cfg, sites)
	s.par.always = always
	rng := rand.New(rand.NewPCG(seed, 42)) // the scenario's own randomness
	cores := make([]*gossipCore, nodes)
	for i := range cores {
		cores[i] = &gossipCore{id: wire.NodeID(i), peers: nodes, rng: rand.New(rand.NewPCG(seed, uint64(i))), heard: map[wire.NodeID]bool{}}
		if err := s.AddNode(wire.NodeID(i), sites.Name(rng.IntN(sites.Len())), cores[i]); err != nil {
			t.Fatal(err)
		}
	}
	// Every 100 ms each up node reports a view: the "objects" of 4 nodes
	// chosen by the scenario, held if the node has heard from them.
	var report func(now time.Duration)
	report = func(now time.Duration) {
		for i, c := range cores {
			if !s.Up(c.id) {
				continue
			}
			ids := []uint64{uint64((i + 1) % nodes), uint64((i + 2) % nodes), uint64(rng.IntN(nodes)), uint64(rng.IntN(nodes))}
			ids = dedupe(ids)
			held := make([]bool, len(ids))
			for k, id := range ids {
				held[k] = c.heard[wire.NodeID(id)]
			}
			if err := s.Recorder().View(c.id, now, ids, held); err != nil {
				t.Fatal(err)
			}
			if err := s.Recorder().Staleness(time.Duration(rng.IntN(200)) * time.Millisecond); err != nil {
				t.Fatal(err)
			}
			if err := s.Recorder().FrameTime(c.id, time.Duration(rng.IntN(5000))*time.Microsecond); err != nil {
				t.Fatal(err)
			}
		}
		if err := s.Recorder().Add("reports", 1); err != nil {
			t.Fatal(err)
		}
		if now+100*time.Millisecond <= until {
			if err := s.Schedule(now+100*time.Millisecond, report); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := s.Schedule(50*time.Millisecond, report); err != nil {
		t.Fatal(err)
	}
	if err := s.Schedule(until/3, func(time.Duration) {
		if err := s.Crash(1); err != nil {
			t.Error(err)
		}
		if _, err := s.Partition(until/2, []wire.NodeID{0}, []wire.NodeID{2, 3}); err != nil {
			t.Error(err)
		}
	}); err != nil {
		t.Fatal(err)
	}
	if err := s.Run(until); err != nil {
		t.Fatal(err)
	}
	if always && workers > 1 && s.par.ran == 0 {
		t.Fatalf("seed %d: no window ran on the workers (lookahead %v)", seed, s.Lookahead())
	}
	checkConservation(t, s, seed)
	var a, b, c bytes.Buffer
	sum := s.Summary()
	sum.Labels["arch"] = "gossip"
	sum.Labels["nodes"] = fmt.Sprint(nodes)
	if err := sum.WriteJSON(&a); err != nil {
		t.Fatal(err)
	}
	if err := s.WriteSeriesCSV(&b); err != nil {
		t.Fatal(err)
	}
	if err := s.WriteNodeSeriesCSV(&c); err != nil {
		t.Fatal(err)
	}
	return a.Bytes(), b.Bytes(), c.Bytes()
}

func dedupe(ids []uint64) []uint64 {
	out := ids[:0]
	seen := map[uint64]bool{}
	for _, id := range ids {
		if !seen[id] {
			seen[id] = true
			out = append(out, id)
		}
	}
	return out
}

// TestSameSeedSameFiles: the same seed gives byte-identical metrics files;
// another seed gives different ones.
func TestSameSeedSameFiles(t *testing.T) {
	a1, b1, c1 := runWorld(t, 3, 12, 5*time.Second)
	a2, b2, c2 := runWorld(t, 3, 12, 5*time.Second)
	if !bytes.Equal(a1, a2) || !bytes.Equal(b1, b2) || !bytes.Equal(c1, c2) {
		t.Fatal("same seed, different metrics files")
	}
	a3, b3, _ := runWorld(t, 4, 12, 5*time.Second)
	if bytes.Equal(a1, a3) || bytes.Equal(b1, b3) {
		t.Fatal("different seeds, identical metrics files")
	}
}

// TestParallelIsSerial: the run on parallel workers is the serial run,
// event for event: byte-identical metrics files for any worker count.
func TestParallelIsSerial(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3} {
		nodes := 60
		if testing.Short() {
			nodes = 20
		}
		a1, b1, c1 := runWorldW(t, seed, nodes, 3*time.Second, 1, false)
		for _, w := range []int{2, 3, 8} {
			for _, always := range []bool{false, true} {
				a, b, c := runWorldW(t, seed, nodes, 3*time.Second, w, always)
				if !bytes.Equal(a, a1) || !bytes.Equal(b, b1) || !bytes.Equal(c, c1) {
					t.Fatalf("seed %d: %d workers (always %v) give other metrics files than 1", seed, w, always)
				}
			}
		}
	}
}

var update = flag.Bool("update", false, "rewrite the metrics golden files in testdata")

// TestMetricsGolden pins the metrics file layout (schema overworld-sim/1)
// and its numbers for one small seeded run (-update rewrites it).
func TestMetricsGolden(t *testing.T) {
	sum, series, perNode := runWorld(t, 1, 5, 2500*time.Millisecond)
	for _, f := range []struct {
		path string
		got  []byte
	}{
		{"testdata/metrics.golden.json", sum},
		{"testdata/series.golden.csv", series},
		{"testdata/nodes.golden.csv", perNode},
	} {
		if *update {
			if err := os.WriteFile(f.path, f.got, 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(f.path)
		if err != nil {
			t.Fatalf("%v (run with -update to create it)", err)
		}
		if !bytes.Equal(f.got, want) {
			t.Errorf("%s differs (run go test ./sim -run TestMetricsGolden -update to accept):\n%s", f.path, f.got)
		}
	}
	// The summary reads back to the same document.
	back, err := ReadSummary(bytes.NewReader(sum))
	if err != nil {
		t.Fatal(err)
	}
	var again bytes.Buffer
	if err := back.WriteJSON(&again); err != nil || !bytes.Equal(again.Bytes(), sum) {
		t.Errorf("summary does not round-trip through ReadSummary: %v", err)
	}
	if back.Labels["arch"] != "gossip" || back.Nodes.Added != 5 || len(back.PerNode) != 5 {
		t.Errorf("read back %+v", back.Nodes)
	}
	for _, bad := range []string{`{"schema":"other/1"}`, `{"schema":"overworld-sim/1"} x`, `[`} {
		if _, err := ReadSummary(strings.NewReader(bad)); err == nil {
			t.Errorf("ReadSummary accepted %q", bad)
		}
	}
}
