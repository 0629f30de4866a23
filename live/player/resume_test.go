package player

import (
	"context"
	"crypto/ed25519"
	"errors"
	"math/rand/v2"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/overworld/overworld/internal/locate"
	"github.com/overworld/overworld/node"
	"github.com/overworld/overworld/wire"
)

// TestResumeAfterFailover: a player plays on node 1 of three nodes with
// failover; node 1 dies (its frames stop and its packets are lost). Its
// avatar's backup takes over on another node; the client, trying both
// survivors at once (Resume), gets its avatar back on that node only —
// the other sends no State and ends the attempt — with the position the
// backup held, and plays on there: the inputs it sends move the same
// avatar.
func TestResumeAfterFailover(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		tr := newFailoverTrio(t, 4, 7)
		ns, gs, key, step := tr.ns, tr.gs, tr.key, tr.step
		tok, err := IssueToken(key, "ann", Audience{World: testAud.World, Node: 1}, time.Now(), time.Hour, nil)
		if err != nil {
			t.Fatal(err)
		}
		a, b := Pipe(64)
		sctx, kill := context.WithCancel(ctx) // node 1's side of the connection
		defer kill()
		go func() { _ = gs[0].Serve(sctx, a) }()
		var on atomic.Bool
		on.Store(true)
		var sent atomic.Int64
		first := make(chan *Client, 1)
		go func() {
			c, err := Join(ctx, b, tok)
			if err != nil {
				t.Error(err)
				close(first)
				return
			}
			first <- c
			_ = c.Run(ctx, counting{&on, &sent}, 0)
		}()
		synctest.Wait()
		step()
		c := <-first
		if c == nil {
			return
		}
		for range 30 {
			step()
		}
		avatar, applied, deed := c.Welcome().Avatar, c.LastApplied(), c.Deed()
		if applied < 20 {
			t.Fatalf("%d inputs applied after 30 frames", applied)
		}
		on.Store(false)
		// Node 1 dies.
		tr.dead = true
		kill()
		_ = b.Close()
		for range 40 {
			step()
		}
		holder := 0
		for i := 1; i < 3; i++ {
			if _, primary, ok := ns[i].Lookup(avatar); ok && primary {
				holder = i + 1
			}
		}
		if holder == 0 {
			t.Fatal("no survivor took the avatar over")
		}
		// The client tries both survivors.
		type got struct {
			node int
			c    *Client
			err  error
		}
		res := make(chan got, 2)
		rctx, stopTries := context.WithTimeout(ctx, 5*time.Second)
		defer stopTries()
		for i := 1; i < 3; i++ {
			x, y := Pipe(64)
			go func() { _ = gs[i].Serve(ctx, x) }()
			go func() {
				rc, err := Resume(rctx, y, tok, deed, avatar, applied)
				res <- got{i + 1, rc, err}
				if err != nil {
					_ = y.Close()
				}
			}()
		}
		var won *Client
		for range 2 {
			for len(res) == 0 {
				step()
			}
			r := <-res
			var refused *RefusedError
			switch {
			case r.err == nil && r.node == holder:
				won = r.c
			case r.err == nil:
				t.Fatalf("node %d, which does not hold the avatar, resumed it", r.node)
			case r.node == holder:
				t.Fatalf("node %d holds the avatar and refused: %v", r.node, r.err)
			case !errors.As(r.err, &refused):
				t.Fatalf("node %d: %v, want a refusal", r.node, r.err)
			}
		}
		if won == nil || won.Welcome().Avatar != avatar {
			t.Fatalf("resumed %v", won)
		}
		// It plays on: inputs move the same avatar.
		obj, _, _ := ns[holder-1].Lookup(avatar)
		x0 := obj.State().Float(0)
		on.Store(true)
		sent.Store(0)
		go func() { _ = won.Run(ctx, counting{&on, &sent}, 0) }()
		for range 10 {
			step()
		}
		on.Store(false)
		for range 3 {
			step()
		}
		obj, primary, _ := ns[holder-1].Lookup(avatar)
		if !primary || obj.State().Float(0) != x0+float64(sent.Load()) {
			t.Fatalf("after the resume: primary %v, x %v, want %v + %d", primary, obj.State().Float(0), x0, sent.Load())
		}
		cancel()
		synctest.Wait()
	})
}

