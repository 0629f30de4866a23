package live

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/overworld/overworld/live/player"
	"github.com/overworld/overworld/node"
	"github.com/overworld/overworld/wire"
	"github.com/overworld/overworld/world"
)

// What a node keeps for the control plane (package live/plane): the
// players in game here with their avatars' positions (refreshed by a frame
// hook), and the RTTs their clients measured, which the plane stores here
// (POST /admin/pings) so that a plane that restarts rebuilds its state from
// the nodes (GET /admin/players) instead of holding any of its own.

// PlayerReport is one player in game on a node, as GET /admin/players
// gives it.
type PlayerReport struct {
	ID string `json:"id"`
	// Samples are the RTTs the player's client measured, as the plane
	// stored them here.
	Samples []PingSample `json:"samples,omitempty"`
	// Located is true when X and Y hold the avatar's position.
	Located bool    `json:"located"`
	X       float64 `json:"x"`
	Y       float64 `json:"y"`
	// Moving is true while the player is handed to another node.
	Moving bool `json:"moving,omitempty"`
}

// PingSample is one RTT a client measured to a node.
type PingSample struct {
	Node  uint32  `json:"node"`
	RTTMs float64 `json:"rtt_ms"`
}

// PlayersReport is the body of GET /admin/players.
type PlayersReport struct {
	Node        uint32         `json:"node"`
	Incarnation uint16         `json:"incarnation"`
	Players     []PlayerReport `json:"players"`
	// Instances are the control plane's instance records this node keeps
	// (instances.go).
	Instances []InstanceRecord `json:"instances,omitempty"`
	// Peers are the round-trip times this node measures to the peers it
	// is connected to (Mesh.PeerRTTs), by node ID: the control plane
	// places the nodes in network coordinates with them.
	Peers []PeerRTT `json:"peers,omitempty"`
}

// PeerRTT is the round-trip time a node measures to one peer.
type PeerRTT struct {
	Node  uint32  `json:"node"`
	RTTMs float64 `json:"rtt_ms"`
}

// CheckPeerRTTs returns an error naming the first entry of a report's
// Peers that is not a node ID (1 to MaxNodeID, each once, not the
// reporting node self) with a finite RTT of 0 to 10,000 ms.
func CheckPeerRTTs(self uint32, ps []PeerRTT) error {
	seen := map[uint32]bool{}
	for i, p := range ps {
		switch {
		case p.Node == 0 || p.Node > MaxNodeID || p.Node == self:
			return fmt.Errorf("peer RTT %d: node %d: want a peer's ID, 1 to %d", i, p.Node, MaxNodeID)
		case seen[p.Node]:
			return fmt.Errorf("peer RTT %d: node %d listed twice", i, p.Node)
		case math.IsNaN(p.RTTMs) || p.RTTMs < 0 || p.RTTMs > maxPingRTTMs:
			return fmt.Errorf("peer RTT %d: node %d: %v ms, want 0 to %d", i, p.Node, p.RTTMs, maxPingRTTMs)
		}
		seen[p.Node] = true
	}
	return nil
}

// Limits of the pings a node stores.
const (
	// MaxPingSamples is the most samples a node keeps per player.
	MaxPingSamples = 64
	// MaxPingPlayers is the most players a node keeps samples for.
	MaxPingPlayers = 4096
	// maxPingRTTMs is the largest RTT a sample may have (10 s).
	maxPingRTTMs = 10_000
	// pingsForget is how long a node keeps the samples of a player that
	// is not in game here (one admitted, not yet connected, or gone).
	pingsForget = time.Minute
)

// placedState is what the frame hook and the admin handlers share.
type placedState struct {
	regions chan regionReq // region migrations for the frame goroutine

	mu      sync.Mutex
	players []PlayerReport // as of the latest frame, without samples
	samples map[player.PlayerID]*pingEntry
	// instances are the plane's instance records (POST /admin/instances).
	instances []InstanceRecord
}

type pingEntry struct {
	samples []PingSample
	seen    time.Time // when the player was last in game here, or the samples arrived
}

// placedHook records the players in game and their avatars' positions (a
// frame hook).
func (d *Daemon) placedHook(_ time.Duration, n *node.Node) {
	if d.players == nil {
		return
	}
	in := d.players.gw.Players()
	out := make([]PlayerReport, 0, len(in))
	for _, p := range in {
		r := PlayerReport{ID: string(p.Player), Moving: p.Moving}
		if obj, _, ok := n.Lookup(p.Avatar); ok {
			loc := obj.State().Location()
			if !math.IsNaN(loc[0]) && !math.IsInf(loc[0], 0) && !math.IsNaN(loc[1]) && !math.IsInf(loc[1], 0) {
				r.Located, r.X, r.Y = true, loc[0], loc[1]
			}
		}
		out = append(out, r)
	}
	now := time.Now()
	d.placed.mu.Lock()
	d.placed.players = out
	for _, p := range out {
		if e, ok := d.placed.samples[player.PlayerID(p.ID)]; ok {
			e.seen = now
		}
	}
	d.placed.mu.Unlock()
}

