package arenaplay

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/coder/websocket"
	"github.com/quic-go/quic-go"

	"github.com/overworld/overworld/arena"
	"github.com/overworld/overworld/internal/locate"
	"github.com/overworld/overworld/live/pki"
	"github.com/overworld/overworld/live/player"
	"github.com/overworld/overworld/node"
	"github.com/overworld/overworld/wire"
	"github.com/overworld/overworld/world"
)

// liveNodes builds the nodes of game g (directory discovery, rendezvous
// node 1) and spawns the game's bots and items on them.
func liveNodes(t testing.TB, g *arena.Game, seed uint64) []*node.Node {
	var ns []*node.Node
	for i := range g.Config().Nodes {
		id := wire.NodeID(i + 1)
		dir, err := locate.NewDirectory(id, locate.DefaultDirectoryConfig(1))
		if err != nil {
			t.Fatal(err)
		}
		n, err := node.New(node.Config{ID: id, Registry: g.Registry(), Discovery: dir, Rand: rand.New(rand.NewPCG(seed, uint64(id)))})
		if err != nil {
			t.Fatal(err)
		}
		ns = append(ns, n)
	}
	for _, s := range g.Spawns() {
		if _, err := ns[s.Node].Spawn(0, s.Schema, s.Init); err != nil {
			t.Fatal(err)
		}
	}
	return ns
}

// exchange delivers every packet the nodes have to send, instantly, until
// none is left.
func exchange(ns []*node.Node, now time.Duration) {
	for {
		var ps []wire.Packet
		for _, n := range ns {
			ps = n.Drain(ps)
		}
		if len(ps) == 0 {
			return
		}
		for _, p := range ps {
			if int(p.To) >= 1 && int(p.To) <= len(ns) {
				ns[p.To-1].Step(now, p)
			}
		}
	}
}

func testVerifier(t testing.TB) (*player.Verifier, ed25519.PrivateKey) {
	pub, priv, err := ed25519.GenerateKey(rand.NewChaCha8([32]byte{7}))
	if err != nil {
		t.Fatal(err)
	}
	v, err := player.NewVerifier(player.VerifierConfig{Key: pub, Audience: player.Audience{World: player.DefaultWorld, Node: 1}})
	if err != nil {
		t.Fatal(err)
	}
	return v, priv
}

