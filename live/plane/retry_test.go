package plane

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/overworld/overworld/live"
)

// asked returns the migrations node id was asked for so far.
func (w *fakeWorld) asked(id uint32) []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.asks[id])
}

// set changes the fake world under its lock.
func (w *fakeWorld) set(f func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	f()
}

// regionPlane is TestPlaneRegions' world: three players located in the
// west region of a 2 × 1 grid, all nearest node 2, which becomes the
// region's core; nodes 1 and 3 are asked to migrate the region to it.
// Node 3 fails its first fail migrations (negative: all). It polls, a
// second apart, until the region migrated, and returns its clock and a
// step that advances it a second and polls once.
func regionPlane(t *testing.T, fail int) (*fakeWorld, *Server, *clock, func()) {
	t.Helper()
	w, nodes := newFakeWorld(t, 3)
	w.failMigrate[3] = fail
	c := &clock{t: time.Unix(1_000_000, 0)}
	f := File{Listen: "x:1", Grid: "2x1", Bounds: []float64{0, 0, 100, 100}, RegionPolicy: "periodic", MigrationCost: 10}
	f.Nodes = fileNodes(nodes)
	s, cl := fromFile(t, f, c)
	for p := range 3 {
		id := fmt.Sprintf("p%d", p)
		adm, err := cl.Join(context.Background(), id, []live.PingSample{{Node: 1, RTTMs: 90}, {Node: 2, RTTMs: 10}, {Node: 3, RTTMs: 120}})
		if err != nil {
			t.Fatal(err)
		}
		w.set(func() {
			w.players[id] = adm.Node
			w.at[id] = [2]float64{10 + float64(p), 50}
		})
	}
	step := func() {
		c.add(time.Second)
		poll(s)
	}
	for i := 0; s.Stats().RegionMigrations == 0; i++ {
		if i == 10 {
			t.Fatal("the region never migrated")
		}
		step()
	}
	if got := w.asked(3); !slices.Equal(got, []string{"to node 2"}) {
		t.Fatalf("node 3 was asked %q, want one migration to node 2", got)
	}
	return w, s, c, step
}

// TestRegionMigrationRetry: a region migration a node fails is recorded
// and made again at later polls, one poll after the failure, then two
// polls after the failed retry (the backoff doubles), until it succeeds;
// then never again. None is made while a region migration is in flight.
// The counts say so all along.
func TestRegionMigrationRetry(t *testing.T) {
	w, s, c, step := regionPlane(t, 2)
	check := func(when string, asks, errs, retries, pending int) {
		t.Helper()
		st := s.Stats()
		if n := len(w.asked(3)); n != asks || st.RegionMigrationErrors != errs || st.RegionMigrationRetries != retries ||
			st.RegionMigrationsPending != pending || st.RegionMigrations != 1 {
			t.Fatalf("%s: node 3 asked %d times, stats %+v; want %d asks, %d errors, %d retries, %d pending, 1 region migration",
				when, n, st, asks, errs, retries, pending)
		}
	}
	check("failed", 1, 1, 0, 1)
	// Due, but another region migration is in flight: not yet.
	s.mu.Lock()
	s.regionBusy++
	s.mu.Unlock()
	c.add(time.Second)
	s.PollOnce(context.Background())
	s.mu.Lock()
	s.regionBusy--
	s.mu.Unlock()
	s.Wait()
	check("while another is in flight", 1, 1, 0, 1)
	poll(s)
	check("then: retried, failed again", 2, 2, 1, 1)
	step()
	check("the backoff doubled: not yet", 2, 2, 1, 1)
	step()
	check("two polls after: retried, made", 3, 2, 2, 0)
	w.mu.Lock()
	calls := slices.Clone(w.regions)
	w.mu.Unlock()
	if !slices.ContainsFunc(calls, func(c string) bool { return c[:6] == "node 3" }) {
		t.Fatalf("node 3 never migrated the region: %q", calls)
	}
	for range 5 {
		step()
	}
	check("made: never again", 3, 2, 2, 0)
	if got := w.asked(3); !slices.Equal(got, []string{"to node 2", "to node 2", "to node 2"}) {
		t.Fatalf("node 3 was asked %q", got)
	}
}

