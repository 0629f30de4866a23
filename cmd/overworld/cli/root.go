// Package cli implements the overworld command line (cobra commands). It owns
// flag parsing, file and stdin/stdout handling, and exit statuses; every
// algorithm it runs lives in the library packages (geo, place, lab). Callers
// use Run, which never calls os.Exit.
//
// Exit statuses: 0 success, 1 failure of the program itself while running,
// 130 a run interrupted (Ctrl-C) before it had results to print,
// 2 bad usage or bad input: a malformed or unreadable input file, a path
// that is a directory where a file is wanted (or the reverse), a file that
// must not be overwritten (nothing is written to stdout in that case; the
// message is one line).
package cli

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"

	"github.com/spf13/cobra"
)

// usageError marks an error caused by bad input or flags: exit status 2.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

// badInput wraps err as a usage error (exit status 2).
func badInput(err error) error { return usageError{err} }

// badInputf formats a usage error (exit status 2).
func badInputf(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

// env carries the process streams to commands, so tests can run them in-process.
type env struct {
	stdin          io.Reader
	stdout, stderr io.Writer
}

func newRoot(e *env) *cobra.Command {
	root := &cobra.Command{
		Use:   "overworld",
		Short: "Run one multiplayer game world across many servers",
		Long: `overworld runs one multiplayer game world across many servers. This command gives each part
of it a subcommand:

  placement  assign, core, select, estimate and balance run the placement algorithms on
             files (JSON, latency matrices) or on the embedded real latency data
  lab        reproduces the published evaluations (tables, CSV files and figures)
  demo       runs the model game on many nodes in the deterministic simulator
  runtime    node runs one live node (QUIC, mutual TLS) from a TOML file; ca creates the
             cluster's certificates; cluster runs a local cluster of node processes and
             compares it with the simulator; token and bot let players join a node

Exit status: 0 on success, 2 on bad usage or bad input (one line on stderr, nothing on
stdout), 1 when the program itself fails.`,
		Version:       version(),
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetVersionTemplate("overworld {{.Version}}\n")
	root.SetIn(e.stdin)
	root.SetOut(e.stdout)
	root.SetErr(e.stderr)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return badInput(err) })
	root.AddCommand(commands(e)...)
	return root
}

// version describes the build: the module version (or "(devel)" in a
// source tree), the VCS revision when the build recorded one, and the Go
// version.
func version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "(unknown build)"
	}
	v := bi.Main.Version
	if v == "" {
		v = "(devel)"
	}
	var rev, modified string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				modified = "+modified"
			}
		}
	}
	if rev != "" {
		v += " " + rev[:min(12, len(rev))] + modified
	}
	return v + " " + bi.GoVersion
}

// Run executes the command line args and returns the process exit status.
func Run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	e := &env{stdin: stdin, stdout: stdout, stderr: stderr}
	root := newRoot(e)
	root.SetArgs(args)
	cmd, err := root.ExecuteC()
	if err == nil {
		return 0
	}
	fmt.Fprintf(stderr, "overworld: %v\n", err)
	if errors.Is(err, errInterrupted) {
		return 130
	}
	var ue usageError
	if errors.As(err, &ue) || isCobraUsage(err) {
		if cmd != nil && isCobraUsage(err) {
			fmt.Fprintf(stderr, "run '%s --help' for usage\n", cmd.CommandPath())
		}
		return 2
	}
	return 1
}

// isCobraUsage recognises cobra's own argument errors (unknown command,
// wrong number of arguments), which it returns as plain errors.
func isCobraUsage(err error) bool {
	s := err.Error()
	for _, p := range []string{"unknown command", "unknown flag", "unknown shorthand", "accepts ", "requires ", "invalid argument"} {
		if strings.Contains(s, p) {
			return true
		}
	}
	return false
}

// readInput reads the whole input of a command that takes an optional FILE
// argument: the file, or standard input when there is none or it is "-". It
// returns the data and a name for messages.
//
// A file that cannot be opened or read (missing, a directory, no
// permission) is bad input. When the input is a terminal, it says on
// stderr that it reads standard input. A long read shows its progress
// (see newTicker).
func readInput(e *env, cmd string, args []string) (data []byte, name string, err error) {
	in, name := e.stdin, "standard input"
	size := int64(-1)
	fromFile := len(args) == 1 && args[0] != "-"
	if fromFile {
		f, err := openFile("", args[0])
		if err != nil {
			return nil, "", err
		}
		defer f.Close()
		if st, err := f.Stat(); err == nil {
			size = st.Size()
		}
		in, name = f, args[0]
	}
	typed := !fromFile && isTerminal(e.stdin)
	if typed {
		fmt.Fprintf(e.stderr, "%s: reading standard input (give a FILE, or end the input with Ctrl-D)\n", cmd)
	}
	t := newTicker(e.stderr, typed, cmd+": reading "+name, size, "bytes") // no progress over what is typed
	defer t.done()
	if data, err = io.ReadAll(io.TeeReader(in, t)); err != nil {
		return nil, "", badInputf("reading %s: %v", name, err)
	}
	return data, name, nil
}

// openFile opens a file named by the user (by flag, or an argument when
// flag is ""); a missing or unreadable file, or a directory, is bad input.
func openFile(flag, path string) (*os.File, error) {
	what := path
	if flag != "" {
		what = flag + " " + path
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, badInputf("%s: %v", what, pathErr(err))
	}
	if st, err := f.Stat(); err == nil && st.IsDir() {
		f.Close()
		return nil, badInputf("%s: is a directory, want a file", what)
	}
	return f, nil
}

// checkOutFile checks, before any work, that path can be created as a file:
// it is not a directory and its directory exists.
func checkOutFile(flag, path string) error {
	if st, err := os.Stat(path); err == nil && st.IsDir() {
		return badInputf("%s %s: is a directory, want a file name", flag, path)
	}
	dir := filepath.Dir(path)
	if st, err := os.Stat(dir); err != nil {
		return badInputf("%s %s: directory %s: %v", flag, path, dir, pathErr(err))
	} else if !st.IsDir() {
		return badInputf("%s %s: %s is not a directory", flag, path, dir)
	}
	return nil
}

// checkOutDir checks, before any work, that path is a directory or can be
// created as one: neither it nor a parent is an existing file.
func checkOutDir(flag, path string) error {
	for p := filepath.Clean(path); ; p = filepath.Dir(p) {
		if st, err := os.Stat(p); err == nil {
			if !st.IsDir() {
				if p == filepath.Clean(path) {
					return badInputf("%s %s: is a file, want a directory", flag, path)
				}
				return badInputf("%s %s: %s is a file, not a directory", flag, path, p)
			}
			return nil
		}
		if parent := filepath.Dir(p); parent == p {
			return nil
		}
	}
}

// pathErr drops the path and operation from an *fs.PathError (the caller
// names the path itself).
func pathErr(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// commands lists the subcommands in the order help shows them.
func commands(e *env) []*cobra.Command {
	return []*cobra.Command{
		newAssignCmd(e),
		newCoreCmd(e),
		newSelectCmd(e),
		newEstimateCmd(e),
		newBalanceCmd(e),
		newLabCmd(e),
		newDemoCmd(e),
		newNodeCmd(e), newCACmd(e), newClusterCmd(e),
		newTokenCmd(e), newBotCmd(e), newControlCmd(e), newProbeCmd(e), newDashboardCmd(e),
	}
}
