package live

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"time"

	"github.com/overworld/overworld/live/player"
	"github.com/overworld/overworld/node"
	"github.com/overworld/overworld/wire"
)

// Player handoffs: a daemon hands a player to a peer (its avatar migrates
// there, and the client is redirected, make-before-break: see
// live/player's Gateway.HandOff) when told to (HandOff, POST
// /admin/handoff) and when it drains: before its gateway closes, every
// player goes to a live peer that has player endpoints in the peer list,
// so a rolling restart drops no player.

// ErrHandOff wraps the reasons a handoff is refused.
var ErrHandOff = errors.New("live: handoff refused")

// handOffWait bounds how long HandOff waits for the frame that acts on
// it, and the drain for the players handed off to leave.
const handOffWait = 3 * time.Second

// playerTarget returns peer id's player endpoints.
func (d *Daemon) playerTarget(id uint32) (player.Target, bool) {
	if p, ok := d.peers.Get(wire.NodeID(id)); ok && (p.PlayerQUIC != "" || p.PlayerWS != "") {
		return player.Target{Node: id, QUIC: p.PlayerQUIC, WS: p.PlayerWS}, true
	}
	return player.Target{}, false
}

// HandOff hands player p to peer node to, which must be in the peer list
// with a player endpoint: p's avatar migrates there and its client is
// redirected. It returns once a frame acted on it (nil, or why it was
// refused: a wrapped ErrHandOff).
func (d *Daemon) HandOff(p player.PlayerID, to uint32) error {
	if d.players == nil {
		return fmt.Errorf("%w: this node has no player endpoint", ErrHandOff)
	}
	t, ok := d.playerTarget(to)
	if !ok {
		return fmt.Errorf("%w: node %d is not a peer with a player endpoint (peers[].player_quic, player_ws)", ErrHandOff, to)
	}
	select {
	case err := <-d.players.gw.HandOff(p, t):
		if err != nil {
			return fmt.Errorf("%w: %w", ErrHandOff, err)
		}
		return nil
	case <-time.After(handOffWait):
		return fmt.Errorf("%w: no frame ran for %v (is the node stopping?)", ErrHandOff, handOffWait)
	}
}

// serveHandOff is POST /admin/handoff?player=P&node=N.
func (d *Daemon) serveHandOff(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "handoff: use POST", http.StatusMethodNotAllowed)
		return
	}
	p := player.PlayerID(r.URL.Query().Get("player"))
	if err := p.Validate(); err != nil {
		http.Error(w, fmt.Sprintf("handoff: player %q: %v", p, err), http.StatusBadRequest)
		return
	}
	to, err := strconv.ParseUint(r.URL.Query().Get("node"), 10, 32)
	if err != nil || to == 0 || to == uint64(d.cfg.ID) {
		http.Error(w, fmt.Sprintf("handoff: node %q: want the ID of a peer", r.URL.Query().Get("node")), http.StatusBadRequest)
		return
	}
	if err := d.HandOff(p, uint32(to)); err != nil {
		http.Error(w, err.Error(), http.StatusConflict)
		return
	}
	fmt.Fprintf(w, "player %q handed to node %d\n", p, to)
}

// handOffPlayers runs at shutdown, the driver stopped: it hands every
// player to a live peer with a player endpoint (the avatar's backup when
// it is one, else the one given the fewest), runs frames until the
// clients left or handOffWait passed, and returns how many it handed off.
func (d *Daemon) handOffPlayers() int {
	var peers []player.Target
	for _, id := range d.peers.IDs() {
		if t, ok := d.playerTarget(uint32(id)); ok && d.mesh.Connected(id) && !slices.Contains(d.node.Dead(nil), id) {
			peers = append(peers, t)
		}
	}
	gw := d.players.gw
	ps := gw.Players()
	if len(peers) == 0 || len(ps) == 0 {
		return 0
	}
	given := map[uint32]int{}
	var pending []<-chan error
	for _, p := range ps {
		if p.Moving {
			continue
		}
		t := peers[0]
		if b, ok := d.node.BackupOf(p.Avatar); ok {
			if k := slices.IndexFunc(peers, func(t player.Target) bool { return t.Node == uint32(b) }); k >= 0 {
				t = peers[k]
			}
		} else {
			t = slices.MinFunc(peers, func(a, b player.Target) int { return cmp.Compare(given[a.Node], given[b.Node]) })
		}
		given[t.Node]++
		pending = append(pending, gw.HandOff(p.Player, t))
	}
	ctx, cancel := context.WithTimeout(context.Background(), handOffWait)
	defer cancel()
	handed := 0
	first := true
	d.driver.AddHook(FrameHookFunc(func(time.Duration, *node.Node) {
		if first { // the gateway's Frame, before this hook, acted on the handoffs
			first = false
			for _, c := range pending {
				if <-c == nil {
					handed++
				}
			}
		}
		if gw.Stats().Players == 0 {
			cancel()
		}
	}))
	d.log.Info("handing players to peers", "players", len(pending), "peers", len(peers))
	_ = d.driver.Run(ctx)
	cancel()
	d.log.Info("players handed off", "handed", handed, "still_here", gw.Stats().Players)
	return handed
}
