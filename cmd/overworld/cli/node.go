package cli

import (
	"context"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/overworld/overworld/arena"
	"github.com/overworld/overworld/live"
	"github.com/overworld/overworld/live/arenaplay"
	"github.com/overworld/overworld/live/pki"
	"github.com/overworld/overworld/live/plane"
	"github.com/overworld/overworld/wire"
)

func newNodeCmd(e *env) *cobra.Command {
	var configPath string
	var printConfig bool
	var ov nodeOverrides
	cmd := &cobra.Command{
		Use:   "node --config node.toml",
		Short: "Run one live node: the node core on real sockets (QUIC between nodes, mutual TLS)",
		Long: `Run one node of a live cluster: the node core of package node driven in real time by
package live, talking QUIC to its peers (unreliable datagrams for object updates, one
reliable stream per peer for everything else) with mutual TLS: peers must present a
certificate from the cluster CA ("overworld ca") naming the node they claim to be.

The configuration file (TOML) lists the listen addresses, the static peer list, the
CA and node certificate, the frame rate, the discovery architecture (directory,
broadcast, or colyseus: the simulated world's distributed locator on a ring of every
node of the file), latency emulation
and the game. --print-config prints a default configuration with every field
documented. The model game (arena) spawns this node's bots and items (game.slot;
game.ai_bots = false spawns only the items).

With listen.player_quic or listen.player_ws, players join the node through its player
endpoint (package live/player) with tokens signed by the coordinator key named by
players.coordinator_key ("overworld token init"); "overworld bot" plays over it.

Failover is on by default (failover = true, --failover=false turns it off): each
primary keeps a warm backup on another node, and when a majority of the cluster finds
a node dead its objects' backups take over. Every start of the node gets a new
incarnation (object IDs and write sequence numbers carry it, so a restarted node never
reuses them): the counter file "incarnation" in data_dir (--data-dir), raised by one
at every start; with data_dir = "" the wall clock instead (seconds, in a cycle of
about 18 hours).

The admin address serves /metrics (Prometheus), /healthz, /readyz, /debug/world and
/debug/authority (migrations, promotions and deaths). SIGHUP reloads the node's certificate,
the CA, the revocation list and the WebSocket endpoint's certificate. SIGTERM or SIGINT shuts the
node down gracefully: players are told the node is shutting down and their avatars
removed, then the node drains: it keeps running frames while its primaries migrate to
live peers (spread evenly, each to its backup when that peer has no more than its
share) until each is installed at its target or drain_timeout (--drain-timeout)
passes, and logs a drain report (primaries migrated, not migrated, lost); queued
packets are then sent for up to shutdown_grace.

A game server started from its region's shared configuration (an Agones Fleet's) gets its
own node ID at start with --enroll: it asks the control plane for a certificate with the
region's enrollment secret (--enroll-secret), writes it to tls.node_cert and runs as the
node it names; started again with that certificate, it keeps it. With --enroll-admin it
also asks to be a placement target: the plane then admits players to it (docs/deploy.md).`,
		Example: `  overworld node --print-config > node.toml
  overworld node --config node.toml`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if printConfig {
				_, err := fmt.Fprint(e.stdout, live.DefaultConfigTOML)
				return err
			}
			if configPath == "" {
				return badInputf("node: --config FILE is required (or --print-config)")
			}
			fl := cmd.Flags()
			ov.setDataDir, ov.setFailover, ov.setDrain = fl.Changed("data-dir"), fl.Changed("failover"), fl.Changed("drain-timeout")
			return runNode(e, configPath, ov)
		},
	}
	cmd.Flags().StringVar(&configPath, "config", "", "configuration file (TOML)")
	cmd.Flags().BoolVar(&printConfig, "print-config", false, "print the default configuration, every field documented, and exit")
	cmd.Flags().StringVar(&ov.dataDir, "data-dir", "", `the node's data directory, overriding data_dir ("" for none: the incarnation then comes from the wall clock)`)
	cmd.Flags().BoolVar(&ov.failover, "failover", true, "warm backups and failover, overriding failover (--failover=false: off)")
	cmd.Flags().DurationVar(&ov.drain, "drain-timeout", live.DefaultDrainTimeout, "on SIGTERM, how long the primaries may take to migrate to live peers, overriding drain_timeout (0: no drain)")
	cmd.Flags().StringVar(&ov.playerHost, "player-host", "", "run as a player host: the control plane's URL; without tls.node_cert yet, ask it for one (POST /v1/hosts) with --player-token, and take the node ID it grants (the configuration's id is replaced by the certificate's)")
	cmd.Flags().StringVar(&ov.playerToken, "player-token", "", "with --player-host: a file holding the player's token for the plane (overworld token issue with the plane's audience node)")
	cmd.Flags().StringVar(&ov.enroll.plane, "enroll", "", "run as an enrolled game server: the control plane's URL; unless tls.node_cert holds this node's certificate, valid for 10 more minutes, ask the plane for one (POST /v1/hosts) with --enroll-secret, write it there, and take the node ID it grants (the configuration's id is replaced); the certificate is renewed while the node runs")
	cmd.Flags().StringVar(&ov.enroll.secretFile, "enroll-secret", "", "with --enroll: a file holding the region's enrollment secret")
	cmd.Flags().StringVar(&ov.enroll.gameServer, "gameserver", "", "with --enroll: this game server's name, the same at every restart (default: the host name, a GameServer pod's name)")
	cmd.Flags().StringVar(&ov.enroll.region, "region", "", "with --enroll: the region enrolled in (default: agones.region)")
	cmd.Flags().DurationVar(&ov.enroll.wait, "enroll-wait", 2*time.Minute, "with --enroll: how long to retry while the plane is unreachable or busy")
	cmd.Flags().StringVar(&ov.enroll.admin, "enroll-admin", "", "with --enroll: this node's admin endpoint as the plane reaches it (http://host:port); given, the node asks to be a placement target of the main world, sending it with its player endpoints (membership.player_quic and player_ws; else, as an Agones game server, the GameServer's address with its ports player-quic and player-ws, waiting up to --enroll-wait for Agones to give it one; else listen.player_quic and player_ws when they name a host) and players.max_players as its capacity")
	return cmd
}

