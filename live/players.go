package live

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/quic-go/quic-go"

	"github.com/overworld/overworld/live/pki"
	"github.com/overworld/overworld/live/player"
	"github.com/overworld/overworld/node"
)

// playerEndpoint is a daemon's player side: the gateway (a frame hook) and
// the QUIC and WebSocket listeners that feed it.
type playerEndpoint struct {
	gw    *player.Gateway
	quic  *quic.Listener // nil without listen.player_quic
	wsLn  net.Listener   // nil without listen.player_ws
	ws    *http.Server
	stop  context.CancelFunc
	ctx   context.Context
	wg    sync.WaitGroup
	grace time.Duration
}

// newPlayerEndpoint builds the gateway and opens the player listeners of
// cfg (at least one is set). The QUIC endpoint presents the node's
// certificate.
func newPlayerEndpoint(cfg DaemonConfig, ctl player.Controller, ident *pki.Identity, log logf) (*playerEndpoint, error) {
	if ctl == nil {
		return nil, fmt.Errorf("%w: listen.player_quic/player_ws: this game has no player controller", ErrConfig)
	}
	key, err := player.LoadPublicKeyFile(cfg.Players.CoordinatorKey)
	if err != nil {
		return nil, fmt.Errorf("%w: players.coordinator_key: %v", ErrConfig, err)
	}
	ver, err := player.NewVerifier(player.VerifierConfig{Key: key})
	if err != nil {
		return nil, fmt.Errorf("%w: players.coordinator_key: %v", ErrConfig, err)
	}
	gw, err := player.New(player.Config{Verifier: ver, Controller: ctl, MaxPlayers: cfg.Players.MaxPlayers,
		FrameEvery: cfg.FramePeriod(), Logf: log})
	if err != nil {
		return nil, err
	}
	p := &playerEndpoint{gw: gw, grace: cfg.ShutdownGrace.Duration}
	p.ctx, p.stop = context.WithCancel(context.Background())
	if a := cfg.Listen.PlayerQUIC; a != "" {
		tc := &tls.Config{MinVersion: tls.VersionTLS13, Certificates: []tls.Certificate{ident.Cert}, NextProtos: []string{player.ALPN}}
		if p.quic, err = quic.ListenAddr(a, tc, player.QUICConfig()); err != nil {
			p.stop()
			return nil, fmt.Errorf("listen.player_quic: %w", err)
		}
	}
	if a := cfg.Listen.PlayerWS; a != "" {
		if p.wsLn, err = net.Listen("tcp", a); err != nil {
			p.stop()
			if p.quic != nil {
				p.quic.Close()
			}
			return nil, fmt.Errorf("listen.player_ws: %w", err)
		}
		p.ws = &http.Server{Handler: gw.WSHandler(p.ctx), ReadHeaderTimeout: 5 * time.Second}
	}
	return p, nil
}

// logf is the gateway's logging function.
type logf = func(format string, args ...any)

// start serves the listeners.
func (p *playerEndpoint) start(log func(msg string, args ...any)) {
	if p.quic != nil {
		p.wg.Go(func() {
			if err := p.gw.ServeQUIC(p.ctx, p.quic); err != nil {
				log("player QUIC endpoint failed", "err", err)
			}
		})
	}
	if p.ws != nil {
		p.wg.Go(func() {
			if err := p.ws.Serve(p.wsLn); err != nil && !errors.Is(err, http.ErrServerClosed) {
				log("player WebSocket endpoint failed", "err", err)
			}
		})
	}
}

// shutdown ends the player side after the driver stopped: closeGateway,
// then wait. It returns the connections still open at the end (cut).
func (p *playerEndpoint) shutdown(n *node.Node) (cut int64) {
	p.closeGateway(n)
	return p.wait()
}

// closeGateway makes the gateway refuse new players and runs a last
// gateway frame (on the caller's goroutine, which owns n: the driver is
// stopped) that tells every player the node is shutting down and removes
// the avatars.
func (p *playerEndpoint) closeGateway(n *node.Node) {
	p.gw.Close()
	p.gw.Frame(n.Now(), n)
}

