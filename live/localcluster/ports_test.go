package localcluster

import (
	"os"
	"path/filepath"
	"testing"
)

// TestFreeAddrsDistinct: a cluster's ports are never handed out twice,
// per network, however often the system offers a released one again.
func TestFreeAddrsDistinct(t *testing.T) {
	f := freeAddrs{}
	seen := map[string]bool{}
	for range 40 {
		for _, nw := range []string{"udp", "tcp"} {
			a, err := f.next(nw)
			if err != nil {
				t.Fatal(err)
			}
			if k := nw + " " + a; seen[k] {
				t.Fatalf("%s handed out twice", k)
			} else {
				seen[k] = true
			}
		}
	}
}

// TestLogTail: a node's start-up failure quotes its log's last lines.
func TestLogTail(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "node1.log")
	if err := os.WriteFile(p, []byte("a\n\nb\nc\nlisten udp 127.0.0.1:4000: bind: address already in use\n\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	want := ": b\n  c\n  listen udp 127.0.0.1:4000: bind: address already in use"
	if got := logTail(p, 3); got != want {
		t.Errorf("logTail = %q, want %q", got, want)
	}
	if got := logTail(filepath.Join(dir, "missing.log"), 3); got != "" {
		t.Errorf("missing log: %q", got)
	}
	empty := filepath.Join(dir, "empty.log")
	if err := os.WriteFile(empty, []byte("\n \n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := logTail(empty, 3); got != "" {
		t.Errorf("empty log: %q", got)
	}
}
