// Package scripttest runs the scenario scripts of the module's tests. A
// script is a text file of commands, each followed by a "----" line and
// the output the command must print, in the format of
// github.com/cockroachdb/datadriven:
//
//	# A comment line.
//	spawn 1 walker x=10 y=10
//	----
//	created 1.1 on node 1
//
// A block ends at the first blank line; output that itself holds blank
// lines is written between two "----" lines instead. Comments are whole
// lines starting with "#".
//
// The package owns what every package's scripts share: finding the files,
// giving each file a fresh interpreter, reporting a failure with its file
// and line and the script's seed, and parsing arguments (positional words,
// key=value options, durations, numbers, object IDs). The commands belong
// to the test of each package: its caller passes Run a function that makes
// one interpreter per file and returns the Handler that runs its commands.
//
// The expected output is rewritten from the actual output with
//
//	go test ./<package> -run <Test> -rewrite
//
// which edits the script files in place; read the diff before committing
// it.
package scripttest

import (
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/cockroachdb/datadriven"

	"github.com/overworld/overworld/world"
)

// Handler runs one command of a script and returns what it prints (""
// for nothing). It reports bad input with Cmd.Fatalf.
type Handler func(c *Cmd) string

// Script is one file being run.
type Script struct {
	// T is the test of this file; an interpreter reports failures that
	// are not tied to one command (an invariant checked while running)
	// to it.
	T *testing.T
	// Path is the script's file name.
	Path string

	seed   uint64
	seeded bool
}

// SetSeed records the seed of the random source the script's interpreter
// uses; a failing script reports it. An interpreter that draws no random
// numbers does not call it.
func (s *Script) SetSeed(seed uint64) { s.seed, s.seeded = seed, true }

// Seed returns the seed set with SetSeed and whether one was set.
func (s *Script) Seed() (uint64, bool) { return s.seed, s.seeded }

// Run runs every script file under dir (files starting with "." are
// skipped), each as a sub-test named after the file without its
// extension. For each file it calls start for a fresh interpreter and
// passes every command to the Handler start returns, in order; the first
// command whose output differs from the file's stops the file. Run fails
// if dir holds no script.
func Run(t *testing.T, dir string, start func(s *Script) Handler) {
	t.Helper()
	n := 0
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && !strings.HasPrefix(d.Name(), ".") {
			n++
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if n == 0 {
		t.Fatalf("no scenario scripts in %s", dir)
	}
	datadriven.Walk(t, dir, func(t *testing.T, path string) {
		s := &Script{T: t, Path: path}
		t.Cleanup(func() {
			if !t.Failed() {
				return
			}
			if seed, ok := s.Seed(); ok {
				t.Logf("%s: seed %d", path, seed)
			} else {
				t.Logf("%s: no seed (the interpreter draws no random numbers)", path)
			}
		})
		h := start(s)
		datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
			c := &Cmd{t: t, d: d, Name: d.Cmd}
			for _, a := range d.CmdArgs {
				c.Args = append(c.Args, a.String())
			}
			if d.Input != "" {
				c.Fatalf("no command takes an input block (lines between the command and ----)")
			}
			return h(c)
		})
	})
}

// RunFile runs one script file with the Handler start returns, in the
// test t itself (no sub-test): for scripts that must run inside a
// testing/synctest bubble, where T.Run is not allowed.
func RunFile(t *testing.T, path string, start func(s *Script) Handler) {
	t.Helper()
	s := &Script{T: t, Path: path}
	h := start(s)
	datadriven.RunTest(t, path, func(t *testing.T, d *datadriven.TestData) string {
		c := &Cmd{t: t, d: d, Name: d.Cmd}
		for _, a := range d.CmdArgs {
			c.Args = append(c.Args, a.String())
		}
		if d.Input != "" {
			c.Fatalf("no command takes an input block (lines between the command and ----)")
		}
		return h(c)
	})
}

// Result formats the outcome of an operation as a script prints it: "ok",
// or the error's text.
func Result(err error) string {
	if err == nil {
		return "ok"
	}
	return err.Error()
}

// Cmd is one command of a script: its name and the words after it.
type Cmd struct {
	// Name is the command's first word.
	Name string
	// Args are the words after it, as written: "x=10" is one word.
	Args []string

	t *testing.T
	d *datadriven.TestData
}

// String returns the command line.
func (c *Cmd) String() string { return strings.Join(append([]string{c.Name}, c.Args...), " ") }

// Fatalf stops the script with an error naming the file, line and command.
func (c *Cmd) Fatalf(format string, args ...any) {
	c.t.Helper()
	c.t.Fatalf("%s: %s: %s", c.d.Pos, c, fmt.Sprintf(format, args...))
}

