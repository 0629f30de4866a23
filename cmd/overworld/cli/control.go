package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/overworld/overworld/live/plane"
)

func newControlCmd(e *env) *cobra.Command {
	var configPath string
	var verbose bool
	cmd := &cobra.Command{
		Use:   "control --config plane.toml",
		Short: "Run the live control plane: players placed by place/cma and handed over between nodes",
		Long: `Run the control plane of a live cluster (package live/plane): it decides which node each
player plays on, with the exact incremental assignment of place/cma on every join and
leave, on the RTTs clients measured (estimated for the nodes they did not ping), and
carries its decisions out by handing players over between nodes (their avatars migrate,
their clients are redirected, make-before-break).

Clients (or the matchmaker that admits them) ask it where to play: POST /v1/join with
{"player": ID, "pings": [{"node": N, "rtt_ms": X}, ...]} answers with the node and its
player endpoints and the nodes to ping next (POST /v1/pings reports them; GET
/v1/player?id= tells a client where it plays). GET /v1/state shows the placement.
The plane polls every node's admin endpoint once a poll (GET /admin/players): which
players are where, with their samples and positions; a node silent for down_after is
down and its players are re-admitted elsewhere. It keeps no state of its own: when it
starts it rebuilds the placement (and its instances' records, which it keeps on the
servers) from the nodes before admitting anyone, and while it is down the nodes go on
with the placement they have.

The configuration file (TOML) names the listen address and the nodes ([[nodes]]): id, site
(a WonderNetwork city, for the RTT estimates), capacity, admin URL and player endpoints.
With [hosts], game servers that enroll (overworld node --enroll) get node certificates; those
of a region with a site that send their endpoints (--enroll-admin) also become nodes of the
placement once they answer a poll, and leave it when revoked (hosts.revoked) or silent for
hosts.forget_after (docs/deploy.md). It wants at least 2 [[nodes]], unless a region of
[hosts] has a site: then one or none will do, and until an enrolled game server is a
placement target the plane is ready (enrollments go on) but refuses joins with 503.
SIGTERM or SIGINT stops it.`,
		Example: `  overworld control --config plane.toml`,
		Args:    cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if configPath == "" {
				return badInputf("control: --config is required")
			}
			return runControl(e, configPath, verbose)
		},
	}
	cmd.Flags().StringVar(&configPath, "config", "", "the plane's configuration file (TOML)")
	cmd.Flags().BoolVar(&verbose, "verbose", false, "log every handoff and poll failure")
	return cmd
}

func runControl(e *env, path string, verbose bool) error {
	f, err := openFile("--config", path)
	if err != nil {
		return err
	}
	f.Close()
	file, err := plane.LoadFile(path)
	if errors.Is(err, plane.ErrConfig) || errors.Is(err, fs.ErrNotExist) {
		return badInput(fmt.Errorf("control: %s: %w", path, err))
	}
	if err != nil {
		return err
	}
	cfg, err := file.Config()
	if err != nil {
		return badInput(fmt.Errorf("control: %s: %w", path, err))
	}
	level := slog.LevelInfo
	if verbose {
		level = slog.LevelDebug
	}
	cfg.Log = slog.New(slog.NewTextHandler(e.stderr, &slog.HandlerOptions{Level: level}))
	s, err := plane.New(cfg)
	if err != nil {
		return badInput(fmt.Errorf("control: %s: %w", path, err))
	}
	ln, err := net.Listen("tcp", file.Listen)
	if err != nil {
		return badInput(fmt.Errorf("control: listen %s: %w", file.Listen, err))
	}
	srv := &http.Server{Handler: s.Handler(), ReadHeaderTimeout: 5 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, os.Interrupt)
	defer stop()
	cfg.Log.Info("control plane", "listen", ln.Addr().String(), "nodes", len(cfg.Nodes))
	go srv.Serve(ln)
	err = s.Run(ctx)
	sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	srv.Shutdown(sctx)
	st := s.Stats()
	cfg.Log.Info("control plane stopped", "joins", st.Joins, "moves", st.Moves, "handoffs", st.Handoffs, "handoff_errors", st.HandoffErrors,
		"region_migration_errors", st.RegionMigrationErrors, "region_migration_retries", st.RegionMigrationRetries,
		"region_migrations_pending", st.RegionMigrationsPending)
	return err
}