// TestRegionMigrationRetryDropped: a failed region migration is not made
// again on a node found down (its objects fail over), nor once the
// region's core changed (the new decision asks the nodes itself), nor
// when the record names a target that is no longer the core.
func TestRegionMigrationRetryDropped(t *testing.T) {
	t.Run("node down", func(t *testing.T) {
		w, s, _, step := regionPlane(t, -1)
		w.set(func() { w.down[3] = true })
		for i := 0; s.Stats().NodeDowns == 0; i++ {
			if i == 10 {
				t.Fatal("node 3 never found down")
			}
			step()
		}
		asks := len(w.asked(3))
		if st := s.Stats(); st.RegionMigrationsPending != 0 || asks < 2 {
			t.Fatalf("node 3 down after %d asks: %+v, want its migration dropped (retried while up)", asks, st)
		}
		for range 8 {
			step()
		}
		if n := len(w.asked(3)); n != asks {
			t.Fatalf("node 3, down, asked %d more times", n-asks)
		}
	})
	t.Run("placement changed", func(t *testing.T) {
		w, s, _, step := regionPlane(t, -1)
		w.set(func() { w.down[2] = true })
		for i := 0; s.Stats().NodeDowns == 0; i++ {
			if i == 10 {
				t.Fatal("node 2 never found down")
			}
			step()
		}
		asks := len(w.asked(3))
		s.mu.Lock()
		core, _ := s.plane.Core(0)
		for _, r := range s.regionStranded {
			if r.to == 2 {
				t.Errorf("region %d's migration from node %d to node 2 kept after the region moved to node %d", r.region, r.call.node, core)
			}
		}
		s.mu.Unlock()
		if core == 2 {
			t.Fatal("the region stayed on node 2, down")
		}
		w.set(func() { w.failMigrate[3] = 0 })
		for range 6 {
			step()
		}
		for _, a := range w.asked(3)[asks:] {
			if a != fmt.Sprintf("to node %d", core) {
				t.Fatalf("node 3 asked %q after the region moved to node %d", a, core)
			}
		}
		if st := s.Stats(); st.RegionMigrationsPending != 0 {
			t.Fatalf("%+v, want nothing pending", st)
		}
		// A record naming a target that is no longer the core (a failure
		// that came after the region's next decision) is dropped at the
		// next poll.
		s.mu.Lock()
		c := nodeCall{admin: "http://127.0.0.1:1", path: "/admin/migrate-region", node: 1, q: map[string][]string{"node": {"2"}}}
		s.addStranded(s.regionStranded, &stranded{call: c, to: 2, region: 0, err: "test"}, s.cfg.Clock().Add(-time.Hour))
		s.mu.Unlock()
		asks1, retries := len(w.asked(1)), s.Stats().RegionMigrationRetries
		step()
		if st := s.Stats(); st.RegionMigrationsPending != 0 || st.RegionMigrationRetries != retries || len(w.asked(1)) != asks1 {
			t.Fatalf("a stale record: %+v, node 1 asked %d more times", st, len(w.asked(1))-asks1)
		}
	})
}

