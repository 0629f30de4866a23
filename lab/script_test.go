package lab

import (
	"errors"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/overworld/overworld/lab/report"
)

func TestJoinLeaveScripts(t *testing.T) {
	js, ls := joinScript(1000), leaveScript(1000)
	if len(js) != 1000 || len(ls) != 1000 {
		t.Fatalf("join %d, leave %d events; want 1000 each", len(js), len(ls))
	}
	for i := range js {
		if !js[i].join || js[i].client != i || ls[i].join || ls[i].client != i {
			t.Fatalf("event %d: join %+v, leave %+v; want client %d joining, then leaving first in first out", i, js[i], ls[i], i)
		}
	}
}

// replay checks that a script is well formed and returns the number of
// connected clients after every event.
func replay(t *testing.T, s []event, capacity int) []int {
	t.Helper()
	connected := map[int]bool{}
	joined := map[int]bool{}
	counts := make([]int, len(s))
	for i, e := range s {
		switch {
		case e.join && joined[e.client]:
			t.Fatalf("event %d: client %d joins twice", i, e.client)
		case e.join:
			joined[e.client], connected[e.client] = true, true
		case !connected[e.client]:
			t.Fatalf("event %d: client %d leaves but is not connected", i, e.client)
		default:
			delete(connected, e.client)
		}
		if len(connected) > capacity {
			t.Fatalf("event %d: %d clients connected, capacity %d", i, len(connected), capacity)
		}
		counts[i] = len(connected)
	}
	return counts
}

func TestDynamicScriptPaperShape(t *testing.T) {
	const populate, churn, capacity = 400, 500, 500
	s, err := dynamicScript(populate, churn, capacity, rand.New(rand.NewPCG(1, 2)))
	if err != nil {
		t.Fatal(err)
	}
	if len(s) != 2200 {
		t.Fatalf("%d events; the paper's Fig. 7 has 2200 (1200 populate + 1000 churn)", len(s))
	}
	if n := clientsNeeded(s); n != 1300 {
		t.Fatalf("uses %d clients; the paper's pool has 1300", n)
	}
	counts := replay(t, s, capacity)
	// Populate: join, join, leave, repeated; the count grows by one per
	// triple and reaches 400 exactly at event 1200.
	for i := 0; i < 3*populate; i++ {
		if want := i%3 != 2; s[i].join != want {
			t.Fatalf("populate event %d: join=%v, want %v (two joins, then one leave)", i, s[i].join, want)
		}
		if i%3 == 2 && counts[i] != i/3+1 {
			t.Fatalf("after populate triple %d: %d connected, want %d", i/3, counts[i], i/3+1)
		}
	}
	if counts[3*populate-1] != populate {
		t.Fatalf("after populate: %d connected, want %d", counts[3*populate-1], populate)
	}
	joins := 0
	for _, e := range s[3*populate:] {
		if e.join {
			joins++
		}
	}
	if joins != churn || counts[len(s)-1] != populate {
		t.Fatalf("churn: %d joins of %d events, %d connected at the end; want %d joins and %d connected", joins, 2*churn, counts[len(s)-1], churn, populate)
	}
	// Joins take the pool in order.
	next := 0
	for _, e := range s {
		if e.join {
			if e.client != next {
				t.Fatalf("join of client %d, want %d (pool order)", e.client, next)
			}
			next++
		}
	}
	// The churn order is random: not all joins first.
	if slices.IndexFunc(s[3*populate:], func(e event) bool { return !e.join }) > 100 {
		t.Errorf("churn starts with more than 100 joins; the order should be shuffled")
	}
}

func TestDynamicScriptDeterministic(t *testing.T) {
	a, _ := dynamicScript(40, 50, 50, rand.New(rand.NewPCG(7, 2)))
	b, _ := dynamicScript(40, 50, 50, rand.New(rand.NewPCG(7, 2)))
	c, _ := dynamicScript(40, 50, 50, rand.New(rand.NewPCG(8, 2)))
	if !slices.Equal(a, b) {
		t.Fatal("same seed, different scripts")
	}
	if slices.Equal(a, c) {
		t.Fatal("different seeds, same script")
	}
}

// With little room above the populated count, redrawn orders still keep
// every prefix within capacity.
func TestDynamicScriptTightCapacity(t *testing.T) {
	for seed := range uint64(50) {
		s, err := dynamicScript(40, 50, 50, rand.New(rand.NewPCG(seed, 2)))
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		replay(t, s, 50)
	}
}

func TestDynamicScriptErrors(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	for _, c := range []struct{ populate, churn, capacity int }{
		{0, 10, 10},  // nothing to populate
		{10, -1, 20}, // negative churn
		{10, 10, 10}, // the last populate step needs 11 seats
		{1, 500, 2},  // no order of 500 joins and 500 leaves stays within 0..2
	} {
		if _, err := dynamicScript(c.populate, c.churn, c.capacity, r); !errors.Is(err, ErrConfig) {
			t.Errorf("dynamicScript(%d, %d, %d): err %v, want ErrConfig", c.populate, c.churn, c.capacity, err)
		}
	}
}

func TestApportion(t *testing.T) {
	paper := []int{100, 150, 200, 250, 300}
	for _, c := range []struct {
		m    int
		want []int
	}{
		{5, paper},
		{10, []int{50, 75, 100, 125, 150, 50, 75, 100, 125, 150}},
		{20, []int{25, 38, 50, 63, 75, 25, 38, 50, 63, 75, 25, 37, 50, 62, 75, 25, 37, 50, 62, 75}},
	} {
		got, err := apportion(paper, c.m, 1000)
		if err != nil || !slices.Equal(got, c.want) {
			t.Errorf("apportion(paper, %d) = %v, %v; want %v", c.m, got, err, c.want)
		}
	}
	for _, m := range []int{1, 3, 7, 20, 33} {
		got, err := apportion([]int{50, 75, 100, 125, 150}, m, 500)
		if err != nil || report.Sum(got) != 500 || len(got) != m {
			t.Errorf("m=%d: %v (sum %d), %v; want %d mirrors holding 500", m, got, report.Sum(got), err, m)
		}
	}
	if _, err := apportion([]int{1, 1000}, 2, 2); !errors.Is(err, ErrConfig) {
		t.Errorf("a mirror left without seats: err %v, want ErrConfig", err)
	}
}
