package player

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/overworld/overworld/world"
)

// Brain decides a client's inputs: the game's client-side logic (a human's
// controls, or a bot).
type Brain interface {
	// Input returns the next input from what the player sees (nil: send
	// nothing this tick). now is the time since the client joined.
	Input(w Welcome, v *View, now time.Duration) []byte
}

// ClientStats summarises one client's session.
type ClientStats struct {
	Player      PlayerID
	Avatar      world.ObjectID
	Duration    time.Duration // from JoinOK to the end of Run
	States      int64         // State messages received
	StateBytes  int64         // their bytes
	Applied     int64         // State messages applied (others were older than one applied, or on a base no longer held)
	Updates     int64         // object creations and updates in the States applied
	Inputs      int64         // inputs sent
	ObjectsSeen int           // distinct objects seen
	MaxInView   int           // most objects in view at once
	// RTT holds the input → state echo times: from sending an input to
	// applying the first State that reflects it.
	RTT []time.Duration
	// Handoffs counts the redirects followed to another node;
	// HandoffGaps holds, for each, the time from the last State applied
	// before the switch to the first State applied from the new node
	// (about one frame period when no State was missed).
	Handoffs    int
	HandoffGaps []time.Duration
}

// Plus returns the figures of a and then s, two sessions of one player or
// of several: counts and durations add, samples append, ObjectsSeen and
// MaxInView keep the larger, Player and Avatar are s's.
func (a ClientStats) Plus(s ClientStats) ClientStats {
	a.Player, a.Avatar = s.Player, s.Avatar
	a.Duration += s.Duration
	a.States += s.States
	a.StateBytes += s.StateBytes
	a.Applied += s.Applied
	a.Updates += s.Updates
	a.Inputs += s.Inputs
	a.ObjectsSeen = max(a.ObjectsSeen, s.ObjectsSeen)
	a.MaxInView = max(a.MaxInView, s.MaxInView)
	a.RTT = append(slices.Clip(a.RTT), s.RTT...)
	a.Handoffs += s.Handoffs
	a.HandoffGaps = append(slices.Clip(a.HandoffGaps), s.HandoffGaps...)
	return a
}

// RTTQuantile returns the q-quantile of the RTT samples (0 without any).
func (s ClientStats) RTTQuantile(q float64) time.Duration {
	if len(s.RTT) == 0 {
		return 0
	}
	r := slices.Clone(s.RTT)
	slices.Sort(r)
	return r[min(len(r)-1, int(q*float64(len(r))))]
}

// Client is one player's connection seen from the player's side: it joins
// with a token, keeps the View from State messages and acknowledges them,
// and sends the inputs its Brain decides. When the node hands the player
// to another node (Redirect) and the client has a dialer (SetDialer), it
// rejoins there and switches once the new node's first State arrives.
type Client struct {
	token []byte
	start time.Time
	dial  func(ctx context.Context, r Redirect) (Conn, error)

	welcome atomic.Pointer[Welcome] // the current leg's (Welcome may run inside Do)
	deed    atomic.Pointer[[]byte]  // the newest avatar deed a node gave (nil: none yet)

	mu      sync.Mutex // guards the legs, stats, sentAt, sent, echoed and writes
	cur     *leg       // the node the client plays on
	next    *leg       // the node it is being handed to (nil: none)
	stats   ClientStats
	seen    map[world.ObjectID]bool
	seq     uint64
	echoed  uint64
	sentAt  [256]time.Time
	sent    [256][]byte // the inputs by seq, to send again after a handoff
	wbuf    []byte
	applied time.Time // when the last State was applied

	arrived  chan struct{} // a State was applied (Run's input timing)
	redirect chan Redirect // the node asked the client to move
	switched chan *leg     // the new node's first State applied: the old leg to leave
	idle     time.Duration // see SetIdleTimeout
}

// leg is one connection to a node and what the client sees through it.
type leg struct {
	conn    Conn
	welcome Welcome
	view    *View
	rerr    chan error // its reader's end
}