// instancePlane3 is a plane over three fake servers of one instance seat
// each, with instance a open on server 1. Server 1 then dies: a moves to
// server 2, and server 3 is asked to migrate a's box there (its objects
// failed over somewhere); it fails its first fail migrations (negative:
// all). It returns once a moved, with its clock and a step that advances
// it a second and polls once.
func instancePlane3(t *testing.T, fail int) (*fakeWorld, *Server, *clock, func()) {
	t.Helper()
	w, nodes := newFakeWorld(t, 3)
	c := &clock{t: time.Unix(1_000_000, 0)}
	s, err := New(Config{Nodes: nodes, Clock: c.now, Seed: 1, Instances: &InstanceSetup{Seats: 1}})
	if err != nil {
		t.Fatal(err)
	}
	h := httptest.NewServer(s.Handler())
	t.Cleanup(h.Close)
	poll(s)
	if code, p := openInstance(t, h.URL, "a", [4]float64{0, 0, 10, 10}, 1); code != http.StatusOK || p.Node != 1 {
		t.Fatalf("open: %d %+v, want on server 1", code, p)
	}
	s.Wait()
	w.set(func() {
		w.failMigrate[3] = fail
		w.down[1] = true
	})
	step := func() {
		c.add(time.Second)
		poll(s)
	}
	for i := 0; s.Instances().Stats.Moved == 0; i++ {
		if i == 10 {
			t.Fatal("instance a never moved off server 1")
		}
		step()
	}
	if st := s.Instances(); st.Instances[0].Node != 2 || !slices.Equal(w.asked(3), []string{"to node 2"}) {
		t.Fatalf("a moved: %+v, server 3 asked %q; want a on server 2, server 3 asked to migrate there", st, w.asked(3))
	}
	return w, s, c, step
}

// TestInstanceMigrationRetry: an instance migration a server fails is
// recorded and made again with a backoff until it succeeds, then never
// again, and not while a batch of instance requests is in flight; the
// instance counts say so.
func TestInstanceMigrationRetry(t *testing.T) {
	w, s, c, step := instancePlane3(t, 2)
	check := func(when string, asks, failed, retries, pending int) {
		t.Helper()
		st := s.Instances()
		if n := len(w.asked(3)); n != asks || st.Failed != failed || st.MigrationRetries != retries || st.MigrationsPending != pending {
			t.Fatalf("%s: server 3 asked %d times, failed %d, retries %d, pending %d; want %d, %d, %d, %d",
				when, n, st.Failed, st.MigrationRetries, st.MigrationsPending, asks, failed, retries, pending)
		}
	}
	check("failed", 1, 1, 0, 1)
	// Due, but a batch is in flight: not yet.
	block := make(chan struct{})
	s.mu.Lock()
	s.inst.last = block
	s.mu.Unlock()
	c.add(time.Second)
	s.PollOnce(context.Background())
	check("while a batch is in flight", 1, 1, 0, 1)
	close(block)
	s.Wait()
	poll(s)
	check("then: retried, failed again", 2, 2, 1, 1)
	step()
	check("the backoff doubled: not yet", 2, 2, 1, 1)
	step()
	check("two polls after: retried, made", 3, 2, 2, 0)
	for range 5 {
		step()
	}
	check("made: never again", 3, 2, 2, 0)
	w.mu.Lock()
	calls := slices.Clone(w.regions)
	w.mu.Unlock()
	if want := "node 3: [0, 10] × [0, 10] to node 2"; !slices.Contains(calls, want) {
		t.Fatalf("migrations %q, want %q", calls, want)
	}
}

// TestInstanceMigrationRetryDropped: a failed instance migration is not
// made again once the instance is placed elsewhere, nor on a server
// found down.
func TestInstanceMigrationRetryDropped(t *testing.T) {
	for _, tc := range []struct {
		name string
		down uint32
		node uint32 // where a ends
	}{
		{"placement changed", 2, 3}, // a moves to server 3: nothing to migrate, the record is stale
		{"node down", 3, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w, s, _, step := instancePlane3(t, -1)
			w.set(func() { w.down[tc.down] = true })
			for i := 0; s.Instances().MigrationsPending != 0; i++ {
				if i == 10 {
					t.Fatalf("server %d down: the failed migration still pending", tc.down)
				}
				step()
			}
			asks := len(w.asked(3))
			st := s.Instances()
			if st.Instances[0].Node != tc.node || asks < 2 {
				t.Fatalf("%+v after %d asks, want a on server %d (retried before)", st, asks, tc.node)
			}
			for range 8 {
				step()
			}
			if n := len(w.asked(3)); n != asks || s.Instances().MigrationsPending != 0 {
				t.Fatalf("server 3 asked %d more times, %+v", n-asks, s.Instances())
			}
		})
	}
}