// testIdentity returns node 1's identity in a fresh cluster CA (its key
// signs the avatar deeds).
func testIdentity(t testing.TB) *pki.Identity {
	t.Helper()
	ca, err := pki.NewCA("test", time.Now(), 30*24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	data, err := ca.Issue(1, time.Now(), 7*24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	id, err := pki.ParseNode(data, ca)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// TestLivePlayersSeeNodeState has headless players (Brain) join node
// 1 of a two-node arena game over in-memory pipes and play for 30 s of
// game time; after every frame each player's reconstructed view must equal
// node 1's state (primaries and replicas) of every object in its avatar's
// interest. It also checks that the players moved, fired rockets and saw
// objects whose primary is on node 2.
func TestLivePlayersSeeNodeState(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		cfg := arena.Federated(2, arena.Sqr)
		cfg.PlayersPerNode = 4
		g, err := arena.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		ns := liveNodes(t, g, 1)
		ver, key := testVerifier(t)
		gw, err := player.New(player.Config{Verifier: ver, Controller: NewController(g), Identity: testIdentity(t)})
		if err != nil {
			t.Fatal(err)
		}
		const players = 6
		var mu sync.Mutex
		var clients []*player.Client
		for i := range players {
			a, b := player.Pipe(64)
			go func() { _ = gw.Serve(ctx, a) }()
			tok, err := player.IssueToken(key, player.PlayerID(fmt.Sprintf("p%d", i)), player.Audience{World: player.DefaultWorld, Node: 1}, time.Now(), 5*time.Minute, nil)
			if err != nil {
				t.Fatal(err)
			}
			go func() {
				c, err := player.Join(ctx, b, tok)
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				clients = append(clients, c)
				mu.Unlock()
				_ = c.Run(ctx, NewBrain(g, uint64(i)), 0)
			}()
		}
		synctest.Wait()
		var now time.Duration
		remote := map[world.ObjectID]bool{}
		start := map[world.ObjectID]world.Point{}
		for frame := uint64(1); frame <= 300; frame++ {
			time.Sleep(arena.Frame)
			now += arena.Frame
			for _, n := range ns {
				n.Tick(now)
			}
			exchange(ns, now)
			gw.Frame(now, ns[0])
			synctest.Wait()
			if frame == 1 {
				continue // the joins were admitted; states start next frame
			}
			mu.Lock()
			cs := clients
			mu.Unlock()
			if len(cs) != players {
				t.Fatalf("%d players joined", len(cs))
			}
			objs := ns[0].Objects(nil)
			for _, c := range cs {
				avatar := c.Welcome().Avatar
				obj, _, ok := ns[0].Lookup(avatar)
				if !ok {
					t.Fatalf("frame %d: avatar %v gone", frame, avatar)
				}
				if _, ok := start[avatar]; !ok {
					start[avatar] = obj.State().Location()
				}
				boxes := obj.Interest(nil)
				var want []*world.State
				for _, o := range objs {
					in := o.ID == avatar
					for _, b := range boxes {
						in = in || b.Contains(o.State.Location(), 3)
					}
					if in {
						want = append(want, o.State)
						if o.From != 1 {
							remote[o.ID] = true
						}
					}
				}
				c.Do(func(v *player.View) {
					got := v.Objects()
					if v.Frame() != frame || len(got) != len(want) {
						t.Fatalf("frame %d: player %s at frame %d sees %d objects, node 1 has %d in its interest",
							frame, c.Welcome().Player, v.Frame(), len(got), len(want))
					}
					for i, o := range got {
						w := want[i]
						if o.ID != w.ID() || o.State.Schema().Name() != w.Schema().Name() {
							t.Fatalf("frame %d: player %s sees %v, want %v", frame, c.Welcome().Player, o.ID, w.ID())
						}
						for f := range w.Schema().NumFields() {
							if o.State.Int(f) != w.Int(f) {
								t.Fatalf("frame %d: player %s: object %v field %q is %d, node has %d", frame,
									c.Welcome().Player, o.ID, w.Schema().FieldAt(f).Name, o.State.Int(f), w.Int(f))
							}
						}
					}
				})
			}
		}
		st := gw.Stats()
		if st.Players != players || st.BadInputs != 0 || st.Malformed != 0 || st.Inputs < players*250 {
			t.Fatalf("gateway stats %+v", st)
		}
		if len(remote) == 0 {
			t.Error("no player ever saw an object whose primary is on node 2")
		}
		moved, fired := 0, 0
		for id, p := range start {
			obj, _, _ := ns[0].Lookup(id)
			if q := obj.State().Location(); math.Hypot(q[0]-p[0], q[1]-p[1]) > 5 || obj.State().Int(arena.BotDeaths) > 0 {
				moved++
			}
		}
		for _, o := range ns[0].Objects(nil) {
			if o.State.Schema() == g.Missile && start[o.State.Ref(arena.MissileOwner)] != (world.Point{}) {
				fired++
			}
		}
		if moved < players/2 {
			t.Errorf("only %d of %d players moved", moved, players)
		}
		for _, c := range clients {
			s := c.Stats()
			if len(s.RTT) == 0 || s.ObjectsSeen < 2 || s.Inputs < 250 || s.Updates < s.Applied {
				t.Errorf("player %s: %+v", s.Player, s)
			}
			if s.RTTQuantile(0.99) > 2*arena.Frame {
				t.Errorf("player %s: input echo p99 %v over two frames", s.Player, s.RTTQuantile(0.99))
			}
		}
		t.Logf("gateway %+v; %d remote objects seen; %d rockets in flight at the end", st, len(remote), fired)
	})
}

// TestLiveLoopback plays the arena for two seconds over real QUIC and
// WebSocket sockets on 127.0.0.1: a node driven at 10 Hz by a goroutine,
// four players on each endpoint.
func TestLiveLoopback(t *testing.T) {
	if testing.Short() {
		t.Skip("real sockets and 2 s of wall time")
	}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	g, err := arena.New(arena.Federated(1, arena.Sqr))
	if err != nil {
		t.Fatal(err)
	}
	n := liveNodes(t, g, 1)[0]
	ver, key := testVerifier(t)
	gw, err := player.New(player.Config{Verifier: ver, Controller: NewController(g), Identity: testIdentity(t), Logf: t.Logf})
	if err != nil {
		t.Fatal(err)
	}
	tlsConf, err := player.SelfSignedTLS("127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	ln, err := quic.ListenAddr("127.0.0.1:0", tlsConf, player.QUICConfig())
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() { _ = gw.ServeQUIC(ctx, ln) }()
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: gw.WSHandler(ctx)}
	go func() { _ = srv.Serve(tcp) }()
	defer srv.Close()

	var driver sync.WaitGroup
	driver.Add(1)
	go func() { defer driver.Done(); gw.RunAlone(ctx, n, arena.Frame) }() // owns the node
	var wg sync.WaitGroup
	stats := make([]player.ClientStats, 8)
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var conn player.Conn
			var err error
			if i%2 == 0 {
				conn, err = player.DialQUIC(ctx, ln.Addr().String(), nil)
			} else {
				conn, err = player.DialWS(ctx, "ws://"+tcp.Addr().String())
			}
			if err != nil {
				t.Error(err)
				return
			}
			tok, _ := player.IssueToken(key, player.PlayerID(fmt.Sprintf("bot%d", i)), player.Audience{World: player.DefaultWorld, Node: 1}, time.Now(), time.Minute, nil)
			c, err := player.Join(ctx, conn, tok)
			if err != nil {
				t.Error(err)
				return
			}
			pctx, stop := context.WithTimeout(ctx, 2*time.Second)
			defer stop()
			if err := c.Run(pctx, NewBrain(g, uint64(i)), 0); err != nil {
				t.Errorf("bot %d: %v", i, err)
			}
			stats[i] = c.Stats()
		}()
	}
	wg.Wait()
	// Refusals over the real sockets: a forged token on QUIC, a text
	// message on WebSocket.
	_, forger, _ := ed25519.GenerateKey(rand.NewChaCha8([32]byte{9}))
	forged, _ := player.IssueToken(forger, "mallory", player.Audience{World: player.DefaultWorld, Node: 1}, time.Now(), time.Minute, nil)
	if conn, err := player.DialQUIC(ctx, ln.Addr().String(), nil); err != nil {
		t.Error(err)
	} else if _, err := player.Join(ctx, conn, forged); !isRefusal(err, player.CodeBadToken) {
		t.Errorf("forged token over QUIC: %v", err)
	}
	if c, _, err := websocket.Dial(ctx, "ws://"+tcp.Addr().String(), nil); err != nil {
		t.Error(err)
	} else {
		_ = c.Write(ctx, websocket.MessageText, []byte("hello"))
		_, msg, err := c.Read(ctx)
		typ, body, _ := player.Open(msg)
		if e, _ := player.DecodeError(body); err != nil || typ != player.MsgError || e == nil || e.Code != player.CodeMalformed {
			t.Errorf("text message over WebSocket: %v %v", e, err)
		}
		_ = c.CloseNow()
	}
	time.Sleep(3 * arena.Frame) // the leaves reach a frame
	cancel()
	driver.Wait()
	for i, s := range stats {
		if s.Applied < 10 || len(s.RTT) < 5 || s.ObjectsSeen < 2 {
			t.Errorf("bot %d (%s): %+v", i, map[bool]string{true: "quic", false: "ws"}[i%2 == 0], s)
		}
	}
	if st := gw.Stats(); st.Joins != 8 || st.Leaves != 8 || st.Malformed != 1 || st.BadToken != 1 || st.BadInputs != 0 ||
		st.Datagrams < st.StateMessages/4 { // the QUIC half's states travel as datagrams
		t.Errorf("gateway stats %+v", st)
	} else {
		t.Logf("gateway stats %+v", st)
	}
}

