package player

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/quic-go/quic-go"

	"github.com/overworld/overworld/internal/replica"
	"github.com/overworld/overworld/live/pki"
	"github.com/overworld/overworld/node"
	"github.com/overworld/overworld/wire"
	"github.com/overworld/overworld/world"
)

// Controller is how a game plugs its players into a node. The Gateway
// calls it on the driver's frame goroutine (inside Frame), so it may use
// every method of the node.
type Controller interface {
	// Join creates player's avatar on n and returns its ID (a primary of
	// n). An error refuses the player.
	Join(n *node.Node, player PlayerID) (world.ObjectID, error)
	// Input applies one input of the player controlling avatar. An error
	// (malformed input) is counted and the input ignored.
	Input(n *node.Node, avatar world.ObjectID, input []byte) error
	// Leave removes the avatar of a player who left or disconnected.
	Leave(n *node.Node, avatar world.ObjectID)
}

// Conn is one player connection carrying whole protocol messages (a QUIC
// stream with length prefixes, a WebSocket with binary messages, or an
// in-memory pipe). ReadMessage and WriteMessage are each called from one
// goroutine; Close may be called from any and unblocks both.
type Conn interface {
	// ReadMessage returns the next message (at most max bytes; a longer
	// one is an error). The returned slice is valid until the next call.
	ReadMessage(ctx context.Context, max int) ([]byte, error)
	// WriteMessage sends one message.
	WriteMessage(ctx context.Context, msg []byte) error
	// Close closes the connection.
	Close() error
}

// Config configures a Gateway.
type Config struct {
	// Verifier checks join tokens (required).
	Verifier *Verifier
	// Controller is the game (required).
	Controller Controller
	// Identity is the node's TLS identity (required): its key signs the
	// avatar deeds the gateway gives players, and its cluster CA
	// (VerifyIssuer) checks the deeds Rejoins present, whichever node
	// of the cluster issued them. A one-node world makes one with a CA
	// of its own (pki.NewCA).
	Identity *pki.Identity
	// DeedTTL is how long an avatar deed this gateway issues is
	// good for, and the longest lifetime it accepts in a Rejoin's. A
	// session's deed is renewed (a new Deed message) once half of it
	// has passed. Default DefaultDeedTTL (24 h).
	DeedTTL time.Duration
	// MaxPlayers bounds the players joined or joining. A connection
	// takes a player slot only once its token verified. Default 64.
	MaxPlayers int
	// QUIC and WS bound each endpoint's unauthenticated connections
	// (ServeQUIC's, and those of the listener WSServer wraps), separately:
	// a flood at one endpoint does not lock players out of the other.
	QUIC, WS Limits
	// MaxInputs bounds the inputs queued per player between two frames;
	// more are dropped (counted). Default 8 (a client sends one per
	// frame; the slack absorbs jitter).
	MaxInputs int
	// History is the number of frames whose snapshots are kept per player
	// as delta bases: a client acknowledging within History frames gets
	// deltas, a slower one full states. Default 32 (3.2 s at 10 Hz).
	History int
	// FrameEvery is the driver's frame period, told to clients. Default
	// world.DefaultFrame (100 ms).
	FrameEvery time.Duration
	// JoinTimeout is how long a new connection has to send its Join
	// (after the endpoint's Limits.Deadline, if shorter, it is closed
	// anyway). Default 3 s.
	JoinTimeout time.Duration
	// Now is the wall clock for token expiry. Default time.Now.
	Now func() time.Time
	// Logf logs connection events. Default: discard.
	Logf func(format string, args ...any)
}

// ErrConfig reports a bad Config.
var ErrConfig = errors.New("player: bad gateway config")