// TestInstanceMigrationRetryRemoved: an enrolled server revoked while it
// runs an instance is asked to migrate it off; failed, the migration is
// not made again, the server being out of the placement.
func TestInstanceMigrationRetryRemoved(t *testing.T) {
	k := newEnrolledCluster(t)
	k.inst = &InstanceSetup{Seats: 4}
	s := k.plane()
	poll(s)
	n := k.target(s)
	h := httptest.NewServer(s.Handler())
	defer h.Close()
	for i, want := range []uint32{1, 2, n} {
		id := fmt.Sprintf("i%d", i)
		if code, p := openInstance(t, h.URL, id, [4]float64{1e9 * float64(i+1), 0, 1e9*float64(i+1) + 1, 1}, 2); code != http.StatusOK || p.Node != want {
			t.Fatalf("%s: %d %+v, want on node %d", id, code, p, want)
		}
	}
	s.Wait()
	k.w.set(func() { k.w.failMigrate[n] = -1 })
	if err := os.WriteFile(k.revoked, []byte(fmt.Sprintf("node %d\n", n)), 0o600); err != nil {
		t.Fatal(err)
	}
	k.c.add(time.Second)
	poll(s)
	if st := s.Instances(); st.MigrationsPending != 1 || len(k.w.asked(n)) != 1 {
		t.Fatalf("revoked: %+v, node %d asked %q; want its failed migration recorded", st, n, k.w.asked(n))
	}
	for range 6 {
		k.c.add(time.Second)
		poll(s)
	}
	if st := s.Instances(); st.MigrationsPending != 0 || st.MigrationRetries != 0 || len(k.w.asked(n)) != 1 {
		t.Fatalf("removed: %+v, node %d asked %q; want its migration dropped, never retried", st, n, k.w.asked(n))
	}
}

// chainNode is a node's admin endpoint for migrate-region requests that
// fails (503) while *fail > 0, counting it down, and records every
// request it answers or fails ("want=..."). Asked for a migration, it
// migrates its object 7 (ID node<<16|7); asked again naming it, it has
// left. Objects of other nodes it is asked for (on their way from the
// migration before) it knows deleted on arrival.
type chainNode struct {
	mu   sync.Mutex
	fail int
	reqs []string
	srv  *httptest.Server
}

func newChainNode(t *testing.T, node uint64) *chainNode {
	f := &chainNode{}
	f.srv = httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		f.mu.Lock()
		defer f.mu.Unlock()
		want := r.URL.Query().Get("want")
		f.reqs = append(f.reqs, "want="+want)
		if f.fail > 0 {
			f.fail--
			http.Error(rw, "overloaded", http.StatusServiceUnavailable)
			return
		}
		own, gone := false, []string{}
		for _, id := range strings.Split(want, ",") {
			if id == strconv.FormatUint(node<<16|7, 10) {
				own = true
			} else if id != "" {
				gone = append(gone, id)
			}
		}
		moved, ids := 1, fmt.Sprint(node<<16|7)
		if own {
			moved, ids = 0, ""
		}
		fmt.Fprintf(rw, `{"moved": %d, "ids": [%s], "gone": [%s]}`+"\n", moved, ids, strings.Join(gone, ","))
	}))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *chainNode) requests() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return slices.Clone(f.reqs)
}

