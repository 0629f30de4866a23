package cities

import (
	"errors"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/overworld/overworld/lab"
)

func TestServersAndNodes(t *testing.T) {
	s := Servers()
	if len(s) != 20 || s[0] != "New York" || s[19] != "Dubai" {
		t.Fatalf("servers %v", s)
	}
	s[0] = "Atlantis"
	if Servers()[0] != "New York" {
		t.Fatal("Servers returned its own slice")
	}
	if got := ForNodes(3); !slices.Equal(got, []string{"New York", "Frankfurt", "Tokyo"}) {
		t.Errorf("ForNodes(3) = %v", got)
	}
	more := ForNodes(30)
	if len(more) != 30 || !slices.Equal(more[:20], Servers()) {
		t.Errorf("ForNodes(30) = %v", more)
	}
	seen := map[string]bool{}
	for _, c := range more {
		if seen[c] {
			t.Errorf("ForNodes(30) lists %s twice", c)
		}
		seen[c] = true
	}
	if len(ForNodes(0)) != 0 || len(ForNodes(-1)) != 0 {
		t.Error("ForNodes of nothing is not empty")
	}
}

func TestPopulationAndIndices(t *testing.T) {
	pop, pings, err := Population()
	if err != nil {
		t.Fatal(err)
	}
	idx, err := Indices(pings, Servers()[:3])
	if err != nil || len(idx) != 3 {
		t.Fatalf("Indices: %v, %v", idx, err)
	}
	m, err := pop.Matrix(pop.Draw(5, rand.New(rand.NewPCG(1, 2))), idx)
	if err != nil || m.Rows() != 5 || m.Cols() != 3 {
		t.Fatalf("5 players × 3 servers: %v", err)
	}
	for _, bad := range [][]string{{"Atlantis"}, {"Tokyo", "Tokyo"}} {
		if _, err := Indices(pings, bad); !errors.Is(err, lab.ErrConfig) {
			t.Errorf("Indices(%v): %v, want an ErrConfig", bad, err)
		}
	}
}
