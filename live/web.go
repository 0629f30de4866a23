package live

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"

	"github.com/overworld/overworld/geo"
	"github.com/overworld/overworld/live/web"
	"github.com/overworld/overworld/wire"
)

// The browser pages of a node (package live/web): the arena game and the
// SDK on the WebSocket player endpoint, the dashboard on the admin mux.

// servePlayPages wraps the WebSocket player endpoint's handler with the
// browser game's pages (/play, /overworld.js, /play.js,
// /play/scene.json from game.Scene, /play/node.json: this node and its
// peers' WebSocket player endpoints).
func (d *Daemon) servePlayPages(game Game) {
	if d.players == nil || d.players.ws == nil {
		return
	}
	var peers, urls []string
	for _, p := range d.cfg.Peers {
		if u, err := url.Parse(p.PlayerWS); err == nil && u.Host != "" && (u.Scheme == "ws" || u.Scheme == "wss") {
			peers = append(peers, u.Host)
			urls = append(urls, p.PlayerWS)
		}
	}
	ws := web.PeerOrigins(d.players.ws.Handler, peers)
	d.players.ws.Handler = web.PlayHandler(ws, web.PlayNode{ID: d.cfg.ID, City: d.cfg.City, Peers: urls}, game.Scene)
}

// serveDashboard registers /dashboard on the admin mux: this node, polled
// by the page, and its peers at their cities (from the configuration).
// Its description of the cluster is guarded as /metrics is; what the page
// polls (/metrics, /debug/world) keeps its own guards.
func (d *Daemon) serveDashboard(mux *http.ServeMux, game Game) {
	info := web.DashboardInfo{Title: fmt.Sprintf("overworld node %d", d.cfg.ID), Self: d.cfg.ID, Every: 1000}
	info.World.W, info.World.H = dashboardExtent(game)
	cities := d.cfg.Cities()
	ids := make([]uint32, 0, len(cities))
	for id := range cities {
		ids = append(ids, uint32(id))
	}
	slices.Sort(ids)
	for _, id := range ids {
		n := CityNode(id, cities[wire.NodeID(id)])
		if id == d.cfg.ID {
			n.Base = web.Base("")
		}
		info.Nodes = append(info.Nodes, n)
	}
	web.Dashboard(mux, func() web.DashboardInfo { return info }, func(h http.Handler) http.Handler { return d.authorized(h, false) })
}

// dashboardExtent is the game world's extent in its first two attributes
// (its discovery bounds), 1 where unbounded.
func dashboardExtent(game Game) (w, h float64) {
	w, h = 1, 1
	b := game.Discovery.Bounds
	if x := b.Max[0]; x > 0 && x < 1e12 {
		w = x
	}
	if y := b.Max[1]; y > 0 && y < 1e12 {
		h = y
	}
	return w, h
}

// CityNode describes node id in city (a WonderNetwork city name, or
// empty) for the dashboard, with the city's coordinates when the
// embedded table has it.
func CityNode(id uint32, city string) web.DashboardNode {
	n := web.DashboardNode{ID: id, City: city}
	if city == "" {
		return n
	}
	if ws, err := geo.WonderNetwork(); err == nil {
		if i, ok := ws.CityIndex(city); ok {
			c := ws.City(i)
			n.Lat, n.Lon = c.Lat, c.Lon
		}
	}
	return n
}