// TestInstanceMigrationRetryChain: a failed migration is recorded with
// the chained migrations after it (an overflow's leg from the
// replicated host on to the host), which its retry makes again after it,
// naming what the first moved; a chained one that fails alone is
// recorded alone.
func TestInstanceMigrationRetryChain(t *testing.T) {
	_, nodes := newFakeWorld(t, 3)
	s, err := New(Config{Nodes: nodes, Seed: 1, Instances: &InstanceSetup{Seats: 1}})
	if err != nil {
		t.Fatal(err)
	}
	first, middle := newChainNode(t, 1), newChainNode(t, 2)
	q := func(to string) map[string][]string {
		return map[string][]string{"x0": {"0"}, "y0": {"0"}, "x1": {"1"}, "y1": {"1"}, "node": {to}}
	}
	calls := []nodeCall{
		{admin: first.srv.URL, path: "/admin/migrate-region", node: 1, q: q("2"), inst: "a"},
		{admin: middle.srv.URL, path: "/admin/migrate-region", node: 2, q: q("3"), inst: "a", chained: true},
	}
	first.fail = 1
	s.runCalls(calls, nil)
	s.mu.Lock()
	var r *stranded
	for _, x := range s.inst.stranded {
		r = x
	}
	if len(s.inst.stranded) != 1 || r.call.node != 1 || r.to != 2 || len(r.chain) != 1 || r.chain[0].node != 2 || !r.chain[0].chained {
		t.Fatalf("first leg failed: records %v, want node 1's with node 2's chained after it", s.inst.stranded)
	}
	s.mu.Unlock()
	s.runCalls(append([]nodeCall{r.call}, r.chain...), r)
	got := [][]string{first.requests(), middle.requests()}
	want := [][]string{{"want=", "want=", "want=65543"}, {"want=", "want=131079", "want=65543", "want=131079"}}
	if !slices.Equal(got[0], want[0]) || !slices.Equal(got[1], want[1]) || s.Instances().MigrationsPending != 0 {
		t.Fatalf("retried: nodes 1 and 2 asked %q, %+v; want %q, nothing pending", got, s.Instances(), want)
	}
	middle.fail = 1
	s.runCalls(calls, nil)
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, x := range s.inst.stranded {
		r = x
	}
	if len(s.inst.stranded) != 1 || r.call.node != 2 || r.to != 3 || r.call.chained || len(r.chain) != 0 {
		t.Fatalf("second leg failed: records %v, want node 2's alone", s.inst.stranded)
	}
}

// TestInstanceRecordsResent: a server that fails the request carrying
// its instance records is sent them again at the next poll, and then no
// more.
func TestInstanceRecordsResent(t *testing.T) {
	w, nodes := newFakeWorld(t, 2)
	c := &clock{t: time.Unix(1_000_000, 0)}
	s, err := New(Config{Nodes: nodes, Clock: c.now, Seed: 1, Instances: &InstanceSetup{Seats: 1}})
	if err != nil {
		t.Fatal(err)
	}
	h := httptest.NewServer(s.Handler())
	t.Cleanup(h.Close)
	poll(s)
	w.set(func() { w.failRecords[1] = 2 })
	if code, p := openInstance(t, h.URL, "a", [4]float64{0, 0, 10, 10}, 1); code != http.StatusOK || p.Node != 1 {
		t.Fatalf("open: %d %+v, want on server 1", code, p)
	}
	s.Wait()
	held := func() []string {
		w.mu.Lock()
		defer w.mu.Unlock()
		var ids []string
		for _, r := range w.held[1] {
			ids = append(ids, r.ID)
		}
		return ids
	}
	if got := held(); len(got) != 0 {
		t.Fatalf("server 1 keeps %q after a failed request", got)
	}
	for i := range 2 { // the first resend fails too
		c.add(time.Second)
		poll(s)
		if got := held(); i == 0 && len(got) != 0 {
			t.Fatalf("server 1 keeps %q after a second failed request", got)
		}
	}
	if got := held(); !slices.Equal(got, []string{"a"}) {
		t.Fatalf("server 1 keeps %q, want [a]", got)
	}
	if st := s.Instances(); st.Failed != 2 {
		t.Fatalf("%d failed requests, want 2 (the records at the open and at the first resend)", st.Failed)
	}
	w.set(func() { w.failRecords[1] = 1 }) // a resend now would fail and count
	for range 3 {
		c.add(time.Second)
		poll(s)
	}
	if got := held(); !slices.Equal(got, []string{"a"}) || s.Instances().Failed != 2 {
		t.Fatalf("records sent again once delivered: server 1 keeps %q, %d failed requests", got, s.Instances().Failed)
	}
}
