package live

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"sync"
	"sync/atomic"
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
	gw     *player.Gateway
	nonces *player.FileNonces // nil without a data directory
	quic   *quic.Listener     // nil without listen.player_quic
	quicTr *quic.Transport
	guard  *HandshakeGuard // the QUIC endpoint's
	wsLn   net.Listener    // nil without listen.player_ws
	ws     *http.Server
	wsTLS  bool            // wss://
	wsCert *reloadableCert // tls.player_cert (nil: none, or a dev certificate)
	stop   context.CancelFunc
	ctx    context.Context
	wg     sync.WaitGroup
	grace  time.Duration
}

// newPlayerEndpoint builds the gateway and opens the player listeners of
// cfg (at least one is set). The QUIC endpoint presents the node's
// certificate, whose key also signs the players' avatar deeds.
//
// Tokens must name cfg.Players.World and this node; their nonces are kept
// in data_dir (player.NonceFile), so that a token used before a restart
// is refused after it (without a data directory, in memory only).
func newPlayerEndpoint(cfg DaemonConfig, ctl player.Controller, ident *pki.Identity, log logf) (*playerEndpoint, error) {
	if ctl == nil {
		return nil, fmt.Errorf("%w: listen.player_quic/player_ws: this game has no player controller", ErrConfig)
	}
	key, err := player.LoadPublicKeyFile(cfg.Players.CoordinatorKey)
	if err != nil {
		return nil, fmt.Errorf("%w: players.coordinator_key: %v", ErrConfig, err)
	}
	p := &playerEndpoint{grace: cfg.ShutdownGrace.Duration}
	vc := player.VerifierConfig{Key: key, Audience: player.Audience{World: cfg.Players.World, Node: cfg.ID},
		MaxTTL: cfg.Players.MaxTokenTTL.Duration, JWTIssuer: cfg.Players.JWTIssuer}
	if cfg.Players.JWTKey != "" {
		if vc.JWTKey, err = player.LoadPublicKeyFile(cfg.Players.JWTKey); err != nil {
			return nil, fmt.Errorf("%w: players.jwt_key: %v", ErrConfig, err)
		}
	}
	if cfg.DataDir != "" {
		if p.nonces, err = player.OpenNonceFile(filepath.Join(cfg.DataDir, player.NonceFile), time.Now().Unix()); err != nil {
			return nil, err
		}
		vc.Store = p.nonces
	}
	ver, err := player.NewVerifier(vc)
	if err != nil {
		p.closeNonces()
		return nil, fmt.Errorf("%w: players: %v", ErrConfig, err)
	}
	lim := player.Limits{MaxUnauth: cfg.Players.MaxUnauth, PerSource: cfg.Players.PerSource, Deadline: cfg.Players.JoinDeadline.Duration}
	gw, err := player.New(player.Config{Verifier: ver, Controller: ctl, Identity: ident, MaxPlayers: cfg.Players.MaxPlayers,
		FrameEvery: cfg.FramePeriod(), JoinTimeout: lim.Deadline, QUIC: lim, WS: lim, Logf: log})
	if err != nil {
		p.closeNonces()
		return nil, err
	}
	p.gw = gw
	p.ctx, p.stop = context.WithCancel(context.Background())
	fail := func(err error) (*playerEndpoint, error) {
		p.stop()
		if p.quic != nil {
			p.quic.Close()
			p.quicTr.Close()
		}
		p.closeNonces()
		return nil, err
	}
	if a := cfg.Listen.PlayerQUIC; a != "" {
		tc := &tls.Config{MinVersion: tls.VersionTLS13, NextProtos: []string{player.ALPN},
			GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return ident.Current(), nil }}
		if p.guard, err = NewHandshakeGuard(HandshakeLimits{}); err != nil {
			return fail(err)
		}
		p.guard.Admit(gw.QUICAdmits)
		gw.OnQUICAccept(p.guard.Established)
		if p.quicTr, p.quic, err = listenGuarded(a, tc, player.QUICConfig(), p.guard, nil); err != nil {
			return fail(fmt.Errorf("listen.player_quic: %w", err))
		}
	}
	if a := cfg.Listen.PlayerWS; a != "" {
		var tc *tls.Config
		switch {
		case cfg.TLS.PlayerCert != "":
			if p.wsCert, err = loadReloadableCert(cfg.TLS.PlayerCert, cfg.TLS.PlayerKey); err != nil {
				return fail(fmt.Errorf("%w: tls.player_cert: %v", ErrConfig, err))
			}
			tc = &tls.Config{MinVersion: tls.VersionTLS12, GetCertificate: p.wsCert.get}
		case cfg.TLS.PlayerDevCert:
			host, _, _ := net.SplitHostPort(a)
			if tc, err = player.SelfSignedTLS(host, "localhost", "127.0.0.1"); err != nil {
				return fail(err)
			}
			tc.NextProtos = nil
		}
		ln, err := net.Listen("tcp", a)
		if err != nil {
			return fail(fmt.Errorf("listen.player_ws: %w", err))
		}
		p.ws, p.wsLn = gw.WSServer(p.ctx, ln)
		if tc != nil {
			p.ws.TLSConfig, p.wsTLS = tc, true
			p.wsLn = tls.NewListener(p.wsLn, tc)
		}
	}
	return p, nil
}

