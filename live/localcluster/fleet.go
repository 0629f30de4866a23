package localcluster

import (
	"context"
	"crypto/ed25519"
	"crypto/tls"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/overworld/overworld/live/pki"
	"github.com/overworld/overworld/live/player"
	"github.com/overworld/overworld/wire"
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

	mu      sync.Mutex
	node    int   // index of the node it plays on now; -1: none
	joins   int   // sessions joined (the first, then rejoins)
	joinsOn []int // sessions joined, by node index
	endsOn  []int // sessions ended (by either side), by node index
	failed  int   // dials or joins that failed
	lastErr error
	total   player.ClientStats // finished sessions, summed
	cur     *player.Client     // the session being played (nil: none)
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

// play runs one bot's sessions until ctx ends.
func (b *fleetBot) play(ctx context.Context, fc FleetConfig, k int) {
	i := min(k/fc.PerNode, len(fc.Addrs)-1)
	for ctx.Err() == nil {
		err := b.session(ctx, fc, k, i)
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

// session joins node i and plays until the session ends.
func (b *fleetBot) session(ctx context.Context, fc FleetConfig, k, i int) error {
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
	c.SetDialer(player.RedirectDialer(func(node uint32) *tls.Config {
		return &tls.Config{RootCAs: fc.CA.Pool, ServerName: pki.DNSName(wire.NodeID(node))}
	}, false))
	b.mu.Lock()
	b.node, b.cur = i, c
	b.joins++
	b.joinsOn[i]++
	b.mu.Unlock()
	err := c.Run(ctx, fc.Brain(k), 0)
	st := c.Stats()
	b.mu.Lock()
	b.cur = nil
	b.endsOn[i]++
	b.total = addClientStats(b.total, st)
	b.mu.Unlock()
	if err == nil && ctx.Err() == nil {
		err = errors.New("session ended")
	}
	return err
}

// addClientStats sums two sessions' figures (ObjectsSeen and MaxInView
// keep the larger).
func addClientStats(a, s player.ClientStats) player.ClientStats {
	a.Player = s.Player
	a.Avatar = s.Avatar
	a.Duration += s.Duration
	a.States += s.States
	a.StateBytes += s.StateBytes
	a.Applied += s.Applied
	a.Updates += s.Updates
	a.Inputs += s.Inputs
	a.ObjectsSeen = max(a.ObjectsSeen, s.ObjectsSeen)
	a.MaxInView = max(a.MaxInView, s.MaxInView)
	a.RTT = append(a.RTT, s.RTT...)
	a.Handoffs += s.Handoffs
	a.HandoffGaps = append(a.HandoffGaps, s.HandoffGaps...)
	return a
}

// BotState is a snapshot of one bot.
type BotState struct {
	Node            int                // index of the node it plays on now; -1: none
	Joins           int                // sessions joined (the first, then rejoins)
	Failed          int                // dials or joins that failed
	JoinsOn, EndsOn []int              // sessions joined, and ended by either side, by node index
	LastErr         error              // why its last session ended
	Stats           player.ClientStats // finished sessions and the current one
}

func (b *fleetBot) state() BotState {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := BotState{Node: b.node, Joins: b.joins, Failed: b.failed, LastErr: b.lastErr, Stats: b.total,
		JoinsOn: append([]int(nil), b.joinsOn...), EndsOn: append([]int(nil), b.endsOn...)}
	s.Stats.RTT = append([]time.Duration(nil), b.total.RTT...)
	if b.cur != nil {
		s.Stats = addClientStats(s.Stats, b.cur.Stats())
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
		all = addClientStats(all, b.Stats)
	}
	return joins, failed, all
}
