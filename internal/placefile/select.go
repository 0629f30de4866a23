package placefile

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/overworld/overworld/place/spd"
)

// session is the input of overworld select.
type session struct {
	Servers []string        `json:"servers"`
	Links   []sessionLink   `json:"links"`
	Players []sessionPlayer `json:"players"`
}

// sessionLink is an overlay link and its one-way latency.
type sessionLink struct {
	A  string   `json:"a"`
	B  string   `json:"b"`
	Ms *float64 `json:"ms"`
}

// sessionPlayer is a player and its one-way latency to every server.
type sessionPlayer struct {
	Name    string             `json:"name"`
	Latency map[string]float64 `json:"latency"`
}

// SelectOptions are the choices of overworld select.
type SelectOptions struct {
	Model     string  // cs or p2p
	Algo      string  // one of SelectAlgos; empty: the model's heuristic
	Bound     float64 // the delay bound (ms), when BoundSet
	Factor    float64 // the bound as a multiple of Γ, when FactorSet
	BoundSet  bool    // the bound is Bound
	FactorSet bool    // the bound is Factor × Γ
	Fair      bool    // lower the delay variation after the selection (SPDVR)
	MaxWork   int     // work limit of exact and kbest; 0: the package defaults
}

// SelectOutput is a selection: the bound, the servers used, the root (cs),
// every player's contact server, the delay and its variation (ms), and,
// with Fair, the figures before SPDVR.
type SelectOutput struct {
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
	Before     *SelectFigures    `json:"before_fair,omitempty"`
}

// SelectFigures are a selection's figures before SPDVR.
type SelectFigures struct {
	Servers   int     `json:"servers"`
	Delay     float64 `json:"delay"`
	Variation float64 `json:"variation"`
}

// SelectAlgos are the algorithms Select runs.
var SelectAlgos = []string{"spdcs-h", "spdp2p-h", "zizo", "matching", "kbest", "exact"}

// Check validates the options alone, and sets Algo to the model's default
// heuristic when it is empty. Its errors name the options by the flags of
// overworld select.
func (o *SelectOptions) Check() error {
	if _, err := spd.ParseModel(o.Model); err != nil {
		return fmt.Errorf("--model %q: want cs or p2p", o.Model)
	}
	if o.Algo == "" {
		o.Algo = "spdcs-h"
		if strings.EqualFold(strings.TrimSpace(o.Model), "p2p") {
			o.Algo = "spdp2p-h"
		}
	}
	valid := false
	for _, a := range SelectAlgos {
		valid = valid || a == o.Algo
	}
	switch {
	case !valid:
		return fmt.Errorf("--algo %q: want one of %s", o.Algo, strings.Join(SelectAlgos, ", "))
	case o.BoundSet == o.FactorSet:
		return errors.New("give exactly one of --bound MS and --factor F")
	case o.BoundSet && (!(o.Bound >= 0) || math.IsInf(o.Bound, 1)):
		return fmt.Errorf("--bound %v: want a finite delay ≥ 0 in ms", o.Bound)
	case o.FactorSet && (!(o.Factor > 0) || math.IsInf(o.Factor, 1)):
		return fmt.Errorf("--factor %v: want a finite value > 0 (≥ 1 is feasible)", o.Factor)
	case o.MaxWork < 0:
		return fmt.Errorf("--max-work %d: want ≥ 0", o.MaxWork)
	}
	return nil
}

// DecodeSession decodes and validates a session (the input of overworld
// select): servers, overlay links with one-way latencies (ms), and players
// with a latency to every server. It returns an error naming the field of
// the first problem.
func DecodeSession(data []byte) (*spd.Instance, error) {
	var s session
	if err := DecodeStrict(data, &s); err != nil {
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

// Select runs the algorithm o names on a session and, with o.Fair, SPDVR.
// The options must have passed Check. A bound the session cannot meet
// returns an *spd.InfeasibleError or an error wrapping spd.ErrInput or
// spd.ErrNoSolution.
func Select(in *spd.Instance, o SelectOptions) (*SelectOutput, error) {
	model, err := spd.ParseModel(o.Model)
	if err != nil {
		return nil, err
	}
	gamma := in.Gamma()
	bound := o.Bound
	if o.FactorSet {
		bound = o.Factor * gamma
	}
	var sol spd.Solution
	heuristic := func() (spd.Solution, error) {
		if model == spd.CS {
			return spd.SPDCSH(in, bound)
		}
		return spd.SPDP2PH(in, bound)
	}
	switch o.Algo {
	case "spdcs-h", "spdp2p-h":
		if (o.Algo == "spdcs-h") != (model == spd.CS) {
			return nil, fmt.Errorf("%w: --algo %s is for --model %s", spd.ErrInput, o.Algo, map[bool]string{true: "cs", false: "p2p"}[o.Algo == "spdcs-h"])
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
			sol, err = spd.KBest(in, model, bound, len(h.Servers), o.MaxWork)
		}
	case "exact":
		sol, err = spd.Exact(in, model, bound, spd.ExactOptions{MaxWork: o.MaxWork})
	default:
		return nil, fmt.Errorf("%w: --algo %q: want one of %s", spd.ErrInput, o.Algo, strings.Join(SelectAlgos, ", "))
	}
	if err != nil {
		return nil, err
	}
	out := &SelectOutput{Model: model.String(), Algo: o.Algo, Fair: o.Fair, Gamma: gamma, Bound: bound}
	if o.Fair {
		out.Before = &SelectFigures{Servers: len(sol.Servers), Delay: sol.Delay, Variation: sol.Variation}
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
