package tsclient_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	tsclient "github.com/overworld/overworld/clients/ts"
)

// TestEverySourceTranspilesAlone transpiles each TypeScript source by
// itself with esbuild's transform API: no source may need another's
// types to compile (re-exported types are marked as such), and none may
// keep TypeScript syntax a browser cannot run.
func TestEverySourceTranspilesAlone(t *testing.T) {
	var files []string
	for _, dir := range []string{"src", "test"} {
		m, err := filepath.Glob(filepath.Join(tsclient.Dir(), dir, "*.ts"))
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, m...)
	}
	if len(files) < 8 {
		t.Fatalf("found only %d TypeScript sources", len(files))
	}
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		js, err := tsclient.Transform(src, filepath.Base(f))
		if err != nil {
			t.Errorf("%s: %v", f, err)
			continue
		}
		if strings.Contains(string(js), " as const") || strings.Contains(string(js), "interface ") {
			t.Errorf("%s: TypeScript left in the output", f)
		}
	}
}
