package locate

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/overworld/overworld/wire"
	"github.com/overworld/overworld/world"
)

// TestDirectoryFailover kills the rendezvous of a cluster of directory
// locators (deliveries to and from it stop; each other node's failure
// detector declares it dead at its own time, up to 1.5 s later), sometimes
// the standby that took over too, and sometimes restarts the first
// rendezvous (declared alive again at each node's own time). Objects move
// and idle; views stay put. After every frame, outside the windows from a
// kill to one publication period after the last node declared the death:
//
//   - every node that can see an object (its view holds the location of
//     the object's latest publication sent at least 300 ms before, the
//     time a publication, a subscription and a match take on the way)
//     holds a live finding of it heard since the last kill;
//   - every node watches the candidates up to the one it depends on.
//
// One publication period after the last report of a death, the new
// rendezvous holds every live object's publication and every live view.
// Some time after the restart, every node depends on the first rendezvous
// again and sends to it alone. The fail-back has no window: the invariant
// holds throughout.
func TestDirectoryFailover(t *testing.T) {
	seeds := 300
	if testing.Short() {
		seeds = 50
	}
	for seed := range uint64(seeds) {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			defer func() {
				if t.Failed() {
					t.Logf("seed %d", seed)
				}
			}()
			runFailover(t, seed)
		})
	}
}