func isRefusal(err error, code player.Code) bool {
	var re *player.RefusedError
	return errors.As(err, &re) && re.Code == code
}

// BenchmarkGatewayFrame measures the gateway's share of a frame (inputs,
// interest filtering, encoding, hand-off to the writers) on one arena node
// with p AI bots and p players over in-memory pipes whose clients apply
// and acknowledge every State: ns and State bytes per player per frame.
func BenchmarkGatewayFrame(b *testing.B) {
	for _, p := range []int{4, 16, 64} {
		b.Run(fmt.Sprintf("players=%d", p), func(b *testing.B) {
			ctx, cancel := context.WithCancel(b.Context())
			defer cancel()
			cfg := arena.Federated(1, arena.Sqr)
			cfg.PlayersPerNode = p
			g, err := arena.New(cfg)
			if err != nil {
				b.Fatal(err)
			}
			n := liveNodes(b, g, 1)[0]
			ver, key := testVerifier(b)
			gw, err := player.New(player.Config{Verifier: ver, Controller: NewController(g), Identity: testIdentity(b), MaxPlayers: p})
			if err != nil {
				b.Fatal(err)
			}
			var wg sync.WaitGroup
			var joined sync.WaitGroup
			for i := range p {
				a, c := player.Pipe(4)
				go func() { _ = gw.Serve(ctx, a) }()
				tok, _ := player.IssueToken(key, player.PlayerID(fmt.Sprintf("p%d", i)), player.Audience{World: player.DefaultWorld, Node: 1}, time.Now(), 5*time.Minute, nil)
				wg.Add(1)
				joined.Add(1)
				go func() {
					defer wg.Done()
					cl, err := player.Join(ctx, c, tok)
					joined.Done()
					if err != nil {
						return
					}
					brain := NewBrain(g, uint64(i))
					var seq uint64
					for {
						msg, err := c.ReadMessage(ctx, player.MaxMessage)
						if err != nil {
							return
						}
						ack, _ := cl.Handle(msg)
						if ack != nil {
							_ = c.WriteMessage(ctx, ack)
							var in []byte
							cl.Do(func(v *player.View) { in = brain.Input(cl.Welcome(), v, time.Duration(seq)*arena.Frame) })
							if in != nil {
								seq++
								_ = c.WriteMessage(ctx, player.AppendInput(nil, seq, in))
							}
						}
					}
				}()
			}
			var now time.Duration
			frame := func() {
				now += arena.Frame
				n.Tick(now)
				gw.Frame(now, n)
				n.Drain(nil)
			}
			for gw.Stats().Joins < int64(p) {
				frame()
				time.Sleep(time.Millisecond)
			}
			joined.Wait()
			for range 20 {
				frame()
				time.Sleep(time.Millisecond)
			}
			before := gw.Stats()
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				now += arena.Frame
				n.Tick(now)
				b.StartTimer()
				gw.Frame(now, n)
				b.StopTimer()
				n.Drain(nil)
				time.Sleep(time.Duration(p) * 50 * time.Microsecond) // let the clients read, acknowledge and go idle
				b.StartTimer()
			}
			after := gw.Stats()
			frames := float64(b.N)
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/frames/float64(p), "ns/player")
			b.ReportMetric(float64(after.StateBytes-before.StateBytes)/float64(after.StateMessages-before.StateMessages), "bytes/state")
			b.ReportMetric(float64(after.FullStates-before.FullStates)/frames/float64(p), "full/state")
			cancel()
			wg.Wait()
		})
	}
}
