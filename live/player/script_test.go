package player

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/overworld/overworld/internal/scripttest"
)

// counting is a Brain that moves its dot one unit along x every frame
// while on, counting the inputs it sent.
type counting struct {
	on   *atomic.Bool
	sent *atomic.Int64
}

func (b counting) Input(Welcome, *View, time.Duration) []byte {
	if !b.on.Load() {
		return nil
	}
	b.sent.Add(1)
	return []byte{1, 0}
}

// TestScenarios runs testdata/scenarios/*.txt, each in a synctest bubble
// over two nodes (newPair: frames of 100 ms, packets delivered at once)
// with their gateways. Commands:
//
//	join P N           player P joins node N and starts sending an input per frame
//	step [K]           K frames (default 1)
//	handoff P N [from=M]  the node P's client plays on (or M) hands P to
//	                   node N; prints the outcome after a frame
//	quiet P            P stops sending inputs
//	show               every player: its client's node, handoffs, whether
//	                   every gap at the switch is within a frame; its
//	                   avatar's primary and whether it moved once per
//	                   input sent; each gateway's players, handed off,
//	                   rejoins
func TestScenarios(t *testing.T) {
	files, err := filepath.Glob("testdata/scenarios/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scenario scripts: %v", err)
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".txt"), func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				ctx, cancel := context.WithCancel(t.Context())
				defer func() { cancel(); synctest.Wait() }()
				scripttest.RunFile(t, f, func(*scripttest.Script) scripttest.Handler { return redirectScript(ctx, t, newPair(t)) })
			})
		})
	}
}

type scriptPlayer struct {
	c    *Client
	on   atomic.Bool
	sent atomic.Int64
	node atomic.Uint32 // the node its client plays on
}

func redirectScript(ctx context.Context, t *testing.T, p *pair) scripttest.Handler {
	players := map[string]*scriptPlayer{}
	var order []string
	nodeOf := func(c *scripttest.Cmd, i int) int {
		n := c.Int(i)
		if n < 1 || n > 2 {
			c.Fatalf("node %d: want 1 or 2", n)
		}
		return n
	}
	return func(c *scripttest.Cmd) string {
		switch c.Name {
		case "join":
			c.Want(2, 2)
			id, n := c.Arg(0), nodeOf(c, 1)
			if players[id] != nil {
				c.Fatalf("player %s joined already", id)
			}
			tok, err := IssueToken(p.key, PlayerID(id), Audience{World: testAud.World, Node: uint32(n)}, time.Now(), time.Hour, nil)
			if err != nil {
				c.Fatalf("%v", err)
			}
			sp := &scriptPlayer{}
			sp.on.Store(true)
			sp.node.Store(uint32(n))
			a, b := Pipe(64)
			go func() { _ = p.g[n-1].Serve(ctx, a) }()
			joined := make(chan error, 1)
			go func() {
				cl, err := Join(ctx, b, tok)
				if err != nil {
					joined <- err
					return
				}
				cl.SetDialer(func(_ context.Context, r Redirect) (Conn, error) {
					x, y := Pipe(64)
					go func() { _ = p.g[r.Node-1].Serve(ctx, x) }()
					sp.node.Store(r.Node)
					return y, nil
				})
				sp.c = cl
				joined <- nil
				_ = cl.Run(ctx, counting{&sp.on, &sp.sent}, 0)
			}()
			synctest.Wait()
			p.step()
			if err := <-joined; err != nil {
				return "join refused: " + err.Error()
			}
			players[id] = sp
			order = append(order, id)
			return fmt.Sprintf("%s plays avatar %v on node %d", id, sp.c.Welcome().Avatar, n)
		case "step":
			c.Want(0, 1)
			k := 1
			if len(c.Args) == 1 {
				k = c.Int(0)
			}
			for range k {
				p.step()
			}
			return ""
		case "handoff":
			c.Want(2, 3)
			id, to := c.Arg(0), nodeOf(c, 1)
			sp := players[id]
			if sp == nil {
				c.Fatalf("no player %s", id)
			}
			from := int(sp.node.Load())
			if f, ok := c.Options(2, "from")["from"]; ok {
				from = c.ParseInt(f)
				if from < 1 || from > 2 {
					c.Fatalf("from=%d: want 1 or 2", from)
				}
			}
			done := p.g[from-1].HandOff(PlayerID(id), Target{Node: uint32(to), QUIC: fmt.Sprintf("n%d:1", to)})
			p.step()
			select {
			case err := <-done:
				return scripttest.Result(err)
			default:
				return "no answer after a frame"
			}
		case "quiet":
			c.Want(1, 1)
			sp := players[c.Arg(0)]
			if sp == nil {
				c.Fatalf("no player %s", c.Arg(0))
			}
			sp.on.Store(false)
			return ""
		case "show":
			c.Want(0, 0)
			var b strings.Builder
			for _, id := range order {
				sp := players[id]
				st := sp.c.Stats()
				gaps := "every gap at the switch within a frame"
				for _, g := range st.HandoffGaps {
					if g > 100*time.Millisecond {
						gaps = fmt.Sprintf("gaps at the switch %v", st.HandoffGaps)
					}
				}
				avatar := sp.c.Welcome().Avatar
				where := "no primary"
				for i := range 2 {
					if obj, primary, ok := p.n[i].Lookup(avatar); ok && primary {
						x, sent := obj.State().Float(0), sp.sent.Load()
						moved := "moved once per input sent"
						if x != float64(sent) {
							moved = fmt.Sprintf("moved %g for %d inputs sent", x, sent)
						}
						where = fmt.Sprintf("primary on node %d, %s", i+1, moved)
					}
				}
				fmt.Fprintf(&b, "%s: client on node %d, %d handoffs, %s; avatar %v %s\n",
					id, sp.node.Load(), st.Handoffs, gaps, avatar, where)
			}
			for i, g := range p.g {
				s := g.Stats()
				fmt.Fprintf(&b, "node %d: %d players, %d handed off, %d rejoins, %d inputs moved\n", i+1, s.Players, s.HandedOff, s.Rejoins, s.InputsMoved)
			}
			return strings.TrimRight(b.String(), "\n")
		}
		c.Fatalf("unknown command")
		return ""
	}
}
