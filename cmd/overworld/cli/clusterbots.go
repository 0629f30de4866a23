package cli

import (
	"context"
	"crypto/ed25519"
	"crypto/tls"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/overworld/overworld/arena"
	"github.com/overworld/overworld/live/arenaplay"
	"github.com/overworld/overworld/live/pki"
	"github.com/overworld/overworld/live/player"
	"github.com/overworld/overworld/wire"
)

// botFleet is the cluster's bots as real clients: one goroutine per bot,
// each with its own QUIC connection to a node's player endpoint, joining
// with a token it signs with the coordinator key (as a coordinator would
// hand it out), playing the arena game with the bot AI's client-side
// brain. A bot whose node ends its session, fails or falls silent joins
// the next node in the cluster's order with a fresh token.
type botFleet struct {
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

// fleetConfig says where and how the bots play.
type fleetConfig struct {
	addrs   []string      // the player nodes' QUIC endpoints, in slot order
	ids     []wire.NodeID // their node IDs (for the certificate's name)
	ca      *pki.CA       // the cluster CA, verifying the nodes' certificates
	key     ed25519.PrivateKey
	game    *arena.Game
	perNode int // bot k starts on node k / perNode
	seed    uint64
	idle    time.Duration // a silent node is left after this
	name    string        // player ID prefix
}

// startFleet starts n bots; they play until ctx ends.
func startFleet(ctx context.Context, fc fleetConfig, n int) *botFleet {
	f := &botFleet{}
	for k := range n {
		b := &fleetBot{id: player.PlayerID(fmt.Sprintf("%s-%d", fc.name, k+1)), node: -1,
			joinsOn: make([]int, len(fc.addrs)), endsOn: make([]int, len(fc.addrs))}
		f.bots = append(f.bots, b)
		f.wg.Go(func() { b.play(ctx, fc, k) })
	}
	return f
}

// wait waits for every bot to stop (after ctx ends).
func (f *botFleet) wait() { f.wg.Wait() }

// play runs one bot's sessions until ctx ends.
func (b *fleetBot) play(ctx context.Context, fc fleetConfig, k int) {
	i := min(k/fc.perNode, len(fc.addrs)-1)
	for ctx.Err() == nil {
		err := b.session(ctx, fc, k, i)
		if ctx.Err() != nil {
			return
		}
		b.mu.Lock()
		b.node, b.lastErr = -1, err
		b.mu.Unlock()
		i = (i + 1) % len(fc.addrs)
		// A short pause, so that a cluster where every node refuses does
		// not spin.
		select {
		case <-ctx.Done():
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// session joins node i and plays until the session ends.
func (b *fleetBot) session(ctx context.Context, fc fleetConfig, k, i int) error {
	tok, err := player.IssueToken(fc.key, b.id, time.Now(), 10*time.Minute, nil)
	if err != nil {
		return err
	}
	dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	conn, err := player.DialQUIC(dctx, fc.addrs[i], &tls.Config{RootCAs: fc.ca.Pool, ServerName: pki.DNSName(fc.ids[i])})
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

func (b *fleetBot) run(ctx context.Context, fc fleetConfig, k, i int, c *player.Client) error {
	c.SetIdleTimeout(fc.idle)
	b.mu.Lock()
	b.node, b.cur = i, c
	b.joins++
	b.joinsOn[i]++
	b.mu.Unlock()
	err := c.Run(ctx, arenaplay.NewBrain(fc.game, fc.seed<<20+uint64(k)), 0)
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
	return a
}

// fleetBotState is a snapshot of one bot.
type fleetBotState struct {
	node, joins, failed int
	joinsOn, endsOn     []int
	lastErr             error
	stats               player.ClientStats // finished sessions and the current one
}

func (b *fleetBot) state() fleetBotState {
	b.mu.Lock()
	defer b.mu.Unlock()
	s := fleetBotState{node: b.node, joins: b.joins, failed: b.failed, lastErr: b.lastErr, stats: b.total,
		joinsOn: append([]int(nil), b.joinsOn...), endsOn: append([]int(nil), b.endsOn...)}
	s.stats.RTT = append([]time.Duration(nil), b.total.RTT...)
	if b.cur != nil {
		s.stats = addClientStats(s.stats, b.cur.Stats())
	}
	return s
}

// states snapshots every bot.
func (f *botFleet) states() []fleetBotState {
	out := make([]fleetBotState, len(f.bots))
	for i, b := range f.bots {
		out[i] = b.state()
	}
	return out
}
