package cli

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"slices"
	"sync/atomic"
	"time"

	"github.com/overworld/overworld/live"
	"github.com/overworld/overworld/live/localcluster"
	"github.com/overworld/overworld/live/plane"
	"github.com/overworld/overworld/live/player"
	"github.com/overworld/overworld/live/web"
)

// lobby is what "overworld cluster" serves browsers on one address: GET /
// issues a fresh token and sends the browser to a player node's /play
// with it (the node the control plane chooses when there is one, else
// the nodes in turn), POST /token issues another for the page's
// reconnects (for the node at ?ws=HOST:PORT: a token names its node; for
// the same player given ?player=NAME&key=KEY, the key the lobby gave the
// page with its first token, so that the page may take its avatar back
// after its node died), and /dashboard shows the whole cluster.
type lobby struct {
	c     *localcluster.Cluster
	ws    []string
	plane string // the control plane's URL ("": none)
	next  atomic.Int64
	// secret keys the players' names (key): a page proves with the key
	// that the name it asks a token for is its own.
	secret []byte
	srv    *http.Server
	ln     net.Listener
}

// startLobby listens on addr and serves the lobby for c, whose game world
// is w × h metres, with the control plane at planeURL ("": none).
func startLobby(addr string, c *localcluster.Cluster, w, h float64, planeURL string) (*lobby, error) {
	l := &lobby{c: c, ws: c.PlayerWSAddrs(), plane: planeURL, secret: make([]byte, 32)}
	if _, err := rand.Read(l.secret); err != nil {
		return nil, err
	}
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

// newPlayer names the next browser player.
func (l *lobby) newPlayer() player.PlayerID {
	return player.PlayerID(fmt.Sprintf("browser%d", l.next.Add(1)))
}

// key is the proof that the page given it plays player p.
func (l *lobby) key(p player.PlayerID) string {
	m := hmac.New(sha256.New, l.secret)
	m.Write([]byte(p))
	return base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}

// issue signs a token for p to join the node whose WebSocket endpoint is
// ws (host:port), which must be one of the cluster's.
func (l *lobby) issue(p player.PlayerID, ws string) (string, error) {
	i := slices.Index(l.ws, ws)
	if i < 0 {
		return "", fmt.Errorf("%s is not a player node of this cluster", ws)
	}
	tok, err := l.c.IssueToken(p, l.c.IDs()[i], 5*time.Minute) // the nodes refuse tokens valid for longer than 10 min
	if err != nil {
		return "", err
	}
	return player.EncodeToken(tok), nil
}

// placed asks the control plane where player p plays: that node's
// WebSocket endpoint (host:port), or "" when there is no plane or it
// places no one now (every node full, rebuilding). The pings it reports
// are this process's TCP connection times to the nodes' WebSocket
// endpoints: the browser runs on this machine too.
func (l *lobby) placed(ctx context.Context, p player.PlayerID) string {
	if l.plane == "" {
		return ""
	}
	var pings []live.PingSample
	ids := l.c.IDs()
	for i, a := range l.ws {
		start := time.Now()
		conn, err := net.DialTimeout("tcp", a, time.Second)
		if err != nil {
			continue
		}
		rtt := time.Since(start)
		conn.Close()
		pings = append(pings, live.PingSample{Node: uint32(ids[i]), RTTMs: float64(rtt.Microseconds()) / 1000})
	}
	if len(pings) == 0 {
		return ""
	}
	body, _ := json.Marshal(plane.JoinRequest{Player: string(p), Pings: pings})
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, l.plane+"/v1/join", bytes.NewReader(body))
	if err != nil {
		return ""
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return ""
	}
	defer resp.Body.Close()
	var a plane.Admission
	if resp.StatusCode != http.StatusOK || json.NewDecoder(io.LimitReader(resp.Body, 1<<16)).Decode(&a) != nil {
		return ""
	}
	u, err := url.Parse(a.WS)
	if err != nil || u.Host == "" {
		return ""
	}
	return u.Host
}

func (l *lobby) play(w http.ResponseWriter, r *http.Request) {
	p := l.newPlayer()
	node := l.placed(r.Context(), p)
	if node == "" {
		node = l.ws[int(l.next.Load())%len(l.ws)]
	}
	tok, err := l.issue(p, node)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	frag := url.Values{"token": {tok}, "lobby": {l.URL()}, "player": {string(p)}, "key": {l.key(p)}}
	http.Redirect(w, r, "http://"+node+"/play#"+frag.Encode(), http.StatusFound)
}

func (l *lobby) token(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Access-Control-Allow-Origin", "*")
	q := r.URL.Query()
	p := l.newPlayer()
	if name := q.Get("player"); name != "" || q.Get("key") != "" {
		if !hmac.Equal([]byte(q.Get("key")), []byte(l.key(player.PlayerID(name)))) {
			http.Error(w, "token: player="+name+": the key is not the one this lobby gave that player", http.StatusForbidden)
			return
		}
		p = player.PlayerID(name)
	}
	tok, err := l.issue(p, q.Get("ws"))
	if err != nil {
		http.Error(w, "token: ws="+r.URL.Query().Get("ws")+": "+err.Error(), http.StatusBadRequest)
		return
	}
	w.Header().Set("Cache-Control", "no-store")
	fmt.Fprintln(w, tok)
}
