package player

import (
	"context"
	"crypto/ed25519"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/overworld/overworld/internal/locate"
	"github.com/overworld/overworld/node"
	"github.com/overworld/overworld/world"
)

// dots is a test game: an avatar is a dot moved by 2-byte inputs (dx, dy
// in whole units).
type dots struct{}

func (dots) Join(n *node.Node, _ PlayerID) (world.ObjectID, error) {
	obj, err := n.Spawn(n.Now(), dotSchema, func(st *world.State) { st.SetInt(3, 100) })
	if err != nil {
		return 0, err
	}
	return obj.State().ID(), nil
}

func (dots) Input(n *node.Node, avatar world.ObjectID, in []byte) error {
	if len(in) != 2 {
		return fmt.Errorf("dots: %d-byte input", len(in))
	}
	return n.Write(avatar, func(st *world.State) {
		st.SetFloat(0, st.Float(0)+float64(int8(in[0])))
		st.SetFloat(1, st.Float(1)+float64(int8(in[1])))
	})
}

func (dots) Leave(n *node.Node, avatar world.ObjectID) { _ = n.Delete(n.Now(), avatar) }

func newTestNode(t testing.TB) *node.Node {
	dir, err := locate.NewDirectory(1, locate.DefaultDirectoryConfig(1))
	if err != nil {
		t.Fatal(err)
	}
	n, err := node.New(node.Config{ID: 1, Registry: testReg, Discovery: dir, Rand: rand.New(rand.NewPCG(1, 1))})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// randomWalk is a Brain that moves by random small steps.
type randomWalk struct{ rng *rand.Rand }

func (r *randomWalk) Input(Welcome, *View, time.Duration) []byte {
	return []byte{byte(int8(r.rng.IntN(7) - 3)), byte(int8(r.rng.IntN(7) - 3))}
}

type testbed struct {
	t     *testing.T
	n     *node.Node
	g     *Gateway
	key   ed25519.PrivateKey
	ver   *Verifier
	now   time.Duration
	frame uint64
	ctx   context.Context
}

func newTestbed(t *testing.T, ctx context.Context, cfg Config) *testbed {
	pub, key, err := ed25519.GenerateKey(rand.NewChaCha8([32]byte{1}))
	if err != nil {
		t.Fatal(err)
	}
	ver, err := NewVerifier(VerifierConfig{Key: pub, Audience: testAud, MaxTTL: 2 * time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Verifier, cfg.Controller = ver, dots{}
	if cfg.Identity == nil {
		cfg.Identity = testIdentities(t, 1)[0]
	}
	g, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &testbed{t: t, n: newTestNode(t), g: g, key: key, ver: ver, ctx: ctx}
}

func (tb *testbed) token(p PlayerID, ttl time.Duration) []byte {
	tok, err := IssueToken(tb.key, p, testAud, time.Now(), ttl, nil)
	if err != nil {
		tb.t.Fatal(err)
	}
	return tok
}

// connect serves one end of a pipe and returns the other.
func (tb *testbed) connect() Conn {
	a, b := Pipe(64)
	go func() { _ = tb.g.Serve(tb.ctx, a) }()
	return b
}

// step runs one frame and lets every goroutine settle.
func (tb *testbed) step() {
	time.Sleep(100 * time.Millisecond)
	tb.now += 100 * time.Millisecond
	tb.frame++
	tb.n.Tick(tb.now)
	tb.g.Frame(tb.now, tb.n)
	tb.n.Drain(nil)
	synctest.Wait()
}

// check compares a client's view with the node: exactly the node's objects
// in the avatar's interest (and the avatar), with equal states.
func (tb *testbed) check(c *Client) {
	t := tb.t
	obj, _, ok := tb.n.Lookup(c.Welcome().Avatar)
	if !ok {
		t.Fatalf("avatar %v gone", c.Welcome().Avatar)
	}
	boxes := obj.Interest(nil)
	var want []*world.State
	for _, o := range tb.n.Objects(nil) {
		in := o.ID == c.Welcome().Avatar
		for _, b := range boxes {
			in = in || b.Contains(o.State.Location(), 3)
		}
		if in {
			want = append(want, o.State)
		}
	}
	c.Do(func(v *View) {
		if v.Frame() != tb.frame {
			t.Fatalf("frame %d: client %s at frame %d", tb.frame, c.Welcome().Player, v.Frame())
		}
		got := v.Objects()
		if len(got) != len(want) {
			t.Fatalf("frame %d: client %s sees %d objects, node has %d in its interest", tb.frame, c.Welcome().Player, len(got), len(want))
		}
		for i := range got {
			if !sameState(got[i].State, want[i]) {
				t.Fatalf("frame %d: client %s: object %v differs from the node's %v", tb.frame, c.Welcome().Player, got[i].ID, want[i].ID())
			}
		}
	})
}

// TestGatewayPlayersSeeNodeState joins players over in-memory pipes, has
// them walk at random among static dots, and checks after every frame that
// each client's reconstruction equals the node's state of every object in
// its avatar's interest.
func TestGatewayPlayersSeeNodeState(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		tb := newTestbed(t, ctx, Config{MaxPlayers: 8})
		rng := rand.New(rand.NewPCG(3, 3))
		for range 60 { // scenery in and out of the players' interests
			_, err := tb.n.Spawn(0, dotSchema, func(st *world.State) {
				st.SetFloat(0, rng.Float64()*60-30)
				st.SetFloat(1, rng.Float64()*60-30)
			})
			if err != nil {
				t.Fatal(err)
			}
		}
		const players = 5
		clients := make(chan *Client, players)
		for i := range players {
			conn := tb.connect()
			tok := tb.token(PlayerID(fmt.Sprintf("p%d", i)), time.Hour)
			go func() {
				c, err := Join(ctx, conn, tok)
				if err != nil {
					t.Error(err)
					return
				}
				clients <- c
				_ = c.Run(ctx, &randomWalk{rand.New(rand.NewPCG(uint64(i), 0))}, 0)
			}()
		}
		synctest.Wait()
		tb.step() // admits the joins
		var cs []*Client
		for range players {
			cs = append(cs, <-clients)
		}
		for range 80 {
			tb.step()
			for _, c := range cs {
				tb.check(c)
			}
		}
		st := tb.g.Stats()
		if st.Players != players || st.Joins != players || st.Inputs == 0 || st.BadInputs != 0 || st.Malformed != 0 {
			t.Fatalf("stats %+v", st)
		}
		if st.FullStates != players {
			t.Errorf("%d full states, want one per player (every later state is a delta)", st.FullStates)
		}
		for _, c := range cs {
			s := c.Stats()
			if len(s.RTT) == 0 || s.Applied != int64(tb.frame) || s.ObjectsSeen < 2 {
				t.Errorf("client %s stats %+v", s.Player, s)
			}
		}
		cancel() // clients leave
		synctest.Wait()
		tb.step()
		if st := tb.g.Stats(); st.Players != 0 || st.Leaves != players {
			t.Fatalf("after leaving: %+v", st)
		}
		if objs := tb.n.Objects(nil); len(objs) != 60 {
			t.Fatalf("%d objects after the players left, want the 60 dots", len(objs))
		}
	})
}

// TestGatewayRefusals presents forged, expired, replayed and malformed
// joins, too many players, a duplicate player and malformed messages
// after a join: each is refused with its error code and counted, and none
// leaves a player, an avatar or (except the accepted token) a nonce; a
// Rejoin naming an avatar another session plays is refused too.
func TestGatewayRefusals(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		tb := newTestbed(t, ctx, Config{MaxPlayers: 2})
		refused := func(msg []byte, code Code) {
			t.Helper()
			conn := tb.connect()
			if err := conn.WriteMessage(ctx, msg); err != nil {
				t.Fatal(err)
			}
			synctest.Wait()
			tb.step()
			got, err := conn.ReadMessage(ctx, MaxMessage)
			if err != nil {
				t.Fatalf("want error %v, got %v", code, err)
			}
			typ, body, err := Open(got)
			if err != nil || typ != MsgError {
				t.Fatalf("want error %v, got %v %v", code, typ, err)
			}
			e, err := DecodeError(body)
			if err != nil || e.Code != code {
				t.Fatalf("want error %v, got %v %v", code, e, err)
			}
			if _, err := conn.ReadMessage(ctx, MaxMessage); !errors.Is(err, ErrClosed) {
				t.Fatalf("connection not closed after %v: %v", code, err)
			}
		}
		_, otherKey, _ := ed25519.GenerateKey(rand.NewChaCha8([32]byte{2}))
		forged, _ := IssueToken(otherKey, "mallory", testAud, time.Now(), time.Hour, nil)
		refused(AppendJoin(nil, forged), CodeBadToken)
		good := tb.token("alice", time.Hour)
		tampered := append([]byte(nil), good...)
		tampered[3] ^= 1 // "alice" -> "blice": the signature no longer matches
		refused(AppendJoin(nil, tampered), CodeBadToken)
		expired := tb.token("bob", time.Second)
		time.Sleep(2 * time.Second)
		refused(AppendJoin(nil, expired), CodeBadToken)
		refused([]byte{Version, byte(MsgJoin), 200}, CodeMalformed)
		refused([]byte{9, 9}, CodeMalformed)
		refused(AppendInput(nil, 1, []byte{1, 1}), CodeMalformed)
		if tb.ver.Nonces() != 0 {
			t.Fatalf("%d nonces after refusals", tb.ver.Nonces())
		}
		st := tb.g.Stats()
		if st.BadToken != 2 || st.Expired != 1 || st.Malformed != 3 || st.Players != 0 || st.Joins != 0 {
			t.Fatalf("stats %+v", st)
		}
		// A join, then its token replayed, a duplicate player and a full node.
		conn := tb.connect()
		var alice *Client
		go func() {
			var err error
			if alice, err = Join(ctx, conn, good); err != nil {
				t.Error(err)
			}
		}()
		synctest.Wait()
		tb.step()
		synctest.Wait()
		if alice == nil {
			t.Fatal("alice did not join")
		}
		refused(AppendJoin(nil, good), CodeBadToken)
		refused(AppendJoin(nil, tb.token("alice", time.Hour)), CodeDuplicate)
		// A Rejoin naming alice's avatar, with another player's good token
		// and no deed.
		refused(AppendRejoin(nil, Rejoin{Token: tb.token("mallory", time.Hour), Avatar: alice.Welcome().Avatar}), CodeBadDeed)
		conn2 := tb.connect()
		go func() { _, _ = Join(ctx, conn2, tb.token("carol", time.Hour)) }()
		synctest.Wait()
		tb.step()
		refused(AppendJoin(nil, tb.token("dave", time.Hour)), CodeFull)
		st = tb.g.Stats()
		if st.Replayed != 1 || st.Duplicate != 1 || st.BadDeed != 1 || st.RejoinRefused != 0 || st.Full != 1 || st.Players != 2 {
			t.Fatalf("stats %+v", st)
		}
		if objs := tb.n.Objects(nil); len(objs) != 2 {
			t.Fatalf("%d objects, want the 2 avatars", len(objs))
		}
		// Malformed messages after the join end the session.
		for _, msg := range [][]byte{AppendAck(nil, 1000), {Version, byte(MsgJoinOK)}, AppendInput(nil, 0, nil)} {
			before := tb.g.Stats()
			if err := conn.WriteMessage(ctx, msg); err != nil {
				t.Fatal(err)
			}
			synctest.Wait()
			tb.step()
			after := tb.g.Stats()
			if after.Malformed != before.Malformed+1 || after.Players != before.Players-1 {
				t.Fatalf("after %v: stats %+v", msg, after)
			}
			// Rejoin with a fresh token for the next message.
			conn = tb.connect()
			go func() { _, _ = Join(ctx, conn, tb.token("alice", time.Hour)) }()
			synctest.Wait()
			tb.step()
		}
	})
}

