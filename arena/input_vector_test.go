package arena

import (
	"math"
	"path/filepath"
	"testing"

	"github.com/overworld/overworld/internal/docvec"
)

// TestInputVector checks the model game's input vector in the protocol
// specification: a rocket fired a quarter turn from the x axis while
// running at 5 m/s along x and −5 m/s along y.
func TestInputVector(t *testing.T) {
	const name = "arena/input"
	path := filepath.Join("..", "docs", "protocol.md")
	doc, err := docvec.Read(path, "arena/")
	if err != nil {
		t.Fatal(err)
	}
	in := Input{VX: 5, VY: -5, Fire: true, Aim: math.Pi / 2}
	docvec.Check(t, path, doc, map[string][]byte{name: AppendInput(nil, in)})
	want, ok := doc[name]
	if !ok {
		return
	}
	back, err := DecodeInput(want)
	if err != nil || back != in {
		t.Errorf("DecodeInput(% x) = %+v, %v; want %+v", want, back, err, in)
	}
}
