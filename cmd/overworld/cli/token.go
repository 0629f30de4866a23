package cli

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/overworld/overworld/live/player"
)

func newTokenCmd(e *env) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "token",
		Short: "Create the coordinator key and issue player tokens",
		Long: `Players join a node with a token signed by the coordinator's Ed25519 key: it carries
the player ID, the world and the one node it admits to, its issue and expiry times and a
random nonce. Nodes verify it with the coordinator's public key and refuse a bad signature,
a token for another world or node, an expired token or a token already used (package
live/player).

  token init   creates the coordinator key pair in --dir
  token issue  prints a token for --player, signed by the key in --dir`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error { return badInputf("token: name a subcommand: init or issue") },
	}
	var dir string
	initCmd := &cobra.Command{
		Use:   "init --dir DIR",
		Short: "Create a coordinator key pair in DIR",
		Long: `Create a coordinator key pair in DIR (created if missing): coordinator.key, the private
key (PKCS #8 PEM, mode 0600), and coordinator.pub, the public key nodes verify tokens with.
Existing keys are never overwritten.`,
		Example: "  overworld token init --dir coord",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if dir == "" {
				return badInputf("--dir is required")
			}
			if err := checkOutDir("--dir", dir); err != nil {
				return err
			}
			for _, name := range []string{player.PrivateKeyFile, player.PublicKeyFile} {
				if _, err := os.Stat(filepath.Join(dir, name)); err == nil {
					return badInputf("--dir %s: %s already exists; existing keys are never overwritten (remove it, or choose another directory)", dir, name)
				}
			}
			if _, err := player.InitKeys(dir, nil); err != nil {
				return err
			}
			fmt.Fprintf(e.stdout, "coordinator key pair created in %s (%s, %s)\n", dir, player.PrivateKeyFile, player.PublicKeyFile)
			return nil
		},
	}
	initCmd.Flags().StringVar(&dir, "dir", "", "directory for the coordinator key pair (required)")
	var (
		idir, pl, world string
		nodeID          uint32
		ttl             time.Duration
	)
	issueCmd := &cobra.Command{
		Use:   "issue --dir DIR --player ID --node N [--world W] [--ttl 2m]",
		Short: "Print a token for a player, signed by the coordinator key in DIR",
		Long: `Print a single-use token (base64url) for player ID at node N of world W, valid for --ttl
(1s to 24h; nodes refuse tokens valid for longer than their players.max_token_ttl, 10m by
default). Only node N accepts it, once.`,
		Example: "  overworld token issue --dir coord --player alice --node 1 --ttl 2m",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if idir == "" {
				return badInputf("--dir is required")
			}
			if err := player.PlayerID(pl).Validate(); err != nil {
				return badInputf("--player %q: %v", pl, err)
			}
			if ttl < time.Second || ttl > 24*time.Hour {
				return badInputf("--ttl %v: want 1s to 24h", ttl)
			}
			aud := player.Audience{World: world, Node: nodeID}
			if err := aud.Validate(); err != nil {
				return badInputf("--world %q, --node %d: %v", world, nodeID, err)
			}
			key, err := loadKey(idir)
			if err != nil {
				return err
			}
			tok, err := player.IssueToken(key, player.PlayerID(pl), aud, time.Now(), ttl, nil)
			if err != nil {
				return err
			}
			fmt.Fprintln(e.stdout, player.EncodeToken(tok))
			return nil
		},
	}
	fl := issueCmd.Flags()
	fl.StringVar(&idir, "dir", "", "directory holding the coordinator key (required)")
	fl.StringVar(&pl, "player", "", "player ID: 1 to 64 printable characters, no spaces (required)")
	fl.DurationVar(&ttl, "ttl", 2*time.Minute, "how long the token is valid")
	fl.StringVar(&world, "world", player.DefaultWorld, "the world the token admits to (the node's players.world)")
	fl.Uint32Var(&nodeID, "node", 0, "the node the token admits to (required)")
	cmd.AddCommand(initCmd, issueCmd)
	return cmd
}

// loadKey reads the coordinator private key; a missing or bad file is a
// usage error.
func loadKey(dir string) (ed25519.PrivateKey, error) {
	k, err := player.LoadPrivateKey(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, badInputf("no coordinator key in %s (create one with 'overworld token init --dir %s')", dir, dir)
		}
		return nil, badInput(err)
	}
	return k, nil
}
