// Command overworld is the command-line entry point of overworld: it assigns
// players to servers, selects cores, runs the lab experiments that reproduce
// the papers, and runs the demo. All logic lives in cmd/overworld/cli and the
// packages below it; main only hands over the arguments and the exit status.
package main

import (
	"os"

	"github.com/overworld/overworld/cmd/overworld/cli"
)

func main() {
	os.Exit(cli.Run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}