// TestGatewaySlowClient stops reading for a while: Frame must not block,
// the unwritten states are coalesced (newest wins), and once the client
// reads again it catches up to exactly the node's state.
func TestGatewaySlowClient(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		tb := newTestbed(t, ctx, Config{History: 4})
		a, b := Pipe(1)
		go func() { _ = tb.g.Serve(ctx, a) }()
		var c *Client
		go func() { c, _ = Join(ctx, b, tb.token("slow", time.Hour)) }()
		synctest.Wait()
		tb.step()
		if c == nil {
			t.Fatal("no join")
		}
		var avatar = c.Welcome().Avatar
		for range 12 { // the client reads nothing; its avatar moves
			if err := tb.n.Write(avatar, func(st *world.State) { st.SetFloat(0, st.Float(0)+1) }); err != nil {
				t.Fatal(err)
			}
			tb.step()
		}
		if st := tb.g.Stats(); st.Coalesced < 9 || st.StateMessages > 3 {
			t.Fatalf("stats while the client is stalled: %+v", st)
		}
		go func() { // the client reads again
			for {
				msg, err := b.ReadMessage(ctx, MaxMessage)
				if err != nil {
					return
				}
				ack, err := c.Handle(msg)
				if err != nil {
					t.Error(err)
					return
				}
				if ack != nil {
					_ = b.WriteMessage(ctx, ack)
				}
			}
		}()
		synctest.Wait()
		for range 6 {
			tb.step()
			tb.check(c)
		}
		if st := tb.g.Stats(); st.FullStates < 2 {
			t.Errorf("the stalled client's acknowledged frame fell out of a 4-frame history, yet %d full states", st.FullStates)
		}
	})
}

