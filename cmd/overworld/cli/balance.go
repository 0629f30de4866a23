package cli

import (
	"encoding/json"
	"math"

	"github.com/spf13/cobra"

	"github.com/overworld/overworld/internal/placefile"
	"github.com/overworld/overworld/place/balance"
)

// newBalanceCmd is overworld balance: the state's format and the round are
// placefile.Balance's.
func newBalanceCmd(e *env) *cobra.Command {
	var method, criterion string
	var paper, indent bool
	var failover float64
	cmd := &cobra.Command{
		Use:   "balance [FILE]",
		Short: "Balance instances over a server cluster, overflowing to player hosts (JSON in, JSON out)",
		Long: `Balance reads a cluster state — servers with their main-world players, and instances with
their size, server and (optionally) players — from FILE (or standard input when FILE is
absent or "-"), runs one balancing round, and writes the moves and overflow decisions as
JSON: which instance goes from which server to which, and for each instance sent to
player hosts, its server and replicated server among its players and the links of its
P2P subarea (Fig. 2 of the hybrid cluster/P2P paper).

Input:
  {"max_load":5500, "margin":0.1,
   "servers":[{"id":"s1","main":550},...],
   "instances":[{"id":"raid7","size":3,"server":"s1",
                 "players":[{"id":"ann","sessions":[2.5,3.1],"leave":0.2},...],
                 "rtt":[[0,40,90],[40,0,70],[90,70,0]]},...]}

margin defaults to 0.1. players (one per seat) and rtt (ms, size × size) are needed
only to choose hosts; sessions are past session lengths in hours (PD), leave the
probability of leaving before the instance ends (score, and the exact failure
probability).

Methods: balance (Algorithm 1, default) or pack (the exact alternative: fewest
players moved). Criteria: LL (lowest latency, default), PD (highest predicted
minimum uptime), score (expected latency with failover plus --failover-ms per
expected failover). --paper lets receivers fill to max_load instead of the target.

A malformed state is rejected with an error naming the field; nothing is written to
standard output and the exit status is 2.`,
		Example: `  echo '{"max_load":100,"servers":[{"id":"a","main":60},{"id":"b","main":10}],
        "instances":[{"id":"x","size":30,"server":"a"},{"id":"y","size":20,"server":"a"}]}' | overworld balance`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			crit, err := balance.ParseCriterion(criterion)
			if err != nil {
				return badInputf("--criterion: %v", err)
			}
			if method != "balance" && method != "pack" {
				return badInputf("--method %q: want balance or pack", method)
			}
			if !(failover >= 0) || math.IsInf(failover, 0) {
				return badInputf("--failover-ms %g: want finite, ≥ 0", failover)
			}
			data, name, err := readInput(e, "balance", args)
			if err != nil {
				return err
			}
			t := newTicker(e.stderr, false, "balance", -1, "")
			out, err := placefile.Balance(data, method, crit, !paper, failover)
			t.done()
			if err != nil {
				return badInputf("%s: %v", name, err)
			}
			enc := json.NewEncoder(e.stdout)
			if indent {
				enc.SetIndent("", "  ")
			}
			return enc.Encode(out)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&method, "method", "balance", "balance (Algorithm 1) or pack (exact, fewest players moved)")
	fl.StringVar(&criterion, "criterion", "LL", "how hosts are chosen: LL, PD or score")
	fl.BoolVar(&paper, "paper", false, "receivers fill up to max_load (the paper's reading) instead of the target")
	fl.Float64Var(&failover, "failover-ms", 100, "score: price of one failover in ms of latency")
	fl.BoolVar(&indent, "indent", false, "indent the JSON output")
	return cmd
}
