package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/spf13/cobra"

	"github.com/overworld/overworld/place/spd"
)

// session is the input of `overworld select`.
type session struct {
	Servers []string        `json:"servers"`
	Links   []sessionLink   `json:"links"`
	Players []sessionPlayer `json:"players"`
}

type sessionLink struct {
	A  string   `json:"a"`
	B  string   `json:"b"`
	Ms *float64 `json:"ms"`
}

type sessionPlayer struct {
	Name    string             `json:"name"`
	Latency map[string]float64 `json:"latency"`
}

// selectOptions are the flags of `overworld select`.
type selectOptions struct {
	model, algo    string
	bound, factor  float64
	boundSet, fset bool
	fair           bool
	maxWork        int
}

type selectOutput struct {
	Model      string            `json:"model"`
	Algo       string            `json:"algo"`
	Fair       bool              `json:"fair"`
	Gamma      float64           `json:"gamma"`
	Bound      float64           `json:"bound"`
	Root       string            `json:"root,omitempty"`
	Servers    []string          `json:"servers"`
	Assignment map[string]string `json:"assignment"`
	Delay      float64           `json:"delay"`
	Variation  float64           `json:"variation"`
	Before     *selectFigures    `json:"before_fair,omitempty"`
}

type selectFigures struct {
	Servers   int     `json:"servers"`
	Delay     float64 `json:"delay"`
	Variation float64 `json:"variation"`
}

var selectAlgos = []string{"spdcs-h", "spdp2p-h", "zizo", "matching", "kbest", "exact"}

func newSelectCmd(e *env) *cobra.Command {
	var o selectOptions
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
			o.boundSet, o.fset = cmd.Flags().Changed("bound"), cmd.Flags().Changed("factor")
			if err := o.check(); err != nil {
				return badInput(err)
			}
			data, name, err := readInput(e, "select", args)
			if err != nil {
				return err
			}
			inst, err := decodeSession(data)
			if err != nil {
				return badInputf("%s: %v", name, err)
			}
			t := newTicker(e.stderr, false, "select", -1, "")
			out, err := runSelect(inst, o)
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
	fl.StringVar(&o.model, "model", "cs", "communication model: cs (client-server) or p2p (peer-to-peer)")
	fl.Float64Var(&o.bound, "bound", 0, "delay bound in ms")
	fl.Float64Var(&o.factor, "factor", 0, "delay bound as a multiple of Γ (≥ 1 is feasible)")
	fl.StringVar(&o.algo, "algo", "", "algorithm: "+strings.Join(selectAlgos, ", ")+" (default spdcs-h for cs, spdp2p-h for p2p)")
	fl.BoolVar(&o.fair, "fair", false, "lower the delay variation after the selection (SPDVR)")
	fl.IntVar(&o.maxWork, "max-work", 0, "work limit of --algo exact and kbest (0: the package defaults)")
	fl.BoolVar(&indent, "indent", false, "indent the JSON output")
	return cmd
}

// check validates the flags alone.
func (o *selectOptions) check() error {
	if _, err := spd.ParseModel(o.model); err != nil {
		return fmt.Errorf("--model %q: want cs or p2p", o.model)
	}
	if o.algo == "" {
		o.algo = "spdcs-h"
		if strings.EqualFold(strings.TrimSpace(o.model), "p2p") {
			o.algo = "spdp2p-h"
		}
	}
	valid := false
	for _, a := range selectAlgos {
		valid = valid || a == o.algo
	}
	switch {
	case !valid:
		return fmt.Errorf("--algo %q: want one of %s", o.algo, strings.Join(selectAlgos, ", "))
	case o.boundSet == o.fset:
		return errors.New("give exactly one of --bound MS and --factor F")
	case o.boundSet && (!(o.bound >= 0) || math.IsInf(o.bound, 1)):
		return fmt.Errorf("--bound %v: want a finite delay ≥ 0 in ms", o.bound)
	case o.fset && (!(o.factor > 0) || math.IsInf(o.factor, 1)):
		return fmt.Errorf("--factor %v: want a finite value > 0 (≥ 1 is feasible)", o.factor)
	case o.maxWork < 0:
		return fmt.Errorf("--max-work %d: want ≥ 0", o.maxWork)
	}
	return nil
}

