package cma

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"

	"github.com/overworld/overworld/place/mcf"
)

// fig1 is the worked example of the paper's Fig. 1: mirrors G, H, I with
// capacity 2 and players a…e, then f. The text gives the rows of a, b, d,
// e and f (Fig. 3(a)) and the totals of Fig. 1(b) (21, 4.2, 10); the table of
// Fig. 1(a) itself is not in the text, so c's row is reconstructed as
// (1, 8, 10): c must sit on G in the optimum of total 21, and every stated
// figure (Fig. 1(b), 1(d), Fig. 3) then follows.
var fig1Mirrors = []Mirror{{"G", 2}, {"H", 2}, {"I", 2}}

var fig1Delays = map[string][]float64{
	"a": {4, 5, 10},
	"b": {4, 5, 10},
	"c": {1, 8, 10},
	"d": {1, 8, 10},
	"e": {2, 4, 10},
	"f": {2, 4, 10},
}

func mustJoin(t *testing.T, a *Assigner, p string, d []float64) Decision {
	t.Helper()
	dec, err := a.Join(p, d)
	if err != nil {
		t.Fatalf("join %s: %v", p, err)
	}
	return dec
}

func mustLeave(t *testing.T, a *Assigner, p string) Decision {
	t.Helper()
	dec, err := a.Leave(p)
	if err != nil {
		t.Fatalf("leave %s: %v", p, err)
	}
	return dec
}

func TestPaperFigures1And3(t *testing.T) {
	for _, method := range []Method{SA, SARebuild} {
		t.Run(method.String(), func(t *testing.T) {
			a, err := New(fig1Mirrors, method)
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range []string{"a", "b", "c", "d", "e"} {
				mustJoin(t, a, p, fig1Delays[p])
			}
			// Fig. 1(b): optimal CMA_5, total 21, mean 4.2, max 10.
			want5 := map[string]string{"a": "I", "b": "H", "c": "G", "d": "G", "e": "H"}
			if got := a.Assignment(); !mapsEqual(got, want5) {
				t.Fatalf("CMA_5 = %v, want Fig. 1(b) %v", got, want5)
			}
			st := a.Stats(100)
			if st.Total != 21 || st.Mean != 4.2 || st.Max != 10 {
				t.Fatalf("CMA_5 stats total/mean/max = %v/%v/%v, want 21/4.2/10", st.Total, st.Mean, st.Max)
			}
			// Fig. 1(d): f joins; b moves from H to I and f goes to H.
			dec := mustJoin(t, a, "f", fig1Delays["f"])
			if dec.Mirror != "H" || !slices.Equal(dec.Moves, []Move{{"b", "H", "I"}}) {
				t.Fatalf("join f = %+v, want f→H with b H→I (Fig. 1(d))", dec)
			}
			if got := a.TotalDelay(); got != 30 {
				t.Fatalf("CMA_6 total = %v, want 30", got)
			}
			// Fig. 3: c leaves; the chain starts at I: a to H, e to G.
			// (Listed vacancy first, so each step stays within capacity.)
			dec = mustLeave(t, a, "c")
			if !slices.Equal(dec.Moves, []Move{{"e", "H", "G"}, {"a", "I", "H"}}) {
				t.Fatalf("leave c moves = %v, want a I→H, e H→G (Fig. 3)", dec.Moves)
			}
			if got := a.TotalDelay(); got != 22 {
				t.Fatalf("after c leaves total = %v, want 22", got)
			}
		})
	}
}

