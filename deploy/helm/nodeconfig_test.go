package helm

import (
	"context"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/overworld/overworld/live"
	"github.com/overworld/overworld/live/pki"
	"github.com/overworld/overworld/live/plane"
)

// parseNodeConfig parses a node configuration as "overworld node" does
// (paths are absolute in the chart's).
func parseNodeConfig(toml string) (live.DaemonConfig, error) {
	return live.ParseDaemonConfig([]byte(toml), "/")
}

// parsePlaneConfig parses the control plane's file as "overworld control"
// reads it.
func parsePlaneConfig(toml string) error {
	_, err := plane.ParseFile([]byte(toml))
	return err
}

// planeFromChart builds the control plane "overworld control" would run
// from the chart's plane.toml as rendered (LoadFile, Config, New), with
// the files its Secrets hold made in a temporary directory (a fresh CA;
// an enrollment secret for each of regions, returned by region).
func planeFromChart(t *testing.T, toml string, regions []string) (*plane.Server, plane.Config, map[string][]byte) {
	t.Helper()
	dir := t.TempDir()
	if _, err := pki.InitCA(filepath.Join(dir, "ca"), "test", time.Now(), 48*time.Hour); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dir, "enroll"), 0o755); err != nil {
		t.Fatal(err)
	}
	secrets := map[string][]byte{}
	for _, r := range regions {
		secrets[r] = []byte("the enrollment secret of " + r)
		if err := os.WriteFile(filepath.Join(dir, "enroll", r), secrets[r], 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "admin.token"), []byte("an admin secret of 16+ bytes\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	toml = strings.NewReplacer("/etc/overworld/ca", filepath.Join(dir, "ca"), "/etc/overworld/enroll/", filepath.Join(dir, "enroll")+"/",
		"/var/lib/overworld/", dir+"/", "/etc/overworld/admin/admin.token", filepath.Join(dir, "admin.token")).Replace(toml)
	path := filepath.Join(dir, "plane.toml")
	if err := os.WriteFile(path, []byte(toml), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := plane.LoadFile(path)
	if err != nil {
		t.Fatalf("plane.toml: %v\n%s", err, toml)
	}
	cfg, err := f.Config()
	if err != nil {
		t.Fatalf("plane.toml: %v\n%s", err, toml)
	}
	s, err := plane.New(cfg)
	if err != nil {
		t.Fatalf("plane.toml: %v\n%s", err, toml)
	}
	return s, cfg, secrets
}

// enrollWith enrolls game server gs of region with s.
func enrollWith(t *testing.T, s *plane.Server, gs, region string, secret []byte) (uint32, error) {
	t.Helper()
	hs := httptest.NewServer(s.Handler())
	defer hs.Close()
	hc, err := plane.RequestNodeCert(context.Background(), hs.Client(), hs.URL, plane.Enrollment{GameServer: gs, Region: region, Secret: secret}, time.Now())
	return hc.Node, err
}

// enrollPlaced enrolls game server gs of region with s, asking for
// placement pl.
func enrollPlaced(t *testing.T, s *plane.Server, gs, region string, secret []byte, pl plane.Placement) (uint32, error) {
	t.Helper()
	hs := httptest.NewServer(s.Handler())
	defer hs.Close()
	hc, err := plane.RequestNodeCert(context.Background(), hs.Client(), hs.URL,
		plane.Enrollment{GameServer: gs, Region: region, Secret: secret, Placement: pl}, time.Now())
	return hc.Node, err
}