// TestGatewayLimits checks the join timeout and the bound on queued
// inputs.
func TestGatewayLimits(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		tb := newTestbed(t, ctx, Config{MaxPlayers: 1, MaxInputs: 2, JoinTimeout: 2 * time.Second})
		silent := tb.connect()
		time.Sleep(3 * time.Second)
		synctest.Wait()
		msg, err := silent.ReadMessage(ctx, MaxMessage)
		if err != nil {
			t.Fatal(err)
		}
		if _, body, _ := Open(msg); body == nil {
			t.Fatal("no error message")
		} else if e, err := DecodeError(body); err != nil || e.Code != CodeTimeout {
			t.Fatalf("silent connection got %v %v", e, err)
		}
		conn := tb.connect()
		var c *Client
		go func() { c, _ = Join(ctx, conn, tb.token("p", time.Hour)) }()
		synctest.Wait()
		tb.step()
		for seq := range uint64(5) {
			if err := conn.WriteMessage(ctx, AppendInput(nil, seq+1, []byte{1, 0})); err != nil {
				t.Fatal(err)
			}
		}
		synctest.Wait()
		tb.step()
		if st := tb.g.Stats(); st.Inputs != 2 || st.InputsDropped != 3 || st.Timeouts != 1 {
			t.Fatalf("stats %+v", st)
		}
		_ = c
	})
}