func (c Config) validate() (Config, error) {
	if c.Verifier == nil {
		return c, fmt.Errorf("%w: no Verifier", ErrConfig)
	}
	if c.Controller == nil {
		return c, fmt.Errorf("%w: no Controller", ErrConfig)
	}
	if c.Identity == nil {
		return c, fmt.Errorf("%w: no Identity (the node's certificate signs avatar deeds)", ErrConfig)
	}
	if c.DeedTTL == 0 {
		c.DeedTTL = DefaultDeedTTL
	}
	if c.DeedTTL < time.Minute {
		return c, fmt.Errorf("%w: DeedTTL %v, want at least 1m", ErrConfig, c.DeedTTL)
	}
	def := func(v *int, d int) {
		if *v == 0 {
			*v = d
		}
	}
	def(&c.MaxPlayers, 64)
	def(&c.MaxInputs, 8)
	def(&c.History, 32)
	if c.FrameEvery == 0 {
		c.FrameEvery = world.DefaultFrame
	}
	if c.JoinTimeout == 0 {
		c.JoinTimeout = 3 * time.Second
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Logf == nil {
		c.Logf = func(string, ...any) {}
	}
	if c.MaxPlayers < 1 || c.MaxInputs < 1 || c.History < 2 || c.History > MaxHistory || c.FrameEvery < 0 || c.JoinTimeout < 0 {
		return c, fmt.Errorf("%w: MaxPlayers %d, MaxInputs %d, History %d, FrameEvery %v, JoinTimeout %v (want ≥ 1, ≥ 1, 2 to 1024, ≥ 0, ≥ 0)",
			ErrConfig, c.MaxPlayers, c.MaxInputs, c.History, c.FrameEvery, c.JoinTimeout)
	}
	var err error
	if c.QUIC, err = c.QUIC.withDefaults(); err != nil {
		return c, err
	}
	c.WS, err = c.WS.withDefaults()
	return c, err
}

// Stats counts what a gateway did. Refusals happen before any per-player
// state exists.
type Stats struct {
	Players       int64 // players in game now
	Conns         int64 // connections being served now (joined or not)
	Joins         int64 // players that joined
	Leaves        int64 // players that left or were dropped
	BadToken      int64 // joins refused: forged, malformed or early token, or the replay store full or failing
	Audience      int64 // joins refused: token for another world or another node
	Expired       int64 // joins refused: expired token
	Replayed      int64 // joins refused: token already used
	Full          int64 // joins refused: MaxPlayers reached
	RejoinRefused int64 // rejoins refused: the avatar is another session's
	BadDeed       int64 // rejoins refused: no avatar deed, or one refused (forged, expired, another cluster's, another player's or avatar's)
	Deeds         int64 // avatar deeds issued (joins, rejoins arrived, renewals)
	OldClients    int64 // connections refused for speaking protocol version 1
	Duplicate     int64 // joins refused: player already in game here
	JoinFailed    int64 // joins refused by the Controller
	Timeouts      int64 // connections that sent no Join in time
	Malformed     int64 // connections dropped for a malformed message
	HTTPErrors    int64 // WebSocket endpoint connections that failed before the upgrade (not HTTP, a failed TLS handshake)
	Inputs        int64 // inputs applied
	InputsDropped int64 // inputs dropped: queue full
	BadInputs     int64 // inputs the Controller refused
	StateMessages int64 // State messages written to connections
	StateBytes    int64 // their bytes
	Datagrams     int64 // of which sent as QUIC datagrams
	Coalesced     int64 // State messages replaced by a newer one before they were written
	FullStates    int64 // State messages encoded from scratch (no acknowledged base)
	HandedOff     int64 // players handed to another node (HandOff)
	Rejoins       int64 // players handed here from another node (Rejoin)
	InputsMoved   int64 // inputs ignored after a handoff (the client sends them to the new node)
	// QUICLimits and WSLimits: each endpoint's unauthenticated
	// connections and what its Limits refused.
	QUICLimits, WSLimits LimitStats
}

type stats struct {
	players, joins, leaves, badToken, audience, expired, replayed, full, rejoinRefused, badDeed, deeds, oldClients, duplicate, joinFailed, timeouts,
	malformed, inputs, inputsDropped, badInputs, stateMsgs, stateBytes, datagrams, coalesced, fullStates,
	handedOff, rejoins, inputsMoved, httpErrors atomic.Int64
}

// Gateway is a node's player endpoint: it authenticates joining players,
// runs their avatars through a Controller and sends each player the
// interest-filtered, delta-encoded state of its avatar's view. Connection
// goroutines (Serve) talk to the frame goroutine (Frame) only through
// bounded queues under a mutex; Frame never blocks on a connection.
type Gateway struct {
	cfg   Config
	st    stats
	slots atomic.Int64 // players joined or joining
	conns atomic.Int64 // connections being served
	quic  *door        // the QUIC endpoint's pre-auth limits
	ws    *door        // the WebSocket endpoint's

	mu       sync.Mutex
	joins    []*link
	leaves   []*link
	handoffs []handoffReq
	closed   bool

	// owned by the frame goroutine
	frame    uint64
	sessions map[PlayerID]*session
	order    []*session // in join order
	objs     []replica.Info
	seen     []Seen
	boxes    []world.Box
	msg      []byte
	dims     int
	grid     grid

	onQUIC atomic.Pointer[func(*quic.Conn)]
}

// session is a joined player, owned by the frame goroutine.
type session struct {
	l      *link
	player PlayerID
	avatar world.ObjectID
	enc    *Encoder
	seq    uint64 // newest input applied
	// A session handed to another node (HandOff) applies no input, sends
	// States while it holds the avatar's replica, and ends without
	// removing the avatar (its new node owns it).
	movedAt uint64 // the frame of the handoff (0: not handed off)
	// A session rejoined here (Rejoin) waits for the avatar until frame
	// waitUntil, holding its inputs.
	waitUntil uint64
	held      []input
	// deedAt is when the session's newest deed was issued (zero:
	// none yet, a rejoin waiting for its avatar).
	deedAt time.Time
}

// handoffReq is a queued HandOff.
type handoffReq struct {
	player PlayerID
	to     Target
	done   chan error
}

// Target is where HandOff sends a player: a node and its player
// endpoints (at least one).
type Target struct {
	Node uint32
	QUIC string // host:port
	WS   string // ws:// or wss:// URL
}

// link is one connection's shared state between its goroutines and the
// frame goroutine.
type link struct {
	player PlayerID
	conn   Conn
	wake   chan struct{} // cap 1: the writer has something to send
	done   chan struct{} // closed when the connection ends
	once   sync.Once

	acked atomic.Uint64 // newest frame the client acknowledged

	mu      sync.Mutex
	control [][]byte // JoinOK / Error messages, in order
	state   []byte   // newest unwritten State message (nil: none)
	spare   []byte
	inputs  []input // queued inputs
	ispare  []input
	rejoin  *Rejoin // the connection rejoined (a handoff), rather than joined
	last    bool    // the control queue ends the session: close after writing it
	lastSeq uint64
	sent    uint64 // newest frame handed to the writer
}

type input struct {
	seq  uint64
	data []byte
}

// New returns a gateway.
func New(cfg Config) (*Gateway, error) {
	cfg, err := cfg.validate()
	if err != nil {
		return nil, err
	}
	return &Gateway{cfg: cfg, sessions: map[PlayerID]*session{}, quic: newDoor(cfg.QUIC), ws: newDoor(cfg.WS)}, nil
}

// OnQUICAccept registers f, called with every connection ServeQUIC
// accepts (before anything else is done with it): a handshake guard's
// Established.
func (g *Gateway) OnQUICAccept(f func(*quic.Conn)) { g.onQUIC.Store(&f) }

// QUICAdmits reports whether the QUIC endpoint's pre-auth limits would
// admit a connection from src now (Limits): a QUIC listener asks before
// the handshake, so that a connection the gateway would close at once
// costs no cryptography.
func (g *Gateway) QUICAdmits(src net.Addr) bool { return g.quic.admits(src) }

// Stats returns the gateway's counters.
func (g *Gateway) Stats() Stats {
	s := &g.st
	return Stats{Players: s.players.Load(), Conns: g.conns.Load(), Joins: s.joins.Load(), Leaves: s.leaves.Load(),
		BadToken: s.badToken.Load(), Audience: s.audience.Load(), Expired: s.expired.Load(), Replayed: s.replayed.Load(),
		Full: s.full.Load(), RejoinRefused: s.rejoinRefused.Load(), BadDeed: s.badDeed.Load(), Deeds: s.deeds.Load(),
		OldClients: s.oldClients.Load(),
		Duplicate:  s.duplicate.Load(), JoinFailed: s.joinFailed.Load(), Timeouts: s.timeouts.Load(),
		Malformed: s.malformed.Load(), HTTPErrors: s.httpErrors.Load(), Inputs: s.inputs.Load(), InputsDropped: s.inputsDropped.Load(),
		BadInputs: s.badInputs.Load(), StateMessages: s.stateMsgs.Load(), StateBytes: s.stateBytes.Load(), Datagrams: s.datagrams.Load(),
		Coalesced: s.coalesced.Load(), FullStates: s.fullStates.Load(), HandedOff: s.handedOff.Load(),
		Rejoins: s.rejoins.Load(), InputsMoved: s.inputsMoved.Load(), QUICLimits: g.quic.stats(), WSLimits: g.ws.stats()}
}

// refuse sends an Error message and closes conn (best effort, bounded by
// a second).
func refuse(ctx context.Context, conn Conn, code Code, text string) {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	_ = conn.WriteMessage(ctx, AppendError(nil, code, text))
	_ = conn.Close()
}

// Serve runs one player connection until it ends: it reads the Join,
// verifies the token, queues the join for the next Frame, then forwards
// inputs and acknowledgements and writes the states Frame produces. It
// closes conn before returning, and returns why the connection ended.
//
// Serve applies no pre-auth Limits (it serves in-process connections);
// ServeQUIC and the listener of WSServer do.
func (g *Gateway) Serve(ctx context.Context, conn Conn) error {
	g.conns.Add(1)
	defer g.conns.Add(-1)
	return g.serve(ctx, conn, nil)
}

// serve serves a connection; p is its pass through an endpoint's door
// (nil: none), which it leaves once the token verified or the connection
// ended.
func (g *Gateway) serve(ctx context.Context, conn Conn, p *pass) error {
	defer p.leave()
	jctx, cancel := context.WithTimeout(ctx, g.cfg.JoinTimeout)
	msg, err := conn.ReadMessage(jctx, MaxClientMessage)
	cancel()
	if errors.Is(err, ErrTooLarge) || errors.Is(err, ErrMalformed) {
		g.st.malformed.Add(1)
		refuse(ctx, conn, CodeMalformed, err.Error())
		return err
	}
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			g.st.timeouts.Add(1)
			refuse(ctx, conn, CodeTimeout, "no join within "+g.cfg.JoinTimeout.String())
		} else {
			_ = conn.Close()
		}
		return fmt.Errorf("player: reading join: %w", err)
	}
	if len(msg) > 0 && msg[0] == 1 {
		// A version-1 client: answer in its own framing, so that it can
		// tell the player to upgrade.
		g.st.oldClients.Add(1)
		text := "protocol version 1 is no longer served: this node speaks version 2 (a rejoin carries an avatar deed); upgrade the client"
		ectx, cancel := context.WithTimeout(ctx, time.Second)
		_ = conn.WriteMessage(ectx, appendString([]byte{1, byte(MsgError), byte(CodeMalformed)}, text))
		cancel()
		_ = conn.Close()
		return fmt.Errorf("player: refused a version-1 client")
	}
	tok, rejoin, err := parseFirst(msg)
	if err != nil {
		g.st.malformed.Add(1)
		refuse(ctx, conn, CodeMalformed, err.Error())
		return err
	}
	g.mu.Lock()
	closed := g.closed
	g.mu.Unlock()
	if closed { // before the token is spent
		refuse(ctx, conn, CodeShutdown, "gateway closed")
		return fmt.Errorf("player: gateway closed")
	}
	full := func() error {
		g.st.full.Add(1)
		refuse(ctx, conn, CodeFull, fmt.Sprintf("node has %d players", g.cfg.MaxPlayers))
		return fmt.Errorf("player: refused: full")
	}
	if g.slots.Load() >= int64(g.cfg.MaxPlayers) { // before the token is spent
		return full()
	}
	verify := g.cfg.Verifier.Verify
	if rejoin != nil {
		verify = g.cfg.Verifier.VerifyRejoin
	}
	claims, err := verify(tok, g.cfg.Now())
	if err != nil {
		switch {
		case errors.Is(err, ErrTokenExpired):
			g.st.expired.Add(1)
		case errors.Is(err, ErrTokenReplayed):
			g.st.replayed.Add(1)
		case errors.Is(err, ErrTokenWorld), errors.Is(err, ErrTokenNode):
			g.st.audience.Add(1)
		default:
			g.st.badToken.Add(1)
		}
		refuse(ctx, conn, CodeBadToken, err.Error())
		return err
	}
	if rejoin != nil {
		if err := g.checkDeed(rejoin, claims.Player); err != nil {
			g.st.badDeed.Add(1)
			refuse(ctx, conn, CodeBadDeed, err.Error())
			return err
		}
	}
	p.leave() // authenticated: from now on a player slot bounds it
	if g.slots.Add(1) > int64(g.cfg.MaxPlayers) {
		g.slots.Add(-1)
		return full()
	}
	l := &link{player: claims.Player, conn: conn, wake: make(chan struct{}, 1), done: make(chan struct{}), rejoin: rejoin}
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		g.slots.Add(-1)
		refuse(ctx, conn, CodeShutdown, "gateway closed")
		return fmt.Errorf("player: gateway closed")
	}
	g.joins = append(g.joins, l)
	g.mu.Unlock()
	g.cfg.Logf("player %q connecting", claims.Player)

	ctx, stop := context.WithCancel(ctx)
	defer stop()
	go func() { // the link's end (by the writer or the frame) stops the reader
		select {
		case <-l.done:
		case <-ctx.Done():
		}
		stop()
	}()
	werr := make(chan error, 1)
	go func() { werr <- g.write(ctx, l) }()
	rerr := g.read(ctx, l)
	l.end()
	stop()
	_ = conn.Close()
	wErr := <-werr
	g.mu.Lock()
	g.leaves = append(g.leaves, l) // bounded: one per link
	g.mu.Unlock()
	if rerr == nil {
		rerr = wErr
	}
	return rerr
}

