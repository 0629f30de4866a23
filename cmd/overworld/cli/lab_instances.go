package cli

import (
	"fmt"
	"time"

	"github.com/overworld/overworld/lab/harness"
	"github.com/overworld/overworld/place/balance"

	"github.com/spf13/cobra"
)

type labInstancesFlags struct {
	seed                      uint64
	runs, capacity, instances int
	criterion                 string
	duration, session, notice time.Duration
	quiet, quick              bool
}

func newLabInstancesCmd(e *env) *cobra.Command {
	var f labInstancesFlags
	cmd := &cobra.Command{
		Use:   "instances [flags]",
		Short: "Measure instances overflowed to player hosts: host departures, replica promotion, state lost",
		Long: `Open instances (5 to 40 GeoNames players each) through the control plane on a few server
nodes whose instance seats are too few, so that some overflow to a host and a replicated host
among their own players (LL or PD). Every player of an overflowed instance is a simulated node
at its city; players leave by the session model as crashes, each writes +1 to its instance's
state by ID every 500 ms. Prints the time from a host's crash to the replica's promotion and to
the remaining players holding the new state (p50, p99), the acknowledged writes the final states
lack, the instances lost, and the share that fell below two players beside the paper's Table 5
failure probability. The same flags give the same figures.`,
		Example: `  overworld lab instances
  overworld lab instances --runs 40 --criterion PD`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if f.quick && !cmd.Flags().Changed("runs") {
				f.runs = 3
			}
			return runLabInstances(e, &f)
		},
	}
	fl := cmd.Flags()
	fl.Uint64Var(&f.seed, "seed", 1, "seed of the first run (run k uses seed+k)")
	fl.IntVar(&f.runs, "runs", 20, "runs, whose figures add up")
	fl.IntVar(&f.capacity, "capacity", 0, "instance seats per server (default 15)")
	fl.IntVar(&f.instances, "instances", 0, "instances opened per run (default 12)")
	fl.StringVar(&f.criterion, "criterion", "LL", "host choice: LL, PD or score")
	fl.DurationVar(&f.duration, "duration", 0, "game time per run (default 60s)")
	fl.DurationVar(&f.session, "session", 0, "players' mean session, exponential (default 150s)")
	fl.DurationVar(&f.notice, "notice", 0, "how long the plane takes to hear of a departure (default 1s)")
	fl.BoolVar(&f.quiet, "quiet", false, "no progress on stderr")
	fl.BoolVar(&f.quick, "quick", false, "a quick look: 3 runs (unless --runs is given)")
	return cmd
}

func runLabInstances(e *env, f *labInstancesFlags) error {
	crit, err := balance.ParseCriterion(f.criterion)
	if err != nil {
		return badInputf("--criterion: %v", err)
	}
	for name, v := range map[string]int{"--runs": f.runs, "--capacity": f.capacity, "--instances": f.instances} {
		if v < 0 || name == "--runs" && v == 0 {
			return badInputf("%s %d: want a positive number", name, v)
		}
	}
	for name, v := range map[string]time.Duration{"--duration": f.duration, "--session": f.session, "--notice": f.notice} {
		if v < 0 {
			return badInputf("%s %v: want a positive duration", name, v)
		}
	}
	cfg := harness.InstancesConfig{Seed: f.seed, Runs: f.runs, Capacity: f.capacity, Instances: f.instances, Criterion: crit,
		Duration: f.duration, Session: f.session, Notice: f.notice}
	start := time.Now()
	rep, err := harness.RunInstances(cfg, func(done, total int) {
		if !f.quiet {
			fmt.Fprintf(e.stderr, "\rlab instances: run %d of %d", done, total)
		}
	})
	if !f.quiet {
		fmt.Fprintln(e.stderr)
	}
	if err != nil {
		return badInput(err)
	}
	rep.WriteLines(e.stdout)
	if !f.quiet {
		fmt.Fprintf(e.stderr, "lab instances: %.1f s\n", time.Since(start).Seconds())
	}
	return nil
}