// nodeOverrides are the node command's flags that override its
// configuration file, each when given.
type nodeOverrides struct {
	playerHost, playerToken           string
	enroll                            enrollFlags
	dataDir                           string
	failover                          bool
	drain                             time.Duration
	setDataDir, setFailover, setDrain bool
}

func (o nodeOverrides) apply(c live.DaemonConfig) (live.DaemonConfig, error) {
	if o.setDataDir {
		c.DataDir = o.dataDir
		if c.DataDir != "" {
			abs, err := filepath.Abs(c.DataDir)
			if err != nil {
				return c, err
			}
			c.DataDir = abs
		}
	}
	if o.setFailover {
		c.Failover = o.failover
	}
	if o.setDrain {
		c.DrainTimeout = live.Duration{Duration: o.drain}
	}
	return c.Validate()
}

// arenaGame builds the model game a node configuration names
// (arenaplay.NodeGame: the registry, this node's spawns, the game's world
// for discovery's presets, the player controller).
func arenaGame(g live.GameConfig) (*arena.Game, live.Game, error) { return arenaplay.NodeGame(g) }

func runNode(e *env, path string, ov nodeOverrides) error {
	f, err := openFile("--config", path)
	if err != nil {
		return err
	}
	f.Close()
	cfg, err := live.LoadDaemonConfig(path)
	if errors.Is(err, live.ErrConfig) || errors.Is(err, fs.ErrNotExist) {
		return badInput(err)
	}
	if err != nil {
		return err
	}
	if cfg, err = ov.apply(cfg); err != nil {
		return badInput(fmt.Errorf("node: flags: %w", err))
	}
	if ov.playerHost != "" || ov.playerToken != "" {
		if ov.enroll.on() {
			return badInputf("node: --player-host and --enroll: choose one")
		}
		if cfg, err = playerHost(cfg, ov.playerHost, ov.playerToken); err != nil {
			return err
		}
	}
	var enrolled plane.Enrollment
	if ov.enroll.on() {
		if cfg, enrolled, err = enroll(cfg, ov.enroll, enrollLogger(cfg, e.stderr)); err != nil {
			return err
		}
	}
	log := live.NewLogger(cfg, e.stderr)
	_, lg, err := arenaGame(cfg.Game)
	if err != nil {
		return badInput(err)
	}
	d, err := live.NewDaemon(cfg, lg, log)
	if errors.Is(err, live.ErrConfig) || errors.Is(err, pki.ErrBadFile) || errors.Is(err, fs.ErrNotExist) {
		return badInput(err)
	}
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	go func() {
		for {
			select {
			case <-hup:
				if err := d.Reload(); err != nil {
					log.Error("reload on SIGHUP failed; the files that failed keep their previous contents", "err", err)
				}
			case <-ctx.Done():
				return
			}
		}
	}()
	if ov.enroll.on() {
		go renewEnrollment(ctx, d, cfg, ov.enroll.plane, enrolled, log)
	}
	return d.Run(ctx)
}

