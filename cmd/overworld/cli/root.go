// Package cli implements the overworld command line (cobra commands). It owns
// flag parsing, file and stdin/stdout handling, and exit statuses; every
// algorithm it runs lives in the library packages (geo, place, lab). Callers
// use Run, which never calls os.Exit.
//
// Exit statuses: 0 success, 1 failure while running, 2 bad usage or
// malformed input (nothing is written to stdout in that case).
package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
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
		Long: "overworld places players, regions and instances on geo-distributed servers where latency\n" +
			"is lowest and fairest, within capacity. This command runs its algorithms on files or on the\n" +
			"embedded real latency data, and runs the lab experiments that reproduce the published results.",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetIn(e.stdin)
	root.SetOut(e.stdout)
	root.SetErr(e.stderr)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return badInput(err) })
	root.AddCommand(commands(e)...)
	return root
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
	var ue usageError
	if errors.As(err, &ue) || isCobraUsage(err) {
		if cmd != nil && isCobraUsage(err) {
			fmt.Fprintf(stderr, "run 'overworld %s --help' for usage\n", cmd.Name())
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
func readInput(e *env, args []string) (data []byte, name string, err error) {
	in, name := e.stdin, "standard input"
	if len(args) == 1 && args[0] != "-" {
		f, err := os.Open(args[0])
		if err != nil {
			return nil, "", badInput(err)
		}
		defer f.Close()
		in, name = f, args[0]
	}
	if data, err = io.ReadAll(in); err != nil {
		return nil, "", fmt.Errorf("reading %s: %w", name, err)
	}
	return data, name, nil
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
		newTokenCmd(e), newBotCmd(e),
	}
}