// failing is a game that refuses every player.
type failing struct{ dots }

func (failing) Join(*node.Node, PlayerID) (world.ObjectID, error) {
	return 0, errors.New("no room in the game")
}

// TestGatewayJoinFailedAndShutdown checks a Controller's refusal, an
// oversized message, and Close: every player gets CodeShutdown and its
// avatar is removed.
func TestGatewayJoinFailedAndShutdown(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		tb := newTestbed(t, ctx, Config{})
		g2, err := New(Config{Verifier: tb.ver, Controller: failing{}, Identity: tb.g.cfg.Identity})
		if err != nil {
			t.Fatal(err)
		}
		a, b := Pipe(4)
		go func() { _ = g2.Serve(ctx, a) }()
		var jerr error
		go func() { _, jerr = Join(ctx, b, tb.token("x", time.Hour)) }()
		synctest.Wait()
		g2.Frame(0, tb.n)
		synctest.Wait()
		var re *RefusedError
		if !errors.As(jerr, &re) || re.Code != CodeJoinFailed || g2.Stats().JoinFailed != 1 || g2.Stats().Players != 0 {
			t.Fatalf("refused by the game: %v, %+v", jerr, g2.Stats())
		}
		// An oversized message before the join.
		big := tb.connect()
		_ = big.WriteMessage(ctx, make([]byte, MaxClientMessage+1))
		synctest.Wait()
		if tb.g.Stats().Malformed != 1 {
			t.Fatalf("oversized join: %+v", tb.g.Stats())
		}
		var mu sync.Mutex
		var errs []error
		for i := range 3 {
			conn := tb.connect()
			tok := tb.token(PlayerID(fmt.Sprint("p", i)), time.Hour)
			go func() {
				c, err := Join(ctx, conn, tok)
				if err != nil {
					t.Error(err)
					return
				}
				err = c.Run(ctx, &randomWalk{rand.New(rand.NewPCG(1, 1))}, 0)
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}()
		}
		synctest.Wait()
		tb.step()
		tb.step()
		if n := len(tb.n.Objects(nil)); n != 3 {
			t.Fatalf("%d objects, want 3 avatars", n)
		}
		tb.g.Close()
		tb.step()
		mu.Lock()
		defer mu.Unlock()
		if n := len(tb.n.Objects(nil)); n != 0 || tb.g.Stats().Players != 0 || len(errs) != 3 {
			t.Fatalf("after Close: %d objects, %+v, %d clients ended", n, tb.g.Stats(), len(errs))
		}
		for _, err := range errs {
			if !errors.As(err, &re) || re.Code != CodeShutdown {
				t.Fatalf("client ended with %v, want a shutdown error", err)
			}
		}
		nonces := tb.ver.Nonces()
		refusedConn := tb.connect()
		_ = refusedConn.WriteMessage(ctx, AppendJoin(nil, tb.token("late", time.Hour)))
		synctest.Wait()
		msg, err := refusedConn.ReadMessage(ctx, MaxMessage)
		if err != nil {
			t.Fatal(err)
		}
		if _, body, _ := Open(msg); body == nil {
			t.Fatal("no error")
		} else if e, _ := DecodeError(body); e == nil || e.Code != CodeShutdown {
			t.Fatalf("join after Close: %v", e)
		}
		if tb.ver.Nonces() != nonces {
			t.Fatal("a join refused at shutdown spent its token")
		}
	})
}

