package live

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/overworld/overworld/discovery"
	"github.com/overworld/overworld/internal/locate"
	"github.com/overworld/overworld/live/pki"
	"github.com/overworld/overworld/node"
	"github.com/overworld/overworld/wire"
	"github.com/overworld/overworld/world"
)

// probeHook runs functions on a driver's goroutine, between frames: a
// test reads a running node and its discovery through it without racing
// the driver.
type probeHook struct{ req chan func(*node.Node) }

func (p *probeHook) Frame(_ time.Duration, n *node.Node) {
	for {
		select {
		case f := <-p.req:
			f(n)
		default:
			return
		}
	}
}

// gossipNode is one daemon of a gossip test cluster.
type gossipNode struct {
	d     *Daemon
	probe *probeHook
	stop  context.CancelFunc
	done  chan error
	data  string
}

// read runs f on n's driver goroutine and waits for it (up to 5 s).
func (g *gossipNode) read(t *testing.T, f func(n *node.Node)) {
	t.Helper()
	done := make(chan struct{})
	select {
	case g.probe.req <- func(n *node.Node) { f(n); close(done) }:
	case <-time.After(5 * time.Second):
		t.Fatal("frames are not running")
	}
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("frames are not running")
	}
}

// newGossipCluster returns a directory with a cluster CA and a gossip
// key for startGossipNode.
func newGossipCluster(t *testing.T) (string, *pki.CA) {
	t.Helper()
	dir := t.TempDir()
	ca, err := pki.InitCA(filepath.Join(dir, "ca"), "", time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "gossip.key"), []byte(strings.Repeat("cd", 32)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir, ca
}

// startGossipNode starts daemon id of a gossip cluster (newGossipCluster)
// under arch with two walkers, no static peers, and seed (empty: none) to
// join through.
func startGossipNode(t *testing.T, dir string, ca *pki.CA, g *testGame, arch string, id uint32, seed string) *gossipNode {
	t.Helper()
	data, _ := ca.Issue(wire.NodeID(id), time.Now(), 30*time.Minute)
	cert := filepath.Join(dir, fmt.Sprintf("node%d.pem", id))
	if err := pki.WriteNodeFile(cert, data); err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(dir, "gossip.key")
	cfg := DefaultDaemonConfig()
	cfg.ID, cfg.DataDir, cfg.FrameRate = id, filepath.Join(dir, fmt.Sprint("data", id)), 50
	cfg.Listen = ListenConfig{Node: "127.0.0.1:0"}
	cfg.TLS = TLSConfig{CACert: filepath.Join(dir, "ca", pki.CACertFile), NodeCert: cert}
	cfg.DrainTimeout = Duration{5 * time.Second}
	cfg.Discovery.Arch = arch
	cfg.Membership = MembershipConfig{Gossip: "127.0.0.1:0", KeyFile: keyFile}
	if seed != "" {
		cfg.Membership.Seeds = []string{seed}
	}
	space := discovery.Space{Dims: 2, Bounds: world.Box{Min: world.Point{-100, -100}, Max: world.Point{100, 100}}, Interest: 50, Speed: 5, Players: 8}
	d, err := NewDaemon(cfg, Game{Registry: g.registry, Discovery: space, Spawn: func(now time.Duration, n *node.Node) error {
		for range 2 {
			if _, err := n.Spawn(now, g.walker, nil); err != nil {
				return err
			}
		}
		return nil
	}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	gn := &gossipNode{d: d, probe: &probeHook{req: make(chan func(*node.Node), 4)}, done: make(chan error, 1), data: cfg.DataDir}
	d.AddHook(gn.probe)
	ctx, cancel := context.WithCancel(context.Background())
	gn.stop = cancel
	go func() { gn.done <- d.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-gn.done; err != nil {
			t.Errorf("node %d: %v", id, err)
		}
	})
	return gn
}

// eventually polls cond every 20 ms until it holds, failing the test
// after 20 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 20 s", what)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestGossipArchs: under broadcast and colyseus, node 1 runs alone and
// nodes 2 and 3 join it by gossip alone (no static peers). Each new node
// becomes a broadcast target of the others, or a member of the running
// colyseus ring (nodes 2 and 3 join it, node 1 bootstrapped it alone),
// and every node is ready;
// every node then holds a replica of every other node's walkers. When
// node 3 shuts down, its drain migrates every walker to nodes 1 and 2
// (none lost), and it is gone from their targets or ring.
func TestGossipArchs(t *testing.T) {
	for _, arch := range []string{"broadcast", "colyseus"} {
		t.Run(arch, func(t *testing.T) {
			dir, ca := newGossipCluster(t)
			g := newTestGame()
			n1 := startGossipNode(t, dir, ca, g, arch, 1, "")
			eventually(t, "node 1's gossip", func() bool { return n1.d.gossipAddr() != "" })
			seed := n1.d.gossipAddr()
			n2 := startGossipNode(t, dir, ca, g, arch, 2, seed)
			n3 := startGossipNode(t, dir, ca, g, arch, 3, seed)
			nodes := []*gossipNode{n1, n2, n3}

			// members returns node i's broadcast targets or ring neighbours,
			// and whether it is a ring member (always under broadcast).
			members := func(i int) (ids []wire.NodeID, member bool) {
				nodes[i].read(t, func(*node.Node) {
					disc := nodes[i].d.follow.disc
					if m, ok := disc.(*locate.Mercury); ok {
						member = m.Ring().Member()
						if p, ok := m.Ring().Pred(); ok {
							ids = append(ids, p.ID)
						}
						for _, s := range m.Ring().Succs(nil) {
							ids = append(ids, s.ID)
						}
						return
					}
					ids, member = discovery.Members(disc, nil), true
				})
				slices.Sort(ids)
				return slices.Compact(ids), member
			}
			eventually(t, "every node a target or ring neighbour of every other", func() bool {
				for i := range nodes {
					ids, member := members(i)
					if ok, _ := nodes[i].d.Ready(); !ok {
						return false
					}
					for j := range nodes {
						if i != j && !slices.Contains(ids, wire.NodeID(j+1)) || !member {
							return false
						}
					}
				}
				return true
			})
			// walkers returns node i's primaries and replicas.
			walkers := func(i int) (prims, reps []world.ObjectID) {
				nodes[i].read(t, func(n *node.Node) {
					for _, o := range n.Objects(nil) {
						if o.Primary {
							prims = append(prims, o.ID)
						} else {
							reps = append(reps, o.ID)
						}
					}
				})
				return prims, reps
			}
			own := make([][]world.ObjectID, len(nodes))
			for i := range nodes {
				if own[i], _ = walkers(i); len(own[i]) != 2 {
					t.Fatalf("node %d has %d primaries, want 2", i+1, len(own[i]))
				}
			}
			eventually(t, "every node holds a replica of every other's walkers", func() bool {
				for i := range nodes {
					_, reps := walkers(i)
					for j := range nodes {
						for _, id := range own[j] {
							if i != j && !slices.Contains(reps, id) {
								return false
							}
						}
					}
				}
				return true
			})

			n3.stop()
			if err := <-n3.done; err != nil {
				t.Fatal(err)
			}
			n3.done <- nil // for the cleanup
			b, err := os.ReadFile(filepath.Join(n3.data, "last-run.json"))
			if err != nil {
				t.Fatal(err)
			}
			var sum struct {
				Migrated int `json:"primaries_migrated"`
				Lost     int `json:"primaries_lost"`
			}
			if err := json.Unmarshal(b, &sum); err != nil || sum.Migrated != 2 || sum.Lost != 0 {
				t.Fatalf("node 3's drain: %+v (%v), want 2 migrated, none lost\n%s", sum, err, b)
			}
			nodes = nodes[:2]
			eventually(t, "node 3 gone from nodes 1 and 2, its walkers primaries there", func() bool {
				var prims []world.ObjectID
				for i := range nodes {
					if ids, member := members(i); slices.Contains(ids, 3) || !member {
						return false
					}
					p, _ := walkers(i)
					prims = append(prims, p...)
				}
				for _, id := range own[2] {
					if !slices.Contains(prims, id) {
						return false
					}
				}
				return len(prims) == 6
			})
		})
	}
}

// TestPeerFollower: a broadcast node's targets follow its peer set, less
// the peers its failure detector declared dead that the mesh does not
// reach, from the next frame; a
// colyseus node in no ring joins it through a live peer, once until the
// join fails, and not after it left.
func TestPeerFollower(t *testing.T) {
	g := newTestGame()
	peers := NewPeerSet(1, []PeerConfig{{ID: 2, Addr: "10.0.0.2:7100"}})
	n := newTestNode(t, g, 1, []wire.NodeID{1, 2}, 1)
	conn := map[wire.NodeID]bool{}
	f := &peerFollower{self: 1, peers: peers, disc: n.Config().Discovery, log: slog.New(slog.DiscardHandler),
		connected: func(id wire.NodeID) bool { return conn[id] }}
	now := time.Duration(0)
	frame := func() {
		now += 20 * time.Millisecond
		n.Tick(now)
		f.Frame(now, n)
	}
	want := func(ids ...wire.NodeID) {
		t.Helper()
		if got := discovery.Members(f.disc, nil); !slices.Equal(got, ids) {
			t.Fatalf("targets %v, want %v", got, ids)
		}
	}
	frame()
	want(2)
	if _, err := peers.Add(PeerInfo{ID: 4, Inc: 1, Addr: "10.0.0.4:7100"}); err != nil {
		t.Fatal(err)
	}
	want(2)
	frame()
	want(2, 4)
	conn[4] = true
	n.DeclareDead(now, 4)
	frame()
	want(2, 4) // declared dead, still connected
	conn[4] = false
	frame()
	want(2)
	conn[4] = true // reached again
	frame()
	want(2, 4)
	peers.Remove(4)
	frame()
	want(2)

	// Colyseus: a joiner in no ring.
	space := discovery.Space{Dims: 2, Bounds: world.Box{Min: world.Point{-100, -100}, Max: world.Point{100, 100}}, Interest: 50, Speed: 5, Players: 8}
	disc, err := discovery.New(discovery.Config{Arch: discovery.Colyseus, Self: 5, Space: space, Joins: true})
	if err != nil {
		t.Fatal(err)
	}
	cn, err := node.New(node.Config{ID: 5, Registry: g.registry, Discovery: disc, Rand: rand.New(rand.NewPCG(1, 5))})
	if err != nil {
		t.Fatal(err)
	}
	cpeers := NewPeerSet(5, nil)
	cf := &peerFollower{self: 5, peers: cpeers, disc: disc, log: slog.New(slog.DiscardHandler)}
	state := func() string {
		m, j, _ := discovery.RingState(disc)
		return map[[2]bool]string{{false, false}: "out", {true, false}: "member", {false, true}: "joining"}[[2]bool{m, j}]
	}
	now = 0
	step := func() {
		now += 20 * time.Millisecond
		cn.Tick(now)
		cf.Frame(now, cn)
	}
	step()
	if s := state(); s != "out" {
		t.Fatalf("a joiner without peers: %s, want out", s)
	}
	if _, err := cpeers.Add(PeerInfo{ID: 3, Inc: 1, Addr: "10.0.0.3:7100"}); err != nil {
		t.Fatal(err)
	}
	step()
	if s := state(); s != "joining" {
		t.Fatalf("a joiner with a peer: %s, want joining", s)
	}
	if cf.inRing.Load() {
		t.Fatal("a joining node counts as in the ring (Ready)")
	}
	now += 20 * time.Millisecond
	cn.Tick(now) // the ring's frames reach the outbox
	var sent []wire.NodeID
	for _, p := range cn.Drain(nil) {
		sent = append(sent, p.To)
	}
	if !slices.Contains(sent, 3) {
		t.Fatalf("the join went to %v, want node 3", sent)
	}
	if err := discovery.LeaveRing(disc, now); err == nil {
		t.Fatal("a node that is not a member left the ring")
	}
	if err := discovery.JoinRing(disc, now, 3); err == nil {
		t.Fatal("a joining node joined again")
	}
	if err := discovery.JoinRing(f.disc, now, 2); err == nil {
		t.Fatal("a broadcast node joined a ring")
	}
}
