package cli

import (
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/overworld/overworld/live/pki"
)

// TestControlWithoutNodes: "overworld control" with no [[nodes]] refuses
// a configuration whose enrolling regions have no site, saying why, and
// starts with one whose region has a site: ready, it refuses joins with
// 503 until an enrolled game server is a placement target.
func TestControlWithoutNodes(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	caDir := filepath.Join(dir, "ca")
	if _, err := pki.InitCA(caDir, "test", time.Now(), 24*time.Hour); err != nil {
		t.Fatal(err)
	}
	secret := write("eu-west.secret", "an enrollment secret of 16+ bytes\n")
	addr := freePort(t, "tcp")
	hosts := "[hosts]\nca_dir = " + quote(caDir) + "\nstate_file = " + quote(filepath.Join(dir, "hosts.json")) +
		"\n[[hosts.enroll]]\nregion = \"eu-west\"\nsecret_file = " + quote(secret) + "\nfirst = 100\nlast = 120\n"
	bad := write("bad.toml", "listen = "+quote(addr)+"\n"+hosts)
	code, _, errs := run(t, "", "control", "--config", bad)
	if code != 2 || !strings.Contains(errs, "want at least 2") || !strings.Contains(errs, "site") {
		t.Fatalf("no nodes, no site: exit %d, %q; want 2 and the reason", code, errs)
	}
	good := write("plane.toml", "listen = "+quote(addr)+"\npoll = \"100ms\"\n"+hosts+"site = \"London\"\n")
	pl := startProc(t, "plane", dir, "control", "--config", good)
	defer pl.stop(t)
	deadline := time.Now().Add(10 * time.Second)
	for {
		resp, err := http.Get("http://" + addr + "/readyz")
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK && strings.Contains(string(b), "no game server is a placement target yet") {
				break
			}
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(pl.log)
			t.Fatalf("/readyz not ready within 10 s (%v):\n%s", err, b)
		}
		time.Sleep(50 * time.Millisecond)
	}
	resp, err := http.Post("http://"+addr+"/v1/join", "application/json", strings.NewReader(`{"player": "p1", "pings": [{"node": 100, "rtt_ms": 5}]}`))
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(b), "no game server is a placement target yet") {
		t.Errorf("join: %s %q; want 503 naming the reason", resp.Status, b)
	}
}

// quote is s as a TOML basic string.
func quote(s string) string { return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"` }
