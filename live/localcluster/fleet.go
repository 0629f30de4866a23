package localcluster

import (
	"context"
	"crypto/ed25519"
	"crypto/tls"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/overworld/overworld/live"
	"github.com/overworld/overworld/live/pki"
	"github.com/overworld/overworld/live/plane"
	"github.com/overworld/overworld/live/player"
	"github.com/overworld/overworld/wire"
	"github.com/overworld/overworld/world"
)

// Fleet is a cluster's bots as real clients: one goroutine per bot, each
// with its own QUIC connection to a node's player endpoint, joining with a
// token it signs with the coordinator key (as a coordinator would hand it
// out), playing with its own player.Brain. A bot whose node ends its
// session, fails or falls silent joins the next node in the cluster's
// order with a fresh token.
type Fleet struct {
	bots []*fleetBot
	wg   sync.WaitGroup
}

// fleetBot is one bot's record, shared between its goroutine and readers.
type fleetBot struct {
	id player.PlayerID

	mu       sync.Mutex
	node     int   // index of the node it plays on now; -1: none
	joins    int   // sessions joined (the first, then rejoins)
	joinsOn  []int // sessions joined, by node index
	endsOn   []int // sessions ended (by either side), by node index
	failed   int   // dials or joins that failed
	lastErr  error
	total    player.ClientStats // finished sessions, summed
	cur      *player.Client     // the session being played (nil: none)
	planeErr error              // the last error from the control plane
	pinged   int                // RTT samples reported to the plane
	// The avatar of a session that ended without the node's word (0:
	// none), the last input it saw applied, the node index it was on and
	// the avatar's deed that proves it the bot's.
	lost     world.ObjectID
	lostSeq  uint64
	lostOn   int
	lostDeed []byte
	resumed  int // sessions resumed on a survivor with the same avatar
}

// FleetConfig says where and how the bots play; Cluster.FleetConfig
// fills in the cluster's part.
type FleetConfig struct {
	Addrs []string      // the player nodes' QUIC endpoints, in slot order
	IDs   []wire.NodeID // their node IDs (for the certificate's name)
	CA    *pki.CA       // the cluster CA, verifying the nodes' certificates
	Key   ed25519.PrivateKey
	// Brain returns bot k's brain (k from 0); a new one for each of its
	// sessions.
	Brain   func(k int) player.Brain
	PerNode int           // bot k starts on node k / PerNode
	Idle    time.Duration // a silent node is left after this
	Name    string        // player ID prefix: bots are Name-1, Name-2, ...
	// Plane, when set, is the control plane's base URL (Plane.URL): each
	// session asks it where to play (POST /v1/join with the first
	// JoinProbes nodes' RTTs, or GET /v1/player when it placed the bot
	// already), then reports the RTTs it asks for (POST /v1/pings). A bot
	// that cannot reach it plays on its own node, k / PerNode. Pings
	// gives bot k's RTT (ms) to node id, as its client would measure it.
	Plane      string
	Pings      func(k int, id wire.NodeID) float64
	JoinProbes int // default 4
}

// FleetConfig returns how bots reach the cluster's player nodes (Config.Players):
// bot k starts on player node k / PlayersPerNode, leaves a node silent
// for max(5 s, 50 frames), and plays with brain(k).
func (c *Cluster) FleetConfig(brain func(k int) player.Brain) FleetConfig {
	return FleetConfig{Addrs: c.playerAddrs, IDs: c.ids[:len(c.playerAddrs)], CA: c.ca, Key: c.key, Brain: brain,
		PerNode: c.cfg.PlayersPerNode, Idle: max(5*time.Second, 50*c.Frame()), Name: "bot"}
}

