package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"

	"github.com/spf13/cobra"

	"github.com/overworld/overworld/place/balance"
)

// balanceInput is the input of `overworld balance`.
type balanceInput struct {
	MaxLoad   *int            `json:"max_load"`
	Margin    *float64        `json:"margin"`
	Servers   []balanceServer `json:"servers"`
	Instances []balanceInst   `json:"instances"`
}

type balanceServer struct {
	ID   *string `json:"id"`
	Main int     `json:"main"`
}

type balanceInst struct {
	ID      *string         `json:"id"`
	Size    int             `json:"size"`
	Server  *string         `json:"server"`
	Players []balancePlayer `json:"players,omitempty"`
	RTT     [][]float64     `json:"rtt,omitempty"`
}

type balancePlayer struct {
	ID       string    `json:"id"`
	Sessions []float64 `json:"sessions,omitempty"` // past session lengths, hours (at most 50 kept)
	Leave    *float64  `json:"leave,omitempty"`    // probability of leaving before the instance ends
}

type balanceOutput struct {
	Method     string            `json:"method"`
	Criterion  string            `json:"criterion"`
	Target     int               `json:"target"`
	Limit      int               `json:"receiver_limit"`
	Overloaded []string          `json:"overloaded"`
	Moves      []balanceMove     `json:"moves"`
	Overflow   []balanceOverflow `json:"overflow"`
	Before     map[string]int    `json:"loads_before"`
	After      map[string]int    `json:"loads_after"`
	Moved      int               `json:"moved_players"`
	Overflowed int               `json:"overflowed_players"`
	Stuck      []string          `json:"stuck"`
	LowerBound *int              `json:"lower_bound,omitempty"`
	Optimal    *bool             `json:"optimal,omitempty"`
}

type balanceMove struct {
	Instance string `json:"instance"`
	From     string `json:"from"`
	To       string `json:"to"`
}

type balanceOverflow struct {
	Instance string      `json:"instance"`
	From     string      `json:"from"`
	Server   *string     `json:"server"`  // AGx.S, null when no players were given
	Replica  *string     `json:"replica"` // AGx.RS
	Links    [][2]string `json:"links,omitempty"`
	// ExactFailure is the exact probability that at most one player stays,
	// when every player gave "leave".
	ExactFailure *float64 `json:"exact_failure,omitempty"`
}

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
			out, err := runBalance(data, method, crit, !paper, failover)
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

// runBalance parses and checks the input, then runs one round.
func runBalance(data []byte, method string, crit balance.Criterion, fillToTarget bool, failover float64) (*balanceOutput, error) {
	var in balanceInput
	if err := strictDecode(data, &in); err != nil {
		return nil, fmt.Errorf("malformed JSON: %w", err)
	}
	if in.MaxLoad == nil {
		return nil, errors.New("field max_load: missing")
	}
	cfg := balance.DefaultConfig()
	cfg.FillToTarget = fillToTarget
	if in.Margin != nil {
		cfg.Margin = *in.Margin
		if !(cfg.Margin >= 0 && cfg.Margin < 1) {
			return nil, fmt.Errorf("field margin: %g (want 0 ≤ margin < 1)", cfg.Margin)
		}
	}
	c := &balance.Cluster{MaxLoad: *in.MaxLoad}
	if c.MaxLoad < 1 {
		return nil, fmt.Errorf("field max_load: %d (want ≥ 1)", c.MaxLoad)
	}
	if len(in.Servers) == 0 {
		return nil, errors.New("field servers: no servers")
	}
	idx := map[string]int{}
	names := make([]string, len(in.Servers))
	for i, s := range in.Servers {
		if s.ID == nil || *s.ID == "" {
			return nil, fmt.Errorf("servers[%d].id: missing", i)
		}
		if _, dup := idx[*s.ID]; dup {
			return nil, fmt.Errorf("servers[%d].id: duplicate %q", i, *s.ID)
		}
		if s.Main < 0 {
			return nil, fmt.Errorf("servers[%d].main: %d (want ≥ 0)", i, s.Main)
		}
		idx[*s.ID] = i
		names[i] = *s.ID
		c.Main = append(c.Main, s.Main)
	}
	seen := map[string]bool{}
	for k, x := range in.Instances {
		if x.ID == nil || *x.ID == "" {
			return nil, fmt.Errorf("instances[%d].id: missing", k)
		}
		if seen[*x.ID] {
			return nil, fmt.Errorf("instances[%d].id: duplicate %q", k, *x.ID)
		}
		seen[*x.ID] = true
		if x.Size < 1 {
			return nil, fmt.Errorf("instances[%d].size: %d (want ≥ 1)", k, x.Size)
		}
		if x.Server == nil {
			return nil, fmt.Errorf("instances[%d].server: missing", k)
		}
		s, ok := idx[*x.Server]
		if !ok {
			return nil, fmt.Errorf("instances[%d].server: unknown server %q", k, *x.Server)
		}
		if err := checkPlayers(k, x); err != nil {
			return nil, err
		}
		c.Instances = append(c.Instances, balance.Instance{Size: x.Size, Server: s})
	}
	var r balance.Round
	out := &balanceOutput{Method: method, Criterion: crit.String(), Target: cfg.Target(c.MaxLoad), Limit: c.MaxLoad,
		Moves: []balanceMove{}, Overflow: []balanceOverflow{}, Overloaded: []string{}, Stuck: []string{}}
	if fillToTarget {
		out.Limit = out.Target
	}
	if method == "pack" {
		pr, err := balance.Pack(c, cfg)
		if err != nil {
			return nil, err
		}
		r = pr.Round
		out.LowerBound, out.Optimal = &pr.LowerBound, &pr.Optimal
	} else {
		var err error
		if r, err = balance.Balance(c, cfg); err != nil {
			return nil, err
		}
	}
	out.Before, out.After = map[string]int{}, map[string]int{}
	for i, n := range names {
		out.Before[n], out.After[n] = r.Before[i], r.Loads[i]
	}
	for _, i := range r.Overloaded {
		out.Overloaded = append(out.Overloaded, names[i])
	}
	for _, i := range r.Stuck {
		out.Stuck = append(out.Stuck, names[i])
	}
	out.Moved, out.Overflowed = r.Moved, r.Overflowed
	for _, m := range r.Moves {
		x := in.Instances[m.Instance]
		if m.To >= 0 {
			out.Moves = append(out.Moves, balanceMove{Instance: *x.ID, From: names[m.From], To: names[m.To]})
			continue
		}
		out.Overflow = append(out.Overflow, hostInstance(x, names[m.From], crit, failover))
	}
	return out, nil
}