// parseFirst decodes a connection's first message, which must be a Join
// or a Rejoin, and returns its token (and the Rejoin): everything a
// connection can make the node parse before its token is verified.
func parseFirst(msg []byte) (tok []byte, rejoin *Rejoin, err error) {
	t, body, err := Open(msg)
	if err != nil {
		return nil, nil, err
	}
	switch t {
	case MsgJoin:
		tok, err = DecodeJoin(body)
		return tok, nil, err
	case MsgRejoin:
		r, err := DecodeRejoin(body)
		if err != nil {
			return nil, nil, err
		}
		r.Token = append([]byte(nil), r.Token...)
		r.Deed = append([]byte(nil), r.Deed...)
		return r.Token, &r, nil
	}
	return nil, nil, malformed(t, "expected a join or a rejoin")
}

// checkDeed verifies a Rejoin's avatar deed for player (the subject
// of the token the connection presented): issued by a node of this
// cluster, correctly signed, unexpired, for this world, this avatar and
// this player.
func (g *Gateway) checkDeed(r *Rejoin, player PlayerID) error {
	if len(r.Deed) == 0 {
		return fmt.Errorf("%w: %w", ErrDeed, ErrDeedMissing)
	}
	t, err := VerifyDeed(r.Deed, g.cfg.Identity, g.cfg.Now(), g.cfg.DeedTTL)
	if err != nil {
		return err
	}
	switch here := g.cfg.Verifier.Audience().World; {
	case t.World != here:
		return fmt.Errorf("%w: %w (%q, this is %q)", ErrDeed, ErrDeedWorld, t.World, here)
	case t.Avatar != r.Avatar:
		return fmt.Errorf("%w: %w (deed for %v, rejoining %v)", ErrDeed, ErrDeedAvatar, t.Avatar, r.Avatar)
	case t.Player != player:
		return fmt.Errorf("%w: %w (deed for %q, token for %q)", ErrDeed, ErrDeedPlayer, t.Player, player)
	}
	return nil
}