// TestPaperFigure1Leave checks the last sentence of §2.2: from the optimal
// CMA_6 of Fig. 1(d), f leaving gives back an assignment of Fig. 1(b)'s cost.
// (Players a and b have identical delays; L-SA pulls a, the first joined,
// where Fig. 1(b) shows b — the same assignment up to that tie.)
func TestPaperFigure1Leave(t *testing.T) {
	for _, method := range []Method{SA, SARebuild, Optimal} {
		a, _ := New(fig1Mirrors, method)
		for _, p := range []string{"a", "b", "c", "d", "e", "f"} {
			mustJoin(t, a, p, fig1Delays[p])
		}
		dec := mustLeave(t, a, "f")
		if got := a.Stats(0); got.Total != 21 || got.Max != 10 {
			t.Errorf("%v: after f leaves total/max = %v/%v, want 21/10", method, got.Total, got.Max)
		}
		if len(dec.Moves) != 1 || dec.Moves[0].To != "H" || dec.Moves[0].From != "I" {
			t.Errorf("%v: leave f moves = %v, want one player I→H", method, dec.Moves)
		}
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// hungarian returns the minimum total cost of assigning every row of cost
// (n rows, s ≥ n columns) to a distinct column: the O(n²s) shortest
// augmenting path form of the Hungarian algorithm. With columns expanded to
// one per seat, it is an exact reference for CMA independent of this
// package's code and of place/mcf.
func hungarian(cost [][]float64, s int) float64 {
	n := len(cost)
	if n == 0 {
		return 0
	}
	inf := math.Inf(1)
	u := make([]float64, n+1)
	v := make([]float64, s+1)
	p := make([]int, s+1) // column -> row (1-based), 0 free
	way := make([]int, s+1)
	for i := 1; i <= n; i++ {
		p[0] = i
		j0 := 0
		minv := make([]float64, s+1)
		used := make([]bool, s+1)
		for j := range minv {
			minv[j] = inf
		}
		for {
			used[j0] = true
			i0, delta, j1 := p[j0], inf, 0
			for j := 1; j <= s; j++ {
				if used[j] {
					continue
				}
				cur := cost[i0-1][j-1] - u[i0] - v[j]
				if cur < minv[j] {
					minv[j], way[j] = cur, j0
				}
				if minv[j] < delta {
					delta, j1 = minv[j], j
				}
			}
			for j := 0; j <= s; j++ {
				if used[j] {
					u[p[j]] += delta
					v[j] -= delta
				} else {
					minv[j] -= delta
				}
			}
			j0 = j1
			if p[j0] == 0 {
				break
			}
		}
		for j0 != 0 {
			j1 := way[j0]
			p[j0] = p[j1]
			j0 = j1
		}
	}
	total := 0.0
	for j := 1; j <= s; j++ {
		if p[j] != 0 {
			total += cost[p[j]-1][j-1]
		}
	}
	return total
}

// optimum is the reference optimum for the players currently in a.
func optimum(a *Assigner, delays map[string][]float64) float64 {
	mirrors := a.Mirrors()
	var seatMirror []int
	for j, m := range mirrors {
		for range m.Capacity {
			seatMirror = append(seatMirror, j)
		}
	}
	players := make([]string, 0, a.Len())
	for p := range a.Assignment() {
		players = append(players, p)
	}
	sort.Strings(players)
	cost := make([][]float64, len(players))
	for i, p := range players {
		cost[i] = make([]float64, len(seatMirror))
		for s, j := range seatMirror {
			cost[i][s] = delays[p][j]
		}
	}
	return hungarian(cost, len(seatMirror))
}

// instance is a random CMA instance: mirrors, and a generator of delays.
type instance struct {
	mirrors []Mirror
	delay   func(r *rand.Rand) []float64
}

func randomInstance(r *rand.Rand) instance {
	m := 1 + r.IntN(7)
	if r.IntN(8) == 0 {
		m = 1
	}
	mirrors := make([]Mirror, m)
	for j := range mirrors {
		mirrors[j] = Mirror{ID: fmt.Sprintf("M%d", j), Capacity: 1 + r.IntN(5)}
	}
	kind := r.IntN(3)
	return instance{mirrors: mirrors, delay: func(r *rand.Rand) []float64 {
		d := make([]float64, m)
		for j := range d {
			switch kind {
			case 0: // small integers: many ties
				d[j] = float64(r.IntN(6))
			case 1: // reals
				d[j] = r.Float64() * 200
			default: // points in the plane: metric, correlated delays
				d[j] = math.Round(r.Float64()*100*100) / 100
			}
		}
		return d
	}}
}

// checkDecision verifies a Decision against the assignment before and after.
func checkDecision(t *testing.T, seed uint64, step int, a *Assigner, before, after map[string]string, dec Decision, join bool) {
	t.Helper()
	fail := func(format string, args ...any) {
		t.Helper()
		t.Fatalf("seed %d step %d: "+format, append([]any{seed, step}, args...)...)
	}
	moved := map[string]bool{}
	for _, mv := range dec.Moves {
		if moved[mv.Player] {
			fail("player %s moved twice in one decision", mv.Player)
		}
		moved[mv.Player] = true
		if mv.Player == dec.Player {
			fail("decision moves its own player %s", mv.Player)
		}
		if before[mv.Player] != mv.From || after[mv.Player] != mv.To || mv.From == mv.To {
			fail("move %+v does not match before %q / after %q", mv, before[mv.Player], after[mv.Player])
		}
	}
	for p, m := range after {
		if p == dec.Player {
			continue
		}
		if before[p] != m && !moved[p] {
			fail("player %s changed %s→%s without a move in the decision", p, before[p], m)
		}
	}
	if m := a.Method(); m == SA || m == SARebuild { // moves are executable one by one within capacity
		load := map[string]int{}
		for p, m := range before {
			if join || p != dec.Player {
				load[m]++
			}
		}
		capOf := map[string]int{}
		for _, m := range a.Mirrors() {
			capOf[m.ID] = m.Capacity
		}
		for _, mv := range dec.Moves {
			load[mv.From]--
			load[mv.To]++
			if load[mv.To] > capOf[mv.To] {
				fail("%v: move %+v overfills %s (%d > %d): moves not in executable order", a.Method(), mv, mv.To, load[mv.To], capOf[mv.To])
			}
		}
	}
	if join && after[dec.Player] != dec.Mirror {
		fail("join decision says %s but player is on %s", dec.Mirror, after[dec.Player])
	}
	if !join && (after[dec.Player] != "" || before[dec.Player] != dec.Mirror) {
		fail("leave decision inconsistent: %+v", dec)
	}
}

func checkCapacity(t *testing.T, seed uint64, step int, a *Assigner) {
	t.Helper()
	load := map[string]int{}
	for _, m := range a.Assignment() {
		load[m]++
	}
	for j, m := range a.Mirrors() {
		if load[m.ID] > m.Capacity || a.Load(j) != load[m.ID] {
			t.Fatalf("seed %d step %d: mirror %s load %d (reported %d) capacity %d", seed, step, m.ID, load[m.ID], a.Load(j), m.Capacity)
		}
	}
}

// TestMetamorphic runs random join/leave sequences against every method and
// checks after every event: capacities, decision consistency, and for the
// exact methods the total delay against the Hungarian reference.
func TestMetamorphic(t *testing.T) {
	seeds := 3000
	if testing.Short() {
		seeds = 300
	}
	for seed := uint64(0); seed < uint64(seeds); seed++ {
		r := rand.New(rand.NewPCG(seed, 0xC3A))
		inst := randomInstance(r)
		assigners := map[Method]*Assigner{}
		for _, meth := range Methods() {
			a, err := New(inst.mirrors, meth)
			if err != nil {
				t.Fatal(err)
			}
			assigners[meth] = a
		}
		delays := map[string][]float64{}
		var live []string
		capTotal := 0
		for _, m := range inst.mirrors {
			capTotal += m.Capacity
		}
		steps := 10 + r.IntN(50)
		next := 0
		for step := 0; step < steps; step++ {
			join := len(live) == 0 || (len(live) < capTotal && r.IntN(100) < 60)
			var player string
			if join {
				player = fmt.Sprintf("p%d", next)
				next++
				delays[player] = inst.delay(r)
				live = append(live, player)
			} else {
				i := r.IntN(len(live))
				player = live[i]
				live = slices.Delete(live, i, i+1)
			}
			var want float64
			for _, meth := range Methods() {
				a := assigners[meth]
				before := a.Assignment()
				var dec Decision
				var err error
				if join {
					dec, err = a.Join(player, delays[player])
				} else {
					dec, err = a.Leave(player)
				}
				if err != nil {
					t.Fatalf("seed %d step %d %v: %v", seed, step, meth, err)
				}
				after := a.Assignment()
				checkDecision(t, seed, step, a, before, after, dec, join)
				checkCapacity(t, seed, step, a)
				if a.Len() != len(live) {
					t.Fatalf("seed %d step %d %v: %d players, want %d", seed, step, meth, a.Len(), len(live))
				}
				if meth.Exact() {
					if meth == SA {
						want = optimum(a, delays)
					}
					if got := a.TotalDelay(); math.Abs(got-want) > 1e-9*math.Max(1, want) {
						t.Fatalf("seed %d step %d %v (%s %s): total %v, optimum %v (mirrors %v)", seed, step, meth,
							map[bool]string{true: "join", false: "leave"}[join], player, got, want, inst.mirrors)
					}
				}
			}
		}
	}
}

func TestGreedyNeverBeatsOptimum(t *testing.T) {
	for seed := uint64(0); seed < 500; seed++ {
		r := rand.New(rand.NewPCG(seed, 7))
		inst := randomInstance(r)
		g, _ := New(inst.mirrors, Greedy)
		s, _ := New(inst.mirrors, SA)
		capTotal := 0
		for _, m := range inst.mirrors {
			capTotal += m.Capacity
		}
		for i := 0; i < capTotal; i++ {
			d := inst.delay(r)
			p := fmt.Sprint(i)
			mustJoin(t, g, p, d)
			mustJoin(t, s, p, d)
			if g.TotalDelay() < s.TotalDelay()-1e-9 {
				t.Fatalf("seed %d: greedy %v beats SA %v", seed, g.TotalDelay(), s.TotalDelay())
			}
		}
	}
}

func TestBadInputChangesNothing(t *testing.T) {
	for _, meth := range Methods() {
		a, _ := New([]Mirror{{"G", 1}, {"H", 1}}, meth)
		mustJoin(t, a, "a", []float64{1, 2})
		snapshot := a.Assignment()
		cases := []struct {
			name string
			do   func() error
			want error
		}{
			{"duplicate", func() error { _, err := a.Join("a", []float64{1, 1}); return err }, ErrDuplicatePlayer},
			{"empty id", func() error { _, err := a.Join("", []float64{1, 1}); return err }, ErrBadPlayer},
			{"short delays", func() error { _, err := a.Join("b", []float64{1}); return err }, ErrBadDelay},
			{"NaN", func() error { _, err := a.Join("b", []float64{1, math.NaN()}); return err }, ErrBadDelay},
			{"negative", func() error { _, err := a.Join("b", []float64{-1, 1}); return err }, ErrBadDelay},
			{"inf", func() error { _, err := a.Join("b", []float64{math.Inf(1), 1}); return err }, ErrBadDelay},
			{"unknown mirror", func() error {
				_, err := a.JoinMap("b", map[string]float64{"G": 1, "H": 1, "X": 1})
				return err
			}, ErrUnknownMirror},
			{"missing mirror", func() error { _, err := a.JoinMap("b", map[string]float64{"G": 1}); return err }, ErrBadDelay},
			{"unknown leave", func() error { _, err := a.Leave("zz"); return err }, ErrUnknownPlayer},
		}
		for _, c := range cases {
			if err := c.do(); !errors.Is(err, c.want) {
				t.Errorf("%v %s: err = %v, want %v", meth, c.name, err, c.want)
			}
			if got := a.Assignment(); !mapsEqual(got, snapshot) {
				t.Fatalf("%v %s changed the assignment: %v", meth, c.name, got)
			}
		}
		var de *DelayError
		if _, err := a.Join("b", []float64{1, -2}); !errors.As(err, &de) || de.Mirror != "H" || de.Value != -2 || de.Player != "b" {
			t.Errorf("%v: negative delay error %v does not carry player b, mirror H, value -2", meth, err)
		}
		if _, err := a.JoinMap("b", map[string]float64{"H": 1}); !errors.As(err, &de) || de.Mirror != "G" || !de.Missing {
			t.Errorf("%v: missing delay error %v does not name mirror G as missing", meth, err)
		}
		mustJoin(t, a, "b", []float64{3, 3})
		full := a.Assignment()
		if _, err := a.Join("c", []float64{1, 1}); !errors.Is(err, ErrNoCapacity) {
			t.Errorf("%v: join when full: err = %v, want ErrNoCapacity", meth, err)
		}
		if got := a.Assignment(); !mapsEqual(got, full) || a.Len() != 2 {
			t.Errorf("%v: failed join changed the assignment", meth)
		}
		// The assigner still works after errors.
		mustLeave(t, a, "a")
		mustJoin(t, a, "c", []float64{0, 5})
	}
}

func TestNewValidates(t *testing.T) {
	bad := [][]Mirror{
		nil,
		{{"", 1}},
		{{"G", 0}},
		{{"G", -3}},
		{{"G", 1}, {"G", 2}},
	}
	for _, ms := range bad {
		if _, err := New(ms, SA); !errors.Is(err, ErrBadMirrors) {
			t.Errorf("New(%v) err = %v, want ErrBadMirrors", ms, err)
		}
	}
	if _, err := New([]Mirror{{"G", 1}}, Method(99)); err == nil {
		t.Error("New with unknown method: no error")
	}
	for _, m := range Methods() {
		got, err := ParseMethod(m.String())
		if err != nil || got != m {
			t.Errorf("ParseMethod(%q) = %v, %v", m.String(), got, err)
		}
	}
	if _, err := ParseMethod("best"); err == nil {
		t.Error("ParseMethod(best): no error")
	}
}

func TestStats(t *testing.T) {
	st := Summarize([]float64{5, 1, 3, 2, 4}, 3)
	if st.Total != 15 || st.Mean != 3 || st.Max != 5 || st.P95 != 5 || st.Within != 3 || st.Players != 5 {
		t.Fatalf("Summarize = %+v", st)
	}
	if st := Summarize(nil, 1); st.Players != 0 || st.Total != 0 {
		t.Fatalf("Summarize(nil) = %+v", st)
	}
}

// TestAgainstMinCostFlow checks the exact methods against a second,
// independent reference: the generic min-cost flow of place/mcf, after
// every event of random sequences on larger instances than the Hungarian
// reference handles quickly.
func TestAgainstMinCostFlow(t *testing.T) {
	seeds := 200
	if testing.Short() {
		seeds = 20
	}
	for seed := uint64(0); seed < uint64(seeds); seed++ {
		r := rand.New(rand.NewPCG(seed, 0x3CF))
		m, maxCap := 2+r.IntN(12), 30
		if seed%10 == 0 { // many mirrors, few seats each
			m, maxCap = 30+r.IntN(31), 6
		}
		mirrors := make([]Mirror, m)
		capTotal := 0
		for j := range mirrors {
			mirrors[j] = Mirror{ID: fmt.Sprintf("M%d", j), Capacity: 1 + r.IntN(maxCap)}
			capTotal += mirrors[j].Capacity
		}
		sa, _ := New(mirrors, SA)
		rb, _ := New(mirrors, SARebuild)
		delays := map[string][]float64{}
		var live []string
		for step := 0; step < 300; step++ {
			if len(live) < capTotal && (len(live) == 0 || r.IntN(100) < 55) {
				p := fmt.Sprintf("p%d", step)
				d := make([]float64, m)
				for j := range d {
					d[j] = math.Round(r.Float64()*5000) / 10
				}
				delays[p] = d
				live = append(live, p)
				mustJoin(t, sa, p, d)
				mustJoin(t, rb, p, d)
			} else {
				i := r.IntN(len(live))
				mustLeave(t, sa, live[i])
				mustLeave(t, rb, live[i])
				live = slices.Delete(live, i, i+1)
			}
			rows := make([][]float64, len(live))
			for i, p := range live {
				rows[i] = delays[p]
			}
			caps := make([]int, m)
			for j, mr := range mirrors {
				caps[j] = mr.Capacity
			}
			_, want, err := mcf.Transport(rows, caps)
			if err != nil {
				t.Fatalf("seed %d step %d: mcf: %v", seed, step, err)
			}
			for _, a := range []*Assigner{sa, rb} {
				if got := a.TotalDelay(); math.Abs(got-want) > 1e-9*math.Max(1, want) {
					t.Fatalf("seed %d step %d %v: total %v, min-cost flow %v", seed, step, a.Method(), got, want)
				}
			}
		}
	}
}
