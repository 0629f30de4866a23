package harness

import (
	"flag"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/overworld/overworld/arena"
	"github.com/overworld/overworld/discovery"
	"github.com/overworld/overworld/geo"
	"github.com/overworld/overworld/lab/cities"
	"github.com/overworld/overworld/node"
	"github.com/overworld/overworld/sim"
	"github.com/overworld/overworld/wire"
	"github.com/overworld/overworld/world"
)

var (
	breakdownNodes = flag.Int("breakdown", 0, "TestUpdateBytesBreakdown: run the colyseus world of this many nodes (one bot each, sqr map, --net wan, 60 s) and print where its update-class bytes go")
	breakdownArch  = flag.String("breakdown-arch", "colyseus", "TestUpdateBytesBreakdown with -breakdown: the architecture to run")
	breakdownSeed  = flag.Uint64("breakdown-seed", 1, "TestUpdateBytesBreakdown with -breakdown: the seed")
)

// tally counts what the cores send, by frame type, as the simulator
// accounts it: header and version byte under the packet's class.
type tally struct {
	*node.Node
	t *breakdown
}

type breakdown struct {
	header          uint64
	frames, bytes   [256]uint64 // by frame type: frames, bytes (type, length and body)
	headers         [wire.NumClasses]uint64
	packets         [wire.NumClasses]uint64
	classBytes      [wire.NumClasses]uint64
	entries, empty  uint64 // update entries; update-class packets carrying none
	full, keepalive uint64
	data            uint64    // the entries' state data (world.AppendDelta)
	perPacket       [4]uint64 // update-class packets by entries: 0, 1, 2, 3 or more
	versions        map[versionKey]struct{}
	// ring-route frames by kind (data: publications; range: subscriptions
	// and their walks) and by hops taken (1, 2, 3 or more), and their
	// bytes by kind
	routes     [4][3]uint64
	routeBytes [4]uint64
}

// versionKey names one state of one object: the entries that carry it
// went to that many holders.
type versionKey struct {
	id world.ObjectID
	v  uint64
}

func (c *tally) Drain(dst []wire.Packet) []wire.Packet {
	start := len(dst)
	dst = c.Node.Drain(dst)
	for i := start; i < len(dst); i++ {
		c.t.add(&dst[i])
	}
	return dst
}

func (b *breakdown) add(p *wire.Packet) {
	sizes := p.ClassSizes(b.header)
	for c, n := range sizes {
		b.classBytes[c] += n
	}
	b.packets[p.Class]++
	b.headers[p.Class] += b.header + 1
	fr, err := wire.OpenFrames(p.Payload)
	if err != nil {
		panic(err)
	}
	entries := 0
	var m wire.Updates
	for {
		t, body, ok := fr.Next()
		if !ok {
			break
		}
		b.frames[t]++
		b.bytes[t] += uint64(1 + uvarintLen(len(body)) + len(body))
		if t == wire.TypeRingRoute {
			var r wire.RingRoute
			if err := r.Decode(body); err != nil {
				panic(err)
			}
			k := min(int(r.Kind), 3)
			b.routes[k][min(max(int(r.Hops), 1), 3)-1]++
			b.routeBytes[k] += uint64(1 + uvarintLen(len(body)) + len(body))
		}
		if t == wire.TypeUpdates {
			if err := m.Decode(body); err != nil {
				panic(err)
			}
			entries += len(m.Entries)
			for _, u := range m.Entries {
				b.data += uint64(len(u.Data))
				if b.versions != nil {
					b.versions[versionKey{u.ID, u.Version}] = struct{}{}
				}
				switch u.Base {
				case 0:
					b.full++
				case u.Version:
					b.keepalive++
				}
			}
		}
	}
	if err := fr.Err(); err != nil {
		panic(err)
	}
	b.entries += uint64(entries)
	if p.Class == wire.ClassUpdate {
		b.perPacket[min(entries, 3)]++
		if entries == 0 {
			b.empty++
		}
	}
}

func uvarintLen(n int) int {
	l := 1
	for ; n >= 0x80; n >>= 7 {
		l++
	}
	return l
}

