package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/overworld/overworld/lab/harness"
	"github.com/overworld/overworld/live"
	"github.com/overworld/overworld/live/localcluster"
	"github.com/overworld/overworld/live/plane"
	"github.com/overworld/overworld/wire"
)

// placedSampler samples, every second, the modelled RTT of every bot in
// game to the node it plays on.
type placedSampler struct {
	mu      sync.Mutex
	samples []float64
	done    chan struct{}
}

func startPlacedSampler(ctx context.Context, f *localcluster.Fleet, rows [][]float64) *placedSampler {
	s := &placedSampler{done: make(chan struct{})}
	go func() {
		defer close(s.done)
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
			}
			var xs []float64
			for k, b := range f.States() {
				if b.Node >= 0 && k < len(rows) && b.Node < len(rows[k]) {
					xs = append(xs, rows[k][b.Node])
				}
			}
			s.mu.Lock()
			s.samples = append(s.samples, xs...)
			s.mu.Unlock()
		}
	}()
	return s
}

// result waits for the sampler to stop (its context ended) and returns
// the RTT's mean and 95th percentile.
func (s *placedSampler) result() harness.RTTStats {
	<-s.done
	s.mu.Lock()
	defer s.mu.Unlock()
	return harness.RTTOf(s.samples)
}

// fetchPlaneState reads the plane's GET /v1/state (nil if it fails).
func fetchPlaneState(url string) *plane.State {
	cl := &http.Client{Timeout: 2 * time.Second}
	resp, err := cl.Get(url + "/v1/state")
	if err != nil {
		return nil
	}
	defer resp.Body.Close()
	var st plane.State
	if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&st) != nil {
		return nil
	}
	return &st
}

// staticRTT is static nearest-with-room admission of the bots in order,
// seats per node: their mean and 95th percentile RTT.
func staticRTT(rows [][]float64, seats int) harness.RTTStats {
	if len(rows) == 0 {
		return harness.RTTOf(nil)
	}
	load := make([]int, len(rows[0]))
	var xs []float64
	for _, row := range rows {
		best := -1
		for j, v := range row {
			if load[j] < seats && (best < 0 || v < row[best]) {
				best = j
			}
		}
		if best < 0 {
			continue
		}
		load[best]++
		xs = append(xs, row[best])
	}
	return harness.RTTOf(xs)
}

// writeClusterPlacement prints the placement's figures beside the
// simulator's.
func writeClusterPlacement(w io.Writer, o clusterOpts, rows [][]float64, live harness.RTTStats, st *plane.State,
	nodeLine string, bots []localcluster.BotState, sim *harness.DemoReport) {
	p := func(format string, args ...any) { fmt.Fprintf(w, format, args...) }
	seats := int(math.Ceil(float64(o.perNode) * o.headroom))
	p("\nplacement: a control plane process (place/cma) places the bots, drawn from GeoNames cities as the simulator's\n")
	p("  players (their RTTs to the nodes modelled, as the simulator models them), %d seats per node\n", seats)
	p("%-44s %10s %10s\n", "player-to-node RTT, ms", "live", "simulator")
	var sr *harness.PlacementReport
	if sim != nil {
		sr = sim.Placement
	}
	row := func(name string, l, s float64) {
		if math.IsNaN(s) {
			p("%-44s %10.1f %10s\n", name, l, "n/a")
			return
		}
		p("%-44s %10.1f %10.1f   %+.0f%%\n", name, l, s, 100*(l/s-1))
	}
	simW := harness.RTTStats{Mean: math.NaN(), P95: math.NaN()}
	simS := simW
	if sr != nil {
		simW, simS = sr.World, sr.Static
	}
	row("mean, where the players played", live.Mean, simW.Mean)
	row("p95", live.P95, simW.P95)
	stat := staticRTT(rows, seats)
	row("static nearest-with-room admission: mean", stat.Mean, simS.Mean)
	handoffs, gaps := 0, []time.Duration{}
	for _, b := range bots {
		handoffs += b.Stats.Handoffs
		gaps = append(gaps, b.Stats.HandoffGaps...)
	}
	if st != nil {
		p("plane: %d joins, %d moves, %d handoffs asked (%d refused), %d players placed at the end; bots followed %d redirects",
			st.Stats.Joins, st.Stats.Moves, st.Stats.Handoffs, st.Stats.HandoffErrors, len(st.Players), handoffs)
	} else {
		p("plane: its state could not be read at the end; bots followed %d redirects", handoffs)
	}
	if len(gaps) > 0 {
		slices.Sort(gaps)
		p(", gap at the switch p50 %v, max %v", gaps[len(gaps)/2].Round(time.Millisecond), gaps[len(gaps)-1].Round(time.Millisecond))
	}
	p("\n")
	if st != nil {
		p("%s", nodeLine)
		p("regions (2 × 2, periodic policy): %d migrated live (%d objects moved)", st.Stats.RegionMigrations, st.Stats.ObjectsMoved)
		if sr != nil {
			p(", %d in the simulator (%d objects moved)", sr.RegionMigrations, sr.ObjectsMoved)
		}
		p("\n")
	}
	if sr != nil {
		p("simulator: %d moves, %d handoffs carried out\n", sr.Moves, sr.Handoffs)
	}
}