// issueDeed gives s's player a fresh deed for its avatar. A failure
// (the node's certificate or key unusable for deeds) is logged, and tried
// again at the deed's half life, not every frame.
func (g *Gateway) issueDeed(s *session, now time.Time) {
	s.deedAt = now
	t, err := IssueDeed(g.cfg.Identity.Current(), s.avatar, s.player, g.cfg.Verifier.Audience().World, now, g.cfg.DeedTTL)
	if err != nil {
		g.cfg.Logf("player %q: no deed: %v", s.player, err)
		return
	}
	g.st.deeds.Add(1)
	s.l.post(AppendDeed(nil, t), false)
}

func (l *link) end() { l.once.Do(func() { close(l.done) }) }

// read forwards a joined connection's messages until it ends. A nil error
// means the client left.
func (g *Gateway) read(ctx context.Context, l *link) error {
	for {
		msg, err := l.conn.ReadMessage(ctx, MaxClientMessage)
		if err != nil {
			select {
			case <-l.done: // ended by the frame goroutine or the writer
				return nil
			default:
			}
			if !errors.Is(err, ErrTooLarge) && !errors.Is(err, ErrMalformed) {
				return err
			}
		}
		var t MsgType
		var body []byte
		if err == nil {
			t, body, err = Open(msg)
		}
		if err == nil {
			switch t {
			case MsgInput:
				var seq uint64
				var data []byte
				if seq, data, err = DecodeInput(body); err == nil {
					l.mu.Lock()
					switch {
					case seq <= l.lastSeq:
						err = malformed(t, "seq %d after %d", seq, l.lastSeq)
					case len(l.inputs) >= g.cfg.MaxInputs:
						g.st.inputsDropped.Add(1)
						l.lastSeq = seq
					default:
						l.inputs = append(l.inputs, input{seq, append([]byte(nil), data...)})
						l.lastSeq = seq
					}
					l.mu.Unlock()
				}
			case MsgAck:
				var f uint64
				if f, err = DecodeAck(body); err == nil {
					l.mu.Lock()
					sent := l.sent
					l.mu.Unlock()
					if f > sent {
						err = malformed(t, "ack of frame %d, newest sent %d", f, sent)
					} else if f > l.acked.Load() {
						l.acked.Store(f)
					}
				}
			case MsgLeave:
				if err = DecodeLeave(body); err == nil {
					return nil
				}
			default:
				err = malformed(t, "not a client message after join")
			}
		}
		if err != nil {
			g.st.malformed.Add(1)
			l.mu.Lock()
			l.control = append(l.control[:0], AppendError(nil, CodeMalformed, err.Error()))
			l.last = true
			l.mu.Unlock()
			// Let the writer send the error, then end.
			select {
			case l.wake <- struct{}{}:
			default:
			}
			select {
			case <-l.done:
			case <-time.After(time.Second):
			case <-ctx.Done():
			}
			return err
		}
	}
}

