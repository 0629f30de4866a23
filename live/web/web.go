// Package web serves overworld's browser pages from a node, with nothing
// but the binary: the arena game at /play and the TypeScript client SDK
// at /overworld.js on the player WebSocket endpoint (same origin as the
// WebSocket, so the browser may connect), and the live dashboard at
// /dashboard on the admin endpoint (behind whatever guards that
// endpoint). The JavaScript in dist/ is built from clients/ts by
// cmd/genweb (go generate ./live/web) and committed, so a plain go build
// needs no generator; a test in clients/ts fails when it is not current.
//
// Caller duties: wrap the WebSocket player handler with PlayHandler, and
// register the dashboard on the admin mux with Dashboard, giving it what
// the node knows of the cluster (DashboardInfo).
package web

//go:generate go run ../../cmd/genweb -out dist

import (
	"embed"
	"encoding/json"
	"io/fs"
	"math"
	"net/http"
	"net/url"
	"path"
	"strings"
	"sync"

	"github.com/overworld/overworld/geo"
)

//go:embed dist/*.js static/*.html
var assets embed.FS

// Asset returns an embedded file: dist/NAME.js or static/NAME.html.
func Asset(name string) ([]byte, bool) {
	b, err := fs.ReadFile(assets, name)
	return b, err == nil
}

func serve(w http.ResponseWriter, r *http.Request, name string) {
	b, ok := Asset(name)
	if !ok {
		http.NotFound(w, r)
		return
	}
	typ := "text/html; charset=utf-8"
	if strings.HasSuffix(name, ".js") {
		typ = "text/javascript; charset=utf-8"
	}
	w.Header().Set("Content-Type", typ)
	w.Header().Set("Cache-Control", "no-cache")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.Header().Set("X-Frame-Options", "DENY")
	if r.Method == http.MethodHead {
		return
	}
	w.Write(b)
}

// isGet reports whether r is a plain GET or HEAD (not a WebSocket
// upgrade).
func isGet(r *http.Request) bool {
	return (r.Method == http.MethodGet || r.Method == http.MethodHead) && !strings.EqualFold(r.Header.Get("Upgrade"), "websocket")
}

// PlayNode is the node serving the browser game, as the page shows it,
// and the WebSocket player endpoints of its peers (ws:// or wss:// URLs):
// where the page looks for its avatar when this node dies.
type PlayNode struct {
	ID    uint32   `json:"id"`
	City  string   `json:"city"`
	Peers []string `json:"peers,omitempty"`
}

// PlayHandler serves the browser game beside ws, the node's WebSocket
// player handler: GET /play (the page), /overworld.js (the SDK, one ES
// module), /play.js (the game), /play/node.json (node) and
// /play/scene.json (scene: the game's static world as JSON, such as the
// arena's walls; 404 when nil). Every other request, WebSocket upgrades
// included, goes to ws unchanged.
func PlayHandler(ws http.Handler, node PlayNode, scene []byte) http.Handler {
	nodeJSON, _ := json.Marshal(node)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !isGet(r) {
			ws.ServeHTTP(w, r)
			return
		}
		switch path.Clean(r.URL.Path) {
		case "/play":
			serve(w, r, "static/play.html")
		case "/overworld.js":
			serve(w, r, "dist/overworld.js")
		case "/play.js":
			serve(w, r, "dist/play.js")
		case "/play/node.json":
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Cache-Control", "no-cache")
			w.Write(nodeJSON)
		case "/play/scene.json":
			if scene == nil {
				http.NotFound(w, r)
				return
			}
			w.Header().Set("Content-Type", "application/json")
			w.Header().Set("Cache-Control", "no-cache")
			w.Write(scene)
		default:
			ws.ServeHTTP(w, r)
		}
	})
}

// DashboardNode is a node as the dashboard shows it: its ID, city and
// coordinates (empty, 0: unknown), and the URL prefix of its admin
// endpoints the page polls (nil: a node known from the configuration
// only, drawn on the map but not polled).
type DashboardNode struct {
	ID   uint32  `json:"id"`
	City string  `json:"city"`
	Lat  float64 `json:"lat"`
	Lon  float64 `json:"lon"`
	Base *string `json:"base"`
}