func newCACmd(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "ca",
		Short: "Create a cluster's certificate authority and issue node certificates",
		Long: `A live cluster's nodes accept only peers whose certificate chains to the cluster CA,
is unexpired, and names the node the peer claims to be (mutual TLS on QUIC).

  ca init   creates the CA in --dir: ca.crt and ca.key (ECDSA P-256, key file 0600)
  ca issue  signs a certificate for node --node, written with its key to --out (0600)`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error { return badInputf("ca: name a subcommand: init or issue") },
	}
	var dir, name string
	var validity time.Duration
	initCmd := &cobra.Command{
		Use:     "init --dir DIR",
		Short:   "Create a cluster CA in DIR",
		Example: "  overworld ca init --dir ca",
		Args:    cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if dir == "" {
				return badInputf("ca init: --dir is required")
			}
			if err := checkOutDir("ca init: --dir", dir); err != nil {
				return err
			}
			if validity <= 0 {
				return badInputf("ca init: --validity %v: want > 0", validity)
			}
			ca, err := pki.InitCA(dir, name, time.Now(), validity)
			if errors.Is(err, pki.ErrExists) {
				return badInput(err)
			}
			if err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "created CA %q in %s (valid until %s)\n", ca.Cert.Subject.CommonName, dir, ca.Cert.NotAfter.UTC().Format(time.RFC3339))
			return nil
		},
	}
	initCmd.Flags().StringVar(&dir, "dir", "", "directory for ca.crt and ca.key")
	initCmd.Flags().StringVar(&name, "name", "overworld cluster CA", "the CA's common name")
	initCmd.Flags().DurationVar(&validity, "validity", 10*365*24*time.Hour, "how long the CA is valid")

	var idir, out string
	var nodeID int64
	var ivalidity time.Duration
	issueCmd := &cobra.Command{
		Use:     "issue --dir DIR --node N --out FILE",
		Short:   "Issue a certificate for node N, signed by the CA in DIR",
		Example: "  overworld ca issue --dir ca --node 1 --out node1.pem",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			switch {
			case idir == "" || out == "":
				return badInputf("ca issue: --dir and --out are required")
			case !cmd.Flags().Changed("node"):
				return badInputf("ca issue: --node is required (the node ID the certificate names)")
			case nodeID < 0 || nodeID > 1<<32-1:
				return badInputf("ca issue: --node %d: want a node ID, 0 to 4294967295", nodeID)
			case ivalidity <= 0:
				return badInputf("ca issue: --validity %v: want > 0", ivalidity)
			}
			if err := checkOutFile("ca issue: --out", out); err != nil {
				return err
			}
			ca, err := pki.LoadCA(idir, true)
			if err != nil {
				return badInput(err)
			}
			data, err := ca.Issue(wire.NodeID(nodeID), time.Now(), ivalidity)
			if errors.Is(err, pki.ErrValidity) {
				return badInput(err)
			}
			if err != nil {
				return err
			}
			if err := pki.WriteNodeFile(out, data); err != nil {
				if errors.Is(err, pki.ErrExists) {
					return badInput(err)
				}
				return err
			}
			fmt.Fprintf(e.stdout, "issued node %d's certificate to %s (valid %v)\n", nodeID, filepath.Clean(out), ivalidity)
			return nil
		},
	}
	issueCmd.Flags().StringVar(&idir, "dir", "", "the CA's directory")
	issueCmd.Flags().Int64Var(&nodeID, "node", 0, "the node ID the certificate names (required)")
	issueCmd.Flags().StringVar(&out, "out", "", "file for the certificate and its key (PEM, 0600)")
	issueCmd.Flags().DurationVar(&ivalidity, "validity", 365*24*time.Hour, "how long the certificate is valid")
	cmd.AddCommand(initCmd, issueCmd)
	return cmd
}

