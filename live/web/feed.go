package web

import (
	"fmt"
	"net/http"
	"strconv"
	"sync"
)

// Feed holds what a dashboard shows of nodes it cannot poll, such as
// those of a simulated run: each node's /metrics text and /debug/world
// JSON as their driver last set them. It is safe for concurrent use.
type Feed struct {
	mu    sync.RWMutex
	pages map[uint32]feedPage
	sets  int
	reads int
}

type feedPage struct{ metrics, world []byte }

// NewFeed returns an empty feed.
func NewFeed() *Feed { return &Feed{pages: map[uint32]feedPage{}} }

// Set replaces node's pages: metrics in the Prometheus text format (the
// metric names a node's /metrics uses), world a live.WorldSnapshot as
// JSON. The feed keeps both slices: the caller must not change them.
func (f *Feed) Set(node uint32, metrics, world []byte) {
	f.mu.Lock()
	f.pages[node] = feedPage{metrics, world}
	f.sets++
	f.mu.Unlock()
}

// Sets returns how many times Set was called.
func (f *Feed) Sets() int {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.sets
}

// Reads returns how many pages the dashboard served: a driver may skip
// describing its nodes while no one reads them.
func (f *Feed) Reads() int {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return f.reads
}

func (f *Feed) page(node uint32) (feedPage, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	p, ok := f.pages[node]
	if ok {
		f.reads++
	}
	return p, ok
}

// FeedDashboard serves the dashboard of the nodes info lists from feed,
// read-only: /dashboard, /dashboard.js, /dashboard/info.json (info, with
// every node polled under /node/ID/), and GET /node/ID/metrics and
// /node/ID/debug/world as the feed last had them (503 for a node it has
// no pages of yet, 404 for a node info does not list). / redirects to
// /dashboard.
func FeedDashboard(info DashboardInfo, feed *Feed) http.Handler {
	mux := http.NewServeMux()
	known := map[uint32]bool{}
	nodes := make([]DashboardNode, len(info.Nodes))
	for i, n := range info.Nodes {
		n.Base = Base(fmt.Sprintf("/node/%d", n.ID))
		nodes[i] = n
		known[n.ID] = true
	}
	info.Nodes = nodes
	Dashboard(mux, func() DashboardInfo { return info }, nil)
	serveFed := func(w http.ResponseWriter, r *http.Request, world bool) {
		id, err := strconv.ParseUint(r.PathValue("id"), 10, 32)
		if err != nil || !known[uint32(id)] {
			http.NotFound(w, r)
			return
		}
		p, ok := feed.page(uint32(id))
		if !ok {
			http.Error(w, fmt.Sprintf("node %d: nothing observed yet", id), http.StatusServiceUnavailable)
			return
		}
		w.Header().Set("Cache-Control", "no-cache")
		if world {
			w.Header().Set("Content-Type", "application/json")
			w.Write(p.world)
			return
		}
		w.Header().Set("Content-Type", "text/plain; version=0.0.4; charset=utf-8")
		w.Write(p.metrics)
	}
	mux.HandleFunc("GET /node/{id}/metrics", func(w http.ResponseWriter, r *http.Request) { serveFed(w, r, false) })
	mux.HandleFunc("GET /node/{id}/debug/world", func(w http.ResponseWriter, r *http.Request) { serveFed(w, r, true) })
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) { http.Redirect(w, r, "/dashboard", http.StatusFound) })
	return mux
}