// DashboardInfo is what the dashboard page reads first
// (/dashboard/info.json): its title, the node serving it (0: a cluster
// view), the nodes, the game world's extent in its first two attributes,
// how often to poll, in milliseconds, and whose clock the series run on
// ("": the browser's; ClockGame: the nodes' snapshots' time).
type DashboardInfo struct {
	Title string          `json:"title"`
	Self  uint32          `json:"self"`
	Nodes []DashboardNode `json:"nodes"`
	World struct {
		W float64 `json:"w"`
		H float64 `json:"h"`
	} `json:"world"`
	Every int    `json:"every"`
	Clock string `json:"clock,omitempty"`
}

// ClockGame is DashboardInfo.Clock for nodes whose time is the game's, not
// the browser's (a simulated run, paced or not): the page times its
// series and rates by the nodes' snapshots (now_ns).
const ClockGame = "game"

// Base returns a pointer to prefix, for DashboardNode.Base.
func Base(prefix string) *string { return &prefix }

// earthJSON is the map of the earth the dashboard draws its nodes on:
// the 4,410 cities of the embedded GeoNames extract (at least 100,000
// inhabitants) as [latitude, longitude] pairs, a tenth of a degree apart
// at most, which outline the inhabited land.
var earthJSON = sync.OnceValue(func() []byte {
	cities, err := geo.GeoNamesCities()
	if err != nil {
		return []byte("[]")
	}
	seen := map[[2]int]bool{}
	var pts [][2]float64
	for _, c := range cities {
		k := [2]int{int(math.Round(c.Lat * 10)), int(math.Round(c.Lon * 10))}
		if !seen[k] {
			seen[k] = true
			pts = append(pts, [2]float64{float64(k[0]) / 10, float64(k[1]) / 10})
		}
	}
	b, _ := json.Marshal(pts)
	return b
})

// Dashboard registers the dashboard on mux: GET /dashboard (the page),
// /dashboard.js, /dashboard/info.json (info's answer) and
// /dashboard/earth.json (the cities the map of the earth is drawn
// with). The page polls each node's /metrics and /debug/world under its
// Base. guard (nil: none) wraps info.json, which describes the cluster,
// as the caller guards its other admin endpoints; the page, its script
// and the map are the binary's own files and are served to anyone. The
// page sends an admin bearer secret given in its fragment
// (/dashboard#admin=SECRET) with every request it makes.
func Dashboard(mux *http.ServeMux, info func() DashboardInfo, guard func(http.Handler) http.Handler) {
	if guard == nil {
		guard = func(h http.Handler) http.Handler { return h }
	}
	mux.HandleFunc("GET /dashboard/earth.json", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "max-age=86400")
		w.Write(earthJSON())
	})
	mux.HandleFunc("GET /dashboard", func(w http.ResponseWriter, r *http.Request) { serve(w, r, "static/dashboard.html") })
	mux.HandleFunc("GET /dashboard.js", func(w http.ResponseWriter, r *http.Request) { serve(w, r, "dist/dashboard.js") })
	mux.Handle("GET /dashboard/info.json", guard(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, err := json.Marshal(info())
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "no-cache")
		w.Write(b)
	})))
}

// PeerOrigins lets pages served by the peers' player endpoints (hosts:
// their host:port) open WebSockets to ws: a browser game following a
// Redirect connects from the old node's page to the new node, a
// cross-origin request the WebSocket handler refuses by default. A
// request whose Origin names one of hosts reaches ws without its Origin
// header (as a non-browser client's would); every other request is
// passed on unchanged.
func PeerOrigins(ws http.Handler, hosts []string) http.Handler {
	allowed := map[string]bool{}
	for _, h := range hosts {
		allowed[strings.ToLower(h)] = true
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if o := r.Header.Get("Origin"); o != "" {
			if u, err := url.Parse(o); err == nil && (u.Scheme == "http" || u.Scheme == "https") && allowed[strings.ToLower(u.Host)] {
				r = r.Clone(r.Context())
				r.Header.Del("Origin")
			}
		}
		ws.ServeHTTP(w, r)
	})
}