// write sends a link's control messages and newest states until the link
// ends.
func (g *Gateway) write(ctx context.Context, l *link) error {
	var buf []byte
	var ctl [][]byte
	for {
		select {
		case <-l.wake:
		case <-l.done:
			return nil
		case <-ctx.Done():
			return nil
		}
		l.mu.Lock()
		ctl = append(ctl[:0], l.control...)
		clear(l.control)
		l.control = l.control[:0]
		last := l.last
		var st []byte
		if l.state != nil {
			st, l.state = l.state, nil
			l.spare, buf = buf, st
		}
		l.mu.Unlock()
		for _, m := range ctl {
			if err := l.conn.WriteMessage(ctx, m); err != nil {
				l.end()
				return err
			}
		}
		if last {
			l.end()
			return nil
		}
		if st != nil {
			if err := l.conn.WriteMessage(ctx, st); err != nil {
				l.end()
				return err
			}
			g.st.stateMsgs.Add(1)
			g.st.stateBytes.Add(int64(len(st)))
		}
	}
}

// post queues a control message (and, with last, ends the session once it
// is written).
func (l *link) post(msg []byte, last bool) {
	l.mu.Lock()
	l.control = append(l.control, msg)
	l.last = l.last || last
	l.mu.Unlock()
	select {
	case l.wake <- struct{}{}:
	default:
	}
}