// wait gives the player connections up to the grace period to deliver
// the shutdown before the listeners close (any goroutine: it does not
// touch the node), and returns the connections still open at the end.
func (p *playerEndpoint) wait() (cut int64) {
	deadline := time.Now().Add(p.grace)
	for p.gw.Stats().Conns > 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	cut = p.gw.Stats().Conns
	p.stop()
	if p.quic != nil {
		p.quic.Close()
	}
	if p.ws != nil {
		p.ws.Close()
	}
	p.wg.Wait()
	return cut
}

// QUICAddr and WSAddr return the bound player addresses (nil without).
func (p *playerEndpoint) QUICAddr() net.Addr {
	if p == nil || p.quic == nil {
		return nil
	}
	return p.quic.Addr()
}

func (p *playerEndpoint) WSAddr() net.Addr {
	if p == nil || p.wsLn == nil {
		return nil
	}
	return p.wsLn.Addr()
}

// PlayerQUICAddr returns the bound QUIC player address (nil without a
// player endpoint).
func (d *Daemon) PlayerQUICAddr() net.Addr { return d.players.QUICAddr() }

// PlayerWSAddr returns the bound WebSocket player address (nil without).
func (d *Daemon) PlayerWSAddr() net.Addr { return d.players.WSAddr() }

// PlayerStats returns the player gateway's counters (zero without a player
// endpoint).
func (d *Daemon) PlayerStats() player.Stats {
	if d.players == nil {
		return player.Stats{}
	}
	return d.players.gw.Stats()
}

// playerCollector exports a gateway's Stats to Prometheus.
type playerCollector struct{ gw *player.Gateway }

var (
	descPJoins   = prometheus.NewDesc("overworld_player_joins_total", "Players admitted through the player endpoints.", nil, nil)
	descPLeaves  = prometheus.NewDesc("overworld_player_leaves_total", "Players who left, were dropped or lost their avatar.", nil, nil)
	descPRefused = prometheus.NewDesc("overworld_player_refusals_total",
		"Player connections refused before any per-player state: bad_token (forged, malformed, early or too long), expired, replayed, full, duplicate, join_failed, timeout (no join in time), malformed (a bad message; joined players are dropped).",
		[]string{"reason"}, nil)
	descPConns  = prometheus.NewDesc("overworld_player_connections", "Player connections being served (joined or not).", nil, nil)
	descPInputs = prometheus.NewDesc("overworld_player_inputs_total", "Player inputs: applied, dropped (queue full), bad (refused by the game).", []string{"result"}, nil)
	descPStates = prometheus.NewDesc("overworld_player_states_total", "State messages written to players.", nil, nil)
	descPBytes  = prometheus.NewDesc("overworld_player_state_bytes_total", "Bytes of the State messages written to players.", nil, nil)
	descPCoal   = prometheus.NewDesc("overworld_player_states_coalesced_total", "State messages replaced by a newer one before they were written (slow players).", nil, nil)
)

func (c playerCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descPJoins, descPLeaves, descPRefused, descPConns, descPInputs, descPStates, descPBytes, descPCoal} {
		ch <- d
	}
}

func (c playerCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.gw.Stats()
	counter := func(d *prometheus.Desc, v int64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	counter(descPJoins, s.Joins)
	counter(descPLeaves, s.Leaves)
	for _, r := range []struct {
		reason string
		v      int64
	}{{"bad_token", s.BadToken}, {"expired", s.Expired}, {"replayed", s.Replayed}, {"full", s.Full},
		{"duplicate", s.Duplicate}, {"join_failed", s.JoinFailed}, {"timeout", s.Timeouts}, {"malformed", s.Malformed}} {
		counter(descPRefused, r.v, r.reason)
	}
	ch <- prometheus.MustNewConstMetric(descPConns, prometheus.GaugeValue, float64(s.Conns))
	counter(descPInputs, s.Inputs, "applied")
	counter(descPInputs, s.InputsDropped, "dropped")
	counter(descPInputs, s.BadInputs, "bad")
	counter(descPStates, s.StateMessages)
	counter(descPBytes, s.StateBytes)
	counter(descPCoal, s.Coalesced)
}