// ErrSilent is Run's error when the node sent no State for the idle
// timeout (SetIdleTimeout): it is presumed dead, and the client should
// join elsewhere.
var ErrSilent = errors.New("player: the node fell silent")

// SetIdleTimeout makes Run end with ErrSilent when no State is applied for
// d (0, the default: never; the transport's own idle timeout, 30 s for
// QUIC, then ends the connection). A node sends one per frame, so a few
// dozen frame periods tell a dead or unreachable node from a slow one
// much sooner. Call it before Run.
func (c *Client) SetIdleTimeout(d time.Duration) { c.idle = max(0, d) }

// Join sends a Join with token on conn and waits for the node's answer. A
// refusal is returned as a *RefusedError.
func Join(ctx context.Context, conn Conn, token []byte) (*Client, error) {
	if err := conn.WriteMessage(ctx, AppendJoin(nil, token)); err != nil {
		return nil, fmt.Errorf("player: sending join: %w", err)
	}
	w, err := awaitJoinOK(ctx, conn)
	if err != nil {
		return nil, err
	}
	c := &Client{token: append([]byte(nil), token...), start: time.Now(),
		cur: &leg{conn: conn, welcome: w, view: NewView(w.Registry, w.History)}, seen: map[world.ObjectID]bool{}}
	c.stats.Player, c.stats.Avatar = w.Player, w.Avatar
	c.welcome.Store(&w)
	return c, nil
}

// Resume takes the player's avatar back on the node conn leads to, after
// the node it played on died: it sends a Rejoin with token, the avatar's
// deed (the newest a node gave: Client.Deed), the avatar
// and seq (the last input the client saw applied: it resends the later
// ones), and returns once the node sent its first State, which it sends
// only when the avatar's primary is there (its backup took over). A node
// where the avatar is not ends the session with an Error after a few
// seconds, returned as a *RefusedError wrapped in ErrNotHere. A client that does not know which
// node that is tries several at once and keeps the first (the others it
// closes). The Client starts with no stats but Avatar and Player.
func Resume(ctx context.Context, conn Conn, token, deed []byte, avatar world.ObjectID, seq uint64) (*Client, error) {
	return resume(ctx, ctx, conn, token, deed, avatar, seq)
}

// resume is Resume, the node's answer to the Rejoin awaited under ctx and
// the avatar's first State under wait: ResumeAny ends its losing attempts
// only once their nodes answered, so that a session the node counted is
// one the attempt reports (ErrNotHere).
func resume(ctx, wait context.Context, conn Conn, token, deed []byte, avatar world.ObjectID, seq uint64) (*Client, error) {
	if err := conn.WriteMessage(ctx, AppendRejoin(nil, Rejoin{Token: token, Deed: deed, Avatar: avatar, Seq: seq})); err != nil {
		return nil, fmt.Errorf("player: sending rejoin: %w", err)
	}
	w, err := awaitJoinOK(ctx, conn)
	if err != nil {
		return nil, err
	}
	// From here the node counts a session, which ends with the
	// connection when the avatar is not here.
	if w.Avatar != avatar {
		return nil, fmt.Errorf("%w: resuming avatar %v, the node gave %v", ErrNotHere, avatar, w.Avatar)
	}
	c := &Client{token: append([]byte(nil), token...), start: time.Now(),
		cur: &leg{conn: conn, welcome: w, view: NewView(w.Registry, w.History)}, seen: map[world.ObjectID]bool{}, seq: seq, echoed: seq}
	c.stats.Player, c.stats.Avatar = w.Player, w.Avatar
	c.welcome.Store(&w)
	old := append([]byte(nil), deed...)
	c.deed.Store(&old) // until the node gives a new one
	for {
		msg, err := conn.ReadMessage(wait, MaxMessage)
		if err != nil {
			return nil, fmt.Errorf("%w: waiting for the avatar's first state: %w", ErrNotHere, err)
		}
		t, body, err := Open(msg)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrNotHere, err)
		}
		switch t {
		case MsgDeed:
			if _, err := c.Handle(msg); err != nil {
				return nil, fmt.Errorf("%w: %w", ErrNotHere, err)
			}
		case MsgState:
			ack, err := c.Handle(msg)
			if err != nil {
				return nil, fmt.Errorf("%w: %w", ErrNotHere, err)
			}
			if ack != nil {
				if err := conn.WriteMessage(ctx, ack); err != nil {
					return nil, fmt.Errorf("%w: acknowledging: %w", ErrNotHere, err)
				}
			}
			return c, nil
		case MsgError:
			e, err := DecodeError(body)
			if err != nil {
				return nil, fmt.Errorf("%w: %w", ErrNotHere, err)
			}
			return nil, fmt.Errorf("%w: %w", ErrNotHere, e)
		}
	}
}