// TestGatewayReconnectWithinFrame drops a connection and rejoins the same
// player before the next frame: the old session ends first, so the new
// join is not a duplicate.
func TestGatewayReconnectWithinFrame(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		tb := newTestbed(t, ctx, Config{})
		conn := tb.connect()
		go func() { _, _ = Join(ctx, conn, tb.token("p", time.Hour)) }()
		synctest.Wait()
		tb.step()
		_ = conn.Close()
		conn2 := tb.connect()
		var c *Client
		go func() { c, _ = Join(ctx, conn2, tb.token("p", time.Hour)) }()
		synctest.Wait()
		tb.step()
		st := tb.g.Stats()
		if c == nil || st.Players != 1 || st.Joins != 2 || st.Leaves != 1 || st.Duplicate != 0 {
			t.Fatalf("stats %+v (rejoined: %v)", st, c != nil)
		}
		if n := len(tb.n.Objects(nil)); n != 1 {
			t.Fatalf("%d avatars, want 1", n)
		}
	})
}

// TestGatewayAvatarGone deletes the first player's avatar behind the
// gateway's back: that player gets CodeAvatarGone, and the next player in
// the frame still gets its State.
func TestGatewayAvatarGone(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		tb := newTestbed(t, ctx, Config{})
		var cs [3]*Client
		var errs [3]error
		for i := range cs {
			conn := tb.connect()
			tok := tb.token(PlayerID(fmt.Sprint("p", i)), time.Hour)
			go func() {
				c, err := Join(ctx, conn, tok)
				if err != nil {
					t.Error(err)
					return
				}
				cs[i] = c
				errs[i] = c.Run(ctx, &randomWalk{rand.New(rand.NewPCG(1, 1))}, 0)
			}()
			synctest.Wait()
			tb.step() // admitted in order: p0, p1, p2
		}
		tb.step()
		if err := tb.n.Delete(tb.now, cs[0].Welcome().Avatar); err != nil {
			t.Fatal(err)
		}
		tb.step()
		tb.check(cs[1])
		tb.check(cs[2])
		var re *RefusedError
		if !errors.As(errs[0], &re) || re.Code != CodeAvatarGone {
			t.Fatalf("player 0 ended with %v", errs[0])
		}
		if st := tb.g.Stats(); st.Players != 2 || st.Leaves != 1 {
			t.Fatalf("stats %+v", st)
		}
	})
}