// clusterInstanceSeats is each node's instance seats in the cluster's
// plane.
const clusterInstanceSeats = 10

// openClusterInstances opens instances of 5 players through the plane's
// instance API (control.Instances) until one is refused, and returns the
// line that says where they run. The cluster runs no player host, so an
// instance that finds no seat cannot overflow.
func openClusterInstances(url string, nodes int) string {
	cl := &http.Client{Timeout: 2 * time.Second}
	on := map[uint32]int{}
	opened, refused := 0, ""
	for k := range nodes*clusterInstanceSeats/5 + 1 {
		req := plane.InstanceRequest{ID: fmt.Sprintf("inst%d", k), Box: [4]float64{-1e6 - float64(100*k), -1e6, -1e6 - float64(100*k) + 50, -1e6 + 50}}
		for i := range 5 {
			req.Players = append(req.Players, plane.InstancePlayerRequest{ID: fmt.Sprintf("inst%d.p%d", k, i)})
		}
		b, _ := json.Marshal(req)
		resp, err := cl.Post(url+"/v1/instances", "application/json", bytes.NewReader(b))
		if err != nil {
			return fmt.Sprintf("instances: the plane's instance API did not answer: %v", err)
		}
		var p plane.InstancePlacement
		ok := resp.StatusCode == http.StatusOK && json.NewDecoder(resp.Body).Decode(&p) == nil
		if !ok {
			refused = resp.Status
		}
		resp.Body.Close()
		if !ok {
			break
		}
		opened++
		on[p.Node]++
	}
	var where []string
	for _, n := range slices.Sorted(maps.Keys(on)) {
		where = append(where, fmt.Sprintf("node %d: %d", n, on[n]))
	}
	line := fmt.Sprintf("instances (control.Instances, %d seats per node, no player hosts): %d instances of 5 players opened through the plane's API (%s)",
		clusterInstanceSeats, opened, strings.Join(where, ", "))
	if refused != "" {
		line += fmt.Sprintf("; the next refused (%s): no seat, and none of its players runs a player host to overflow to", refused)
	}
	return line
}

// nodeRTTLine sums up the node RTTs of a cluster run: what the nodes
// measured (the plane's GET /v1/nodes) against the sites' table, and how
// often the plane refit the nodes' coordinates on them.
func nodeRTTLine(url string, c *localcluster.Cluster, refits int, emulate bool) string {
	if !emulate {
		return "node RTTs: the sites' table (node_rtt = sites: on one machine without latency emulation the nodes measure loopback)\n"
	}
	cl := &http.Client{Timeout: 2 * time.Second}
	resp, err := cl.Get(url + "/v1/nodes")
	if err != nil {
		return fmt.Sprintf("node RTTs: GET /v1/nodes: %v\n", err)
	}
	defer resp.Body.Close()
	var nodes []plane.NodeInfo
	if err := json.NewDecoder(resp.Body).Decode(&nodes); err != nil {
		return fmt.Sprintf("node RTTs: GET /v1/nodes: %v\n", err)
	}
	cities := map[wire.NodeID]string{}
	for i, id := range c.IDs() {
		cities[id] = c.Cities()[i]
	}
	delay, err := live.Delays(cities)
	if err != nil {
		return fmt.Sprintf("node RTTs: %v\n", err)
	}
	var diffs []float64
	for _, n := range nodes {
		for peer, ms := range n.MeasuredMs {
			if _, ok := cities[wire.NodeID(peer)]; !ok {
				continue
			}
			table := 2 * float64(delay(wire.NodeID(n.ID), wire.NodeID(peer))) / float64(time.Millisecond)
			diffs = append(diffs, ms-table)
		}
	}
	if len(diffs) == 0 {
		return "node RTTs: the nodes measured none (the plane keeps the sites' table)\n"
	}
	slices.Sort(diffs)
	mean := 0.0
	for _, d := range diffs {
		mean += d
	}
	mean /= float64(len(diffs))
	return fmt.Sprintf("node RTTs measured by the nodes (QUIC's least RTT plus the emulated delay both ways): %d directed pairs, "+
		"above the sites' table by %.1f ms on average (%.1f to %.1f); the plane refit the nodes' coordinates %d times (a pair more than 5 ms and 10%% off)\n",
		len(diffs), mean, diffs[0], diffs[len(diffs)-1], refits)
}
