package cli

import (
	"encoding/json"

	"github.com/spf13/cobra"

	"github.com/overworld/overworld/internal/placefile"
	"github.com/overworld/overworld/place/cma"
)

// newAssignCmd is overworld assign: the scenario's format and its run are
// placefile.Assign's.
func newAssignCmd(e *env) *cobra.Command {
	var method string
	var indent bool
	cmd := &cobra.Command{
		Use:   "assign [FILE]",
		Short: "Assign players to mirrors as they join and leave (JSON in, JSON out)",
		Long: `Assign reads a scenario — mirrors with capacities, then join and leave events — from
FILE (or standard input when FILE is absent or "-") and writes, as JSON, the mirror each
joining player gets, every player moved on each event, and the final assignment with its
total, mean, p95 and max delay (ms).

Input:
  {"mirrors":[{"id":"G","capacity":2},...],
   "events":[{"op":"join","player":"a","delays":{"G":4,"H":5,"I":10}},
             {"op":"leave","player":"a"},...]}

Every join gives a delay (finite, >= 0) to every mirror. Methods (join/leave):
  sa          J-SA/L-SA, exact, incremental (default)
  greedy      J-greedy/L-greedy
  ignore      J-greedy/L-ignore (leaves move nobody)
  optimal     re-solve the whole assignment from scratch after every event
  sa-rebuild  J-SA/L-SA as the paper specifies (arrays rebuilt per event)

A malformed scenario, or one that cannot be played (a duplicate join, an unknown
player leaving, a join when every mirror is full), is rejected with an error naming
the event index and field; nothing is written to standard output and the exit
status is 2.`,
		Example: `  echo '{"mirrors":[{"id":"G","capacity":1},{"id":"H","capacity":1}],
        "events":[{"op":"join","player":"a","delays":{"G":1,"H":5}},
                  {"op":"join","player":"b","delays":{"G":2,"H":9}}]}' | overworld assign`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			m, err := cma.ParseMethod(method)
			if err != nil {
				return badInputf("--method: %v", err)
			}
			data, name, err := readInput(e, "assign", args)
			if err != nil {
				return err
			}
			t := newTicker(e.stderr, false, "assign", -1, "events")
			out, err := placefile.Assign(data, m, func(done, total int) { t.set(int64(done), int64(total)) })
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
	cmd.Flags().StringVar(&method, "method", "sa", "join/leave algorithms: sa, greedy, ignore, optimal or sa-rebuild")
	cmd.Flags().BoolVar(&indent, "indent", false, "indent the JSON output")
	return cmd
}