// servePlayers is GET /admin/players: the players in game here, with the
// RTTs their clients measured and their positions.
func (d *Daemon) servePlayers(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		w.Header().Set("Allow", http.MethodGet)
		http.Error(w, "players: use GET", http.StatusMethodNotAllowed)
		return
	}
	rep := PlayersReport{Node: d.cfg.ID, Incarnation: d.inc, Players: []PlayerReport{}}
	d.placed.mu.Lock()
	for _, p := range d.placed.players {
		if e, ok := d.placed.samples[player.PlayerID(p.ID)]; ok {
			p.Samples = slices.Clone(e.samples)
		}
		rep.Players = append(rep.Players, p)
	}
	rep.Instances = d.placed.instances
	d.placed.mu.Unlock()
	rtts := d.mesh.PeerRTTs()
	for _, id := range slices.Sorted(maps.Keys(rtts)) {
		ms := float64(rtts[id].Microseconds()) / 1000
		rep.Peers = append(rep.Peers, PeerRTT{Node: uint32(id), RTTMs: min(ms, maxPingRTTMs)})
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(rep)
}

// servePings is POST /admin/pings?player=P with a JSON array of samples:
// the control plane stores what P's client measured here, merged with
// what was stored before (the latest sample per node wins).
func (d *Daemon) servePings(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "pings: use POST", http.StatusMethodNotAllowed)
		return
	}
	p := player.PlayerID(r.URL.Query().Get("player"))
	if err := p.Validate(); err != nil {
		http.Error(w, fmt.Sprintf("pings: player %q: %v", p, err), http.StatusBadRequest)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 64<<10))
	if err != nil {
		http.Error(w, fmt.Sprintf("pings: reading the body: %v", err), http.StatusBadRequest)
		return
	}
	samples, err := ParsePingSamples(body)
	if err != nil {
		http.Error(w, "pings: "+err.Error(), http.StatusBadRequest)
		return
	}
	if err := d.storePings(p, samples, time.Now()); err != nil {
		http.Error(w, "pings: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// ParsePingSamples decodes and checks a JSON array of ping samples: at
// most MaxPingSamples, nodes 1 to MaxNodeID, each once, RTTs finite in
// [0, 10 s].
func ParsePingSamples(b []byte) ([]PingSample, error) {
	var ss []PingSample
	if err := json.Unmarshal(b, &ss); err != nil {
		return nil, fmt.Errorf("want a JSON array of {\"node\": N, \"rtt_ms\": X}: %v", err)
	}
	if len(ss) == 0 || len(ss) > MaxPingSamples {
		return nil, fmt.Errorf("%d samples: want 1 to %d", len(ss), MaxPingSamples)
	}
	seen := map[uint32]bool{}
	for i, s := range ss {
		switch {
		case s.Node < 1 || s.Node > MaxNodeID:
			return nil, fmt.Errorf("sample %d: node %d: want 1 to %d", i, s.Node, MaxNodeID)
		case seen[s.Node]:
			return nil, fmt.Errorf("sample %d: node %d measured twice", i, s.Node)
		case math.IsNaN(s.RTTMs) || s.RTTMs < 0 || s.RTTMs > maxPingRTTMs:
			return nil, fmt.Errorf("sample %d: RTT %v ms: want 0 to %d", i, s.RTTMs, maxPingRTTMs)
		}
		seen[s.Node] = true
	}
	return ss, nil
}

// storePings merges samples into player p's, forgetting first the
// players not seen for pingsForget.
func (d *Daemon) storePings(p player.PlayerID, samples []PingSample, now time.Time) error {
	d.placed.mu.Lock()
	defer d.placed.mu.Unlock()
	if d.placed.samples == nil {
		d.placed.samples = map[player.PlayerID]*pingEntry{}
	}
	e, ok := d.placed.samples[p]
	if !ok {
		for id, e := range d.placed.samples {
			if now.Sub(e.seen) > pingsForget {
				delete(d.placed.samples, id)
			}
		}
		if len(d.placed.samples) >= MaxPingPlayers {
			return fmt.Errorf("samples of %d players stored already, at most %d", len(d.placed.samples), MaxPingPlayers)
		}
		e = &pingEntry{}
		d.placed.samples[p] = e
	}
	for _, s := range samples {
		if i := slices.IndexFunc(e.samples, func(x PingSample) bool { return x.Node == s.Node }); i >= 0 {
			e.samples[i] = s
		} else if len(e.samples) < MaxPingSamples {
			e.samples = append(e.samples, s)
		}
	}
	e.seen = now
	return nil
}

// regionReq asks the frame goroutine to migrate a region's objects.
type regionReq struct {
	box   world.Box
	to    wire.NodeID
	reply chan regionReply
	// prefer, when set, asks for node.PreferBackup(box, prefer) instead of
	// a migration (an empty non-nil slice removes the preference).
	prefer []wire.NodeID
	// want names objects to migrate wherever they are (a chained
	// migration passes on what the one before moved here); the reply
	// says which of them are known to be deleted.
	want map[world.ObjectID]bool
}

type regionReply struct {
	moved   []world.ObjectID // migrated, with what is attached to them
	pending []world.ObjectID // still here, on their way (ErrMigrating)
	gone    []world.ObjectID // wanted, and known here to be deleted
	err     error
}

// migrateRegion runs the pending region migrations (a frame hook): every
// primary of this node inside the box that is not a player's avatar (nor
// attached to another object: it moves with it) migrates to the target.
func (d *Daemon) migrateRegion(now time.Duration, n *node.Node) {
	for {
		var req regionReq
		select {
		case req = <-d.placed.regions:
		default:
			return
		}
		if req.prefer != nil {
			req.reply <- regionReply{err: n.PreferBackup(req.box, req.prefer)}
			continue
		}
		avatars := map[world.ObjectID]bool{}
		if d.players != nil {
			for _, p := range d.players.gw.Players() {
				avatars[p.Avatar] = true
			}
		}
		dims := n.Config().Registry.Space().Dims()
		var rep regionReply
		for _, info := range n.Primaries(nil) {
			if avatars[info.ID] || !req.box.Contains(info.State.Location(), dims) && !req.want[info.ID] {
				continue
			}
			if obj, _, ok := n.Lookup(info.ID); ok {
				if a, ok := obj.(world.Attacher); ok && a.AttachTo() != 0 {
					continue
				}
			}
			ids, e := n.Migrate(now, info.ID, req.to)
			if errors.Is(e, node.ErrMigrating) {
				rep.pending = append(rep.pending, info.ID)
				continue
			}
			if e != nil {
				rep.err = e
				continue
			}
			rep.moved = append(rep.moved, ids...)
		}
		for id := range req.want {
			if n.Deleted(id) {
				rep.gone = append(rep.gone, id)
			}
		}
		slices.Sort(rep.gone)
		slices.Sort(rep.pending)
		req.reply <- rep
	}
}

// serveMigrateRegion is POST /admin/migrate-region?x0=&y0=&x1=&y1=&node=N[&want=ID,...]:
// this node's objects in the box [x0, x1] × [y0, y1] that are not players'
// avatars migrate to peer N, of the static list or gossiped (the control
// plane moves a region of the world to its new core this way, asking
// every node). want names objects (by their 64-bit IDs) to migrate too
// wherever they are: the plane passes on what a migration to this node
// moved when it chains a second one. It answers with the number
// migrated, their IDs, those still here on their way to a node (their
// migration waits for the old backup to give its copy up, and may be
// aborted: asked again, the node migrates them anew), and the wanted IDs
// known here to be deleted:
// {"moved": 2, "ids": [...], "pending": [...], "gone": [...]}. An object
// has left once it is in none of the lists of a later answer.
func (d *Daemon) serveMigrateRegion(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "migrate-region: use POST", http.StatusMethodNotAllowed)
		return
	}
	q := r.URL.Query()
	box, err := boxQuery(q)
	if err != nil {
		http.Error(w, "migrate-region: "+err.Error(), http.StatusBadRequest)
		return
	}
	to, err := strconv.ParseUint(q.Get("node"), 10, 32)
	if err != nil || to == 0 || to == uint64(d.cfg.ID) || !slices.Contains(d.peers.IDs(), wire.NodeID(to)) {
		http.Error(w, fmt.Sprintf("migrate-region: node %q: want the ID of a peer", q.Get("node")), http.StatusBadRequest)
		return
	}
	want, err := wantQuery(q.Get("want"))
	if err != nil {
		http.Error(w, "migrate-region: "+err.Error(), http.StatusBadRequest)
		return
	}
	rep, ok := d.askRegion(w, r, "migrate-region", regionReq{box: box, to: wire.NodeID(to), want: want})
	if !ok {
		return
	}
	if rep.err != nil && len(rep.moved)+len(rep.pending) == 0 {
		http.Error(w, "migrate-region: "+rep.err.Error(), http.StatusConflict)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(MigrateAnswer{Moved: len(rep.moved), IDs: objectIDs(rep.moved), Pending: objectIDs(rep.pending), Gone: objectIDs(rep.gone)})
}

// MigrateAnswer is the answer of a node's POST /admin/migrate-region:
// how many objects it migrated, their IDs, those still there on their
// way to a node, and which of the objects the request wanted are known
// there to be deleted.
type MigrateAnswer struct {
	Moved   int      `json:"moved"`
	IDs     []uint64 `json:"ids"`
	Pending []uint64 `json:"pending"`
	Gone    []uint64 `json:"gone"`
}

// MaxWant bounds the objects one migrate-region request may name.
const MaxWant = 10000

// wantQuery reads a migrate-region request's want list: object IDs in
// decimal, comma-separated (none if s is empty).
func wantQuery(s string) (map[world.ObjectID]bool, error) {
	if s == "" {
		return nil, nil
	}
	parts := strings.Split(s, ",")
	if len(parts) > MaxWant {
		return nil, fmt.Errorf("want: %d object IDs, at most %d", len(parts), MaxWant)
	}
	want := make(map[world.ObjectID]bool, len(parts))
	for _, p := range parts {
		id, err := strconv.ParseUint(p, 10, 64)
		if err != nil || id == 0 {
			return nil, fmt.Errorf("want: object ID %q: want a positive decimal integer", p)
		}
		want[world.ObjectID(id)] = true
	}
	return want, nil
}

// objectIDs returns ids as integers, an empty list for none.
func objectIDs(ids []world.ObjectID) []uint64 {
	out := make([]uint64, len(ids))
	for i, id := range ids {
		out[i] = uint64(id)
	}
	return out
}

// boxQuery reads the box [x0, x1] × [y0, y1] of an admin request's query
// (unbounded in the other attributes).
func boxQuery(q url.Values) (world.Box, error) {
	var v [4]float64
	for i, k := range []string{"x0", "y0", "x1", "y1"} {
		x, err := strconv.ParseFloat(q.Get(k), 64)
		if err != nil || math.IsNaN(x) || math.IsInf(x, 0) {
			return world.Box{}, fmt.Errorf("%s %q: want a finite number", k, q.Get(k))
		}
		v[i] = x
	}
	if v[0] > v[2] || v[1] > v[3] {
		return world.Box{}, fmt.Errorf("box [%g, %g] × [%g, %g] is empty", v[0], v[2], v[1], v[3])
	}
	return world.Box{Min: world.Point{v[0], v[1], math.Inf(-1)}, Max: world.Point{v[2], v[3], math.Inf(1)}}, nil
}

// askRegion hands req to the frame loop and waits for its reply; it
// answers the request itself (and reports false) when the queue is full,
// no frame runs in time, or the client went away. what names the
// endpoint in errors.
func (d *Daemon) askRegion(w http.ResponseWriter, r *http.Request, what string, req regionReq) (regionReply, bool) {
	req.reply = make(chan regionReply, 1)
	select {
	case d.placed.regions <- req:
	default:
		http.Error(w, what+": too many requests waiting", http.StatusServiceUnavailable)
		return regionReply{}, false
	}
	select {
	case rep := <-req.reply:
		return rep, true
	case <-time.After(handOffWait):
		http.Error(w, what+": no frame ran (is the node stopping?)", http.StatusServiceUnavailable)
	case <-r.Context().Done():
	}
	return regionReply{}, false
}

// servePreferBackup is POST /admin/prefer-backup?x0=&y0=&x1=&y1=&nodes=A,B:
// node.PreferBackup for the box [x0, x1] × [y0, y1]: this node's
// primaries there choose their backups among A, then B (an instance on a
// player host keeps its backups on the replicated host this way); an
// empty nodes removes the preference.
func (d *Daemon) servePreferBackup(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "prefer-backup: use POST", http.StatusMethodNotAllowed)
		return
	}
	q := r.URL.Query()
	box, err := boxQuery(q)
	if err != nil {
		http.Error(w, "prefer-backup: "+err.Error(), http.StatusBadRequest)
		return
	}
	prefer := []wire.NodeID{}
	if s := q.Get("nodes"); s != "" {
		for _, f := range strings.Split(s, ",") {
			id, err := strconv.ParseUint(f, 10, 32)
			if err != nil || id == 0 || id > MaxNodeID || slices.Contains(prefer, wire.NodeID(id)) || len(prefer) == 16 {
				http.Error(w, fmt.Sprintf("prefer-backup: nodes %q: want up to 16 distinct node IDs, comma-separated", s), http.StatusBadRequest)
				return
			}
			prefer = append(prefer, wire.NodeID(id))
		}
	}
	rep, ok := d.askRegion(w, r, "prefer-backup", regionReq{box: box, prefer: prefer})
	if !ok {
		return
	}
	if rep.err != nil {
		http.Error(w, "prefer-backup: "+rep.err.Error(), http.StatusBadRequest)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}
