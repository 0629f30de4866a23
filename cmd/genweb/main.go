// Command genweb builds the TypeScript client SDK and the browser pages
// (clients/ts) with esbuild and writes them where live/web embeds them:
// go generate ./live/web runs it. Usage: genweb -out DIR.
package main

import (
	"flag"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"

	tsclient "github.com/overworld/overworld/clients/ts"
)

func main() {
	out := flag.String("out", "", "directory to write the bundles to (live/web/dist)")
	flag.Parse()
	if *out == "" || flag.NArg() != 0 {
		fmt.Fprintln(os.Stderr, "usage: genweb -out DIR")
		os.Exit(2)
	}
	files, err := tsclient.Bundle(tsclient.Dir())
	if err != nil {
		fmt.Fprintln(os.Stderr, "genweb:", err)
		os.Exit(1)
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, "genweb:", err)
		os.Exit(1)
	}
	for _, name := range slices.Sorted(maps.Keys(files)) {
		if err := os.WriteFile(filepath.Join(*out, name), files[name], 0o644); err != nil {
			fmt.Fprintln(os.Stderr, "genweb:", err)
			os.Exit(1)
		}
		fmt.Printf("%s: %d bytes\n", filepath.Join(*out, name), len(files[name]))
	}
}
