package archtest

import (
	"strings"
	"testing"
)

// cut is an import the layering would allow but the architecture forbids:
// from a package (or a directory prefix ending in "/...") to another.
type cut struct {
	from, to string
	why      string
}

// cuts are the ties that must stay cut. Most also follow from the layers;
// they are named here so that a new layer table cannot quietly bring one
// back.
var cuts = []cut{
	{"arena", "live/...", "the model game is a world game like any studio's: it knows no driver"},
	{"arena", "sim", "the model game is a world game like any studio's: it knows no driver"},
	{"arena", "node", "the model game is written against world alone"},
	{"live/...", "sim", "the two drivers never import each other; what both need lives below them"},
	{"sim", "live/...", "the two drivers never import each other; what both need lives below them"},
	{"live/...", "lab/...", "the live driver does not depend on experiments"},
	{"sim", "lab/...", "the simulator does not depend on experiments"},
	{"discovery", "lab/...", "discovery's presets live in discovery"},
	{"lab/report", "lab/...", "report helpers know no experiment"},
	{"truth", "sim", "the observer is driver-neutral: each driver feeds it snapshots"},
	{"truth", "live/...", "the observer is driver-neutral: each driver feeds it snapshots"},
	{"truth", "lab/...", "the observer is driver-neutral: each driver feeds it snapshots"},
	{"truth", "arena", "the observer measures any world game"},
}

// locateUsers are the only packages outside internal/ that may build
// discovery from its parts: node (which runs it), discovery (the one
// constructor, used by both drivers) and the colyseus experiments (which
// measure the locator's parts one by one).
var locateUsers = map[string]bool{"node": true, "discovery": true, "lab/colyseus": true}

func matches(pattern, dir string) bool {
	if prefix, ok := strings.CutSuffix(pattern, "/..."); ok {
		return dir == prefix || strings.HasPrefix(dir, prefix+"/")
	}
	return dir == pattern
}

func TestCutsStayCut(t *testing.T) {
	for _, p := range sorted(loadPackages(t)) {
		for ip, files := range p.imports {
			dep, ok := strings.CutPrefix(ip, module+"/")
			if !ok {
				continue
			}
			for _, c := range cuts {
				if matches(c.from, p.dir) && matches(c.to, dep) {
					t.Errorf("%s imports %s in %v: %s", p.dir, dep, files, c.why)
				}
			}
			if dep == "internal/locate" && !strings.HasPrefix(p.dir, "internal/") && !locateUsers[p.dir] {
				t.Errorf("%s imports internal/locate in %v: build discovery with discovery.New", p.dir, files)
			}
		}
	}
}
