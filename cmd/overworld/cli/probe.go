package cli

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"time"

	"github.com/spf13/cobra"
)

func newProbeCmd(e *env) *cobra.Command {
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "probe URL",
		Short: "Check a node's health or readiness over HTTP (for container health checks)",
		Long: `Fetch URL (a node's admin endpoint: /healthz or /readyz) and exit 0 when it answers
200 OK within --timeout, 1 otherwise, printing the answer's first line. A container
image built FROM scratch has no curl or wget: its HEALTHCHECK runs this instead.`,
		Example: `  overworld probe http://127.0.0.1:7180/readyz`,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			u, err := url.Parse(args[0])
			if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
				return badInputf("probe: URL %q: want http://HOST:PORT/PATH", args[0])
			}
			if timeout <= 0 || timeout > time.Minute {
				return badInputf("probe: --timeout %v: want more than 0 and at most 1m", timeout)
			}
			ctx, cancel := context.WithTimeout(context.Background(), timeout)
			defer cancel()
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
			if err != nil {
				return badInput(err)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				return fmt.Errorf("probe: %w", err)
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
			line := firstLine(string(body))
			if resp.StatusCode != http.StatusOK {
				return fmt.Errorf("probe: %s: %s: %s", u, resp.Status, line)
			}
			fmt.Fprintln(e.stdout, line)
			return nil
		},
	}
	cmd.Flags().DurationVar(&timeout, "timeout", 2*time.Second, "how long to wait for the answer")
	return cmd
}

// firstLine returns s up to its first newline.
func firstLine(s string) string {
	for i, r := range s {
		if r == '\n' || r == '\r' {
			return s[:i]
		}
	}
	return s
}