// ResumeAny runs Resume over n connections at once — dial(ctx, i) opens
// the i-th, to a node the avatar may have failed over to — and returns the
// first client that got its avatar back and the index of its connection.
// The other attempts end then, once their nodes answered the Rejoin (their
// connections closed: a node that the avatar reached later, handed there
// by a control plane while its rejoin waited, would otherwise give it a
// second session beside the winner's),
// or on their own (a node ends a rejoin whose avatar does not come within
// its wait), each bounded by wait; done, if not nil, is called once per
// attempt from its goroutine with its index and error (nil for the winner,
// and for a second one that got the avatar in the same instant). ctx must
// outlive the winner's session: its connection is dialed with it.
func ResumeAny(ctx context.Context, n int, dial func(ctx context.Context, i int) (Conn, error), token, deed []byte, avatar world.ObjectID,
	seq uint64, wait time.Duration, done func(i int, err error)) (*Client, int, error) {
	type got struct {
		i int
		c *Client
	}
	res := make(chan got, n)
	tries, stop := context.WithCancel(ctx) // ends the losing attempts' waits
	for i := range n {
		go func() {
			rctx, cancel := context.WithTimeout(ctx, wait)
			defer cancel()
			wctx, wcancel := context.WithTimeout(tries, wait)
			defer wcancel()
			conn, err := dial(ctx, i)
			var c *Client
			if err == nil {
				if c, err = resume(rctx, wctx, conn, token, deed, avatar, seq); err != nil {
					_ = conn.Close()
				}
			}
			if done != nil {
				done(i, err)
			}
			res <- got{i, c}
		}()
	}
	defer stop()
	for range n {
		if g := <-res; g.c != nil {
			return g.c, g.i, nil
		}
	}
	return nil, -1, fmt.Errorf("player: no node holds avatar %v", avatar)
}

// ErrNotHere wraps Resume's errors after the node took the Rejoin
// (JoinOK): the node counted a session, which ended without the avatar.
var ErrNotHere = errors.New("player: the avatar is not on this node")

// LastApplied returns the last input the client saw applied (echoed in a
// State): where a Resume picks up.
func (c *Client) LastApplied() uint64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.echoed
}

// Deed returns the newest avatar deed a node gave the client (nil
// before the first): what a Resume presents to take the avatar back
// after its node died. A node sends one after a join, after a rejoin once
// the avatar is there, and again when half its life has passed.
func (c *Client) Deed() []byte {
	if t := c.deed.Load(); t != nil {
		return append([]byte(nil), (*t)...)
	}
	return nil
}

// awaitJoinOK reads the node's answer to a Join or Rejoin.
func awaitJoinOK(ctx context.Context, conn Conn) (Welcome, error) {
	var t MsgType
	var body []byte
	for { // a State datagram may overtake the JoinOK on the stream: skip it
		msg, err := conn.ReadMessage(ctx, MaxMessage)
		if err != nil {
			return Welcome{}, fmt.Errorf("player: waiting for joinok: %w", err)
		}
		if t, body, err = Open(msg); err != nil {
			return Welcome{}, err
		}
		if t != MsgState {
			break
		}
	}
	switch t {
	case MsgError:
		e, err := DecodeError(body)
		if err != nil {
			return Welcome{}, err
		}
		return Welcome{}, e
	case MsgJoinOK:
	default:
		return Welcome{}, malformed(t, "expected joinok or error")
	}
	return DecodeJoinOK(body)
}

