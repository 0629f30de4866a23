package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"time"

	"github.com/overworld/overworld/live"
	"github.com/overworld/overworld/live/agones"
	"github.com/overworld/overworld/live/pki"
	"github.com/overworld/overworld/live/plane"
)

// enrollFlags are the node command's enrollment flags: a game server
// started from its region's configuration asks the plane for its own node
// ID and certificate.
type enrollFlags struct {
	plane, secretFile, gameServer, region string
	admin                                 string
	wait                                  time.Duration
}

// on reports whether any enrollment flag was given.
func (f enrollFlags) on() bool {
	return f.plane != "" || f.secretFile != "" || f.gameServer != "" || f.region != "" || f.admin != ""
}

// placement is what an enrolling node asks the plane to place players
// on: its admin endpoint (admin), its player endpoints as players reach
// them (membership.player_quic and player_ws, which enroll sets from the
// GameServer under Agones, else the listen addresses when they name a
// host) and players.max_players.
func placement(cfg live.DaemonConfig, admin string) (plane.Placement, error) {
	p := plane.Placement{Admin: admin, QUIC: cfg.Membership.PlayerQUIC, WS: cfg.Membership.PlayerWS, Capacity: cfg.Players.MaxPlayers}
	named := func(addr string) bool {
		h, _, err := net.SplitHostPort(addr)
		if err != nil || h == "" {
			return false
		}
		ip := net.ParseIP(h)
		return ip == nil || !ip.IsUnspecified()
	}
	if p.QUIC == "" && named(cfg.Listen.PlayerQUIC) {
		p.QUIC = cfg.Listen.PlayerQUIC
	}
	if p.WS == "" && named(cfg.Listen.PlayerWS) {
		scheme := "ws"
		if cfg.TLS.PlayerCert != "" || cfg.TLS.PlayerDevCert {
			scheme = "wss"
		}
		p.WS = scheme + "://" + cfg.Listen.PlayerWS + "/"
	}
	if p.QUIC == "" && p.WS == "" {
		return p, errors.New("no player endpoint players can reach: set membership.player_quic or player_ws (the listen addresses name no host)")
	}
	return p, p.Check()
}

// agonesEndpoint reads this game server's address and ports from the
// Agones SDK sidecar (agones.sdk, else the pod's), waiting up to wait
// for Agones to give it an address.
func agonesEndpoint(cfg live.DaemonConfig, wait time.Duration) (agones.Endpoint, error) {
	var sdk *agones.Client
	var err error
	if cfg.Agones.SDK != "" {
		sdk, err = agones.NewClient(cfg.Agones.SDK)
	} else {
		sdk, err = agones.FromEnv()
	}
	if err != nil {
		return agones.Endpoint{}, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	return sdk.WaitEndpoint(ctx, time.Second)
}

// enrollLogger logs the enrollment as the node will log (the
// configuration's format and level), without the configuration's id,
// which is not this node's yet.
func enrollLogger(cfg live.DaemonConfig, w io.Writer) *slog.Logger {
	var lvl slog.Level
	_ = lvl.UnmarshalText([]byte(cfg.LogLevel))
	opts := &slog.HandlerOptions{Level: lvl}
	if cfg.LogFormat == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// enrollMargin is how long a kept certificate must still be valid for
// the node to start on it rather than enroll again.
const enrollMargin = 10 * time.Minute

// enroll gives cfg the node identity of this game server: the
// certificate at tls.node_cert if it is this CA's, valid for at least
// enrollMargin more and this GameServer's (kept across restarts of the
// pod), else a new one from the plane, written there (0600, replacing an
// expiring one). The configuration's id is replaced by the certificate's.
// Plane errors other than a refusal are retried every second for up to
// f.wait (the plane may start after the nodes).
func enroll(cfg live.DaemonConfig, f enrollFlags, lg *slog.Logger) (live.DaemonConfig, plane.Enrollment, error) {
	var e plane.Enrollment
	if f.plane == "" || f.secretFile == "" {
		return cfg, e, badInputf("node: --enroll and --enroll-secret go together")
	}
	if f.wait <= 0 {
		return cfg, e, badInputf("node: --enroll-wait %v: want > 0", f.wait)
	}
	secret, err := os.ReadFile(f.secretFile)
	if err != nil {
		return cfg, e, badInputf("node: --enroll-secret: %v", err)
	}
	e = plane.Enrollment{GameServer: f.gameServer, Region: f.region, Secret: bytes.TrimSpace(secret)}
	if e.GameServer == "" {
		// A GameServer's pod has its name, which is its host name.
		if e.GameServer, err = os.Hostname(); err != nil {
			return cfg, e, badInputf("node: --gameserver not given and no host name: %v", err)
		}
	}
	if e.Region == "" {
		e.Region = cfg.Agones.Region
	}
	if e.Region == "" {
		return cfg, e, badInputf("node: --enroll needs a region: --region or agones.region")
	}
	if f.admin != "" {
		pc := cfg
		if cfg.Agones.Enabled && cfg.Membership.PlayerQUIC == "" && cfg.Membership.PlayerWS == "" {
			// Players reach a GameServer at its node's address and the
			// host ports Agones gave it, which only the GameServer knows.
			ep, err := agonesEndpoint(cfg, f.wait)
			if err != nil {
				return cfg, e, fmt.Errorf("node: --enroll-admin: the player endpoints: %w", err)
			}
			pc.Membership.PlayerQUIC, pc.Membership.PlayerWS = ep.PlayerEndpoints()
			lg.Info("player endpoints from the GameServer", "address", ep.Address, "player_quic", pc.Membership.PlayerQUIC,
				"player_ws", pc.Membership.PlayerWS)
		}
		if e.Placement, err = placement(pc, f.admin); err != nil {
			return cfg, e, badInputf("node: --enroll-admin: %v", err)
		}
	}
	if err := e.Check(); err != nil {
		return cfg, e, badInputf("node: --enroll: %v (--gameserver, --region, --enroll-secret)", err)
	}
	ca, err := pki.LoadCAFiles(cfg.TLS.CACert, "", false)
	if err != nil {
		return cfg, e, badInputf("node: tls.ca_cert (the cluster CA, needed to check what the plane grants): %v", err)
	}
	id, why := keptIdentity(cfg.TLS.NodeCert, ca, time.Now())
	if why != "" {
		lg.Info("enrolling with the control plane", "plane", f.plane, "gameserver", e.GameServer, "region", e.Region, "because", why)
		start := time.Now()
		hc, err := requestEnrollment(f.plane, e, ca, f.wait)
		if err != nil {
			return cfg, e, err
		}
		if err := writeNodeFile(cfg.TLS.NodeCert, hc.NodeFile); err != nil {
			return cfg, e, fmt.Errorf("node: tls.node_cert: %w", err)
		}
		id = hc.Node
		lg.Info("enrolled", "node", id, "took", time.Since(start).Round(time.Millisecond), "node_cert", cfg.TLS.NodeCert)
	}
	cfg.ID = id
	if cfg, err = cfg.Validate(); err != nil {
		return cfg, e, badInput(fmt.Errorf("node: as enrolled node %d: %w", id, err))
	}
	return cfg, e, nil
}

// keptIdentity returns the node ID of the node file at path when the
// node may start on it, else why not.
func keptIdentity(path string, ca *pki.CA, now time.Time) (uint32, string) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, "no node certificate yet"
	}
	if err != nil {
		return 0, err.Error()
	}
	n, err := pki.ParseNode(data, ca)
	if err != nil {
		return 0, fmt.Sprintf("the node certificate is unusable: %v", err)
	}
	if now.Add(enrollMargin).After(n.Leaf.NotAfter) {
		return 0, fmt.Sprintf("the node certificate expires at %s", n.Leaf.NotAfter.UTC().Format(time.RFC3339))
	}
	return uint32(n.ID), ""
}

