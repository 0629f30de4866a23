package web_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/overworld/overworld/live/web"
)

func get(t *testing.T, h http.Handler, method, path string, hdr map[string]string) *httptest.ResponseRecorder {
	t.Helper()
	req := httptest.NewRequest(method, path, nil)
	for k, v := range hdr {
		req.Header.Set(k, v)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// TestPlayHandler: the pages and the SDK are served to plain GETs; every
// other request (a WebSocket upgrade, another path, a POST) reaches the
// WebSocket handler unchanged.
func TestPlayHandler(t *testing.T) {
	var reached []string
	ws := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { reached = append(reached, r.Method+" "+r.URL.Path) })
	h := web.PlayHandler(ws, web.PlayNode{ID: 3, City: "Tokyo"}, []byte(`{"w":1}`))
	for path, want := range map[string]string{"/play": "<canvas", "/overworld.js": "export", "/play.js": "overworldPlay",
		"/play/scene.json": `{"w":1}`, "/play/node.json": `"city":"Tokyo"`} {
		rec := get(t, h, http.MethodGet, path, nil)
		if rec.Code != 200 || !strings.Contains(rec.Body.String(), want) {
			t.Errorf("GET %s: %d, body without %q", path, rec.Code, want)
		}
	}
	if ct := get(t, h, http.MethodGet, "/overworld.js", nil).Header().Get("Content-Type"); !strings.HasPrefix(ct, "text/javascript") {
		t.Errorf("the SDK's type is %q", ct)
	}
	get(t, h, http.MethodGet, "/play", map[string]string{"Upgrade": "websocket"})
	get(t, h, http.MethodGet, "/", nil)
	get(t, h, http.MethodPost, "/play", nil)
	if want := []string{"GET /play", "GET /", "POST /play"}; strings.Join(reached, ",") != strings.Join(want, ",") {
		t.Errorf("the WebSocket handler got %q, want %q", reached, want)
	}
	if rec := get(t, web.PlayHandler(ws, web.PlayNode{}, nil), http.MethodGet, "/play/scene.json", nil); rec.Code != 404 {
		t.Errorf("a game without a scene: %d, want 404", rec.Code)
	}
}

// TestPeerOrigins: a WebSocket request from a peer's page loses its
// Origin (so the handler takes it as its own), others keep theirs.
func TestPeerOrigins(t *testing.T) {
	var origin string
	h := web.PeerOrigins(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { origin = r.Header.Get("Origin") }), []string{"127.0.0.1:7102", "Node2.example:443"})
	for o, want := range map[string]string{
		"http://127.0.0.1:7102":      "",
		"https://node2.example:443":  "",
		"http://127.0.0.1:7103":      "http://127.0.0.1:7103",
		"http://evil.example":        "http://evil.example",
		"file://127.0.0.1:7102/x":    "file://127.0.0.1:7102/x",
		"http://127.0.0.1:7102.evil": "http://127.0.0.1:7102.evil",
	} {
		get(t, h, http.MethodGet, "/", map[string]string{"Origin": o})
		if origin != want {
			t.Errorf("Origin %q reached the handler as %q, want %q", o, origin, want)
		}
	}
}

// TestClusterDashboard: the cluster view describes every node with its
// base, forwards only /metrics and /debug/world to the right node (with
// the configured header), and refuses everything else.
func TestClusterDashboard(t *testing.T) {
	node := func(id string) *httptest.Server {
		mux := http.NewServeMux()
		web.Dashboard(mux, func() web.DashboardInfo {
			return web.DashboardInfo{Self: map[string]uint32{"a": 1, "b": 2}[id], Nodes: []web.DashboardNode{{ID: 1, City: "Frankfurt", Base: web.Base("")}, {ID: 2, City: "Tokyo", Base: web.Base("")}}}
		}, nil)
		mux.HandleFunc("/metrics", func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, id+" "+r.Header.Get("X-Key")) })
		mux.HandleFunc("/admin/handoff", func(w http.ResponseWriter, r *http.Request) { t.Errorf("the dashboard forwarded %s", r.URL) })
		return httptest.NewServer(mux)
	}
	a, b := node("a"), node("b")
	defer a.Close()
	defer b.Close()
	var nodes []web.ClusterNode
	for _, s := range []*httptest.Server{a, b} {
		n, err := web.NodeInfo(t.Context(), s.URL, nil)
		if err != nil {
			t.Fatal(err)
		}
		nodes = append(nodes, n)
	}
	if nodes[0].ID != 1 || nodes[1].ID != 2 || nodes[1].City != "Tokyo" {
		t.Fatalf("nodes %+v", nodes)
	}
	h := web.ClusterDashboard("c", nodes, 10, 20, http.Header{"X-Key": {"k"}})
	var info web.DashboardInfo
	if err := json.Unmarshal(get(t, h, http.MethodGet, "/dashboard/info.json", nil).Body.Bytes(), &info); err != nil {
		t.Fatal(err)
	}
	if len(info.Nodes) != 2 || *info.Nodes[1].Base != "/node/2" || info.World.H != 20 {
		t.Errorf("info %+v", info)
	}
	if got := get(t, h, http.MethodGet, "/node/2/metrics", nil).Body.String(); got != "b k" {
		t.Errorf("/node/2/metrics: %q, want node b's with the header", got)
	}
	for _, p := range []string{"/node/2/admin/handoff", "/node/3/metrics", "/node/x/metrics", "/node/1/../admin/handoff"} {
		if rec := get(t, h, http.MethodGet, p, nil); rec.Code != 404 && rec.Code != 307 {
			t.Errorf("GET %s: %d, want 404 (or the mux's redirect to the cleaned path)", p, rec.Code)
		}
	}
	if rec := get(t, h, http.MethodPost, "/node/1/metrics", nil); rec.Code == 200 {
		t.Errorf("POST /node/1/metrics: %d", rec.Code)
	}
	if rec := get(t, h, http.MethodGet, "/dashboard", nil); rec.Code != 200 || !strings.Contains(rec.Body.String(), "dashboard.js") {
		t.Errorf("/dashboard: %d", rec.Code)
	}
}