// SetDialer lets the client follow redirects: dial connects to the node a
// Redirect names (its QUIC address or WebSocket URL). Without one, a
// Redirect ends Run with an error. Call it before Run.
func (c *Client) SetDialer(dial func(ctx context.Context, r Redirect) (Conn, error)) { c.dial = dial }

// Welcome returns the JoinOK of the node the client plays on.
func (c *Client) Welcome() Welcome {
	if w := c.welcome.Load(); w != nil {
		return *w
	}
	return Welcome{}
}

// Stats returns the client's statistics so far.
func (c *Client) Stats() ClientStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.stats
	s.RTT = slices.Clone(s.RTT)
	s.HandoffGaps = slices.Clone(s.HandoffGaps)
	s.ObjectsSeen = len(c.seen)
	return s
}

// Do calls fn with the client's view under the client's lock (the view
// changes as State messages arrive, and is replaced at a handoff).
func (c *Client) Do(fn func(v *View)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	fn(c.cur.view)
}

// Run plays until ctx ends (then it sends Leave and closes the
// connection), the connection fails, the node ends the session (a
// *RefusedError) or, with an idle timeout, the node falls silent
// (ErrSilent): it applies and acknowledges State
// messages as they arrive and sends one input per frame period, decided by
// brain. Inputs are timed to reach the node before its next frame: lead
// before the frame period has passed since the latest State arrived (0:
// a quarter of the period), or every period while none arrive. On a path
// whose round trip is under lead, an input is then echoed in the next
// State, about lead + RTT after it was sent.
//
// A Redirect is followed make-before-break (with a dialer, SetDialer):
// the client rejoins the new node, sends it again its inputs after the
// last the old node applied, keeps applying the old node's States until
// the new node's first one, then leaves the old node.
func (c *Client) Run(ctx context.Context, brain Brain, lead time.Duration) error {
	// The readers outlive ctx until the Leave is written (cancelling a
	// WebSocket read closes the connection).
	rctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	defer stop()
	c.mu.Lock()
	period := c.cur.welcome.FrameEvery
	c.mu.Unlock()
	if lead <= 0 || lead >= period {
		lead = period / 4
	}
	c.arrived = make(chan struct{}, 1)
	c.redirect = make(chan Redirect, 1)
	c.switched = make(chan *leg, 1)
	c.startReader(rctx, c.cur)
	t := time.NewTimer(period)
	defer t.Stop()
	var idle *time.Timer
	var silent <-chan time.Time // never fires without an idle timeout
	if c.idle > 0 {
		idle = time.NewTimer(c.idle)
		defer idle.Stop()
		silent = idle.C
	}
	var err error
	cur := c.cur
loop:
	for {
		select {
		case <-ctx.Done():
			break loop
		case err = <-cur.rerr:
			cur.rerr <- err
			break loop
		case <-silent:
			err = fmt.Errorf("%w: no state for %v", ErrSilent, c.idle)
			break loop
		case <-c.arrived:
			if idle != nil {
				idle.Reset(c.idle)
			}
			t.Reset(period - lead)
		case r := <-c.redirect:
			if err = c.follow(ctx, rctx, r); err != nil {
				break loop
			}
		case old := <-c.switched:
			c.mu.Lock()
			cur = c.cur
			c.mu.Unlock()
			c.leave(ctx, old)
		case <-t.C:
			t.Reset(period)
			if err = c.sendInput(ctx, brain); err != nil {
				// The node may have stopped reading because it sent
				// its reason for ending the session (a Refused Error)
				// that is still on its way: give the reader a second to
				// bring it before closing the connection under it.
				select {
				case rErr := <-cur.rerr:
					cur.rerr <- rErr
				case <-time.After(time.Second):
				case <-ctx.Done():
				}
				break loop
			}
		}
	}
	c.mu.Lock()
	legs := []*leg{c.cur}
	if c.next != nil {
		legs = append(legs, c.next)
	}
	c.mu.Unlock()
	if ctx.Err() != nil {
		for _, l := range legs {
			c.leave(ctx, l)
		}
		err = nil
	}
	stop()
	for _, l := range legs {
		_ = l.conn.Close()
	}
	rErr := <-cur.rerr
	c.mu.Lock()
	c.stats.Duration = time.Since(c.start)
	c.mu.Unlock()
	var refused *RefusedError
	if (err == nil && ctx.Err() == nil) || errors.As(rErr, &refused) {
		// The node's own reason for ending the session beats the write
		// error it causes (the node stops reading once it has sent it).
		err = rErr
	}
	return err
}

