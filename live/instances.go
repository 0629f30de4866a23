package live

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"

	"github.com/overworld/overworld/live/player"
)

// What a node keeps of the control plane's instances: the plane's record
// of every instance the node runs (and, on the server the plane picks
// for it, of the instances player hosts run), so that a plane that
// restarts rebuilds its instances from the nodes. The plane sends a node
// the whole list of records it keeps (POST /admin/instances) whenever
// that list changes; GET /admin/players reports it back. A node that
// restarts keeps none: its instances' objects failed over to other nodes,
// and the plane, which re-places them, gives their records to the nodes
// that run them next.

// InstanceRecord is the control plane's record of an open instance, as a
// node keeps it.
type InstanceRecord struct {
	ID string `json:"id"`
	// Node is the server or player host that runs the instance.
	Node uint32 `json:"node"`
	// Box is the instance's area of the world space: [x0, y0, x1, y1].
	Box [4]float64 `json:"box"`
	// Players are every player the instance was opened with, those who
	// left too, in the order it was opened with them.
	Players []InstanceRecordPlayer `json:"players"`
	// RTTMs is the players' RTT matrix in ms, row-major (N×N; empty: all
	// 0).
	RTTMs []float64 `json:"rtt_ms,omitempty"`
	// Left names the players who left.
	Left []string `json:"left,omitempty"`
	// Replica, for an instance on a player host, is the player whose
	// machine keeps the replica ("": none).
	Replica string `json:"replica,omitempty"`
	// Stamp orders the plane's records of one instance: of two nodes that
	// report it (one that was cut off while the instance moved), the
	// higher stamp is the plane's latest.
	Stamp int64 `json:"stamp"`
}

// InstanceRecordPlayer is one player of an InstanceRecord.
type InstanceRecordPlayer struct {
	ID string `json:"id"`
	// Host is the node ID of the player's player host (0: none).
	Host uint32 `json:"host,omitempty"`
	// Admin is the player host's admin endpoint ("": unknown).
	Admin string `json:"admin,omitempty"`
	// UptimeMinH and UptimeMaxH are the player's predicted uptime in
	// hours.
	UptimeMinH float64 `json:"uptime_min_h,omitempty"`
	UptimeMaxH float64 `json:"uptime_max_h,omitempty"`
}

// Limits of the instance records a node keeps.
const (
	// MaxInstanceRecords is the most instance records a node keeps.
	MaxInstanceRecords = 1024
	// MaxInstancePlayers is the most players an instance record lists.
	MaxInstancePlayers = 64
	// maxInstancesBody bounds the body of POST /admin/instances.
	maxInstancesBody = 16 << 20
	// maxUptimeH bounds a predicted uptime (a year).
	maxUptimeH = 24 * 366
)

// CheckInstanceID checks an instance ID: 1 to player.MaxPlayerID bytes of
// printable characters, no spaces (the rule of player IDs).
func CheckInstanceID(id string) error {
	if err := player.PlayerID(id).Validate(); err != nil {
		return fmt.Errorf("instance ID %q: want 1 to %d printable bytes, no spaces", id, player.MaxPlayerID)
	}
	return nil
}