// requestEnrollment enrolls e with the plane, retrying what is not a
// refusal every second for up to wait, and checks the CA the plane
// names is the node's.
func requestEnrollment(base string, e plane.Enrollment, ca *pki.CA, wait time.Duration) (plane.HostCert, error) {
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	client := &http.Client{Timeout: 10 * time.Second}
	for {
		hc, err := plane.RequestNodeCert(ctx, client, base, e, time.Now())
		if err == nil {
			n, perr := pki.ParseNode(hc.NodeFile, ca)
			if perr != nil || uint32(n.ID) != hc.Node {
				return hc, fmt.Errorf("node: the plane granted a certificate of another CA than tls.ca_cert: %v", perr)
			}
			return hc, nil
		}
		if errors.Is(err, plane.ErrPlaneRefused) {
			return hc, badInput(fmt.Errorf("node: --enroll: %w", err))
		}
		select {
		case <-ctx.Done():
			return hc, fmt.Errorf("node: --enroll: no certificate within --enroll-wait %v: %w", wait, err)
		case <-time.After(time.Second):
		}
	}
}

// writeNodeFile writes a node file (0600) in place of any at path.
func writeNodeFile(path string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(path), ".node-*.pem")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// renewEnrollment keeps an enrolled node's certificate current while it
// runs: when two thirds of its validity have passed it enrolls again
// (same GameServer, so the same node ID), writes the new certificate and
// reloads it (Daemon.Reload, as SIGHUP), until ctx ends. Failures are
// logged and retried a minute later.
func renewEnrollment(ctx context.Context, d *live.Daemon, cfg live.DaemonConfig, base string, e plane.Enrollment, log *slog.Logger) {
	for {
		ca, err := pki.LoadCAFiles(cfg.TLS.CACert, "", false)
		var at time.Time
		if err == nil {
			var n *pki.Identity
			if n, err = pki.LoadNode(cfg.TLS.NodeCert, ca); err == nil {
				nb, na := n.Leaf.NotBefore, n.Leaf.NotAfter
				at = nb.Add(na.Sub(nb) * 2 / 3)
			}
		}
		if err != nil {
			log.Warn("enrollment: reading the node certificate", "err", err)
			at = time.Now().Add(time.Minute)
		}
		select {
		case <-ctx.Done():
			return
		case <-time.After(time.Until(at)):
		}
		if ca == nil {
			continue
		}
		hc, err := requestEnrollment(base, e, ca, time.Minute)
		if err == nil && hc.Node != cfg.ID {
			err = fmt.Errorf("the plane granted node %d, this node is %d", hc.Node, cfg.ID)
		}
		if err == nil {
			err = writeNodeFile(cfg.TLS.NodeCert, hc.NodeFile)
		}
		if err == nil {
			err = d.Reload()
		}
		if err != nil {
			log.Warn("enrollment: renewing the node certificate failed; retrying in a minute", "err", err)
			select {
			case <-ctx.Done():
				return
			case <-time.After(time.Minute):
			}
			continue
		}
		log.Info("enrollment: node certificate renewed", "node", hc.Node)
	}
}