// startReader runs l's reader until its connection ends.
func (c *Client) startReader(ctx context.Context, l *leg) {
	l.rerr = make(chan error, 1)
	go func() { l.rerr <- c.readLoop(ctx, l) }()
}

// leave sends Leave on l (bounded by a second) and closes it.
func (c *Client) leave(ctx context.Context, l *leg) {
	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
	c.mu.Lock()
	_ = l.conn.WriteMessage(lctx, AppendLeave(c.wbuf[:0]))
	c.mu.Unlock()
	cancel()
	_ = l.conn.Close()
}

// follow rejoins the node r names and sends it the inputs the old node
// did not apply; the switch happens when its first State is applied.
func (c *Client) follow(ctx, rctx context.Context, r Redirect) error {
	if c.dial == nil {
		return fmt.Errorf("player: redirected to node %d, and no dialer to follow it (SetDialer)", r.Node)
	}
	c.mu.Lock()
	busy, avatar := c.next != nil, c.cur.welcome.Avatar
	c.mu.Unlock()
	if busy || r.Avatar != avatar {
		return fmt.Errorf("player: redirect to node %d for avatar %v while playing avatar %v, handed off already: %v", r.Node, r.Avatar, avatar, busy)
	}
	dctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	conn, err := c.dial(dctx, r)
	if err != nil {
		return fmt.Errorf("player: following the redirect to node %d: %w", r.Node, err)
	}
	if err := conn.WriteMessage(dctx, AppendRejoin(nil, Rejoin{Token: c.token, Deed: c.Deed(), Avatar: r.Avatar, Seq: r.Seq})); err != nil {
		_ = conn.Close()
		return fmt.Errorf("player: rejoining node %d: %w", r.Node, err)
	}
	w, err := awaitJoinOK(dctx, conn)
	if err != nil {
		_ = conn.Close()
		return fmt.Errorf("player: rejoining node %d: %w", r.Node, err)
	}
	if w.Avatar != r.Avatar {
		_ = conn.Close()
		return fmt.Errorf("player: node %d gave avatar %v, not the redirected %v", r.Node, w.Avatar, r.Avatar)
	}
	l := &leg{conn: conn, welcome: w, view: NewView(w.Registry, w.History)}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.next = l
	c.stats.Handoffs++
	// The inputs the old node did not apply go again, in order.
	first := max(r.Seq+1, c.seq+1-min(c.seq, uint64(len(c.sent))))
	for q := first; q <= c.seq; q++ {
		if in := c.sent[q%uint64(len(c.sent))]; in != nil {
			c.wbuf = AppendInput(c.wbuf[:0], q, in)
			if err := conn.WriteMessage(ctx, c.wbuf); err != nil {
				return fmt.Errorf("player: resending inputs to node %d: %w", r.Node, err)
			}
		}
	}
	c.startReader(rctx, l)
	return nil
}

func (c *Client) sendInput(ctx context.Context, brain Brain) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	in := brain.Input(c.cur.welcome, c.cur.view, time.Since(c.start))
	if in == nil {
		return nil
	}
	if len(in) > MaxInput {
		return fmt.Errorf("player: brain made a %d-byte input (limit %d)", len(in), MaxInput)
	}
	c.seq++
	c.sentAt[c.seq%uint64(len(c.sentAt))] = time.Now()
	c.sent[c.seq%uint64(len(c.sent))] = append(c.sent[c.seq%uint64(len(c.sent))][:0], in...)
	c.stats.Inputs++
	c.wbuf = AppendInput(c.wbuf[:0], c.seq, in)
	to := c.cur
	if c.next != nil {
		to = c.next // the old node ignores inputs once it handed the avatar off
	}
	return to.conn.WriteMessage(ctx, c.wbuf)
}