// decodeSession parses and validates a session.
func decodeSession(data []byte) (*spd.Instance, error) {
	var s session
	if err := strictDecode(data, &s); err != nil {
		return nil, fmt.Errorf("session: %v", err)
	}
	if s.Servers == nil {
		return nil, errors.New(`session: missing field "servers"`)
	}
	if s.Players == nil {
		return nil, errors.New(`session: missing field "players"`)
	}
	known := make(map[string]bool, len(s.Servers))
	for _, name := range s.Servers {
		known[name] = true
	}
	links := make([]spd.Link, len(s.Links))
	for i, l := range s.Links {
		if l.Ms == nil {
			return nil, fmt.Errorf("links[%d]: field ms: missing", i)
		}
		links[i] = spd.Link{A: l.A, B: l.B, Ms: *l.Ms}
	}
	names := make([]string, len(s.Players))
	lat := make([][]float64, len(s.Players))
	for i, p := range s.Players {
		names[i] = p.Name
		if p.Latency == nil {
			return nil, fmt.Errorf("players[%d] (%q): field latency: missing", i, p.Name)
		}
		for srv := range p.Latency {
			if !known[srv] {
				return nil, fmt.Errorf("players[%d] (%q): field latency: unknown server %q", i, p.Name, srv)
			}
		}
		lat[i] = make([]float64, len(s.Servers))
		for j, srv := range s.Servers {
			v, ok := p.Latency[srv]
			if !ok {
				return nil, fmt.Errorf("players[%d] (%q): field latency: no latency to server %q", i, p.Name, srv)
			}
			lat[i][j] = v
		}
	}
	in, err := spd.NewInstance(s.Servers, links, names, lat)
	if err != nil {
		return nil, errors.New(strings.TrimPrefix(err.Error(), "spd: invalid input: "))
	}
	return in, nil
}

// runSelect runs the chosen algorithm and, with fair, SPDVR.
func runSelect(in *spd.Instance, o selectOptions) (*selectOutput, error) {
	model, err := spd.ParseModel(o.model)
	if err != nil {
		return nil, err
	}
	gamma := in.Gamma()
	bound := o.bound
	if o.fset {
		bound = o.factor * gamma
	}
	var sol spd.Solution
	heuristic := func() (spd.Solution, error) {
		if model == spd.CS {
			return spd.SPDCSH(in, bound)
		}
		return spd.SPDP2PH(in, bound)
	}
	switch o.algo {
	case "spdcs-h", "spdp2p-h":
		if (o.algo == "spdcs-h") != (model == spd.CS) {
			return nil, fmt.Errorf("%w: --algo %s is for --model %s", spd.ErrInput, o.algo, map[bool]string{true: "cs", false: "p2p"}[o.algo == "spdcs-h"])
		}
		sol, err = heuristic()
	case "zizo":
		sol, err = spd.ZIZO(in, model, bound)
	case "matching":
		// alg-mp's P2P network can meet a bound below Γ (its pairs
		// need not pass the root): the bound is checked on its delay.
		sol = spd.Matching(in, model)
		if model == spd.CS && !(gamma <= bound+spd.Tolerance) {
			return nil, &spd.InfeasibleError{Model: model, Bound: bound, Gamma: gamma}
		}
		if !(sol.Delay <= bound+spd.Tolerance) {
			return nil, fmt.Errorf("%w: matching: alg-mp's p2p delay %.6g ms > bound %.6g ms", spd.ErrNoSolution, sol.Delay, bound)
		}
	case "kbest":
		var h spd.Solution
		if h, err = heuristic(); err == nil {
			sol, err = spd.KBest(in, model, bound, len(h.Servers), o.maxWork)
		}
	case "exact":
		sol, err = spd.Exact(in, model, bound, spd.ExactOptions{MaxWork: o.maxWork})
	}
	if err != nil {
		return nil, err
	}
	out := &selectOutput{Model: model.String(), Algo: o.algo, Fair: o.fair, Gamma: gamma, Bound: bound}
	if o.fair {
		out.Before = &selectFigures{Servers: len(sol.Servers), Delay: sol.Delay, Variation: sol.Variation}
		if model == spd.CS {
			sol, err = spd.SPDVRCS(in, sol, bound)
		} else {
			sol, err = spd.SPDVRP2P(in, sol, bound)
		}
		if err != nil {
			return nil, err
		}
	}
	servers, players := in.Servers(), in.Players()
	if model == spd.CS {
		out.Root = servers[sol.Root]
	}
	out.Servers = make([]string, len(sol.Servers))
	for i, s := range sol.Servers {
		out.Servers[i] = servers[s]
	}
	out.Assignment = make(map[string]string, len(players))
	for i, s := range sol.Assign {
		out.Assignment[players[i]] = servers[s]
	}
	out.Delay, out.Variation = sol.Delay, sol.Variation
	return out, nil
}
