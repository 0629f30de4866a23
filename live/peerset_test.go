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

	"github.com/hashicorp/memberlist"

	"github.com/overworld/overworld/live/agones"
	"github.com/overworld/overworld/live/pki"
	"github.com/overworld/overworld/node"
	"github.com/overworld/overworld/wire"
)

// TestPeerSet: seeded random adds and removes against a reference map:
// after every step IDs, Admitted, Get and List agree with it, static
// peers never change, and every change (and only a change) reached the
// hook.
func TestPeerSet(t *testing.T) {
	for seed := range uint64(50) {
		rng := rand.New(rand.NewPCG(seed, 17))
		static := []PeerConfig{{ID: 2, Addr: "10.0.0.2:7100"}, {ID: 5, Addr: "10.0.0.5:7100", PlayerQUIC: "10.0.0.5:7102"}}
		s := NewPeerSet(1, static)
		ref := map[wire.NodeID]PeerInfo{2: {ID: 2, Addr: "10.0.0.2:7100", Static: true}, 5: {ID: 5, Addr: "10.0.0.5:7100", PlayerQUIC: "10.0.0.5:7102", Static: true}}
		var seen []PeerChange
		s.OnChange(func(c PeerChange) { seen = append(seen, c) })
		for step := range 300 {
			id := wire.NodeID(rng.IntN(9))
			want := len(seen)
			if rng.IntN(3) > 0 {
				p := PeerInfo{ID: id, Addr: fmt.Sprintf("10.0.0.%d:%d", id, 7100+rng.IntN(2))}
				changed, err := s.Add(p)
				old, had := ref[id]
				switch {
				case id == 0 || id == 1:
					if err == nil {
						t.Fatalf("seed %d step %d: added node %d", seed, step, id)
					}
				case had && old.Static:
					if changed || (err == nil) != (p.Addr == old.Addr) {
						t.Fatalf("seed %d step %d: static node %d: changed %v, err %v", seed, step, id, changed, err)
					}
				default:
					if err != nil || changed != (!had || old != p) {
						t.Fatalf("seed %d step %d: add %+v: changed %v, err %v (had %+v)", seed, step, p, changed, err, old)
					}
					if changed {
						ref[id] = p
						want++
					}
				}
			} else {
				removed := s.Remove(id)
				old, had := ref[id]
				if removed != (had && !old.Static) {
					t.Fatalf("seed %d step %d: remove %d: %v", seed, step, id, removed)
				}
				if removed {
					delete(ref, id)
					want++
				}
			}
			if len(seen) != want {
				t.Fatalf("seed %d step %d: %d changes seen, want %d", seed, step, len(seen), want)
			}
			var ids []wire.NodeID
			for id := range ref {
				ids = append(ids, id)
			}
			slices.Sort(ids)
			if !slices.Equal(s.IDs(), ids) {
				t.Fatalf("seed %d step %d: IDs %v, want %v", seed, step, s.IDs(), ids)
			}
			for id := range wire.NodeID(9) {
				p, ok := s.Get(id)
				if r, rok := ref[id]; ok != rok || p != r || s.Admitted(id) != rok {
					t.Fatalf("seed %d step %d: node %d: %+v %v, want %+v %v", seed, step, id, p, ok, r, rok)
				}
			}
			if l := s.List(); len(l) != len(ref) {
				t.Fatalf("seed %d step %d: list %v", seed, step, l)
			}
		}
	}
	s := NewPeerSet(1, nil)
	for _, p := range []PeerInfo{{ID: 3, Addr: "nohost"}, {ID: 3, Addr: "h:1", PlayerQUIC: "x"}, {ID: 3, Addr: "h:1", PlayerWS: "http://h/"},
		{ID: MaxNodeID + 1, Addr: "h:1"}} {
		if _, err := s.Add(p); err == nil {
			t.Errorf("%+v accepted", p)
		}
	}
}

