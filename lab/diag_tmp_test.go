package lab

import (
	"fmt"
	"os"
	"sort"
	"strconv"
	"testing"
	"time"

	"github.com/overworld/overworld/arena"
	"github.com/overworld/overworld/internal/locate"
	"github.com/overworld/overworld/internal/wire"
	"github.com/overworld/overworld/node"
	osim "github.com/overworld/overworld/sim"
)

type tally struct{ pk, fr, by, hdr map[string]uint64 }

type tapCore struct {
	*node.Node
	t *tally
}

func (c tapCore) Drain(dst []wire.Packet) []wire.Packet {
	n0 := len(dst)
	dst = c.Node.Drain(dst)
	seen := map[wire.NodeID]bool{}
	for _, p := range dst[n0:] {
		if !seen[p.To] {
			seen[p.To] = true
			c.t.pk["merged"]++
		}
		c.t.pk[p.Class.String()]++
		c.t.hdr[p.Class.String()] += 28 + 1
		fs, err := wire.OpenFrames(p.Payload)
		if err != nil {
			continue
		}
		for {
			ty, body, ok := fs.Next()
			if !ok {
				break
			}
			name := ty.String()
			if ty == wire.TypeRingRoute {
				var r wire.RingRoute
				if r.Decode(body) == nil {
					name += "/" + strconv.Itoa(int(r.Kind))
					if len(r.Data) > 0 {
						name += "/" + wire.Type(r.Data[0]).String()
						if wire.Type(r.Data[0]) == wire.TypeLocate {
							if f2, err := wire.OpenFrames(append([]byte{1}, r.Data...)); err == nil {
								if t2, b2, ok := f2.Next(); ok && t2 == wire.TypeLocate {
									var l wire.Locate
									if l.Decode(b2) == nil {
										name += "/" + l.Kind.String()
									}
								}
							}
						}
					}
				}
			}
			if ty == wire.TypeLocate {
				var l wire.Locate
				if l.Decode(body) == nil {
					name += "/" + l.Kind.String()
				}
			}
			name = p.Class.String() + " " + name
			c.t.fr[name]++
			c.t.by[name] += uint64(len(body)) + 2
		}
	}
	return dst
}

func TestDiagTraffic(t *testing.T) {
	nodes, _ := strconv.Atoi(os.Getenv("DIAG_NODES"))
	if nodes == 0 {
		t.Skip()
	}
	cfg := DefaultWorldConfig()
	cfg.Arch = Arch(envOr("DIAG_ARCH", "colyseus"))
	cfg.Nodes, cfg.PlayersPerNode = nodes, 1
	if s := os.Getenv("DIAG_PPN"); s != "" {
		cfg.PlayersPerNode, _ = strconv.Atoi(s)
	}
	cfg.Map, _ = arena.ParseMapType(envOr("DIAG_MAP", "rect"))
	cfg.KeyMap = locate.KeyMapHilbert
	if s := os.Getenv("DIAG_KEYMAP"); s != "" {
		km, err := s, error(nil)
		if err != nil {
			t.Fatal(err)
		}
		cfg.KeyMap = km
	}
	cfg.Duration = 20 * time.Second
	if s := os.Getenv("DIAG_DUR"); s != "" {
		cfg.Duration, _ = time.ParseDuration(s)
	}
	if s := os.Getenv("DIAG_PRED"); s != "" {
		cfg.PredTime, _ = time.ParseDuration(s)
	}
	cfg.Workers = 1
	if s := os.Getenv("DIAG_SEED"); s != "" {
		cfg.Seed, _ = strconv.ParseUint(s, 10, 64)
	}
	if s := os.Getenv("DIAG_PREFETCH"); s != "" {
		cfg.Prefetch, _ = strconv.ParseFloat(s, 64)
	}
	tl := &tally{map[string]uint64{}, map[string]uint64{}, map[string]uint64{}, map[string]uint64{}}
	w, err := newWorld(cfg, func(n *node.Node) osim.Core { return tapCore{n, tl} })
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Run(nil); err != nil {
		t.Fatal(err)
	}
	r := w.Result()
	secs := cfg.Duration.Seconds() * float64(nodes)
	m := r.Summary.Views.Missing
	fmt.Printf("node kB/s %.2f (out %.2f) missing %.4f %.4f %.4f\n", r.Players.Mean.Total/1000, r.Players.Mean.Out/1000, m[0].Fraction, m[1].Fraction, m[2].Fraction)
	rr := w.RingResult().Stats
	fmt.Printf("per node/s: pubsRouted %.2f subsSent %.2f rangesRouted %.2f pubsStored %.2f subsStored %.2f matchesSent %.2f found %.2f hops %.2f\n",
		float64(rr.PubsRouted)/secs, float64(rr.SubsSent)/secs, float64(rr.RangesRouted)/secs, float64(rr.PubsStored)/secs, float64(rr.SubsStored)/secs, float64(rr.MatchesSent)/secs, float64(rr.Found)/secs, w.RingResult().Hops)
	fmt.Printf("latency mean %v p50 %v p95 %v; routing mean %v p50 %v; matching mean %v p50 %v\n", rr.Latency.Mean(), rr.Latency.Quantile(0.5), rr.Latency.Quantile(0.95), rr.Routing.Mean(), rr.Routing.Quantile(0.5), rr.Matching.Mean(), rr.Matching.Quantile(0.5))
	var keys []string
	for k := range tl.fr {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Printf("%-50s frames/s/node %7.2f  B/frame %6.1f  out B/s/node %8.1f\n", k, float64(tl.fr[k])/secs, float64(tl.by[k])/float64(tl.fr[k]), float64(tl.by[k])/secs)
	}
	for k, v := range tl.pk {
		fmt.Printf("class %-12s packets/s/node %7.2f hdr B/s %8.1f\n", k, float64(v)/secs, float64(tl.hdr[k])/secs)
	}
}

func envOr(k, d string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return d
}
