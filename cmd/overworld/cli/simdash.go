package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"sync/atomic"
	"time"

	"github.com/overworld/overworld/lab/harness"
	"github.com/overworld/overworld/live"
	"github.com/overworld/overworld/live/web"
	"github.com/overworld/overworld/sim"
	"github.com/overworld/overworld/wire"
)

// simWatchEvery is how often of game time "overworld demo --dashboard"
// observes the simulated world for the dashboard.
const simWatchEvery = 250 * time.Millisecond

// simDashboard serves the live dashboard of a simulated run (overworld
// demo --dashboard): the dashboard's own page and data formats, each node
// of the run appearing as a node's /metrics and /debug/world would, from
// what the run's watch reads every simWatchEvery of game time. It only
// reads the world; pace > 0 paces the run to pace seconds of game time
// per second of wall time by sleeping in the watch (0: as fast as the
// simulator goes).
type simDashboard struct {
	ln      net.Listener
	srv     *http.Server
	handler atomic.Pointer[http.Handler]
	feed    *web.Feed
	title   string
	pace    float64
	start   time.Time
	started bool
	reads   int // the feed's Reads at the last description of the nodes
	buf     bytes.Buffer
}

// listenSimDashboard listens on addr; the dashboard is served once the
// run's first watch describes the world.
func listenSimDashboard(addr, title string, pace float64) (*simDashboard, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, err
	}
	d := &simDashboard{ln: ln, feed: web.NewFeed(), title: title, pace: pace}
	d.srv = &http.Server{ReadHeaderTimeout: 5 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := d.handler.Load()
		if h == nil {
			http.Error(w, "the simulated run is starting", http.StatusServiceUnavailable)
			return
		}
		(*h).ServeHTTP(w, r)
	})}
	go d.srv.Serve(ln)
	return d, nil
}

// URL is the dashboard's address for a browser.
func (d *simDashboard) URL() string { return "http://" + d.ln.Addr().String() + "/dashboard" }

// Close stops serving.
func (d *simDashboard) Close() { d.srv.Close() }

// info describes the run's nodes for the page: each at its city, the
// game world's extent, a poll period of one watch in wall time, on the
// game's clock.
func (d *simDashboard) info(w *harness.World) web.DashboardInfo {
	info := web.DashboardInfo{Title: d.title, Clock: web.ClockGame, Every: 250}
	if d.pace > 0 {
		info.Every = max(100, int(float64(simWatchEvery/time.Millisecond)/d.pace))
	}
	for _, n := range w.Nodes() {
		info.Nodes = append(info.Nodes, live.CityNode(uint32(n.ID()), w.Site(n.ID())))
	}
	return info
}

// watch is the run's watch: it sets every node's pages in the feed (if
// the page read the last ones: describing the nodes costs a few hundred
// microseconds of a node's objects), then waits for wall time to catch
// up with game time now (pace).
func (d *simDashboard) watch(w *harness.World, worldW, worldH float64, now time.Duration) {
	first := !d.started
	if first {
		info := d.info(w)
		info.World.W, info.World.H = worldW, worldH
		h := web.FeedDashboard(info, d.feed)
		d.handler.Store(&h)
		d.start, d.started = time.Now(), true
	}
	if r := d.feed.Reads(); first || r != d.reads || now >= w.Config().Duration {
		d.reads = r
		d.describe(w, now)
	}
	if d.pace > 0 {
		if wait := time.Until(d.start.Add(time.Duration(float64(now) / d.pace))); wait > 0 {
			time.Sleep(wait)
		}
	}
}

// describe sets every node's pages in the feed as of game time now.
func (d *simDashboard) describe(w *harness.World, now time.Duration) {
	frames := w.FrameTimes()
	for i, n := range w.Nodes() {
		snap := live.SnapshotOf(n, now)
		world, err := json.Marshal(snap)
		if err != nil { // cannot happen: SnapshotOf's floats are finite
			continue
		}
		players := 0
		for _, o := range snap.Objects {
			if o.Primary && o.Kind == "arena.bot" {
				players++
			}
		}
		tr, err := w.Sim().Traffic(n.ID())
		if err != nil { // cannot happen: the world's own node
			continue
		}
		rs := n.ReplicaStats()
		d.buf.Reset()
		simMetrics(&d.buf, tr.In, tr.Out, frames[i], rs.Promotions, rs.Migrations, players)
		d.feed.Set(uint32(n.ID()), bytes.Clone(d.buf.Bytes()), world)
	}
}

// simMetrics writes a simulated node's counters in the Prometheus text
// format, under the names a live node's /metrics gives them (the
// dashboard reads these): bytes and messages by direction and traffic
// class (the simulator counts a packet's header in its bytes), frame
// time (wall clock), authority events (promotions and migrations) and
// players (the bots whose primary the node holds).
func simMetrics(b *bytes.Buffer, in, out [wire.NumClasses]sim.Counts, ft harness.FrameTime, promoted, migrated int64, players int) {
	dirs := []struct {
		name string
		c    *[wire.NumClasses]sim.Counts
	}{{"in", &in}, {"out", &out}}
	for _, dir := range dirs {
		for c := range wire.NumClasses {
			fmt.Fprintf(b, "overworld_bytes_total{class=%q,dir=%q} %d\n", wire.Class(c).String(), dir.name, dir.c[c].Bytes)
		}
	}
	for _, dir := range dirs {
		for c := range wire.NumClasses {
			fmt.Fprintf(b, "overworld_messages_total{class=%q,dir=%q} %d\n", wire.Class(c).String(), dir.name, dir.c[c].Msgs)
		}
	}
	fmt.Fprintf(b, "overworld_frame_seconds_sum %g\noverworld_frame_seconds_count %d\n", ft.Total.Seconds(), ft.Frames)
	fmt.Fprintf(b, "overworld_authority_events_total{kind=\"promoted\"} %d\noverworld_authority_events_total{kind=\"migrated\"} %d\n", promoted, migrated)
	fmt.Fprintf(b, "overworld_players %d\n", players)
}