// Handle applies one message from the node the client plays on (a State,
// or an Error ending the session) and returns the Ack to send (nil:
// none). It is what Run's reader does; tests call it directly.
func (c *Client) Handle(msg []byte) (ack []byte, err error) { return c.handle(c.cur, msg) }

// handle applies one message from leg l's node.
func (c *Client) handle(l *leg, msg []byte) (ack []byte, err error) {
	t, body, err := Open(msg)
	if err != nil {
		return nil, err
	}
	switch t {
	case MsgError:
		e, err := DecodeError(body)
		if err != nil {
			return nil, err
		}
		return nil, e
	case MsgRedirect:
		r, err := DecodeRedirect(body)
		if err != nil {
			return nil, err
		}
		if c.redirect == nil {
			return nil, fmt.Errorf("player: redirected to node %d outside Run", r.Node)
		}
		select {
		case c.redirect <- r:
		default:
			return nil, fmt.Errorf("player: a second redirect (to node %d) before the first was followed", r.Node)
		}
		return nil, nil
	case MsgDeed:
		b, tk, err := DecodeDeed(body)
		if err != nil {
			return nil, err
		}
		if tk.Avatar != l.welcome.Avatar || tk.Player != l.welcome.Player {
			return nil, malformed(t, "deed for avatar %v of %q, playing %v as %q", tk.Avatar, tk.Player, l.welcome.Avatar, l.welcome.Player)
		}
		b = append([]byte(nil), b...)
		c.deed.Store(&b)
		return nil, nil
	case MsgState:
	default:
		return nil, malformed(t, "not a node message after joinok")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stats.States++
	c.stats.StateBytes += int64(len(msg))
	applied, err := l.view.Apply(body)
	if err != nil || !applied {
		return nil, err
	}
	now := time.Now()
	if l == c.next {
		// The new node's first State: play there from now on.
		c.stats.HandoffGaps = append(c.stats.HandoffGaps, now.Sub(c.applied))
		old := c.cur
		c.cur, c.next = l, nil
		c.welcome.Store(&l.welcome)
		select {
		case c.switched <- old:
		default:
		}
	} else if l != c.cur {
		return AppendAck(nil, l.view.Frame()), nil // the old node's, in flight at the switch
	}
	c.applied = now
	c.stats.Applied++
	c.stats.Updates += int64(l.view.Changes())
	c.stats.MaxInView = max(c.stats.MaxInView, l.view.Len())
	for _, o := range l.view.Objects() {
		c.seen[o.ID] = true
	}
	if s := l.view.InputSeq(); s > c.echoed && s <= c.seq {
		lo, n := c.echoed+1, uint64(len(c.sentAt))
		if s >= n && s-n+1 > lo {
			lo = s - n + 1
		}
		for q := lo; q <= s; q++ {
			c.stats.RTT = append(c.stats.RTT, now.Sub(c.sentAt[q%uint64(len(c.sentAt))]))
		}
		c.echoed = s
	}
	return AppendAck(nil, l.view.Frame()), nil
}

func (c *Client) readLoop(ctx context.Context, l *leg) error {
	// ackErr is the first failed Ack. The reader goes on: a node ending
	// the session stops reading (its peer's writes fail) after it queued
	// its reason, which the read side still delivers.
	var ackErr error
	for {
		msg, err := l.conn.ReadMessage(ctx, MaxMessage)
		if err != nil {
			if ackErr != nil {
				return fmt.Errorf("%w (after an ack failed: %v)", err, ackErr)
			}
			return err
		}
		ack, err := c.handle(l, msg)
		if err != nil {
			return err // a *RefusedError when the node ended the session
		}
		if ack != nil {
			select {
			case c.arrived <- struct{}{}:
			default:
			}
			if ackErr != nil {
				continue
			}
			c.mu.Lock()
			ackErr = l.conn.WriteMessage(ctx, ack)
			c.mu.Unlock()
		}
	}
}
