package cli

import (
	"context"
	"crypto/ed25519"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/overworld/overworld/arena"
	"github.com/overworld/overworld/live"
	"github.com/overworld/overworld/live/arenaplay"
	"github.com/overworld/overworld/live/pki"
	"github.com/overworld/overworld/live/plane"
	"github.com/overworld/overworld/live/player"
	"github.com/overworld/overworld/wire"
	"github.com/overworld/overworld/world"
)

// planeBot is one bot that asks a control plane where to play: it pings
// nodes (the time of a QUIC handshake, the least of two), joins the node
// the plane admits it to, follows redirects, reports the pings the plane
// asks for, and takes its avatar back where it failed over if its node
// dies.
type planeBot struct {
	cl    *plane.Client
	nodes []plane.NodeInfo
	roots *x509.CertPool // nil: no verification
	id    player.PlayerID
	key   ed25519.PrivateKey
	world string
	ttl   time.Duration
	known map[uint32]bool // nodes pinged
}

// token signs a token for node (a Rejoin's is checked for its world only).
func (b *planeBot) token(node uint32) ([]byte, error) {
	return player.IssueToken(b.key, b.id, player.Audience{World: b.world, Node: node}, time.Now(), b.ttl, nil)
}

// tlsFor is the TLS configuration for node id's player endpoint.
func (b *planeBot) tlsFor(id uint32) *tls.Config {
	if b.roots == nil {
		return &tls.Config{InsecureSkipVerify: true}
	}
	return &tls.Config{RootCAs: b.roots, ServerName: pki.DNSName(wire.NodeID(id))}
}

func (b *planeBot) node(id uint32) (plane.NodeInfo, bool) {
	i := slices.IndexFunc(b.nodes, func(n plane.NodeInfo) bool { return n.ID == id })
	if i < 0 {
		return plane.NodeInfo{}, false
	}
	return b.nodes[i], true
}

// ping measures the RTT to node id: the least of two QUIC handshakes.
func (b *planeBot) ping(ctx context.Context, id uint32) (float64, bool) {
	n, ok := b.node(id)
	if !ok || n.QUIC == "" {
		return 0, false
	}
	best := time.Duration(-1)
	for range 2 {
		dctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		start := time.Now()
		c, err := player.DialQUIC(dctx, n.QUIC, b.tlsFor(id))
		cancel()
		if err != nil {
			continue
		}
		d := time.Since(start)
		_ = c.Close()
		if best < 0 || d < best {
			best = d
		}
	}
	if best < 0 {
		return 0, false
	}
	return float64(best) / float64(time.Millisecond), true
}

func (b *planeBot) pings(ctx context.Context, ids []uint32) []live.PingSample {
	var out []live.PingSample
	for _, id := range ids {
		if rtt, ok := b.ping(ctx, id); ok {
			out = append(out, live.PingSample{Node: id, RTTMs: rtt})
			b.known[id] = true
		}
	}
	return out
}

// join asks the plane where to play and joins there.
func (b *planeBot) join(ctx context.Context) (*player.Client, error) {
	var first []uint32
	for _, n := range b.nodes[:min(4, len(b.nodes))] {
		first = append(first, n.ID)
	}
	adm, err := b.cl.Join(ctx, string(b.id), b.pings(ctx, first))
	var se *plane.StatusError
	if errors.As(err, &se) && se.Code == http.StatusConflict {
		adm, err = b.cl.Where(ctx, string(b.id))
	}
	if err != nil {
		return nil, err
	}
	tok, err := b.token(adm.Node)
	if err != nil {
		return nil, err
	}
	dctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	conn, err := player.DialQUIC(context.WithoutCancel(ctx), adm.QUIC, b.tlsFor(adm.Node))
	if err != nil {
		return nil, err
	}
	c, err := player.Join(dctx, conn, tok)
	if err != nil {
		_ = conn.Close()
		return nil, err
	}
	return c, nil
}

// report has the client report the pings the plane asks for, every 2 s.
func (b *planeBot) report(ctx context.Context) {
	t := time.NewTicker(2 * time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		adm, err := b.cl.Where(ctx, string(b.id))
		if err != nil || len(adm.Probe) == 0 {
			continue
		}
		if ps := b.pings(ctx, adm.Probe); len(ps) > 0 {
			_, _ = b.cl.Pings(ctx, string(b.id), ps)
		}
	}
}

// resume takes avatar back, with its deed, on whichever node holds its
// primary now.
func (b *planeBot) resume(ctx context.Context, deed []byte, avatar world.ObjectID, seq uint64) (*player.Client, error) {
	tok, err := b.token(b.nodes[0].ID)
	if err != nil {
		return nil, err
	}
	c, _, err := player.ResumeAny(context.WithoutCancel(ctx), len(b.nodes), func(ctx context.Context, i int) (player.Conn, error) {
		return player.DialQUIC(ctx, b.nodes[i].QUIC, b.tlsFor(b.nodes[i].ID))
	}, tok, deed, avatar, seq, 8*time.Second, nil)
	return c, err
}

// playPlaneBot plays bot i through the plane for f.duration.
func playPlaneBot(ctx context.Context, g *arena.Game, key ed25519.PrivateKey, f *botFlags, i int, cl *plane.Client,
	nodes []plane.NodeInfo, roots *x509.CertPool) (player.ClientStats, error) {
	id := player.PlayerID(fmt.Sprintf("%s-%d", f.name, i+1))
	b := &planeBot{cl: cl, nodes: nodes, roots: roots, id: id, key: key, world: f.world, ttl: 2 * time.Minute, known: map[uint32]bool{}}
	pctx, stop := context.WithTimeout(ctx, f.duration)
	defer stop()
	go b.report(pctx)
	c, err := b.join(pctx)
	if err != nil {
		return player.ClientStats{Player: id}, err
	}
	var total player.ClientStats
	for {
		c.SetDialer(player.RedirectDialer(b.tlsFor, false))
		// A node that falls silent is presumed dead after botIdle, as for
		// the bots of --addr: without it Run waited for the connection's
		// idle timeout (30 s) before the bot took its avatar back.
		c.SetIdleTimeout(botIdle)
		err = c.Run(pctx, arenaplay.NewBrain(g, f.seed<<20+uint64(i)), 0)
		total = total.Plus(c.Stats())
		var refused *player.RefusedError
		if err == nil || pctx.Err() != nil || errors.As(err, &refused) {
			return total, err
		}
		// The node fell silent or the connection broke: its avatar may
		// live on where its backup took over.
		if c, err = b.resume(pctx, c.Deed(), c.Welcome().Avatar, c.LastApplied()); err != nil {
			return total, err
		}
	}
}
