package cli

import (
	"encoding/json"
	"errors"
	"strings"

	"github.com/spf13/cobra"

	"github.com/overworld/overworld/internal/placefile"
	"github.com/overworld/overworld/place/spd"
)

// newSelectCmd is overworld select: the session's format and the algorithms'
// runs are placefile.DecodeSession's and placefile.Select's.
func newSelectCmd(e *env) *cobra.Command {
	var o placefile.SelectOptions
	var indent bool
	cmd := &cobra.Command{
		Use:   "select [FILE]",
		Short: "Choose a session's servers, root and contact servers under a delay bound (JSON in, JSON out)",
		Long: `Select reads a game session — servers, overlay links between them with one-way latencies
(ms), and players with a one-way latency to every server — from FILE (or standard input
when FILE is absent or "-"), chooses the servers that take part, the central server (client-
server model) and each player's contact server so that the delay stays within the bound
with few servers, and writes the result as JSON: servers used, root, assignment, delay and
delay variation (ms). Chen et al., "On the Game Server Network Selection with Delay and
Delay Variation Constraints" (2011); see place/spd.

Input:
  {"servers":["A","B","C"],
   "links":[{"a":"A","b":"B","ms":9},{"a":"B","b":"C","ms":8}],
   "players":[{"name":"a","latency":{"A":41,"B":55,"C":39}},...]}

Delay (--model): cs is the round trip through the root, 2·max(d(player,contact) +
d(contact,root)); p2p is the largest player-to-player latency through both contacts.
The bound is --bound MS, or --factor F times Γ, the least client-server delay
(Algorithm Matching). Algorithms (--algo):
  spdcs-h   greedy tree, fewest servers (cs; the default for cs)
  spdp2p-h  the spdcs-h tree with the servers between contacts (p2p; the default for p2p)
  zizo      Zoom-In Zoom-Out (Lee et al.); fails when the nearest-server assignment
            exceeds the bound
  matching  Algorithm Matching: least delay, servers not considered
  kbest     best of all sets of k servers, k from spdcs-h / spdp2p-h
  exact     fewest servers, then least variation (small sessions; --max-work)
--fair then lowers the delay variation with the same servers (SPDVR-CS, Algorithm 1,
or SPDVR-P2P, Algorithm 2) and reports the figures before it too.

A malformed session (unknown server, missing or NaN or negative latency, disconnected
overlay) or a bound below Γ is rejected with an error naming the problem (the error
states Γ); nothing is written to standard output and the exit status is 2.`,
		Example: `  overworld select --factor 1.3 cmd/overworld/cli/testdata/select-fig1.json
  overworld select --model p2p --bound 140 --fair --indent cmd/overworld/cli/testdata/select-fig1.json
  (the sample session of the source tree: Fig. 1 of the paper)`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.BoundSet, o.FactorSet = cmd.Flags().Changed("bound"), cmd.Flags().Changed("factor")
			if err := o.Check(); err != nil {
				return badInput(err)
			}
			data, name, err := readInput(e, "select", args)
			if err != nil {
				return err
			}
			inst, err := placefile.DecodeSession(data)
			if err != nil {
				return badInputf("%s: %v", name, err)
			}
			t := newTicker(e.stderr, false, "select", -1, "")
			out, err := placefile.Select(inst, o)
			t.done()
			var ie *spd.InfeasibleError
			if errors.As(err, &ie) || errors.Is(err, spd.ErrInput) {
				return badInputf("%s: %v", name, err)
			}
			if err != nil {
				return err
			}
			enc := json.NewEncoder(e.stdout)
			if indent {
				enc.SetIndent("", "  ")
			}
			return enc.Encode(out)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&o.Model, "model", "cs", "communication model: cs (client-server) or p2p (peer-to-peer)")
	fl.Float64Var(&o.Bound, "bound", 0, "delay bound in ms")
	fl.Float64Var(&o.Factor, "factor", 0, "delay bound as a multiple of Γ (≥ 1 is feasible)")
	fl.StringVar(&o.Algo, "algo", "", "algorithm: "+strings.Join(placefile.SelectAlgos, ", ")+" (default spdcs-h for cs, spdp2p-h for p2p)")
	fl.BoolVar(&o.Fair, "fair", false, "lower the delay variation after the selection (SPDVR)")
	fl.IntVar(&o.MaxWork, "max-work", 0, "work limit of --algo exact and kbest (0: the package defaults)")
	fl.BoolVar(&indent, "indent", false, "indent the JSON output")
	return cmd
}