// Check checks a record on its own: the ID, the node, a finite non-empty
// box, 1 to MaxInstancePlayers distinct players with valid IDs, hosts and
// admin endpoints and finite uptimes, an empty or N×N RTT matrix of
// finite RTTs in [0, 10 s], departed players and a replica among the
// players.
func (r *InstanceRecord) Check() error {
	if err := CheckInstanceID(r.ID); err != nil {
		return err
	}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("instance %q: %s", r.ID, fmt.Sprintf(format, args...))
	}
	if r.Node < 1 || r.Node > MaxNodeID {
		return bad("node %d: want 1 to %d", r.Node, MaxNodeID)
	}
	for i, v := range r.Box {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return bad("box[%d] %v: want a finite number", i, v)
		}
	}
	if r.Box[0] > r.Box[2] || r.Box[1] > r.Box[3] {
		return bad("box %v: want x0 ≤ x1 and y0 ≤ y1", r.Box)
	}
	n := len(r.Players)
	if n < 1 || n > MaxInstancePlayers {
		return bad("%d players: want 1 to %d", n, MaxInstancePlayers)
	}
	ids := map[string]bool{}
	for i, p := range r.Players {
		if err := player.PlayerID(p.ID).Validate(); err != nil {
			return bad("player %d: %v", i, err)
		}
		if ids[p.ID] {
			return bad("player %q listed twice", p.ID)
		}
		ids[p.ID] = true
		if p.Host > MaxNodeID {
			return bad("player %q: host node %d: want at most %d", p.ID, p.Host, MaxNodeID)
		}
		if p.Admin != "" {
			u, err := url.Parse(p.Admin)
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || p.Host == 0 {
				return bad("player %q: admin %q: want http://host:port, for a player host", p.ID, p.Admin)
			}
		}
		for _, h := range []float64{p.UptimeMinH, p.UptimeMaxH} {
			if math.IsNaN(h) || h < 0 || h > maxUptimeH {
				return bad("player %q: uptime %v h: want 0 to %d", p.ID, h, maxUptimeH)
			}
		}
	}
	if len(r.RTTMs) != 0 && len(r.RTTMs) != n*n {
		return bad("%d RTTs for %d players: want none or %d", len(r.RTTMs), n, n*n)
	}
	for i, v := range r.RTTMs {
		if math.IsNaN(v) || v < 0 || v > maxPingRTTMs {
			return bad("RTT %d: %v ms: want 0 to %d", i, v, maxPingRTTMs)
		}
	}
	left := map[string]bool{}
	for _, p := range r.Left {
		if !ids[p] || left[p] {
			return bad("left player %q: want a player of the instance, once", p)
		}
		left[p] = true
	}
	if r.Replica != "" && !ids[r.Replica] {
		return bad("replica %q: want a player of the instance", r.Replica)
	}
	if r.Stamp < 0 {
		return bad("stamp %d: want at least 0", r.Stamp)
	}
	return nil
}

// CheckInstanceRecords checks a node's list of records: at most
// MaxInstanceRecords, each valid (InstanceRecord.Check), no instance
// twice.
func CheckInstanceRecords(rs []InstanceRecord) error {
	if len(rs) > MaxInstanceRecords {
		return fmt.Errorf("%d instance records: want at most %d", len(rs), MaxInstanceRecords)
	}
	seen := map[string]bool{}
	for i := range rs {
		if err := rs[i].Check(); err != nil {
			return fmt.Errorf("record %d: %w", i, err)
		}
		if seen[rs[i].ID] {
			return fmt.Errorf("record %d: instance %q listed twice", i, rs[i].ID)
		}
		seen[rs[i].ID] = true
	}
	return nil
}

// ParseInstanceRecords decodes and checks the body of POST
// /admin/instances: a JSON array of records (CheckInstanceRecords).
func ParseInstanceRecords(b []byte) ([]InstanceRecord, error) {
	var rs []InstanceRecord
	if err := json.Unmarshal(b, &rs); err != nil {
		return nil, fmt.Errorf("want a JSON array of instance records: %v", err)
	}
	if rs == nil {
		return nil, fmt.Errorf("want a JSON array of instance records, got null")
	}
	if err := CheckInstanceRecords(rs); err != nil {
		return nil, err
	}
	return rs, nil
}

// serveInstances is POST /admin/instances with a JSON array of instance
// records: the control plane's records this node keeps from now on (they
// replace those kept before; [] keeps none).
func (d *Daemon) serveInstances(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "instances: use POST", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxInstancesBody+1))
	if err != nil {
		http.Error(w, fmt.Sprintf("instances: reading the body: %v", err), http.StatusBadRequest)
		return
	}
	if len(body) > maxInstancesBody {
		http.Error(w, fmt.Sprintf("instances: body above %d bytes", maxInstancesBody), http.StatusRequestEntityTooLarge)
		return
	}
	rs, err := ParseInstanceRecords(body)
	if err != nil {
		http.Error(w, "instances: "+err.Error(), http.StatusBadRequest)
		return
	}
	d.placed.mu.Lock()
	d.placed.instances = rs // never changed in place: replaced whole
	d.placed.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}