// offer hands the writer frame's State message, replacing an unwritten
// older one.
func (l *link) offer(msg []byte, frame uint64) (coalesced bool) {
	l.mu.Lock()
	if l.state != nil {
		coalesced = true
	} else {
		l.state = l.spare[:0]
		l.spare = nil
	}
	l.state = append(l.state[:0], msg...)
	l.sent = frame
	l.mu.Unlock()
	select {
	case l.wake <- struct{}{}:
	default:
	}
	return coalesced
}

// rejoinWait is how long a rejoined session waits for its avatar, and a
// handed-off one for its client to leave; maxHeld bounds the inputs a
// rejoined session holds meanwhile.
const (
	rejoinWait = 3 * time.Second
	maxHeld    = 64
)

// HandOff moves player's avatar to node to.Node (a migration) and tells
// the client to rejoin there (Redirect), make-before-break: this node
// goes on sending States until the client leaves it. It is safe from any
// goroutine; the next Frame acts, and the returned channel then receives
// nil or why the handoff was refused (no such player here, handed off
// already, or the migration refused).
func (g *Gateway) HandOff(player PlayerID, to Target) <-chan error {
	done := make(chan error, 1)
	if to.Node == 0 || to.QUIC == "" && to.WS == "" {
		done <- fmt.Errorf("player: handoff of %q: target node %d with no player endpoint", player, to.Node)
		return done
	}
	g.mu.Lock()
	g.handoffs = append(g.handoffs, handoffReq{player: player, to: to, done: done})
	g.mu.Unlock()
	return done
}

// InGame is a player in game on a node, and its avatar.
type InGame struct {
	Player PlayerID
	Avatar world.ObjectID
	// Moving: handed to another node, waiting for the client to leave.
	Moving bool
}

// Players returns the players in game here, in join order. Call it on
// the frame goroutine (between Frames).
func (g *Gateway) Players() []InGame {
	out := make([]InGame, 0, len(g.order))
	for _, s := range g.order {
		out = append(out, InGame{Player: s.player, Avatar: s.avatar, Moving: s.movedAt != 0})
	}
	return out
}

func (g *Gateway) handOff(now time.Duration, n *node.Node, h handoffReq) error {
	s, ok := g.sessions[h.player]
	switch {
	case !ok:
		return fmt.Errorf("player: handoff: %q is not in game on this node", h.player)
	case s.movedAt != 0:
		return fmt.Errorf("player: handoff: %q is already on its way elsewhere", h.player)
	case s.waitUntil != 0 || s.l.rejoin != nil && s.l.acked.Load() == 0:
		// The client moves here once it applied a State of this node
		// (it acknowledges none before): until then it cannot follow.
		return fmt.Errorf("player: handoff: %q has not arrived here yet", h.player)
	}
	if _, err := n.Migrate(now, s.avatar, wire.NodeID(h.to.Node)); err != nil {
		return fmt.Errorf("player: handoff of %q: %w", h.player, err)
	}
	s.movedAt = g.frame
	g.st.handedOff.Add(1)
	s.l.post(AppendRedirect(nil, Redirect{Node: h.to.Node, QUIC: h.to.QUIC, WS: h.to.WS, Avatar: s.avatar, Seq: s.seq}), false)
	g.cfg.Logf("player %q handed to node %d", h.player, h.to.Node)
	return nil
}

// Close shuts the gateway down: new connections are refused from now on,
// and the next Frame ends every player's session (an Error with
// CodeShutdown, then Controller.Leave). A node daemon calls it on SIGTERM
// and runs one more frame.
func (g *Gateway) Close() {
	g.mu.Lock()
	g.closed = true
	g.mu.Unlock()
}