// TestResumeAnyEndsLosers: after a failover the client resumes through
// ResumeAny on both survivors; the one holding the avatar wins. When the
// avatar is then handed to the other survivor (a control plane placing
// the player there) within the losing attempt's wait, that attempt must
// not get the avatar too: ResumeAny ended it when the winner came, so the
// avatar has one session.
func TestResumeAnyEndsLosers(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		tr := newFailoverTrio(t, 5, 8)
		ns, gs, key, step := tr.ns, tr.gs, tr.key, tr.step
		tok, err := IssueToken(key, "bea", Audience{World: testAud.World, Node: 1}, time.Now(), time.Hour, nil)
		if err != nil {
			t.Fatal(err)
		}
		a, b := Pipe(64)
		sctx, kill := context.WithCancel(ctx)
		defer kill()
		go func() { _ = gs[0].Serve(sctx, a) }()
		var on atomic.Bool
		var sent atomic.Int64
		first := make(chan *Client, 1)
		go func() {
			c, err := Join(ctx, b, tok)
			if err != nil {
				t.Error(err)
				close(first)
				return
			}
			first <- c
			_ = c.Run(ctx, counting{&on, &sent}, 0)
		}()
		synctest.Wait()
		step()
		c := <-first
		if c == nil {
			return
		}
		for range 30 {
			step()
		}
		avatar, applied, deed := c.Welcome().Avatar, c.LastApplied(), c.Deed()
		tr.dead = true // node 1 dies
		kill()
		_ = b.Close()
		for range 40 {
			step()
		}
		holder, other := 0, 0
		for i := 1; i < 3; i++ {
			if _, primary, ok := ns[i].Lookup(avatar); ok && primary {
				holder, other = i+1, 5-(i+1)
			}
		}
		if holder == 0 {
			t.Fatal("no survivor took the avatar over")
		}
		// Resume on both survivors (index 0: node 2, 1: node 3).
		var wins atomic.Int32
		type result struct {
			c   *Client
			i   int
			err error
		}
		got := make(chan result, 1)
		go func() {
			rc, i, err := ResumeAny(ctx, 2, func(_ context.Context, i int) (Conn, error) {
				x, y := Pipe(64)
				go func() { _ = gs[i+1].Serve(ctx, x) }()
				return y, nil
			}, tok, deed, avatar, applied, 5*time.Second, func(_ int, err error) {
				if err == nil {
					wins.Add(1)
				}
			})
			got <- result{rc, i, err}
		}()
		var r result
		for k := 0; ; k++ {
			if k == 30 {
				t.Fatal("no resume within 30 frames")
			}
			step()
			select {
			case r = <-got:
			default:
				continue
			}
			break
		}
		if r.err != nil || r.i+2 != holder {
			t.Fatalf("resumed on node %d (%v), the avatar is on node %d", r.i+2, r.err, holder)
		}
		// At once, the avatar is handed to the other survivor, while the
		// losing attempt's rejoin would still wait for it there.
		handed := gs[holder-1].HandOff("bea", Target{Node: uint32(other), QUIC: "node:1"})
		for range 40 {
			step()
		}
		if err := <-handed; err != nil {
			t.Fatalf("handoff: %v", err)
		}
		if _, primary, ok := ns[other-1].Lookup(avatar); !ok || !primary {
			t.Fatalf("the avatar did not reach node %d", other)
		}
		if n := wins.Load(); n != 1 {
			t.Errorf("%d attempts got the avatar, want 1", n)
		}
		if n := gs[other-1].Stats().Players; n != 0 {
			t.Errorf("node %d has %d sessions for the avatar handed there, want 0 (its client did not follow the redirect)", other, n)
		}
		cancel()
		synctest.Wait()
	})
}

// failoverTrio is three nodes with failover (broadcast discovery) and
// their gateways, run frame by frame inside a synctest bubble: step runs
// one 100 ms frame and delivers what the nodes send; once dead is set,
// node 1 runs nothing and its packets, sent or due, are lost.
type failoverTrio struct {
	ns   []*node.Node
	gs   []*Gateway
	key  ed25519.PrivateKey // the token issuer's key the gateways trust
	dead bool
	now  time.Duration
	buf  []wire.Packet
}

// newFailoverTrio builds a trio, its token key drawn from keySeed and the
// nodes' random sources from nodeSeed.
func newFailoverTrio(t *testing.T, keySeed byte, nodeSeed uint64) *failoverTrio {
	t.Helper()
	pub, key, err := ed25519.GenerateKey(rand.NewChaCha8([32]byte{keySeed}))
	if err != nil {
		t.Fatal(err)
	}
	tr := &failoverTrio{ns: make([]*node.Node, 3), gs: make([]*Gateway, 3), key: key}
	ids := []wire.NodeID{1, 2, 3}
	idents := testIdentities(t, 3)
	for i, id := range ids {
		b, err := locate.NewBroadcast(id, ids)
		if err != nil {
			t.Fatal(err)
		}
		rc := node.ReplicaConfig{Failover: true, Peers: func() []wire.NodeID { return ids }}
		if tr.ns[i], err = node.New(node.Config{ID: id, Registry: testReg, Discovery: b, Rand: rand.New(rand.NewPCG(nodeSeed, uint64(id))), Replica: rc}); err != nil {
			t.Fatal(err)
		}
		ver, err := NewVerifier(VerifierConfig{Key: pub, Audience: Audience{World: testAud.World, Node: uint32(id)}, MaxTTL: 2 * time.Hour})
		if err != nil {
			t.Fatal(err)
		}
		if tr.gs[i], err = New(Config{Verifier: ver, Controller: dots{}, Identity: idents[i]}); err != nil {
			t.Fatal(err)
		}
	}
	return tr
}

// step runs one frame on every live node and delivers the packets.
func (tr *failoverTrio) step() {
	time.Sleep(100 * time.Millisecond)
	tr.now += 100 * time.Millisecond
	for i, n := range tr.ns {
		if i == 0 && tr.dead {
			continue
		}
		n.Tick(tr.now)
		tr.gs[i].Frame(tr.now, n)
	}
	for range 3 {
		tr.buf = tr.buf[:0]
		for i, n := range tr.ns {
			if i == 0 && tr.dead {
				n.Drain(nil)
				continue
			}
			tr.buf = n.Drain(tr.buf)
		}
		for _, pk := range tr.buf {
			if !(tr.dead && pk.To == 1) {
				tr.ns[pk.To-1].Step(tr.now, pk)
			}
		}
	}
	synctest.Wait()
}
