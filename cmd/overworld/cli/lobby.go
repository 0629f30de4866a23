package cli

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"sync/atomic"
	"time"

	"github.com/overworld/overworld/live"
	"github.com/overworld/overworld/live/localcluster"
	"github.com/overworld/overworld/live/player"
	"github.com/overworld/overworld/live/web"
)

// lobby is what "overworld cluster" serves browsers on one address: GET /
// issues a fresh token and sends the browser to a player node's /play
// with it (the nodes in turn), POST /token issues another for the page's
// reconnects, and /dashboard shows the whole cluster.
type lobby struct {
	c    *localcluster.Cluster
	ws   []string
	next atomic.Int64
	srv  *http.Server
	ln   net.Listener
}

// startLobby listens on addr and serves the lobby for c, whose game world
// is w × h metres.
func startLobby(addr string, c *localcluster.Cluster, w, h float64) (*lobby, error) {
	l := &lobby{c: c, ws: c.PlayerWSAddrs()}
	if len(l.ws) == 0 {
		return nil, errors.New("the nodes have no WebSocket player endpoint")
	}
	var nodes []web.ClusterNode
	cities := c.Cities()
	for i, id := range c.IDs() {
		nodes = append(nodes, web.ClusterNode{DashboardNode: live.CityNode(uint32(id), cities[i]), Admin: "http://" + c.AdminAddr(i)})
	}
	mux := http.NewServeMux()
	dash := web.ClusterDashboard(fmt.Sprintf("overworld cluster: %d nodes", len(nodes)), nodes, w, h, nil)
	mux.Handle("/dashboard", dash)
	mux.Handle("/dashboard.js", dash)
	mux.Handle("/dashboard/", dash)
	mux.Handle("/node/", dash)
	mux.HandleFunc("GET /{$}", l.play)
	mux.HandleFunc("GET /play", l.play)
	mux.HandleFunc("POST /token", l.token)
	var err error
	if l.ln, err = net.Listen("tcp", addr); err != nil {
		return nil, err
	}
	l.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	go l.srv.Serve(l.ln)
	return l, nil
}

// URL is the lobby's address for a browser.
func (l *lobby) URL() string { return "http://" + l.ln.Addr().String() + "/" }

// Close stops the lobby.
func (l *lobby) Close() { l.srv.Close() }

func (l *lobby) issue() (string, error) {
	k := l.next.Add(1)
	tok, err := l.c.IssueToken(player.PlayerID(fmt.Sprintf("browser%d", k)), time.Hour)
	if err != nil {
		return "", err
	}
	return player.EncodeToken(tok), nil
}

func (l *lobby) play(w http.ResponseWriter, r *http.Request) {
	tok, err := l.issue()
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	node := l.ws[int(l.next.Load())%len(l.ws)]
	frag := url.Values{"token": {tok}, "lobby": {l.URL()}}
	http.Redirect(w, r, "http://"+node+"/play#"+frag.Encode(), http.StatusFound)
}

func (l *lobby) token(w http.ResponseWriter, r *http.Request) {
	tok, err := l.issue()
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Access-Control-Allow-Origin", "*")
	w.Header().Set("Cache-Control", "no-store")
	fmt.Fprintln(w, tok)
}