// RunAlone drives a world of one node until ctx ends: every frame period
// it ticks n, runs the gateway's Frame and discards what n would send
// (there is no other node). It owns n while it runs; call it on its own
// goroutine. A node of a cluster is driven by live's Driver instead.
func (g *Gateway) RunAlone(ctx context.Context, n *node.Node, frame time.Duration) {
	tk := time.NewTicker(frame)
	defer tk.Stop()
	start := time.Now()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tk.C:
		}
		now := time.Since(start)
		n.Tick(now)
		g.Frame(now, n)
		n.Drain(nil)
	}
}

// Frame runs the gateway's part of one frame on the driver's goroutine,
// after n.Tick(now): it admits queued joins (Controller.Join), removes
// players who left (Controller.Leave), applies queued inputs
// (Controller.Input), and encodes each player's State from n's objects
// inside its avatar's interest, handing it to the connection writer.
func (g *Gateway) Frame(now time.Duration, n *node.Node) {
	g.frame++
	g.dims = n.Config().Registry.Space().Dims()
	g.mu.Lock()
	joins, leaves, closed, handoffs := g.joins, g.leaves, g.closed, g.handoffs
	g.joins, g.leaves, g.handoffs = nil, nil, nil
	g.mu.Unlock()
	if closed {
		for _, l := range joins {
			l.post(AppendError(nil, CodeShutdown, "node shutting down"), true)
			g.slots.Add(-1)
			l.player = ""
		}
		joins = nil
		for len(g.order) > 0 {
			s := g.order[0]
			s.l.post(AppendError(nil, CodeShutdown, "node shutting down"), true)
			g.end(n, s)
		}
	}
	// Leaves first, so that a player who reconnects within a frame is not
	// refused as a duplicate of its old session.
	for _, l := range leaves {
		g.drop(n, l)
	}
	for _, l := range joins {
		g.admit(n, l)
	}
	wall := g.cfg.Now()
	for _, s := range g.order {
		g.applyInputs(n, s)
		if s.waitUntil == 0 && s.movedAt == 0 && (s.deedAt.IsZero() || wall.Sub(s.deedAt) >= g.cfg.DeedTTL/2) {
			// Joined, rejoined and arrived (the avatar's primary is
			// here), or half the deed's life gone: a new deed, before
			// the frame's State.
			g.issueDeed(s, wall)
		}
	}
	for _, h := range handoffs {
		h.done <- g.handOff(now, n, h)
	}
	g.objs = n.Objects(g.objs[:0])
	g.index(n)
	for i := 0; i < len(g.order); {
		if g.sendState(n, g.order[i]) {
			i++
		} // else the session ended and left g.order
	}
}

func (g *Gateway) admit(n *node.Node, l *link) {
	select {
	case <-l.done: // gone before it joined
		g.slots.Add(-1)
		l.player = ""
		return
	default:
	}
	if _, dup := g.sessions[l.player]; dup {
		g.st.duplicate.Add(1)
		l.post(AppendError(nil, CodeDuplicate, fmt.Sprintf("player %q is already in game on this node", l.player)), true)
		g.slots.Add(-1)
		l.player = ""
		return
	}
	var s *session
	if r := l.rejoin; r != nil {
		for _, o := range g.order {
			if o.avatar == r.Avatar {
				// A Rejoin names its avatar: one already played here by
				// another session is refused.
				g.st.rejoinRefused.Add(1)
				l.post(AppendError(nil, CodeDuplicate, fmt.Sprintf("avatar %v is played by another session here", r.Avatar)), true)
				g.slots.Add(-1)
				l.player = ""
				return
			}
		}
		s = &session{l: l, player: l.player, avatar: r.Avatar, enc: NewEncoder(g.cfg.History), seq: r.Seq,
			waitUntil: g.frame + uint64(rejoinWait/max(g.cfg.FrameEvery, time.Millisecond))}
		g.st.rejoins.Add(1)
	} else {
		avatar, err := g.cfg.Controller.Join(n, l.player)
		if err != nil {
			g.st.joinFailed.Add(1)
			l.post(AppendError(nil, CodeJoinFailed, err.Error()), true)
			g.slots.Add(-1)
			l.player = ""
			return
		}
		s = &session{l: l, player: l.player, avatar: avatar, enc: NewEncoder(g.cfg.History)}
	}
	avatar := s.avatar
	g.sessions[l.player] = s
	g.order = append(g.order, s)
	g.st.joins.Add(1)
	g.st.players.Add(1)
	l.post(AppendJoinOK(nil, Welcome{Player: l.player, Avatar: avatar, FrameEvery: g.cfg.FrameEvery, History: g.cfg.History, Registry: n.Config().Registry}), false)
	g.cfg.Logf("player %q joined: avatar %v", l.player, avatar)
}