// TestUpdateBytesBreakdown splits the update class's bytes by frame type
// on a small colyseus world under the wan profile and checks that the
// parts add up to the simulator's own accounting of the class. With
// -breakdown N it runs the headline world of N nodes and prints the
// breakdown (BENCHMARKS.md).
func TestUpdateBytesBreakdown(t *testing.T) {
	cfg := DefaultDemoConfig()
	cfg.Arch, cfg.Map, cfg.Nodes, cfg.PlayersPerNode, cfg.Duration = discovery.Colyseus, arena.Sqr, 12, 1, 8*time.Second
	f := discovery.DefaultFetching(discovery.Colyseus)
	cfg.Prefetch, cfg.PushMutual, cfg.FetchAhead = f.Prefetch, f.PushMutual, f.FetchAhead
	cfg.Workers = 1 // one tally for every core: no parallel windows
	if *breakdownNodes > 0 {
		cfg.Nodes, cfg.Duration, cfg.Seed = *breakdownNodes, time.Minute, *breakdownSeed
		a, err := discovery.ParseArch(*breakdownArch)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Arch = a
		f := discovery.DefaultFetching(a)
		cfg.Prefetch, cfg.PushMutual, cfg.FetchAhead = f.Prefetch, f.PushMutual, f.FetchAhead
	}
	wan, err := geo.NetworkProfile(geo.NetWAN)
	if err != nil {
		t.Fatal(err)
	}
	cfg.SetNet(wan)
	cfg.Data, cfg.Cities = SitesWonder, cities.ForNodes(cfg.Nodes)
	cfg.Placement.Mode = DemoPlacement(cfg)
	b := &breakdown{}
	if *breakdownNodes > 0 {
		b.versions = map[versionKey]struct{}{}
	}
	w, err := newArenaWorld(cfg, func(n *node.Node) sim.Core { return &tally{Node: n, t: b} })
	if err != nil {
		t.Fatal(err)
	}
	b.header = uint64(w.Sim().Config().HeaderBytes)
	if err := w.Run(nil); err != nil {
		t.Fatal(err)
	}
	tot := w.Sim().Totals()
	up := wire.ClassUpdate
	// The parts of the class: headers of the packets it heads, and its
	// frames wherever they ride.
	parts := b.headers[up]
	for ty := range b.frames {
		if wire.Type(ty).Valid() && wire.Type(ty).Class() == up {
			parts += b.bytes[ty]
		}
	}
	if b.classBytes[up] != tot.ByClass[up].Bytes || parts != tot.ByClass[up].Bytes {
		t.Fatalf("update class: %d bytes by ClassSizes, %d by frames and headers, %d by the simulator", b.classBytes[up], parts, tot.ByClass[up].Bytes)
	}
	if b.entries == 0 || b.packets[up] == 0 {
		t.Fatal("no updates sent")
	}
	if *breakdownNodes == 0 {
		return
	}
	all := float64(parts)
	var sb strings.Builder
	fmt.Fprintf(&sb, "update class, %d nodes, 60 s: %d bytes, %d update entries (%d full states, %d keepalives), %.1f bytes per entry\n",
		cfg.Nodes, parts, b.entries, b.full, b.keepalive, all/float64(b.entries))
	row := func(name string, n uint64) {
		fmt.Fprintf(&sb, "  %-44s %12d %6.1f%% %6.1f per entry\n", name, n, 100*float64(n)/all, float64(n)/float64(b.entries))
	}
	row(fmt.Sprintf("headers of %d packets (%d with no entry)", b.packets[up], b.empty), b.headers[up])
	fmt.Fprintf(&sb, "  packets by update entries: %d none, %d one, %d two, %d three or more\n", b.perPacket[0], b.perPacket[1], b.perPacket[2], b.perPacket[3])
	var types []wire.Type
	for ty := range b.frames {
		if wire.Type(ty).Valid() && wire.Type(ty).Class() == up && b.frames[ty] > 0 {
			types = append(types, wire.Type(ty))
		}
	}
	slices.SortFunc(types, func(x, y wire.Type) int { return int(b.bytes[y]) - int(b.bytes[x]) })
	for _, ty := range types {
		row(fmt.Sprintf("%s frames (%d)", ty, b.frames[ty]), b.bytes[ty])
		if ty == wire.TypeUpdates {
			row("  of which the entries' state data", b.data)
		}
	}
	fmt.Fprintf(&sb, "%d distinct object states sent, each to %.2f holders on average\n", len(b.versions), float64(b.entries)/float64(len(b.versions)))
	secs, n := cfg.Duration.Seconds(), float64(cfg.Nodes)
	fmt.Fprintf(&sb, "every class, kB/s per node sent (the table's in + out is twice this):\n")
	for c := range wire.NumClasses {
		cl := wire.Class(c)
		if tot.ByClass[cl].Bytes == 0 {
			continue
		}
		fmt.Fprintf(&sb, "  %-12s %7.2f kB/s: %6.1f packets/s it heads, headers %.2f kB/s\n", cl, float64(tot.ByClass[cl].Bytes)/secs/n/1e3,
			float64(b.packets[cl])/secs/n, float64(b.headers[cl])/secs/n/1e3)
		var ts []wire.Type
		for ty := range b.frames {
			if wire.Type(ty).Valid() && wire.Type(ty).Class() == cl && b.frames[ty] > 0 {
				ts = append(ts, wire.Type(ty))
			}
		}
		slices.SortFunc(ts, func(x, y wire.Type) int { return int(b.bytes[y]) - int(b.bytes[x]) })
		for _, ty := range ts {
			fmt.Fprintf(&sb, "    %-14s %7.2f kB/s, %7.1f frames/s\n", ty, float64(b.bytes[ty])/secs/n/1e3, float64(b.frames[ty])/secs/n)
		}
	}
	for k, name := range []string{"data (publications)", "range (subscriptions)", "join", "lookup"} {
		r := b.routes[k]
		if r[0]+r[1]+r[2] == 0 {
			continue
		}
		fmt.Fprintf(&sb, "ring-route %-22s %7.2f kB/s, %6.1f frames/s: %.1f at hop 1, %.1f at hop 2, %.1f at hop 3 or later\n", name,
			float64(b.routeBytes[k])/secs/n/1e3, float64(r[0]+r[1]+r[2])/secs/n, float64(r[0])/secs/n, float64(r[1])/secs/n, float64(r[2])/secs/n)
	}
	t.Log("\n" + sb.String())
}