// StartFleet starts n bots; they play until ctx ends (then Wait). It
// rejects a configuration without player endpoints, key, CA, brain or a
// valid name before starting any.
func StartFleet(ctx context.Context, fc FleetConfig, n int) (*Fleet, error) {
	switch {
	case len(fc.Addrs) == 0 || len(fc.IDs) != len(fc.Addrs):
		return nil, fmt.Errorf("%w: fleet: %d player endpoints for %d node IDs (start the cluster with Players)", ErrConfig, len(fc.Addrs), len(fc.IDs))
	case fc.CA == nil || fc.Key == nil || fc.Brain == nil:
		return nil, fmt.Errorf("%w: fleet: a CA, a coordinator key and a brain are required", ErrConfig)
	case fc.PerNode < 1 || n < 0:
		return nil, fmt.Errorf("%w: fleet: %d bots, %d per node", ErrConfig, n, fc.PerNode)
	case fc.Plane != "" && fc.Pings == nil:
		return nil, fmt.Errorf("%w: fleet: a plane without the bots' pings", ErrConfig)
	}
	if fc.JoinProbes == 0 {
		fc.JoinProbes = 4
	}
	if err := player.PlayerID(fmt.Sprintf("%s-%d", fc.Name, max(n, 1))).Validate(); err != nil {
		return nil, fmt.Errorf("%w: fleet: name %q: %w", ErrConfig, fc.Name, err)
	}
	f := &Fleet{}
	for k := range n {
		b := &fleetBot{id: player.PlayerID(fmt.Sprintf("%s-%d", fc.Name, k+1)), node: -1,
			joinsOn: make([]int, len(fc.Addrs)), endsOn: make([]int, len(fc.Addrs))}
		f.bots = append(f.bots, b)
		f.wg.Go(func() { b.play(ctx, fc, k) })
	}
	return f, nil
}

// Wait waits for every bot to stop (after the context ends).
func (f *Fleet) Wait() { f.wg.Wait() }

