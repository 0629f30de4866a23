package placefile

import (
	"errors"
	"fmt"
	"math"

	"github.com/overworld/overworld/place/balance"
)

// balanceInput is the input of overworld balance.
type balanceInput struct {
	MaxLoad   *int            `json:"max_load"`
	Margin    *float64        `json:"margin"`
	Servers   []balanceServer `json:"servers"`
	Instances []balanceInst   `json:"instances"`
}

// balanceServer is a server and the players of its main world.
type balanceServer struct {
	ID   *string `json:"id"`
	Main int     `json:"main"`
}

// balanceInst is an instance: its size, server, and optionally its
// players and their RTTs.
type balanceInst struct {
	ID      *string         `json:"id"`
	Size    int             `json:"size"`
	Server  *string         `json:"server"`
	Players []balancePlayer `json:"players,omitempty"`
	RTT     [][]float64     `json:"rtt,omitempty"`
}

// balancePlayer is one player of an instance.
type balancePlayer struct {
	ID       string    `json:"id"`
	Sessions []float64 `json:"sessions,omitempty"` // past session lengths, hours (at most 50 kept)
	Leave    *float64  `json:"leave,omitempty"`    // probability of leaving before the instance ends
}

// BalanceOutput is the result of one round: the target and receiver
// limit, the overloaded servers, the moves, the overflowed instances with
// their hosts, and the loads before and after.
type BalanceOutput struct {
	Method     string            `json:"method"`
	Criterion  string            `json:"criterion"`
	Target     int               `json:"target"`
	Limit      int               `json:"receiver_limit"`
	Overloaded []string          `json:"overloaded"`
	Moves      []BalanceMove     `json:"moves"`
	Overflow   []BalanceOverflow `json:"overflow"`
	Before     map[string]int    `json:"loads_before"`
	After      map[string]int    `json:"loads_after"`
	Moved      int               `json:"moved_players"`
	Overflowed int               `json:"overflowed_players"`
	Stuck      []string          `json:"stuck"`
	LowerBound *int              `json:"lower_bound,omitempty"`
	Optimal    *bool             `json:"optimal,omitempty"`
}

// BalanceMove is one instance moved from a server to another.
type BalanceMove struct {
	Instance string `json:"instance"`
	From     string `json:"from"`
	To       string `json:"to"`
}

// BalanceOverflow is one instance sent to player hosts (Algorithm 2).
type BalanceOverflow struct {
	Instance string      `json:"instance"`
	From     string      `json:"from"`
	Server   *string     `json:"server"`  // AGx.S, null when no players were given
	Replica  *string     `json:"replica"` // AGx.RS
	Links    [][2]string `json:"links,omitempty"`
	// ExactFailure is the exact probability that at most one player stays,
	// when every player gave "leave".
	ExactFailure *float64 `json:"exact_failure,omitempty"`
}

// Balance decodes and checks a cluster state (the input of overworld
// balance), then runs one round with method "balance" (Algorithm 1) or
// "pack" (the exact alternative), choosing the hosts of each overflowed
// instance by crit with failover ms per expected failover (score). With
// fillToTarget, receivers fill to the target load rather than max_load.
// It returns an error naming the field of the first problem.
func Balance(data []byte, method string, crit balance.Criterion, fillToTarget bool, failover float64) (*BalanceOutput, error) {
	var in balanceInput
	if err := DecodeStrict(data, &in); err != nil {
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
	out := &BalanceOutput{Method: method, Criterion: crit.String(), Target: cfg.Target(c.MaxLoad), Limit: c.MaxLoad,
		Moves: []BalanceMove{}, Overflow: []BalanceOverflow{}, Overloaded: []string{}, Stuck: []string{}}
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
			out.Moves = append(out.Moves, BalanceMove{Instance: *x.ID, From: names[m.From], To: names[m.To]})
			continue
		}
		out.Overflow = append(out.Overflow, hostInstance(x, names[m.From], crit, failover))
	}
	return out, nil
}

// checkPlayers checks an instance's players and RTTs, when given.
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
func hostInstance(x balanceInst, from string, crit balance.Criterion, failover float64) BalanceOverflow {
	o := BalanceOverflow{Instance: *x.ID, From: from}
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
