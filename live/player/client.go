package player

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
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
// and sends the inputs its Brain decides.
type Client struct {
	conn    Conn
	welcome Welcome
	start   time.Time

	mu     sync.Mutex // guards view, stats, sentAt, echoed and writes
	view   *View
	stats  ClientStats
	seen   map[world.ObjectID]bool
	seq    uint64
	echoed uint64
	sentAt [256]time.Time
	wbuf   []byte

	arrived chan struct{} // a State was applied (Run's input timing)
	idle    time.Duration // see SetIdleTimeout
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
	var t MsgType
	var body []byte
	for { // a State datagram may overtake the JoinOK on the stream: skip it
		msg, err := conn.ReadMessage(ctx, MaxMessage)
		if err != nil {
			return nil, fmt.Errorf("player: waiting for joinok: %w", err)
		}
		if t, body, err = Open(msg); err != nil {
			return nil, err
		}
		if t != MsgState {
			break
		}
	}
	switch t {
	case MsgError:
		e, err := DecodeError(body)
		if err != nil {
			return nil, err
		}
		return nil, e
	case MsgJoinOK:
	default:
		return nil, malformed(t, "expected joinok or error")
	}
	w, err := DecodeJoinOK(body)
	if err != nil {
		return nil, err
	}
	c := &Client{conn: conn, welcome: w, start: time.Now(),
		view: NewView(w.Registry, w.History), seen: map[world.ObjectID]bool{}}
	c.stats.Player, c.stats.Avatar = w.Player, w.Avatar
	return c, nil
}

// Welcome returns the node's JoinOK.
func (c *Client) Welcome() Welcome { return c.welcome }

// Stats returns the client's statistics so far.
func (c *Client) Stats() ClientStats {
	c.mu.Lock()
	defer c.mu.Unlock()
	s := c.stats
	s.RTT = slices.Clone(s.RTT)
	s.ObjectsSeen = len(c.seen)
	return s
}

// Do calls fn with the client's view under the client's lock (the view
// changes as State messages arrive).
func (c *Client) Do(fn func(v *View)) {
	c.mu.Lock()
	defer c.mu.Unlock()
	fn(c.view)
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
func (c *Client) Run(ctx context.Context, brain Brain, lead time.Duration) error {
	// The reader outlives ctx until the Leave is written (cancelling a
	// WebSocket read closes the connection).
	rctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	defer stop()
	period := c.welcome.FrameEvery
	if lead <= 0 || lead >= period {
		lead = period / 4
	}
	c.arrived = make(chan struct{}, 1)
	rerr := make(chan error, 1)
	go func() { rerr <- c.readLoop(rctx) }()
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
loop:
	for {
		select {
		case <-ctx.Done():
			break loop
		case err = <-rerr:
			rerr <- err
			break loop
		case <-silent:
			err = fmt.Errorf("%w: no state for %v", ErrSilent, c.idle)
			break loop
		case <-c.arrived:
			if idle != nil {
				idle.Reset(c.idle)
			}
			t.Reset(period - lead)
		case <-t.C:
			t.Reset(period)
			if err = c.sendInput(ctx, brain); err != nil {
				break loop
			}
		}
	}
	if ctx.Err() != nil {
		lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Second)
		c.mu.Lock()
		_ = c.conn.WriteMessage(lctx, AppendLeave(c.wbuf[:0]))
		c.mu.Unlock()
		cancel()
		err = nil
	}
	stop()
	_ = c.conn.Close()
	rErr := <-rerr
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

func (c *Client) sendInput(ctx context.Context, brain Brain) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	in := brain.Input(c.welcome, c.view, time.Since(c.start))
	if in == nil {
		return nil
	}
	if len(in) > MaxInput {
		return fmt.Errorf("player: brain made a %d-byte input (limit %d)", len(in), MaxInput)
	}
	c.seq++
	c.sentAt[c.seq%uint64(len(c.sentAt))] = time.Now()
	c.stats.Inputs++
	c.wbuf = AppendInput(c.wbuf[:0], c.seq, in)
	return c.conn.WriteMessage(ctx, c.wbuf)
}

// Handle applies one message from the node (a State, or an Error ending
// the session) and returns the Ack to send (nil: none). It is what Run's
// reader does; tests call it directly.
func (c *Client) Handle(msg []byte) (ack []byte, err error) {
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
	case MsgState:
	default:
		return nil, malformed(t, "not a node message after joinok")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stats.States++
	c.stats.StateBytes += int64(len(msg))
	applied, err := c.view.Apply(body)
	if err != nil || !applied {
		return nil, err
	}
	c.stats.Applied++
	c.stats.Updates += int64(c.view.Changes())
	c.stats.MaxInView = max(c.stats.MaxInView, c.view.Len())
	for _, o := range c.view.Objects() {
		c.seen[o.ID] = true
	}
	if s := c.view.InputSeq(); s > c.echoed && s <= c.seq {
		now := time.Now()
		lo, n := c.echoed+1, uint64(len(c.sentAt))
		if s >= n && s-n+1 > lo {
			lo = s - n + 1
		}
		for q := lo; q <= s; q++ {
			c.stats.RTT = append(c.stats.RTT, now.Sub(c.sentAt[q%uint64(len(c.sentAt))]))
		}
		c.echoed = s
	}
	return AppendAck(nil, c.view.Frame()), nil
}

func (c *Client) readLoop(ctx context.Context) error {
	for {
		msg, err := c.conn.ReadMessage(ctx, MaxMessage)
		if err != nil {
			return err
		}
		ack, err := c.Handle(msg)
		if err != nil {
			return err // a *RefusedError when the node ended the session
		}
		if ack != nil {
			select {
			case c.arrived <- struct{}{}:
			default:
			}
			c.mu.Lock()
			err = c.conn.WriteMessage(ctx, ack)
			c.mu.Unlock()
			if err != nil {
				return err
			}
		}
	}
}