func runFailover(t *testing.T, seed uint64) {
	r := rand.New(rand.NewPCG(seed, 0xfa11))
	n := 5 + r.IntN(4)
	infra := wire.NodeID(n) // the rendezvous, with no players (as in the lab)
	perm := r.Perm(n - 1)
	s1, s2 := wire.NodeID(perm[0]+1), wire.NodeID(perm[1]+1)
	cfg := DefaultDirectoryConfig(infra)
	cfg.Standby = []wire.NodeID{s1, s2}
	cfg.FailBack = 2 * time.Second
	cfg.Reckon, cfg.BatchMatches = r.IntN(2) == 0, r.IntN(2) == 0
	if r.IntN(2) == 0 {
		cfg.IdleEvery, cfg.IdleMove = 5*time.Second, 0.01
	}
	c := newDirNet(t, n, cfg)
	c.delay = func(wire.NodeID, wire.NodeID) time.Duration { return time.Duration(1+r.IntN(2)) * c.frame }
	const lag = 300 * time.Millisecond // a publication, a subscription and a match on the way
	resume := cfg.PublishPeriod

	// Objects: a few per player node, some still; views: a box per node
	// (not every node).
	type mover struct{ vel world.Point }
	moves := map[world.ObjectID]mover{}
	for i := range n - 1 {
		for k := range 2 + r.IntN(3) {
			id := world.MakeObjectID(uint32(i+1), uint32(k+1))
			p := Primary{ID: id, Loc: world.Point{r.Float64() * 100, r.Float64() * 100}, New: true}
			if r.IntN(3) > 0 {
				p.Vel, p.HasVel = world.Point{r.Float64()*4 - 2, r.Float64()*4 - 2}, true
			}
			moves[id] = mover{p.Vel}
			c.prims[i] = append(c.prims[i], p)
		}
		if r.IntN(5) > 0 {
			x, y := r.Float64()*60, r.Float64()*60
			c.views[i] = []world.Box{{Min: world.Point{x, y}, Max: world.Point{x + 40 + r.Float64()*20, y + 40 + r.Float64()*20}}}
		}
	}
	// The latest publication of each object, as it left.
	type pubAt struct {
		loc world.Point
		at  time.Duration
	}
	pubs := map[world.ObjectID][]pubAt{}
	c.sent = func(p wire.Packet, now time.Duration) {
		fr, _ := wire.OpenFrames(p.Payload)
		for {
			typ, body, ok := fr.Next()
			if !ok {
				return
			}
			var m wire.Pubs
			if typ != wire.TypePublish {
				continue
			}
			if err := m.Decode(body); err != nil {
				t.Fatal(err)
			}
			for _, q := range m.Pubs {
				if l := pubs[q.ID]; len(l) == 0 || l[len(l)-1].at != now {
					pubs[q.ID] = append(l, pubAt{q.Loc, now})
				}
			}
		}
	}
	// latest returns the location of obj's latest publication sent by
	// before.
	latest := func(obj world.ObjectID, before time.Duration) (world.Point, bool) {
		l := pubs[obj]
		for k := len(l) - 1; k >= 0; k-- {
			if l[k].at <= before {
				return l[k].loc, true
			}
		}
		return world.Point{}, false
	}

	// The script of failures: frame times of kills, reports and the
	// restart.
	frames := func(d time.Duration) time.Duration { return d.Truncate(c.frame) }
	type event struct {
		at   time.Duration
		what string
		node wire.NodeID // killed or restarted
		by   wire.NodeID // reporting node
	}
	var events []event
	var windows [][2]time.Duration // [kill, last report + resume)
	var rebuilt []struct {
		at  time.Duration
		rdv wire.NodeID
	}
	kill := func(at time.Duration, id wire.NodeID, next wire.NodeID) {
		events = append(events, event{at: at, what: "kill", node: id})
		last := at
		for i := range n {
			if by := wire.NodeID(i + 1); by != id {
				rep := at + frames(time.Duration(200+r.IntN(1300))*time.Millisecond)
				events = append(events, event{at: rep, what: "dead", node: id, by: by})
				last = max(last, rep)
			}
		}
		windows = append(windows, [2]time.Duration{at, last + resume})
		rebuilt = append(rebuilt, struct {
			at  time.Duration
			rdv wire.NodeID
		}{last + resume, next})
	}
	kill(3*time.Second, infra, s1)
	killS1 := r.IntN(2) == 0
	if killS1 {
		kill(7*time.Second, s1, s2)
	}
	restart := r.IntN(3) > 0
	settled := time.Duration(1<<63 - 1) // when every node is back on infra
	if restart {
		at := 10 * time.Second
		events = append(events, event{at: at, what: "restart", node: infra})
		last := at
		for i := range n - 1 {
			rep := at + frames(time.Duration(100+r.IntN(900))*time.Millisecond)
			events = append(events, event{at: rep, what: "alive", node: infra, by: wire.NodeID(i + 1)})
			last = max(last, rep)
		}
		settled = last + cfg.FailBack + c.frame
	}
	slices.SortStableFunc(events, func(a, b event) int { return int(a.at - b.at) })
	dead := map[wire.NodeID]bool{}
	inWindow := func(now time.Duration) bool {
		for _, w := range windows {
			if now >= w[0] && now < w[1] {
				return true
			}
		}
		return false
	}

	end := 16 * time.Second
	checked := 0
	for c.now < end {
		// Events at this frame, before it runs.
		next := c.now + c.frame
		for len(events) > 0 && events[0].at <= next {
			e := events[0]
			events = events[1:]
			switch e.what {
			case "kill":
				c.kill(e.node)
				dead[e.node] = true
				c.forget() // from now on, only findings from a live rendezvous count
			case "dead":
				c.setDead(e.by, e.node, true)
			case "restart":
				c.restart(e.node)
				dead[e.node] = false
			case "alive":
				c.setDead(e.by, e.node, false)
			}
		}
		c.step()
		now := c.now
		// Move the objects, for the next frame.
		for i := range n {
			for k := range c.prims[i] {
				p := &c.prims[i][k]
				for d := range 2 {
					p.Loc[d] += moves[p.ID].vel[d] * c.frame.Seconds()
				}
			}
		}
		for _, rb := range rebuilt {
			if rb.at == now {
				want, wantSubs := 0, 0
				for i := range n {
					if !dead[wire.NodeID(i+1)] {
						want += len(c.prims[i])
						if len(c.views[i]) > 0 {
							wantSubs++
						}
					}
				}
				if p, s := c.dirs[rb.rdv-1].Stored(); p != want || s != wantSubs {
					t.Fatalf("at %v, %v after the last report of a death: the new rendezvous %d holds %d publications and %d subscriptions, want %d and %d",
						now, resume, rb.rdv, p, s, want, wantSubs)
				}
			}
		}
		for i, d := range c.dirs {
			if c.down[i] {
				continue
			}
			// Watch: the candidates up to the one it depends on.
			cands := append([]wire.NodeID{cfg.Rendezvous}, cfg.Standby...)
			k := slices.Index(cands, d.Rendezvous())
			if k < 0 || !slices.Equal(c.outs[i].Watch, cands[:k+1]) && !slices.Equal(c.outs[i].Watch, cands) {
				t.Fatalf("at %v node %d depends on %d and watches %v", now, i+1, d.Rendezvous(), c.outs[i].Watch)
			}
			if now >= settled && (d.Rendezvous() != infra || !slices.Equal(d.Targets(), []wire.NodeID{infra}) ||
				!slices.Equal(c.outs[i].Watch, []wire.NodeID{infra})) {
				t.Fatalf("at %v, after the fail-back: node %d depends on %d, sends to %v, watches %v", now, i+1, d.Rendezvous(), d.Targets(), c.outs[i].Watch)
			}
		}
		if now < 1500*time.Millisecond || inWindow(now) {
			continue
		}
		for i := range n {
			s := wire.NodeID(i + 1)
			if c.down[i] || len(c.views[i]) == 0 {
				continue
			}
			for j := range n {
				if j == i || c.down[j] {
					continue
				}
				for _, p := range c.prims[j] {
					loc, ok := latest(p.ID, now-lag)
					if ok && inAny(loc, c.views[i], 2) {
						checked++
						if !c.knows(s, p.ID) {
							t.Fatalf("at %v node %d does not know of %v (published at %v, in its view %v); it depends on %d, sends to %v",
								now, s, p.ID, loc, c.views[i], c.dirs[i].Rendezvous(), c.dirs[i].Targets())
						}
					}
				}
			}
		}
	}
	if checked < 20 {
		t.Fatalf("only %d checks: the scenario does not exercise discovery", checked)
	}
}

