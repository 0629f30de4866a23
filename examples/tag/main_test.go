package main

import (
	"bytes"
	"os"
	"regexp"
	"testing"
)

// The figures examples/README.md shows are those of the run it names: a
// change to the runtime that moves them shows up here.
func TestREADMEFigures(t *testing.T) {
	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	want := regexp.MustCompile("(?s)`go run ./tag --seconds 5` prints[^\n]*\n\n```\n(.*?)```").FindSubmatch(readme)
	if want == nil {
		t.Fatal("README.md has no output block after \"`go run ./tag --seconds 5` prints\"")
	}
	var out bytes.Buffer
	if err := run(&out, 5, 8, 4, "directory", 1); err != nil {
		t.Fatal(err)
	}
	if got := out.String(); got != string(want[1]) {
		t.Errorf("go run ./tag --seconds 5 prints\n%s\nREADME.md shows\n%s", got, want[1])
	}
}

func TestBadFlags(t *testing.T) {
	var out bytes.Buffer
	for _, c := range []struct {
		seconds        float64
		nodes, perNode int
		arch           string
	}{{0.5, 8, 4, "directory"}, {5, 0, 4, "directory"}, {5, 8, 4, "gossip"}, {5, 8, 0, "directory"}} {
		if err := run(&out, c.seconds, c.nodes, c.perNode, c.arch, 1); err == nil {
			t.Errorf("run(%v s, %d nodes, %d players, %s) ran", c.seconds, c.nodes, c.perNode, c.arch)
		}
	}
}
