// Package tsclient holds overworld's TypeScript client SDK and the two
// browser pages built on it, and builds them with esbuild (no Node.js or
// npm needed).
//
// The sources are in src/: proto.ts (every client protocol message, byte
// for byte as live/player), view.ts (the State decoder), client.ts (the
// WebSocket client: join, inputs, acknowledgements, redirects followed
// make-before-break, reconnection with backoff), arena.ts (the arena
// game's input), index.ts (the SDK's one ES module), play.ts (the arena
// game in the browser) and dashboard.ts (the live dashboard). test/ holds
// the TypeScript checks that run under goja in go test and in Chromium.
//
// Bundle builds the files a node serves; live/web embeds them (its
// generator, cmd/genweb, writes them, and a test fails when they are not
// current). Caller duties: pass the directory of this package's sources
// (Dir from a test or generator run inside the module).
package tsclient

import (
	"errors"
	"fmt"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/evanw/esbuild/pkg/api"
)

// Entries are the bundles a node serves: output name → entry point.
var Entries = map[string]string{
	"overworld.js": "src/index.ts",
	"play.js":      "src/play.ts",
	"dashboard.js": "src/dashboard.ts",
}

// Dir returns this package's source directory (where src/ and test/ are),
// from the location of this file at build time: usable from tests and
// generators run inside the module.
func Dir() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(file)
}

// Bundle builds every entry of Entries from dir as an ES module for
// ES2020 browsers, and returns each output by name.
func Bundle(dir string) (map[string][]byte, error) {
	out := map[string][]byte{}
	for name, entry := range Entries {
		b, err := build(dir, entry, api.FormatESModule, "")
		if err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		out[name] = b
	}
	return out, nil
}

// Script builds entry (a path under dir) as one classic script that
// assigns its exports to the global variable global: for engines without
// ES modules, such as goja.
func Script(dir, entry, global string) ([]byte, error) {
	return build(dir, entry, api.FormatIIFE, global)
}

func build(dir, entry string, format api.Format, global string) ([]byte, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, err
	}
	res := api.Build(api.BuildOptions{
		AbsWorkingDir: abs,
		EntryPoints:   []string{entry},
		Bundle:        true,
		Format:        format,
		GlobalName:    global,
		Target:        api.ES2020,
		Platform:      api.PlatformBrowser,
		Charset:       api.CharsetUTF8,
		LegalComments: api.LegalCommentsNone,
		Outfile:       "out.js",
		Write:         false,
		LogLevel:      api.LogLevelSilent,
	})
	if len(res.Errors) > 0 {
		var msgs []string
		for _, m := range api.FormatMessages(res.Errors, api.FormatMessagesOptions{Kind: api.ErrorMessage}) {
			msgs = append(msgs, strings.TrimSpace(m))
		}
		return nil, errors.New(strings.Join(msgs, "\n"))
	}
	if len(res.OutputFiles) != 1 {
		return nil, fmt.Errorf("esbuild wrote %d files, want 1", len(res.OutputFiles))
	}
	return res.OutputFiles[0].Contents, nil
}

// Module builds entry (a path under dir) as one ES module.
func Module(dir, entry string) ([]byte, error) {
	return build(dir, entry, api.FormatESModule, "")
}

// Transform transpiles one TypeScript source on its own with esbuild's
// transform API (types stripped, imports kept): every source must, as
// TypeScript compiled file by file requires.
func Transform(src []byte, name string) ([]byte, error) {
	res := api.Transform(string(src), api.TransformOptions{Loader: api.LoaderTS, Format: api.FormatESModule,
		Target: api.ES2020, Sourcefile: name, LogLevel: api.LogLevelSilent})
	if len(res.Errors) > 0 {
		var msgs []string
		for _, m := range api.FormatMessages(res.Errors, api.FormatMessagesOptions{Kind: api.ErrorMessage}) {
			msgs = append(msgs, strings.TrimSpace(m))
		}
		return nil, errors.New(strings.Join(msgs, "\n"))
	}
	return res.Code, nil
}