// drop ends the session of a link whose connection ended.
func (g *Gateway) drop(n *node.Node, l *link) {
	if l.player == "" { // refused in admit, or never admitted
		return
	}
	// A link's join is taken in the same Frame as its leave or an earlier
	// one: a link without a session was ended by the gateway, or is
	// admitted below, sees its end and releases its slot.
	if s, ok := g.sessions[l.player]; ok && s.l == l {
		g.end(n, s)
	}
}

func (g *Gateway) end(n *node.Node, s *session) {
	if _, primary, ok := n.Lookup(s.avatar); s.movedAt == 0 && ok && primary {
		g.cfg.Controller.Leave(n, s.avatar)
	}
	delete(g.sessions, s.player)
	for i, o := range g.order {
		if o == s {
			g.order = append(g.order[:i], g.order[i+1:]...)
			break
		}
	}
	g.slots.Add(-1)
	g.st.players.Add(-1)
	g.st.leaves.Add(1)
	g.cfg.Logf("player %q left", s.player)
}

func (g *Gateway) applyInputs(n *node.Node, s *session) {
	l := s.l
	l.mu.Lock()
	in := l.inputs
	l.inputs = l.ispare[:0]
	l.mu.Unlock()
	switch {
	case s.movedAt != 0:
		g.st.inputsMoved.Add(int64(len(in)))
		clear(in)
		in = in[:0]
	case s.waitUntil != 0:
		// Rejoined: the inputs wait for the avatar's primary (the client
		// resends those after the old node's last from the Rejoin on).
		for _, x := range in {
			if x.seq > s.seq && len(s.held) < maxHeld {
				s.held = append(s.held, input{x.seq, append([]byte(nil), x.data...)})
			} else if x.seq > s.seq {
				g.st.inputsDropped.Add(1)
			}
		}
		clear(in)
		in = in[:0]
		if _, primary, ok := n.Lookup(s.avatar); ok && primary {
			s.waitUntil = 0
			in, s.held = append(in, s.held...), nil
		}
	}
	for _, x := range in {
		if x.seq <= s.seq {
			continue // sent again after a handoff, applied before it
		}
		if err := g.cfg.Controller.Input(n, s.avatar, x.data); err != nil {
			g.st.badInputs.Add(1)
		} else {
			g.st.inputs.Add(1)
		}
		s.seq = x.seq
	}
	clear(in)
	l.mu.Lock()
	l.ispare = in[:0]
	l.mu.Unlock()
}

// sendState encodes and offers s's State for this frame. It reports false
// when the session ended instead (its avatar is gone).
func (g *Gateway) sendState(n *node.Node, s *session) bool {
	if s.waitUntil != 0 {
		// Rejoined: no State before the avatar's primary is here, so that
		// a client looking for the node its avatar failed over to (Resume)
		// hears only from that one; a session whose avatar never came
		// ends.
		if g.frame < s.waitUntil {
			return true
		}
		s.l.post(AppendError(nil, CodeAvatarGone, fmt.Sprintf("avatar %v did not arrive here", s.avatar)), true)
		g.end(n, s)
		return false
	}
	obj, _, ok := n.Lookup(s.avatar)
	if !ok {
		switch {
		case s.movedAt != 0 && g.frame-s.movedAt < uint64(rejoinWait/max(g.cfg.FrameEvery, time.Millisecond)):
			return true // handed off: the client leaves once the new node sends
		case s.waitUntil != 0 && g.frame < s.waitUntil:
			return true // rejoined: the avatar is on its way
		}
		s.l.post(AppendError(nil, CodeAvatarGone, fmt.Sprintf("avatar %v no longer exists here", s.avatar)), true)
		g.end(n, s)
		return false
	}
	g.boxes = obj.Interest(g.boxes[:0])
	g.seen = g.seen[:0]
	for _, i := range g.visible(s.avatar) {
		o := &g.objs[i]
		g.seen = append(g.seen, Seen{o.ID, o.Kind, o.State})
	}
	msg, base, err := s.enc.Encode(g.msg[:0], g.frame, s.l.acked.Load(), s.seq, g.seen)
	if err != nil { // cannot happen: node.Objects lists objects in ID order
		g.cfg.Logf("player %q: %v", s.player, err)
		return true
	}
	g.msg = msg
	if base == 0 {
		g.st.fullStates.Add(1)
	}
	if s.l.offer(g.msg, g.frame) {
		g.st.coalesced.Add(1)
	}
	return true
}

// frameHook is the shape of live.FrameHook, the driver's per-frame hook
// (package live cannot be imported from here without a cycle risk; live
// asserts the real interface).
type frameHook interface {
	Frame(now time.Duration, n *node.Node)
}

var _ frameHook = (*Gateway)(nil)