// Shift returns the command formed by the arguments: its first argument
// becomes the name. It stops the script if there is none.
func (c *Cmd) Shift() *Cmd {
	c.t.Helper()
	c.Want(1, -1)
	return &Cmd{Name: c.Args[0], Args: c.Args[1:], t: c.t, d: c.d}
}

// Want stops the script unless the command has between lo and hi
// arguments (hi < 0: no upper bound).
func (c *Cmd) Want(lo, hi int) {
	c.t.Helper()
	n := len(c.Args)
	switch {
	case n < lo && lo == hi:
		c.Fatalf("want %d arguments, have %d", lo, n)
	case n < lo:
		c.Fatalf("want at least %d arguments, have %d", lo, n)
	case hi >= 0 && n > hi:
		c.Fatalf("want at most %d arguments, have %d", hi, n)
	}
}

// Arg returns argument i, stopping the script if there is none.
func (c *Cmd) Arg(i int) string {
	c.t.Helper()
	if i >= len(c.Args) {
		c.Fatalf("argument %d missing", i+1)
	}
	return c.Args[i]
}

// Options parses the arguments from index from on as key=value words and
// stops the script on a word without "=" or a key not in known.
func (c *Cmd) Options(from int, known ...string) map[string]string {
	c.t.Helper()
	opts := map[string]string{}
	for _, a := range c.Args[min(from, len(c.Args)):] {
		k, v, ok := strings.Cut(a, "=")
		if !ok {
			c.Fatalf("%q is not key=value", a)
		}
		found := false
		for _, kn := range known {
			found = found || k == kn
		}
		if !found {
			c.Fatalf("unknown option %q (known: %s)", k, strings.Join(known, ", "))
		}
		opts[k] = v
	}
	return opts
}

// Dur returns argument i as a duration ("1.5s", "300ms").
func (c *Cmd) Dur(i int) time.Duration {
	c.t.Helper()
	return c.ParseDur(c.Arg(i))
}

// Float returns argument i as a number.
func (c *Cmd) Float(i int) float64 {
	c.t.Helper()
	return c.ParseFloat(c.Arg(i))
}

// Int returns argument i as an integer.
func (c *Cmd) Int(i int) int {
	c.t.Helper()
	return c.ParseInt(c.Arg(i))
}

// Floats returns argument i as a comma-separated list of numbers
// ("100,100").
func (c *Cmd) Floats(i int) []float64 {
	c.t.Helper()
	return c.ParseFloats(c.Arg(i))
}

// ObjectID returns argument i as an object ID written origin.seq ("2.1").
func (c *Cmd) ObjectID(i int) world.ObjectID {
	c.t.Helper()
	return c.ParseObjectID(c.Arg(i))
}

// ParseDur parses a duration, stopping the script if s is not one.
func (c *Cmd) ParseDur(s string) time.Duration {
	c.t.Helper()
	d, err := time.ParseDuration(s)
	if err != nil {
		c.Fatalf("%v", err)
	}
	return d
}

// ParseFloat parses a number, stopping the script if s is not one.
func (c *Cmd) ParseFloat(s string) float64 {
	c.t.Helper()
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		c.Fatalf("%v", err)
	}
	return v
}

// ParseInt parses a decimal integer, stopping the script if s is not one.
func (c *Cmd) ParseInt(s string) int {
	c.t.Helper()
	v, err := strconv.Atoi(s)
	if err != nil {
		c.Fatalf("%v", err)
	}
	return v
}

// ParseFloats parses a comma-separated list of numbers.
func (c *Cmd) ParseFloats(s string) []float64 {
	c.t.Helper()
	var vs []float64
	for _, f := range strings.Split(s, ",") {
		vs = append(vs, c.ParseFloat(f))
	}
	return vs
}

// ParseObjectID parses an object ID written origin.seq.
func (c *Cmd) ParseObjectID(s string) world.ObjectID {
	c.t.Helper()
	id, err := ParseObjectID(s)
	if err != nil {
		c.Fatalf("%v", err)
	}
	return id
}

// ParseObjectID parses an object ID written origin.seq, as
// world.ObjectID's String method prints it.
func ParseObjectID(s string) (world.ObjectID, error) {
	o, q, ok := strings.Cut(s, ".")
	a, err1 := strconv.ParseUint(o, 10, 32)
	b, err2 := strconv.ParseUint(q, 10, 32)
	if !ok || errors.Join(err1, err2) != nil {
		return 0, fmt.Errorf("bad object ID %q (want origin.seq)", s)
	}
	return world.MakeObjectID(uint32(a), uint32(b)), nil
}
