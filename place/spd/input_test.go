package spd

import (
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

func TestNewInstanceRejects(t *testing.T) {
	lat := func() [][]float64 { return [][]float64{{1, 2}, {3, 4}} }
	ok := []Link{{"A", "B", 5}}
	cases := []struct {
		name    string
		servers []string
		links   []Link
		players []string
		lat     [][]float64
		want    string
	}{
		{"no servers", nil, nil, []string{"p"}, [][]float64{{}}, "no servers"},
		{"no players", []string{"A"}, nil, nil, nil, "no players"},
		{"duplicate server", []string{"A", "A"}, nil, []string{"p", "q"}, lat(), `"A" named twice`},
		{"empty player", []string{"A", "B"}, ok, []string{"p", " "}, lat(), "empty name"},
		{"unknown server", []string{"A", "B"}, []Link{{"A", "Z", 1}}, []string{"p", "q"}, lat(), `unknown server "Z"`},
		{"self link", []string{"A", "B"}, []Link{{"A", "A", 1}}, []string{"p", "q"}, lat(), "links to itself"},
		{"NaN link", []string{"A", "B"}, []Link{{"A", "B", math.NaN()}}, []string{"p", "q"}, lat(), "latency NaN"},
		{"negative link", []string{"A", "B"}, []Link{{"A", "B", -1}}, []string{"p", "q"}, lat(), "latency -1"},
		{"duplicate link", []string{"A", "B"}, []Link{{"A", "B", 1}, {"B", "A", 2}}, []string{"p", "q"}, lat(), "given twice"},
		{"disconnected", []string{"A", "B", "C"}, ok, []string{"p"}, [][]float64{{1, 2, 3}}, "disconnected"},
		{"NaN latency", []string{"A", "B"}, ok, []string{"p", "q"}, [][]float64{{1, math.NaN()}, {3, 4}}, `"p" to server "B": latency NaN`},
		{"inf latency", []string{"A", "B"}, ok, []string{"p", "q"}, [][]float64{{1, 2}, {math.Inf(1), 4}}, "latency +Inf"},
		{"short row", []string{"A", "B"}, ok, []string{"p", "q"}, [][]float64{{1, 2}, {3}}, "1 latencies for 2 servers"},
		{"rows", []string{"A", "B"}, ok, []string{"p", "q"}, [][]float64{{1, 2}}, "1 latency rows for 2 players"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := slices.Clone(c.links)
			_, err := NewInstance(c.servers, c.links, c.players, c.lat)
			if !errors.Is(err, ErrInput) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want ErrInput containing %q", err, c.want)
			}
			if !slices.Equal(before, c.links) && !strings.Contains(c.name, "NaN") {
				t.Fatal("input changed")
			}
		})
	}
}

func TestBadParameters(t *testing.T) {
	in := figInstance(t)
	g := in.Gamma()
	for name, f := range map[string]func() error{
		"NaN bound":        func() error { _, err := SPDCSH(in, math.NaN()); return err },
		"negative bound":   func() error { _, err := ZIZO(in, P2P, -1); return err },
		"k zero":           func() error { _, err := KBest(in, CS, g, 0, 0); return err },
		"model":            func() error { _, err := Exact(in, Model(7), g, ExactOptions{}); return err },
		"root":             func() error { _, err := in.Evaluate(CS, 9, fig3); return err },
		"assign length":    func() error { _, err := in.Evaluate(P2P, -1, fig3[:2]); return err },
		"assign server":    func() error { _, err := in.Evaluate(P2P, -1, []int{0, 0, 0, 0, 5}); return err },
		"spdvr model":      func() error { s := Matching(in, CS); _, err := SPDVRP2P(in, s, 2*g); return err },
		"spdvr over":       func() error { s, _ := in.Evaluate(CS, sD, fig3); _, err := SPDVRCS(in, s, 100); return err },
		"scale":            func() error { _, err := in.Scaled(0); return err },
		"parse model":      func() error { _, err := ParseModel("mesh"); return err },
		"kbest over P2P k": func() error { _, err := KBest(in, P2P, g, 6, 0); return err },
	} {
		if err := f(); !errors.Is(err, ErrInput) {
			t.Errorf("%s: error %v, want ErrInput", name, err)
		}
	}
	// Budgets.
	rng := rand.New(rand.NewPCG(1, 1))
	big := randomInstance(t, rng, 40, 20)
	if _, err := KBest(big, CS, 1.2*big.Gamma(), 12, 1000); !errors.Is(err, ErrBudget) {
		t.Errorf("k-best over budget: %v", err)
	}
	if _, err := Exact(big, P2P, 1.2*big.Gamma(), ExactOptions{}); !errors.Is(err, ErrBudget) {
		t.Errorf("exact p2p with 40 servers: %v", err)
	}
}

// TestZIZOFigure5 builds the situation of the paper's Fig. 5: the
// zoom-in assignment (nearest servers) exceeds the bound although a
// solution exists, so ZIZO fails while SPDP2P-H succeeds.
func TestZIZOFigure5(t *testing.T) {
	// Servers A, B, C in a line; players 1 and 3 are nearest to the two
	// ends, which are far apart; all three can reach C cheaply.
	in, err := NewInstance([]string{"A", "B", "C"}, []Link{{"A", "C", 6}, {"B", "C", 6}},
		[]string{"1", "2", "3"}, [][]float64{{2, 9, 3}, {9, 9, 2}, {9, 2, 3}})
	if err != nil {
		t.Fatal(err)
	}
	bound := in.Gamma()
	if _, err := ZIZO(in, P2P, bound); !errors.Is(err, ErrNoSolution) {
		t.Fatalf("ZIZO: %v, want ErrNoSolution", err)
	}
	if s, err := SPDP2PH(in, bound); err != nil || s.Delay > bound {
		t.Fatalf("SPDP2P-H: %v %v", s, err)
	}
}
