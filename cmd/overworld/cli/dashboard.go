package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/overworld/overworld/live/web"
)

func newDashboardCmd(e *env) *cobra.Command {
	var (
		cluster []string
		listen  string
		headers []string
	)
	cmd := &cobra.Command{
		Use:   "dashboard --cluster ADMIN[,ADMIN...]",
		Short: "Serve a live dashboard of a cluster's nodes to a browser",
		Long: `Serve the live dashboard of a whole cluster: every node's /dashboard shows that node
alone; this command reads the nodes' admin endpoints (--cluster: their addresses,
host:port or http://host:port) and serves one page showing them all. Every second the
page reads each node's /metrics (what Prometheus scrapes) and /debug/world through this
command, and draws the game world with every object colored by the node holding its
primary and each node's interest boxes, the nodes at their cities on a map of the
earth with their players and links, and time series of bandwidth by traffic class,
missing replicas and discovery latency (from the nodes' snapshots, at the poll
period's resolution), frame time, failovers and migrations. It only reads: /metrics
and /debug/world are the only paths it forwards.

--header "Name: value" (repeatable) is sent with every request to the nodes: the
credentials of authenticated admin endpoints. Without it, the browser's own
Authorization header is forwarded. The command serves until Ctrl-C.

overworld cluster serves the same page for the cluster it runs (its --play address,
/dashboard), and overworld demo --dashboard ADDR for a simulated run.`,
		Example: `  overworld dashboard --cluster 127.0.0.1:7180,127.0.0.1:7181 --listen 127.0.0.1:7300`,
		Args:    cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			if len(cluster) == 0 {
				return badInputf("--cluster is required: the nodes' admin addresses")
			}
			var admins []string
			for _, a := range cluster {
				if !strings.Contains(a, "://") {
					a = "http://" + a
				}
				u, err := url.Parse(a)
				if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || (u.Path != "" && u.Path != "/") {
					return badInputf("--cluster %q: want host:port or http(s)://host:port", a)
				}
				admins = append(admins, u.Scheme+"://"+u.Host)
			}
			hdr := http.Header{}
			for _, h := range headers {
				k, v, ok := strings.Cut(h, ":")
				if !ok || strings.TrimSpace(k) == "" || strings.ContainsAny(k, " \t") {
					return badInputf("--header %q: want \"Name: value\"", h)
				}
				hdr.Add(strings.TrimSpace(k), strings.TrimSpace(v))
			}
			if _, _, err := net.SplitHostPort(listen); err != nil {
				return badInputf("--listen %q: want host:port (%v)", listen, err)
			}
			ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			var nodes []web.ClusterNode
			var w, h float64 = 1, 1
			seen := map[uint32]string{}
			for _, a := range admins {
				ictx, cancel := context.WithTimeout(ctx, 10*time.Second)
				n, err := web.NodeInfo(ictx, a, hdr)
				cancel()
				if err != nil {
					return fmt.Errorf("dashboard: %w", err)
				}
				if other, dup := seen[n.ID]; dup {
					return badInputf("--cluster: %s and %s are both node %d", other, a, n.ID)
				}
				seen[n.ID] = a
				nodes = append(nodes, n)
			}
			if w0, h0, err := worldOf(ctx, admins[0], hdr); err == nil {
				w, h = w0, h0
			}
			ln, err := net.Listen("tcp", listen)
			if err != nil {
				return badInputf("--listen %s: %v", listen, err)
			}
			srv := &http.Server{Handler: web.ClusterDashboard(fmt.Sprintf("overworld: %d nodes", len(nodes)), nodes, w, h, hdr),
				ReadHeaderTimeout: 5 * time.Second}
			go func() {
				<-ctx.Done()
				srv.Close()
			}()
			fmt.Fprintf(e.stderr, "the dashboard of %d nodes: http://%s/dashboard (Ctrl-C stops)\n", len(nodes), ln.Addr())
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				return err
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringSliceVar(&cluster, "cluster", nil, "the nodes' admin endpoints, comma-separated (host:port or http://host:port)")
	fl.StringVar(&listen, "listen", "127.0.0.1:7300", "where to serve the dashboard")
	fl.StringArrayVar(&headers, "header", nil, "\"Name: value\" sent with every request to the nodes (repeatable)")
	return cmd
}

// worldOf reads the game world's extent from a node's dashboard
// description.
func worldOf(ctx context.Context, admin string, hdr http.Header) (w, h float64, err error) {
	info, err := web.Info(ctx, admin, hdr)
	if err != nil {
		return 0, 0, err
	}
	return info.World.W, info.World.H, nil
}