// play runs one bot's sessions until ctx ends. After a session that
// ended with its node's death, the bot first tries to take its avatar
// back where it failed over (resume), then joins afresh.
func (b *fleetBot) play(ctx context.Context, fc FleetConfig, k int) {
	i := min(k/fc.PerNode, len(fc.Addrs)-1)
	for ctx.Err() == nil {
		var err error
		if b.lost != 0 {
			err = b.resume(ctx, fc, k)
			if err == nil || ctx.Err() != nil {
				continue
			}
		}
		err = b.session(ctx, fc, k, i)
		if ctx.Err() != nil {
			return
		}
		b.mu.Lock()
		b.node, b.lastErr = -1, err
		b.mu.Unlock()
		i = (i + 1) % len(fc.Addrs)
		// A short pause, so that a cluster where every node refuses does
		// not spin.
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// session joins node i (or the node the plane names) and plays until the
// session ends.
func (b *fleetBot) session(ctx context.Context, fc FleetConfig, k, i int) error {
	if fc.Plane != "" {
		if j, err := b.admission(ctx, fc, k); err == nil {
			i = j
		} else {
			b.mu.Lock()
			b.planeErr = err
			b.mu.Unlock()
		}
	}
	tok, err := player.IssueToken(fc.Key, b.id, player.Audience{World: player.DefaultWorld, Node: uint32(fc.IDs[i])}, time.Now(), 5*time.Minute, nil)
	if err != nil {
		return err
	}
	dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	conn, err := player.DialQUIC(dctx, fc.Addrs[i], &tls.Config{RootCAs: fc.CA.Pool, ServerName: pki.DNSName(fc.IDs[i])})
	if err == nil {
		var c *player.Client
		if c, err = player.Join(dctx, conn, tok); err == nil {
			return b.run(ctx, fc, k, i, c)
		}
		_ = conn.Close()
	}
	b.mu.Lock()
	b.failed++
	b.mu.Unlock()
	return err
}

func (b *fleetBot) run(ctx context.Context, fc FleetConfig, k, i int, c *player.Client) error {
	c.SetIdleTimeout(fc.Idle)
	dial := player.RedirectDialer(func(node uint32) *tls.Config {
		return &tls.Config{RootCAs: fc.CA.Pool, ServerName: pki.DNSName(wire.NodeID(node))}
	}, false)
	c.SetDialer(func(ctx context.Context, r player.Redirect) (player.Conn, error) {
		conn, err := dial(ctx, r)
		if err == nil {
			if j := slices.Index(fc.IDs, wire.NodeID(r.Node)); j >= 0 {
				b.mu.Lock()
				b.node = j
				b.mu.Unlock()
			}
		}
		return conn, err
	})
	if fc.Plane != "" {
		pctx, stop := context.WithCancel(ctx)
		defer stop()
		go b.report(pctx, fc, k)
	}
	b.mu.Lock()
	b.node, b.cur = i, c
	b.joins++
	b.joinsOn[i]++
	b.mu.Unlock()
	err := c.Run(ctx, fc.Brain(k), 0)
	st := c.Stats()
	b.mu.Lock()
	b.cur = nil
	// A node that fell silent or dropped the connection may have died:
	// its avatar may live on where its backup took over.
	var refused *player.RefusedError
	if err != nil && !errors.As(err, &refused) {
		b.lost, b.lostSeq, b.lostOn, b.lostDeed = c.Welcome().Avatar, c.LastApplied(), b.node, c.Deed()
	}
	b.endsOn[i]++
	b.total = b.total.Plus(st)
	b.mu.Unlock()
	if err == nil && ctx.Err() == nil {
		err = errors.New("session ended")
	}
	return err
}

// resumeWait bounds a resume attempt: the survivors' failover and a
// rejoin's wait (3 s at the node, in frames).
const resumeWait = 8 * time.Second

// resume tries to take the bot's lost avatar back: a Rejoin to every
// other player node at once (player.Resume), the first that has the
// avatar's primary kept; then plays there.
func (b *fleetBot) resume(ctx context.Context, fc FleetConfig, k int) error {
	b.mu.Lock()
	avatar, seq, from, deed := b.lost, b.lostSeq, b.lostOn, b.lostDeed
	b.lost, b.lostDeed = 0, nil
	b.mu.Unlock()
	// A Rejoin's token is checked for its world, not its node.
	tok, err := player.IssueToken(fc.Key, b.id, player.Audience{World: player.DefaultWorld, Node: uint32(fc.IDs[(from+1)%len(fc.IDs)])}, time.Now(), 5*time.Minute, nil)
	if err != nil {
		return err
	}
	var idx []int // the nodes tried: every one but the one that died
	for i := range fc.Addrs {
		if i != from {
			idx = append(idx, i)
		}
	}
	// The dials' context outlives resume: the winner plays on over its
	// connection (QUIC's handshake timeout bounds a dial to a dead node).
	won, w, err := player.ResumeAny(context.WithoutCancel(ctx), len(idx), func(ctx context.Context, j int) (player.Conn, error) {
		i := idx[j]
		return player.DialQUIC(ctx, fc.Addrs[i], &tls.Config{RootCAs: fc.CA.Pool, ServerName: pki.DNSName(fc.IDs[i])})
	}, tok, deed, avatar, seq, resumeWait, func(j int, err error) {
		if errors.Is(err, player.ErrNotHere) {
			// The node admitted the rejoin, and ended it without the
			// avatar: a session there, as the node counts it.
			b.mu.Lock()
			b.joinsOn[idx[j]]++
			b.endsOn[idx[j]]++
			b.mu.Unlock()
		}
	})
	if err != nil {
		return fmt.Errorf("localcluster: bot %d: %w", k+1, err)
	}
	wonAt := idx[w]
	b.mu.Lock()
	b.resumed++
	b.mu.Unlock()
	return b.run(ctx, fc, k, wonAt, won)
}

// admission asks the plane where bot k plays: the index of its node.
func (b *fleetBot) admission(ctx context.Context, fc FleetConfig, k int) (int, error) {
	cl := &plane.Client{URL: fc.Plane, HTTP: planeHTTP}
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	var pings []live.PingSample
	for _, id := range fc.IDs[:min(fc.JoinProbes, len(fc.IDs))] {
		pings = append(pings, live.PingSample{Node: uint32(id), RTTMs: fc.Pings(k, id)})
	}
	adm, err := cl.Join(ctx, string(b.id), pings)
	var se *plane.StatusError
	if errors.As(err, &se) && se.Code == http.StatusConflict {
		adm, err = cl.Where(ctx, string(b.id)) // placed already: a rejoin
	}
	if err != nil {
		return 0, err
	}
	b.mu.Lock()
	b.pinged += len(pings)
	b.mu.Unlock()
	j := slices.Index(fc.IDs, wire.NodeID(adm.Node))
	if j < 0 {
		return 0, fmt.Errorf("localcluster: the plane admits bot %d to node %d, not a player node", k+1, adm.Node)
	}
	return j, nil
}

// planeHTTP is the bots' client of the plane.
var planeHTTP = &http.Client{Timeout: 3 * time.Second}

// report has bot k's client report the RTTs the plane asks for, every 2 s
// of its session.
func (b *fleetBot) report(ctx context.Context, fc FleetConfig, k int) {
	cl := &plane.Client{URL: fc.Plane, HTTP: planeHTTP}
	t := time.NewTicker(2 * time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		adm, err := cl.Where(ctx, string(b.id))
		var se *plane.StatusError
		if errors.As(err, &se) && se.Code == http.StatusNotFound {
			// The plane does not know the bot (it was down when the bot
			// joined): the pings a join carries place it where it plays.
			adm, err = plane.Admission{}, nil
			for _, id := range fc.IDs[:min(fc.JoinProbes, len(fc.IDs))] {
				adm.Probe = append(adm.Probe, uint32(id))
			}
		}
		if err == nil && len(adm.Probe) > 0 {
			var pings []live.PingSample
			for _, n := range adm.Probe {
				pings = append(pings, live.PingSample{Node: n, RTTMs: fc.Pings(k, wire.NodeID(n))})
			}
			if _, err = cl.Pings(ctx, string(b.id), pings); err == nil {
				b.mu.Lock()
				b.pinged += len(pings)
				b.mu.Unlock()
			}
		}
		if err != nil && ctx.Err() == nil {
			b.mu.Lock()
			b.planeErr = err
			b.mu.Unlock()
		}
	}
}

// BotState is a snapshot of one bot.
type BotState struct {
	Node            int                // index of the node it plays on now; -1: none
	Joins           int                // sessions joined (the first, then rejoins)
	Failed          int                // dials or joins that failed
	JoinsOn, EndsOn []int              // sessions joined, and ended by either side, by node index (with the resume attempts a node admitted and ended without the avatar)
	LastErr         error              // why its last session ended
	Stats           player.ClientStats // finished sessions and the current one
	// PlaneErr is the last error from the control plane (nil: none);
	// Pinged the RTT samples reported to it.
	PlaneErr error
	Pinged   int
	// Resumed counts the sessions that took the bot's avatar back on the
	// node it failed over to, after its node died.
	Resumed int
}

func (b *fleetBot) state() BotState {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := BotState{Node: b.node, Joins: b.joins, Failed: b.failed, LastErr: b.lastErr, Stats: b.total, PlaneErr: b.planeErr, Pinged: b.pinged, Resumed: b.resumed,
		JoinsOn: append([]int(nil), b.joinsOn...), EndsOn: append([]int(nil), b.endsOn...)}
	s.Stats.RTT = append([]time.Duration(nil), b.total.RTT...)
	if b.cur != nil {
		s.Stats = s.Stats.Plus(b.cur.Stats())
	}
	return s
}

// States snapshots every bot, in order (bot k is Name-(k+1)).
func (f *Fleet) States() []BotState {
	out := make([]BotState, len(f.bots))
	for i, b := range f.bots {
		out[i] = b.state()
	}
	return out
}

// Totals sums bot snapshots: the sessions joined, the failed dials or
// joins, and every session's figures (ObjectsSeen and MaxInView keep the
// largest).
func Totals(bots []BotState) (joins, failed int, all player.ClientStats) {
	for _, b := range bots {
		joins, failed = joins+b.Joins, failed+b.Failed
		all = all.Plus(b.Stats)
	}
	return joins, failed, all
}
