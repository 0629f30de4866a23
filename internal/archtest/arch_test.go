package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
)

const module = "github.com/overworld/overworld"

// layers gives every package directory (relative to the module root) its
// rank; a package may import only packages of a lower rank, or packages in
// its own group (a directory prefix listed in sameGroup). Unlisted packages
// fail the test, so every new package is placed deliberately.
var layers = map[string]int{
	// ground: the game API and the latency data
	"world":               0,
	"geo":                 1,
	"geo/topo":            1,
	"internal/idtab":      1,
	"internal/scripttest": 1,
	"internal/docvec":     1,
	// pure algorithms
	"place/mcf":     2,
	"place/cma":     2,
	"place/core":    2,
	"place/spd":     2,
	"place/balance": 2,
	"estimate":      2,

	// the placement commands' files, decoded and run
	"internal/placefile": 3,

	// the node-to-node protocol and its cores
	"wire":             3,
	"internal/ring":    4,
	"internal/locate":  5,
	"internal/replica": 5,
	"node":             6,
	"discovery":        7,
	"control":          7,
	// the model game, and the ground-truth observer of any game's nodes
	"arena": 8,
	"truth": 8,
	// the two drivers
	"sim":               9,
	"live":              9,
	"live/pki":          9,
	"live/player":       9,
	"live/agones":       9,
	"live/arenaplay":    10,
	"live/localcluster": 10,
	"live/plane":        10,
	"live/web":          9,
	// the TypeScript client SDK and the browser pages (built with esbuild)
	"clients/ts": 10,
	// the lab: shared helpers, the harness, one package per paper
	"lab":           10,
	"lab/report":    10,
	"lab/cities":    11,
	"lab/harness":   12,
	"lab/cma":       12,
	"lab/region":    12,
	"lab/balance":   12,
	"lab/spd":       12,
	"lab/colyseus":  13,
	"lab/faults":    13,
	"lab/placement": 13,
	// commands
	"cmd/overworld/cli": 14,
	"cmd/overworld":     15,
	"cmd/gendata":       15,
	"cmd/genweb":        15,
	"internal/archtest": 16,
}

// groups whose members may import each other at equal rank (sub-packages
// of one algorithm family, or a package and its sub-packages).
var sameGroup = []string{"geo", "place", "live"}

// sameRankEdges are imports allowed between two packages of equal rank in
// different groups. There are none: the two drivers (sim and live) never
// import each other; what both read (site latencies) lives in geo.
var sameRankEdges = map[[2]string]bool{}

// pure packages: deterministic, sans-IO. They may not touch the network,
// the wall clock, global randomness, or the drivers.
var pure = []string{"world", "internal/idtab", "geo", "place", "estimate", "wire", "internal/ring",
	"internal/locate", "internal/replica", "node", "truth", "control", "internal/placefile"}

var forbiddenImportsInPure = map[string]string{
	"net":         "pure packages do no network I/O (drivers do)",
	"net/http":    "pure packages do no network I/O (drivers do)",
	"math/rand":   "use a caller-supplied *rand.Rand from math/rand/v2",
	"os/exec":     "pure packages start no processes",
	"crypto/rand": "randomness must come from a seeded *rand.Rand",
}

// randConstructors are the math/rand/v2 names a pure package may use; every
// other package-level function of math/rand/v2 draws from global state.
var randConstructors = map[string]bool{"New": true, "NewPCG": true, "NewChaCha8": true,
	"NewZipf": true, "Rand": true, "Source": true, "PCG": true, "ChaCha8": true, "Zipf": true}

type pkgInfo struct {
	dir     string // relative to module root
	hasDoc  bool
	imports map[string][]string // import path -> files
	files   []*ast.File
	names   []string
}

func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("go.mod not found above test directory")
		}
		dir = parent
	}
}