// TestDashboardGuard: the description of the cluster is guarded, the
// page, its script and the map are not.
func TestDashboardGuard(t *testing.T) {
	mux := http.NewServeMux()
	web.Dashboard(mux, func() web.DashboardInfo { return web.DashboardInfo{Self: 1} }, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("Authorization") != "Bearer s3cret" {
				http.Error(w, "unauthorized", http.StatusUnauthorized)
				return
			}
			h.ServeHTTP(w, r)
		})
	})
	for path, want := range map[string]int{"/dashboard": 200, "/dashboard.js": 200, "/dashboard/earth.json": 200, "/dashboard/info.json": 401} {
		if rec := get(t, mux, http.MethodGet, path, nil); rec.Code != want {
			t.Errorf("GET %s without the secret: %d, want %d", path, rec.Code, want)
		}
	}
	if rec := get(t, mux, http.MethodGet, "/dashboard/info.json", map[string]string{"Authorization": "Bearer s3cret"}); rec.Code != 200 || !strings.Contains(rec.Body.String(), `"self":1`) {
		t.Errorf("GET /dashboard/info.json with the secret: %d %s", rec.Code, rec.Body)
	}
	var pts [][2]float64
	if err := json.Unmarshal(get(t, mux, http.MethodGet, "/dashboard/earth.json", nil).Body.Bytes(), &pts); err != nil || len(pts) < 1000 {
		t.Errorf("the map of the earth: %d points, %v", len(pts), err)
	}
}

// TestFeedDashboard: a fed dashboard describes its nodes on the game's
// clock, each polled under /node/ID/; it serves each node's pages as last
// set (503 before, 404 for a node it does not list, nothing but GET), and
// / leads to the page.
func TestFeedDashboard(t *testing.T) {
	feed := web.NewFeed()
	info := web.DashboardInfo{Title: "sim", Clock: web.ClockGame, Every: 250,
		Nodes: []web.DashboardNode{{ID: 1, City: "Tokyo"}, {ID: 7, City: "Paris"}}}
	h := web.FeedDashboard(info, feed)
	var got web.DashboardInfo
	if rec := get(t, h, http.MethodGet, "/dashboard/info.json", nil); rec.Code != 200 || json.Unmarshal(rec.Body.Bytes(), &got) != nil {
		t.Fatalf("info.json: %d %s", rec.Code, rec.Body)
	}
	if got.Clock != "game" || len(got.Nodes) != 2 || got.Nodes[1].Base == nil || *got.Nodes[1].Base != "/node/7" || got.Every != 250 {
		t.Errorf("info.json: %+v", got)
	}
	if info.Nodes[0].Base != nil {
		t.Error("FeedDashboard changed its argument's nodes")
	}
	if rec := get(t, h, http.MethodGet, "/node/1/metrics", nil); rec.Code != http.StatusServiceUnavailable {
		t.Errorf("a node not fed yet: %d, want 503", rec.Code)
	}
	feed.Set(1, []byte("overworld_players 3\n"), []byte(`{"node":1,"now_ns":250000000}`))
	feed.Set(1, []byte("overworld_players 4\n"), []byte(`{"node":1,"now_ns":500000000}`))
	for path, want := range map[string]string{"/node/1/metrics": "overworld_players 4\n", "/node/1/debug/world": `{"node":1,"now_ns":500000000}`} {
		rec := get(t, h, http.MethodGet, path, nil)
		if rec.Code != 200 || rec.Body.String() != want {
			t.Errorf("GET %s: %d %q, want %q", path, rec.Code, rec.Body, want)
		}
	}
	if feed.Sets() != 2 || feed.Reads() != 2 {
		t.Errorf("Sets() = %d, Reads() = %d, want 2 and 2", feed.Sets(), feed.Reads())
	}
	for _, path := range []string{"/node/2/metrics", "/node/x/metrics", "/node/1/debug/authority", "/node/1/admin/handoff", "/node/99999999999/metrics"} {
		if rec := get(t, h, http.MethodGet, path, nil); rec.Code != 404 {
			t.Errorf("GET %s: %d, want 404", path, rec.Code)
		}
	}
	if rec := get(t, h, http.MethodPost, "/node/1/metrics", nil); rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("POST: %d, want 405", rec.Code)
	}
	if rec := get(t, h, http.MethodGet, "/", nil); rec.Code != http.StatusFound || rec.Header().Get("Location") != "/dashboard" {
		t.Errorf("GET /: %d to %q", rec.Code, rec.Header().Get("Location"))
	}
	if rec := get(t, h, http.MethodGet, "/dashboard", nil); rec.Code != 200 || !strings.Contains(rec.Body.String(), "dashboard.js") {
		t.Errorf("GET /dashboard: %d", rec.Code)
	}
}