func (p *playerEndpoint) closeNonces() {
	if p.nonces != nil {
		p.nonces.Close()
	}
}

// reloadableCert is a certificate and key from files, reloaded on demand
// (SIGHUP) while handshakes read the current one.
type reloadableCert struct {
	certFile, keyFile string
	cur               atomic.Pointer[tls.Certificate]
}

func loadReloadableCert(certFile, keyFile string) (*reloadableCert, error) {
	r := &reloadableCert{certFile: certFile, keyFile: keyFile}
	return r, r.reload()
}

// reload reads the files again; on an error the current certificate stays.
func (r *reloadableCert) reload() error {
	c, err := tls.LoadX509KeyPair(r.certFile, r.keyFile)
	if err != nil {
		return err
	}
	r.cur.Store(&c)
	return nil
}

func (r *reloadableCert) get(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	return r.cur.Load(), nil
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
		p.quicTr.Close()
	}
	if p.ws != nil {
		p.ws.Close()
	}
	p.wg.Wait()
	p.closeNonces()
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
		"Player connections refused before any per-player state: bad_token (forged, malformed, early or too long), audience (a token for another world or node), expired, replayed, full, duplicate, rejoin_refused (a rejoin naming an avatar another session plays), bad_deed (a rejoin without a valid avatar deed for its avatar and player), old_client (protocol version 1), join_failed, timeout (no join in time), malformed (a bad or oversized message; joined players are dropped), http_error (a WebSocket endpoint connection that failed before the upgrade: not HTTP, or a failed TLS handshake).",
		[]string{"reason"}, nil)
	descPUnauth  = prometheus.NewDesc("overworld_player_unauthenticated_connections", "Player connections whose token has not verified yet, by endpoint (quic, ws).", []string{"endpoint"}, nil)
	descPPreAuth = prometheus.NewDesc("overworld_player_preauth_refusals_total",
		"Player connections closed by an endpoint's pre-auth limits, by endpoint (quic, ws) and reason: per_source (too many from one address), evicted (the oldest unauthenticated, closed for a newcomer at max_unauth), crowded (at max_unauth, from an address already holding its fair share), deadline (no verified token within join_deadline).",
		[]string{"endpoint", "reason"}, nil)
	descPConns  = prometheus.NewDesc("overworld_player_connections", "Player connections being served (joined or not).", nil, nil)
	descPInputs = prometheus.NewDesc("overworld_player_inputs_total", "Player inputs: applied, dropped (queue full), bad (refused by the game).", []string{"result"}, nil)
	descPStates = prometheus.NewDesc("overworld_player_states_total", "State messages written to players.", nil, nil)
	descPBytes  = prometheus.NewDesc("overworld_player_state_bytes_total", "Bytes of the State messages written to players.", nil, nil)
	descPCoal   = prometheus.NewDesc("overworld_player_states_coalesced_total", "State messages replaced by a newer one before they were written (slow players).", nil, nil)
)

func (c playerCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descPJoins, descPLeaves, descPRefused, descPConns, descPInputs, descPStates, descPBytes, descPCoal, descPUnauth, descPPreAuth} {
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
	}{{"bad_token", s.BadToken}, {"audience", s.Audience}, {"expired", s.Expired}, {"replayed", s.Replayed}, {"full", s.Full},
		{"duplicate", s.Duplicate}, {"rejoin_refused", s.RejoinRefused}, {"bad_deed", s.BadDeed}, {"old_client", s.OldClients},
		{"join_failed", s.JoinFailed}, {"timeout", s.Timeouts},
		{"malformed", s.Malformed}, {"http_error", s.HTTPErrors}} {
		counter(descPRefused, r.v, r.reason)
	}
	for _, e := range []struct {
		name string
		l    player.LimitStats
	}{{"quic", s.QUICLimits}, {"ws", s.WSLimits}} {
		ch <- prometheus.MustNewConstMetric(descPUnauth, prometheus.GaugeValue, float64(e.l.Unauth), e.name)
		counter(descPPreAuth, e.l.Source, e.name, "per_source")
		counter(descPPreAuth, e.l.Evicted, e.name, "evicted")
		counter(descPPreAuth, e.l.Crowded, e.name, "crowded")
		counter(descPPreAuth, e.l.Deadline, e.name, "deadline")
	}
	ch <- prometheus.MustNewConstMetric(descPConns, prometheus.GaugeValue, float64(s.Conns))
	counter(descPInputs, s.Inputs, "applied")
	counter(descPInputs, s.InputsDropped, "dropped")
	counter(descPInputs, s.BadInputs, "bad")
	counter(descPStates, s.StateMessages)
	counter(descPBytes, s.StateBytes)
	counter(descPCoal, s.Coalesced)
}
