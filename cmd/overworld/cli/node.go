package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/overworld/overworld/arena"
	"github.com/overworld/overworld/lab/harness"
	"github.com/overworld/overworld/live"
	"github.com/overworld/overworld/live/pki"
	"github.com/overworld/overworld/node"
	"github.com/overworld/overworld/wire"
)

func newNodeCmd(e *env) *cobra.Command {
	var configPath string
	var printConfig bool
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

The admin address serves /metrics (Prometheus), /healthz and /readyz. SIGTERM or
SIGINT shuts the node down gracefully: frames stop, players are told the node is
shutting down and their avatars removed, queued packets are sent for up to
shutdown_grace, and the log says what is lost (this node's primaries: objects do not
migrate between nodes yet).`,
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
			return runNode(e, configPath)
		},
	}
	cmd.Flags().StringVar(&configPath, "config", "", "configuration file (TOML)")
	cmd.Flags().BoolVar(&printConfig, "print-config", false, "print the default configuration, every field documented, and exit")
	return cmd
}

// arenaGame builds the model game a node configuration names: the registry,
// this node's spawns (its slot's bots and items) and the directory margin.
func arenaGame(g live.GameConfig) (*arena.Game, live.Game, error) {
	m, err := arena.ParseMapType(g.Map)
	if err != nil {
		return nil, live.Game{}, fmt.Errorf("%w: game.map %q: want rect or sqr", live.ErrConfig, g.Map)
	}
	game, err := arena.New(arena.Config{Map: m, Nodes: g.Nodes, PlayersPerNode: g.PlayersPerNode, Seed: g.Seed})
	if err != nil {
		return nil, live.Game{}, fmt.Errorf("%w: game: %v", live.ErrConfig, err)
	}
	slot := g.Slot
	// Discovery runs with the presets of the simulated world, over the
	// same map.
	lg := live.Game{Registry: game.Registry(), Discovery: harness.ArenaSpace(game),
		Players: game.Players(),
		Spawn: func(now time.Duration, n *node.Node) error {
			for _, sp := range game.Spawns() {
				if sp.Node != slot-1 || (sp.Schema == game.Bot && !g.AIBots) {
					continue
				}
				if _, err := n.Spawn(now, sp.Schema, sp.Init); err != nil {
					return err
				}
			}
			return nil
		}}
	return game, lg, nil
}

func runNode(e *env, path string) error {
	cfg, err := live.LoadDaemonConfig(path)
	if errors.Is(err, live.ErrConfig) || errors.Is(err, fs.ErrNotExist) {
		return badInput(err)
	}
	if err != nil {
		return err
	}
	_, lg, err := arenaGame(cfg.Game)
	if err != nil {
		return badInput(err)
	}
	log := live.NewLogger(cfg, e.stderr)
	d, err := live.NewDaemon(cfg, lg, log)
	if errors.Is(err, live.ErrConfig) || errors.Is(err, pki.ErrBadFile) || errors.Is(err, fs.ErrNotExist) {
		return badInput(err)
	}
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
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
		RunE: func(*cobra.Command, []string) error {
			switch {
			case idir == "" || out == "":
				return badInputf("ca issue: --dir and --out are required")
			case nodeID < 0 || nodeID > 1<<32-1:
				return badInputf("ca issue: --node %d: want a node ID, 0 to 4294967295", nodeID)
			case ivalidity <= 0:
				return badInputf("ca issue: --validity %v: want > 0", ivalidity)
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
	issueCmd.Flags().Int64Var(&nodeID, "node", -1, "the node ID the certificate names")
	issueCmd.Flags().StringVar(&out, "out", "", "file for the certificate and its key (PEM, 0600)")
	issueCmd.Flags().DurationVar(&ivalidity, "validity", 365*24*time.Hour, "how long the certificate is valid")
	cmd.AddCommand(initCmd, issueCmd)
	return cmd
}