// TestDirectoryStandbyConfig: bad standby lists and fail-back hold-downs
// are errors naming the problem; the defaults fill in.
func TestDirectoryStandbyConfig(t *testing.T) {
	for _, c := range []struct {
		standby  []wire.NodeID
		failBack time.Duration
		want     string
	}{
		{[]wire.NodeID{2, 0}, 0, "node 0"},
		{[]wire.NodeID{2, 1}, 0, "node 1 twice"},
		{[]wire.NodeID{2, 3, 2}, 0, "node 2 twice"},
		{[]wire.NodeID{2}, -time.Second, "FailBack"},
	} {
		cfg := DefaultDirectoryConfig(1)
		cfg.Standby, cfg.FailBack = c.standby, c.failBack
		if _, err := NewDirectory(2, cfg); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("standby %v, fail-back %v: %v, want an error naming %q", c.standby, c.failBack, err, c.want)
		}
	}
	sb := []wire.NodeID{3, 2}
	d, err := NewDirectory(2, DirectoryConfig{Rendezvous: 1, Standby: sb})
	if err != nil {
		t.Fatal(err)
	}
	sb[0] = 9 // the directory keeps its own copy
	if got := d.Config(); got.FailBack != DefaultFailBack || !slices.Equal(got.Standby, []wire.NodeID{3, 2}) {
		t.Errorf("config %+v", got)
	}
	if d.Rendezvous() != 1 || !slices.Equal(d.Targets(), []wire.NodeID{1}) || d.IsRendezvous() {
		t.Errorf("before any frame: rendezvous %d, targets %v", d.Rendezvous(), d.Targets())
	}
}