// hostAdminFile is where a player host keeps the admin secret the plane
// gave it: listen.admin_token_file, or else beside its certificate.
func hostAdminFile(cfg live.DaemonConfig) string {
	if cfg.Listen.AdminTokenFile != "" {
		return cfg.Listen.AdminTokenFile
	}
	return cfg.TLS.NodeCert + ".admin"
}

// writeHostAdmin writes the player host's admin secret (0600) and makes
// it the admin endpoint's; a file already there holding another secret is
// refused rather than overwritten (the plane could not call the host).
func writeHostAdmin(cfg live.DaemonConfig, secret string) (live.DaemonConfig, error) {
	p := hostAdminFile(cfg)
	if old, err := os.ReadFile(p); err == nil && strings.TrimSpace(string(old)) != secret {
		return cfg, badInputf("node: %s holds another admin secret than the one the plane gave this host; remove it, or set listen.admin_token_file elsewhere", p)
	}
	if err := os.WriteFile(p, []byte(secret+"\n"), 0o600); err != nil {
		return cfg, err
	}
	cfg.Listen.AdminTokenFile = p
	return cfg, nil
}

// playerHost makes cfg a player host's: with no file at tls.node_cert
// yet, it asks the plane at base for a certificate (plane.RequestHostCert)
// with the token in tokenFile, writes it (and the CA's certificate at
// tls.ca_cert when there is none, and the host's own admin secret, which
// the plane calls it with: hostAdminFile), and takes the granted node ID; with
// one, it takes the ID the certificate names (a restarted player host
// keeps its identity).
func playerHost(cfg live.DaemonConfig, base, tokenFile string) (live.DaemonConfig, error) {
	if base == "" || tokenFile == "" {
		return cfg, badInputf("node: --player-host and --player-token go together")
	}
	if _, err := os.Stat(cfg.TLS.NodeCert); err != nil {
		tok, err := os.ReadFile(tokenFile)
		if err != nil {
			return cfg, badInputf("node: --player-token: %v", err)
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		hc, err := plane.RequestHostCert(ctx, &http.Client{Timeout: 30 * time.Second}, base, strings.TrimSpace(string(tok)))
		if err != nil {
			return cfg, err
		}
		if _, err := os.Stat(cfg.TLS.CACert); err != nil {
			if err := os.WriteFile(cfg.TLS.CACert, hc.CA, 0o644); err != nil {
				return cfg, err
			}
		}
		if err := pki.WriteNodeFile(cfg.TLS.NodeCert, hc.NodeFile); err != nil {
			return cfg, err
		}
		if hc.Admin != "" {
			if cfg, err = writeHostAdmin(cfg, hc.Admin); err != nil {
				return cfg, err
			}
		}
	} else if p := hostAdminFile(cfg); cfg.Listen.AdminTokenFile == "" {
		if _, err := os.Stat(p); err == nil {
			cfg.Listen.AdminTokenFile = p // the secret a first run wrote
		}
	}
	ca, err := pki.LoadCAFiles(cfg.TLS.CACert, "", false)
	if err != nil {
		return cfg, badInput(err)
	}
	data, err := os.ReadFile(cfg.TLS.NodeCert)
	if err != nil {
		return cfg, badInput(err)
	}
	b, _ := pem.Decode(data)
	if b == nil {
		return cfg, badInputf("node: %s: no certificate", cfg.TLS.NodeCert)
	}
	cert, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		return cfg, badInputf("node: %s: %v", cfg.TLS.NodeCert, err)
	}
	if _, err := pki.ParseNode(data, ca); err != nil {
		return cfg, badInput(err)
	}
	id, err := pki.NodeIDOf(cert)
	if err != nil {
		return cfg, badInput(err)
	}
	cfg.ID = uint32(id)
	if cfg, err = cfg.Validate(); err != nil {
		return cfg, badInput(fmt.Errorf("node: as player host %d: %w", id, err))
	}
	return cfg, nil
}
