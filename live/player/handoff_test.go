package player

import (
	"context"
	"crypto/ed25519"
	"math/rand/v2"
	"testing"
	"testing/synctest"
	"time"

	"github.com/overworld/overworld/internal/locate"
	"github.com/overworld/overworld/node"
	"github.com/overworld/overworld/wire"
)

// pusher is a Brain that sends n inputs moving its dot one unit along x,
// then nothing.
type pusher struct{ left int }

func (p *pusher) Input(Welcome, *View, time.Duration) []byte {
	if p.left == 0 {
		return nil
	}
	p.left--
	return []byte{1, 0}
}

// pair is two nodes, each with its gateway, whose packets reach each
// other at once.
type pair struct {
	t   *testing.T
	n   [2]*node.Node
	g   [2]*Gateway
	key ed25519.PrivateKey
	now time.Duration
	buf []wire.Packet
}

func newPair(t *testing.T) *pair {
	pub, key, err := ed25519.GenerateKey(rand.NewChaCha8([32]byte{2}))
	if err != nil {
		t.Fatal(err)
	}
	p := &pair{t: t, key: key}
	for i := range 2 {
		id := wire.NodeID(i + 1)
		b, err := locate.NewBroadcast(id, []wire.NodeID{1, 2})
		if err != nil {
			t.Fatal(err)
		}
		if p.n[i], err = node.New(node.Config{ID: id, Registry: testReg, Discovery: b, Rand: rand.New(rand.NewPCG(uint64(id), 1))}); err != nil {
			t.Fatal(err)
		}
		ver, err := NewVerifier(VerifierConfig{Key: pub})
		if err != nil {
			t.Fatal(err)
		}
		if p.g[i], err = New(Config{Verifier: ver, Controller: dots{}, Logf: func(f string, a ...any) { t.Logf("node %d: "+f, append([]any{id}, a...)...) }}); err != nil {
			t.Fatal(err)
		}
	}
	return p
}

// step runs one frame on both nodes, delivers their packets, and lets
// every goroutine settle.
func (p *pair) step() {
	time.Sleep(100 * time.Millisecond)
	p.now += 100 * time.Millisecond
	for i := range 2 {
		p.n[i].Tick(p.now)
		p.g[i].Frame(p.now, p.n[i])
	}
	for range 3 { // answers within the frame
		p.buf = p.buf[:0]
		for i := range 2 {
			p.buf = p.n[i].Drain(p.buf)
		}
		for _, pk := range p.buf {
			p.n[pk.To-1].Step(p.now, pk)
		}
	}
	synctest.Wait()
}

// TestHandOffMakeBeforeBreak: a player on node 1 is handed to node 2 in
// the middle of a stream of inputs. The client rejoins node 2 before it
// leaves node 1, misses no State (the gap between the last State of
// node 1 and the first of node 2 is one frame), and every input is
// applied exactly once: the avatar, now a primary of node 2, moved by
// exactly the number of inputs sent. Node 1 ends its session without
// deleting the avatar.
func TestHandOffMakeBeforeBreak(t *testing.T) {
	for _, at := range []int{3, 7, 12} {
		synctest.Test(t, func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			p := newPair(t)
			a, b := Pipe(64)
			go func() { _ = p.g[0].Serve(ctx, a) }()
			tok, err := IssueToken(p.key, "ann", time.Now(), time.Hour, nil)
			if err != nil {
				t.Fatal(err)
			}
			const inputs = 30
			ran := make(chan *Client, 1)
			go func() {
				c, err := Join(ctx, b, tok)
				if err != nil {
					t.Error(err)
					close(ran)
					return
				}
				c.SetDialer(func(_ context.Context, r Redirect) (Conn, error) {
					if r.Node != 2 || r.QUIC != "n2:1" {
						t.Errorf("redirect %+v", r)
					}
					x, y := Pipe(64)
					go func() { _ = p.g[1].Serve(ctx, x) }()
					return y, nil
				})
				ran <- c
				if err := c.Run(ctx, &pusher{inputs}, 0); err != nil {
					t.Error(err)
				}
			}()
			synctest.Wait()
			p.step()
			c := <-ran
			if c == nil {
				return
			}
			avatar := c.Welcome().Avatar
			for k := range 40 {
				if k == at {
					done := p.g[0].HandOff("ann", Target{Node: 2, QUIC: "n2:1"})
					p.step()
					if err := <-done; err != nil {
						t.Fatal(err)
					}
					continue
				}
				p.step()
			}
			obj, primary, ok := p.n[1].Lookup(avatar)
			if !ok || !primary {
				t.Fatalf("handoff at frame %d: avatar %v is not a primary of node 2", at, avatar)
			}
			if x := obj.State().Float(0); x != inputs {
				t.Fatalf("handoff at frame %d: the avatar moved %v units for %d inputs", at, x, inputs)
			}
			st := c.Stats()
			if st.Handoffs != 1 || len(st.HandoffGaps) != 1 || st.HandoffGaps[0] > 100*time.Millisecond {
				t.Fatalf("handoff at frame %d: client stats %+v", at, st)
			}
			if c.Welcome().Avatar != avatar {
				t.Fatalf("avatar %v after the handoff, want %v", c.Welcome().Avatar, avatar)
			}
			s0, s1 := p.g[0].Stats(), p.g[1].Stats()
			if s0.Players != 0 || s0.HandedOff != 1 || s1.Players != 1 || s1.Rejoins != 1 || s1.BadInputs != 0 {
				t.Fatalf("handoff at frame %d: node 1 %+v; node 2 %+v", at, s0, s1)
			}
			cancel()
			synctest.Wait()
		})
	}
}

// TestHandOffRefused: a handoff of a player not here, to nowhere, or of
// one already on its way is refused and changes nothing.
func TestHandOffRefused(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		p := newPair(t)
		if err := <-p.g[0].HandOff("nobody", Target{Node: 2}); err == nil {
			t.Fatal("a handoff to a node without a player endpoint was accepted")
		}
		done := p.g[0].HandOff("nobody", Target{Node: 2, QUIC: "x:1"})
		p.step()
		if err := <-done; err == nil {
			t.Fatal("a handoff of a player not in game was accepted")
		}
		if st := p.g[0].Stats(); st.HandedOff != 0 {
			t.Fatalf("stats %+v", st)
		}
	})
}