// TestDaemonGossip: three daemons, node 1 the rendezvous and the seed;
// nodes 2 and 3 list only node 1 as a static peer, node 3 starting once
// 1 and 2 run. Gossip puts each in the others' peer sets with the right
// address, the mesh then connects 2 and 3, and when node 3 shuts down
// (after its drain) it leaves the others' sets.
func TestDaemonGossip(t *testing.T) {
	dir := t.TempDir()
	ca, err := pki.InitCA(filepath.Join(dir, "ca"), "", time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	keyFile := filepath.Join(dir, "gossip.key")
	if err := os.WriteFile(keyFile, []byte(strings.Repeat("ab", 32)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	g := newTestGame()
	start := func(id uint32, rendezvous, seed string) (*Daemon, context.CancelFunc, chan error) {
		data, _ := ca.Issue(wire.NodeID(id), time.Now(), 30*time.Minute)
		cert := filepath.Join(dir, fmt.Sprintf("node%d.pem", id))
		if err := pki.WriteNodeFile(cert, data); err != nil {
			t.Fatal(err)
		}
		cfg := DefaultDaemonConfig()
		cfg.ID, cfg.DataDir, cfg.FrameRate = id, filepath.Join(dir, fmt.Sprint("data", id)), 50
		cfg.Listen = ListenConfig{Node: "127.0.0.1:0"}
		cfg.TLS = TLSConfig{CACert: filepath.Join(dir, "ca", pki.CACertFile), NodeCert: cert}
		cfg.DrainTimeout = Duration{time.Second}
		cfg.Membership = MembershipConfig{Gossip: "127.0.0.1:0", KeyFile: keyFile, Seeds: []string{}}
		if rendezvous != "" {
			cfg.Peers = []PeerConfig{{ID: 1, Addr: rendezvous}}
			cfg.Membership.Seeds = []string{seed}
		}
		d, err := NewDaemon(cfg, Game{Registry: g.registry, Spawn: func(now time.Duration, n *node.Node) error {
			_, err := n.Spawn(now, g.walker, nil)
			return err
		}}, nil)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- d.Run(ctx) }()
		return d, cancel, done
	}
	eventually := func(what string, cond func() bool) {
		t.Helper()
		deadline := time.Now().Add(15 * time.Second)
		for !cond() {
			if time.Now().After(deadline) {
				t.Fatalf("%s: not within 15 s", what)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	d1, stop1, done1 := start(1, "", "")
	defer func() { stop1(); <-done1 }()
	eventually("node 1's gossip", func() bool { return d1.gossipAddr() != "" })
	seed := d1.gossipAddr()
	withSeed := func(id uint32) (*Daemon, context.CancelFunc, chan error) {
		return start(id, d1.NodeAddr().String(), seed)
	}
	d2, stop2, done2 := withSeed(2)
	defer func() { stop2(); <-done2 }()
	eventually("node 2 joins node 1", func() bool { return d1.Peers().Admitted(2) })
	d3, stop3, done3 := withSeed(3)
	eventually("node 3 in every peer set", func() bool {
		return d1.Peers().Admitted(3) && d2.Peers().Admitted(3) && d3.Peers().Admitted(2)
	})
	if p, _ := d2.Peers().Get(3); p.Addr != d3.NodeAddr().String() || p.Static {
		t.Errorf("node 2's record of node 3: %+v, want addr %s", p, d3.NodeAddr())
	}
	eventually("nodes 2 and 3 connected both ways", func() bool { return d2.mesh.Connected(3) && d3.mesh.Connected(2) })
	stop3()
	if err := <-done3; err != nil {
		t.Fatal(err)
	}
	eventually("node 3 gone from nodes 1 and 2", func() bool { return !d1.Peers().Admitted(3) && !d2.Peers().Admitted(3) })
	if !d2.Peers().Admitted(1) {
		t.Error("node 2 lost its static peer")
	}
}

// TestPlayerEndpoints: the player endpoints gossiped by an Agones game
// server come from its GameServer's address and named ports.
func TestPlayerEndpoints(t *testing.T) {
	for _, tc := range []struct {
		ep       agones.Endpoint
		quic, ws string
	}{
		{agones.Endpoint{Address: "203.0.113.7", Ports: map[string]int{"node": 7601, "player-quic": 7602, "player-ws": 7603}}, "203.0.113.7:7602", "ws://203.0.113.7:7603/"},
		{agones.Endpoint{Address: "2001:db8::7", Ports: map[string]int{"player-quic": 7602}}, "[2001:db8::7]:7602", ""},
		{agones.Endpoint{Ports: map[string]int{"player-quic": 7602}}, "", ""},
	} {
		if q, w := playerEndpoints(tc.ep); q != tc.quic || w != tc.ws {
			t.Errorf("%+v: %q %q, want %q %q", tc.ep, q, w, tc.quic, tc.ws)
		}
	}
}

// FuzzGossipMeta: whatever metadata a gossiped node carries, learning it
// never panics, never admits this node or a bad address, and never
// changes a static peer.
func FuzzGossipMeta(f *testing.F) {
	f.Add("node-3", []byte(`{"id":3,"addr":"10.0.0.3:7100","player_quic":"10.0.0.3:7102"}`))
	f.Add("node-2", []byte(`{"id":2,"addr":"10.9.9.9:1"}`))
	f.Add("node-1", []byte(`{"id":1,"addr":"10.0.0.1:7100"}`))
	f.Add("node-4", []byte(`{"id":4,"addr":"10.0.0.4:7100","leaving":true}`))
	f.Add("node-5", []byte(`{"id":5,"addr":"x","player_ws":"http://h/"}`))
	f.Fuzz(func(t *testing.T, name string, meta []byte) {
		s := NewPeerSet(1, []PeerConfig{{ID: 2, Addr: "10.0.0.2:7100"}})
		g := &gossip{self: 1, peers: s, log: slog.New(slog.DiscardHandler)}
		g.learn(&memberlist.Node{Name: name, Meta: meta})
		g.NotifyLeave(&memberlist.Node{Name: name, Meta: meta})
		if p, _ := s.Get(2); p.Addr != "10.0.0.2:7100" || !p.Static {
			t.Fatalf("static peer changed: %+v", p)
		}
		for _, p := range s.List() {
			if p.ID == 1 || p.check(1) != "" {
				t.Fatalf("admitted %+v from %q %q", p, name, meta)
			}
		}
	})
}

// TestGossipRuns: of the members that gossip one node ID (a node
// restarted before its earlier run was declared dead), the run with the
// highest incarnation sets the peer's record, from whatever address; an
// earlier run's record or leave changes nothing; a member whose name does
// not carry its ID and incarnation, and a static peer's gossiped address,
// are ignored.
func TestGossipRuns(t *testing.T) {
	peers := NewPeerSet(1, []PeerConfig{{ID: 2, Addr: "rendezvous:7100"}})
	g := &gossip{self: 1, peers: peers, log: slog.New(slog.DiscardHandler), runs: map[wire.NodeID]uint16{}}
	var changes []PeerChange
	peers.OnChange(func(c PeerChange) { changes = append(changes, c) })
	member := func(name string, m gossipMeta) *memberlist.Node {
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		return &memberlist.Node{Name: name, Meta: b}
	}
	steps := []struct {
		name string
		meta gossipMeta
		want string // node 7's address after the step ("" when not a peer)
	}{
		{"node-7.5", gossipMeta{ID: 7, Inc: 5, Addr: "10.0.0.7:7100"}, "10.0.0.7:7100"},
		{"node-7.6", gossipMeta{ID: 7, Inc: 6, Addr: "10.0.0.9:7100"}, "10.0.0.9:7100"},   // restarted on a new address
		{"node-7.5", gossipMeta{ID: 7, Inc: 5, Addr: "10.0.0.7:7100"}, "10.0.0.9:7100"},   // the earlier run, late
		{"node-7.5", gossipMeta{ID: 7, Inc: 5, Leaving: true}, "10.0.0.9:7100"},           // its leave
		{"node-7", gossipMeta{ID: 7, Inc: 7, Addr: "10.0.0.8:7100"}, "10.0.0.9:7100"},     // name without the incarnation
		{"node-2.3", gossipMeta{ID: 2, Inc: 3, Addr: "10.0.0.2:7100"}, "10.0.0.9:7100"},   // a static peer
		{"node-7.6", gossipMeta{ID: 7, Inc: 6, Addr: "10.0.0.9:7100", Leaving: true}, ""}, // the current run leaves
		{"node-7.8", gossipMeta{ID: 7, Inc: 8, Addr: "10.0.0.9:7100"}, "10.0.0.9:7100"},   // and comes back
	}
	for i, s := range steps {
		g.learn(member(s.name, s.meta))
		p, ok := peers.Get(7)
		if got := map[bool]string{true: p.Addr}[ok]; got != s.want {
			t.Fatalf("step %d (%s %+v): node 7 at %q, want %q", i, s.name, s.meta, got, s.want)
		}
	}
	// The current run dies (it stays a peer); a run with a lower
	// incarnation (a clock incarnation's cycle ended) may set the record.
	g.NotifyLeave(member("node-7.8", gossipMeta{ID: 7, Inc: 8, Addr: "10.0.0.9:7100"}))
	if p, ok := peers.Get(7); !ok || p.Addr != "10.0.0.9:7100" {
		t.Fatalf("node 7 after its run died: %+v %v", p, ok)
	}
	g.learn(member("node-7.2", gossipMeta{ID: 7, Inc: 2, Addr: "10.0.0.10:7100"}))
	if p, _ := peers.Get(7); p.Addr != "10.0.0.10:7100" || p.Inc != 2 {
		t.Fatalf("node 7's run 2 after run 8 died: %+v", p)
	}
	if p, _ := peers.Get(2); p.Addr != "rendezvous:7100" || !p.Static {
		t.Fatalf("the static peer's record changed: %+v", p)
	}
	if len(changes) != 5 {
		t.Fatalf("%d changes, want 5 (join, new run, leave, join, lower run): %+v", len(changes), changes)
	}
}