func checkPlayers(k int, x balanceInst) error {
	if len(x.Players) == 0 && x.RTT == nil {
		return nil
	}
	if len(x.Players) != x.Size {
		return fmt.Errorf("instances[%d].players: %d players for size %d", k, len(x.Players), x.Size)
	}
	if len(x.RTT) != x.Size {
		return fmt.Errorf("instances[%d].rtt: %d rows for size %d", k, len(x.RTT), x.Size)
	}
	ids := map[string]bool{}
	for p, pl := range x.Players {
		if pl.ID == "" || ids[pl.ID] {
			return fmt.Errorf("instances[%d].players[%d].id: missing or duplicate %q", k, p, pl.ID)
		}
		ids[pl.ID] = true
		for q, h := range pl.Sessions {
			if !(h >= 0) || math.IsInf(h, 0) {
				return fmt.Errorf("instances[%d].players[%d].sessions[%d]: %g (want finite, ≥ 0)", k, p, q, h)
			}
		}
		if pl.Leave != nil && !(*pl.Leave >= 0 && *pl.Leave <= 1) {
			return fmt.Errorf("instances[%d].players[%d].leave: %g (want 0..1)", k, p, *pl.Leave)
		}
		if len(x.RTT[p]) != x.Size {
			return fmt.Errorf("instances[%d].rtt[%d]: %d entries for size %d", k, p, len(x.RTT[p]), x.Size)
		}
		for q, v := range x.RTT[p] {
			if !(v >= 0) || math.IsInf(v, 0) {
				return fmt.Errorf("instances[%d].rtt[%d][%d]: %g (want finite, ≥ 0)", k, p, q, v)
			}
		}
	}
	return nil
}

// hostInstance runs Algorithm 2 for an overflowed instance.
func hostInstance(x balanceInst, from string, crit balance.Criterion, failover float64) balanceOverflow {
	o := balanceOverflow{Instance: *x.ID, From: from}
	n := len(x.Players)
	if n == 0 {
		return o
	}
	g := balance.Group{N: n, RTT: make([]float64, n*n), Uptime: make([]balance.Uptime, n), Leave: make([]float64, n), FailoverMs: failover}
	allLeave := true
	for p, pl := range x.Players {
		for q := range n {
			// symmetric: the mean of the two directions
			g.RTT[p*n+q] = (x.RTT[p][q] + x.RTT[q][p]) / 2
		}
		g.RTT[p*n+p] = 0
		var h balance.History
		for _, s := range pl.Sessions {
			h.Add(s)
		}
		g.Uptime[p] = h.Predict(balance.WoWSessions)
		if pl.Leave != nil {
			g.Leave[p] = *pl.Leave
		} else {
			allLeave = false
		}
	}
	h := g.Distribute(crit, nil)
	o.Server = &x.Players[h.Server].ID
	if h.Replica >= 0 {
		o.Replica = &x.Players[h.Replica].ID
	}
	for _, e := range g.Link(h, nil) {
		o.Links = append(o.Links, [2]string{x.Players[e[0]].ID, x.Players[e[1]].ID})
	}
	if allLeave {
		f := balance.ExactFailure(g.Leave)
		o.ExactFailure = &f
	}
	return o
}
