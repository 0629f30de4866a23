package arena

import (
	"bytes"
	"encoding/hex"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestInputVector checks the model game's input vector in the protocol
// specification: a rocket fired a quarter turn from the x axis while
// running at 5 m/s along x and −5 m/s along y.
func TestInputVector(t *testing.T) {
	const name = "arena/input"
	doc := filepath.Join("..", "docs", "protocol.md")
	data, err := os.ReadFile(doc)
	if err != nil {
		t.Fatalf("the protocol specification: %v", err)
	}
	_, block, ok := strings.Cut(string(data), "```hex "+name+"\n")
	if !ok {
		t.Fatalf("%s has no vector %s", doc, name)
	}
	block, _, ok = strings.Cut(block, "```")
	if !ok {
		t.Fatalf("%s: vector %s is not closed", doc, name)
	}
	want, err := hex.DecodeString(strings.Join(strings.Fields(block), ""))
	if err != nil {
		t.Fatalf("%s: vector %s: %v", doc, name, err)
	}
	in := Input{VX: 5, VY: -5, Fire: true, Aim: math.Pi / 2}
	if got := AppendInput(nil, in); !bytes.Equal(got, want) {
		t.Errorf("AppendInput(%+v) = % x; %s says % x", in, got, doc, want)
	}
	back, err := DecodeInput(want)
	if err != nil || back != in {
		t.Errorf("DecodeInput(% x) = %+v, %v; want %+v", want, back, err, in)
	}
}