func loadPackages(t *testing.T) map[string]*pkgInfo {
	t.Helper()
	root := repoRoot(t)
	pkgs := map[string]*pkgInfo{}
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			name := d.Name()
			if path != root && (strings.HasPrefix(name, ".") || name == "testdata" || strings.HasPrefix(name, "_")) {
				return filepath.SkipDir
			}
			// A directory with its own go.mod (examples/) is another
			// module: it sees only the public API, which the compiler
			// enforces, and is not layered here.
			if _, err := os.Stat(filepath.Join(path, "go.mod")); path != root && err == nil {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		rel, _ := filepath.Rel(root, filepath.Dir(path))
		rel = filepath.ToSlash(rel)
		f, err := parser.ParseFile(fset, path, nil, parser.ParseComments|parser.ImportsOnly)
		if err != nil {
			return err
		}
		isTest := strings.HasSuffix(path, "_test.go")
		p := pkgs[rel]
		if p == nil {
			p = &pkgInfo{dir: rel, imports: map[string][]string{}}
			pkgs[rel] = p
		}
		if !isTest && f.Doc != nil && strings.TrimSpace(f.Doc.Text()) != "" {
			p.hasDoc = true
		}
		if !isTest {
			full, err := parser.ParseFile(fset, path, nil, 0)
			if err != nil {
				return err
			}
			p.files = append(p.files, full)
			p.names = append(p.names, filepath.Base(path))
			for _, imp := range f.Imports {
				ip, _ := strconv.Unquote(imp.Path.Value)
				p.imports[ip] = append(p.imports[ip], filepath.Base(path))
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// Drop directories that hold only tests (none today, but keep it honest).
	for k, p := range pkgs {
		if len(p.files) == 0 {
			delete(pkgs, k)
		}
	}
	return pkgs
}

func TestEveryPackageHasDocComment(t *testing.T) {
	for _, p := range sorted(loadPackages(t)) {
		if !p.hasDoc {
			t.Errorf("package %s has no package doc comment (say what it owns and what its caller must do)", p.dir)
		}
	}
}

func TestEveryPackageHasALayer(t *testing.T) {
	for _, p := range sorted(loadPackages(t)) {
		if _, ok := layers[p.dir]; !ok {
			t.Errorf("package %s has no layer in internal/archtest/arch_test.go; add it where ARCHITECTURE.md puts it", p.dir)
		}
	}
}

func TestDependenciesPointDown(t *testing.T) {
	for _, p := range sorted(loadPackages(t)) {
		from, ok := layers[p.dir]
		if !ok {
			continue
		}
		for ip, files := range p.imports {
			if !strings.HasPrefix(ip, module+"/") {
				continue
			}
			dep := strings.TrimPrefix(ip, module+"/")
			to, ok := layers[dep]
			if !ok {
				t.Errorf("%s imports %s, which has no layer", p.dir, dep)
				continue
			}
			if to < from || (to == from && group(dep) != "" && group(dep) == group(p.dir)) || (to == from && sameRankEdges[[2]string{p.dir, dep}]) {
				continue
			}
			t.Errorf("%s (layer %d) imports %s (layer %d) in %v: dependencies must point down", p.dir, from, dep, to, files)
		}
	}
}

func TestPurePackagesStayPure(t *testing.T) {
	for _, p := range sorted(loadPackages(t)) {
		if !isPure(p.dir) {
			continue
		}
		for ip, files := range p.imports {
			if why, bad := forbiddenImportsInPure[ip]; bad {
				t.Errorf("pure package %s imports %s in %v: %s", p.dir, ip, files, why)
			}
			for _, drv := range []string{"sim", "live", "lab", "cmd"} {
				if ip == module+"/"+drv || strings.HasPrefix(ip, module+"/"+drv+"/") {
					t.Errorf("pure package %s imports driver %s in %v", p.dir, ip, files)
				}
			}
		}
		for i, f := range p.files {
			checkCalls(t, p.dir+"/"+p.names[i], f)
		}
	}
}

// checkCalls rejects time.Now/time.Since/time.Sleep/time.After/time.Tick and
// package-level math/rand/v2 functions in a pure package's file.
func checkCalls(t *testing.T, name string, f *ast.File) {
	local := map[string]string{} // local name -> import path
	for _, imp := range f.Imports {
		ip, _ := strconv.Unquote(imp.Path.Value)
		ln := ip[strings.LastIndex(ip, "/")+1:]
		if ip == "math/rand/v2" {
			ln = "rand"
		}
		if imp.Name != nil {
			ln = imp.Name.Name
		}
		local[ln] = ip
	}
	ast.Inspect(f, func(n ast.Node) bool {
		sel, ok := n.(*ast.SelectorExpr)
		if !ok {
			return true
		}
		id, ok := sel.X.(*ast.Ident)
		if !ok {
			return true
		}
		switch local[id.Name] {
		case "time":
			switch sel.Sel.Name {
			case "Now", "Since", "Until", "Sleep", "After", "Tick", "NewTimer", "NewTicker", "AfterFunc":
				t.Errorf("%s uses time.%s: pure code takes time as an input", name, sel.Sel.Name)
			}
		case "math/rand/v2":
			if !randConstructors[sel.Sel.Name] {
				t.Errorf("%s uses rand.%s (global randomness): take a seeded *rand.Rand", name, sel.Sel.Name)
			}
		}
		return true
	})
}

func isPure(dir string) bool {
	for _, p := range pure {
		if dir == p || strings.HasPrefix(dir, p+"/") {
			return true
		}
	}
	return false
}

func group(dir string) string {
	for _, g := range sameGroup {
		if dir == g || strings.HasPrefix(dir, g+"/") {
			return g
		}
	}
	return ""
}

func sorted(m map[string]*pkgInfo) []*pkgInfo {
	out := make([]*pkgInfo, 0, len(m))
	for _, p := range m {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].dir < out[j].dir })
	return out
}
