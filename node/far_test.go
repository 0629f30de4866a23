package node

import (
	"strings"
	"testing"
	"time"

	"github.com/overworld/overworld/wire"
	"github.com/overworld/overworld/world"
)

// TestFarHoldersGetFewerUpdates: with Config.FarMargin, a holder that
// prefetches an object far beyond its primaries' interests gets its
// changes every FarEvery, one near them every frame, and the far one
// every frame again once it heads into the interest; without a far
// margin both get every frame. The replicas exist all along.
func TestFarHoldersGetFewerUpdates(t *testing.T) {
	for _, far := range []float64{0, 3} {
		g := newGame(100)
		c := newCluster(t, g, clusterOpts{nodes: 3, arch: "directory", latency: 20 * time.Millisecond, seed: 1,
			margin: 12, prefetch: 12, far: far})
		spawn := func(n *Node, x, vx, r float64) world.ObjectID {
			o, err := n.Spawn(c.now, g.walker, func(st *world.State) {
				st.SetFloat(wX, x)
				st.SetFloat(wY, 10)
				st.SetFloat(wVX, vx)
				st.SetFloat(wRange, r)
			})
			if err != nil {
				t.Fatal(err)
			}
			return o.State().ID()
		}
		// The seer's interest is x in [5, 15], its kept view [-7, 27];
		// near is 2 m beyond the interest, far 10 m, and both see the
		// seer (their own kept views reach it).
		seer := spawn(c.node(2), 10, 0, 5)
		near := spawn(c.node(3), 17, 0, 5)
		farID := spawn(c.node(3), 25, 0, 5)
		got := map[world.ObjectID]int{}
		c.sendHook = func(p wire.Packet) {
			if p.From != 3 || p.To != 2 {
				return
			}
			fr, err := wire.OpenFrames(p.Payload)
			if err != nil {
				t.Fatal(err)
			}
			var m wire.Updates
			for {
				typ, body, ok := fr.Next()
				if !ok {
					break
				}
				if typ != wire.TypeUpdates {
					continue
				}
				if err := m.Decode(body); err != nil {
					t.Fatal(err)
				}
				for _, u := range m.Entries {
					if u.Base != u.Version { // not a keepalive
						got[u.ID]++
					}
				}
			}
		}
		c.run(3 * time.Second)
		clear(got)
		c.run(7 * time.Second) // 40 frames
		for _, id := range []world.ObjectID{near, farID} {
			if _, ok := c.node(2).Object(id); !ok {
				t.Fatalf("far margin %v: node 2 does not hold %v", far, id)
			}
		}
		if _, ok := c.node(3).Object(seer); !ok {
			t.Fatalf("far margin %v: node 3 does not hold the seer", far)
		}
		wantFar := 40
		if far > 0 {
			wantFar = 10 // every 400 ms
		}
		if got[near] < 38 || got[farID] < wantFar-2 || got[farID] > wantFar+1 {
			t.Errorf("far margin %v: %d updates of the near walker, %d of the far one in 4 s; want 40 and %d", far, got[near], got[farID], wantFar)
		}
		if far == 0 {
			continue
		}
		// The far walker turns toward the seer at 5 m/s: its sweep over
		// the next 400 ms reaches the interest widened by 3 m (x = 18)
		// once it is at x = 20, a second later, and it gets every frame
		// from then on.
		w, _, _ := c.node(3).store.Lookup(farID)
		if err := c.node(3).store.Write(farID, func(st *world.State) { st.SetFloat(wVX, -5) }); err != nil || w == nil {
			t.Fatal(err)
		}
		c.run(8200 * time.Millisecond)
		clear(got)
		c.run(9200 * time.Millisecond)
		if got[farID] < 9 {
			t.Errorf("the walker heading into the interest: %d updates in 1 s, want every frame", got[farID])
		}
	}
}

// TestFarConfigRejected: a bad far margin or period is refused, naming
// the field.
func TestFarConfigRejected(t *testing.T) {
	g := newGame(100)
	c := newCluster(t, g, clusterOpts{nodes: 1, arch: "broadcast", seed: 1})
	base := c.node(1).Config()
	for _, tc := range []struct {
		mod  func(*Config)
		want string
	}{
		{func(c *Config) { c.FarMargin = world.Point{-1, 0} }, "FarMargin"},
		{func(c *Config) { c.FarMargin = world.Point{1, 0}; c.FarEvery = 2 * time.Second }, "FarEvery"},
		{func(c *Config) { c.FarEvery = -time.Millisecond }, "FarEvery"},
	} {
		cfg := base
		tc.mod(&cfg)
		if _, err := New(cfg); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("want an error naming %s, got %v", tc.want, err)
		}
	}
	cfg := base
	cfg.FarMargin = world.Point{5, 5}
	if got, err := cfg.Validate(); err != nil || got.FarEvery != 400*time.Millisecond {
		t.Errorf("default FarEvery: %v, %v", got.FarEvery, err)
	}
}
