package cli

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/overworld/overworld/live/pki"
	"github.com/overworld/overworld/live/plane"
	"github.com/overworld/overworld/live/player"
)

// TestNodePlayerHost: "node --player-host" with no node certificate asks
// the plane for one with the player's token, writes it with the CA, and
// takes the node ID it names; started again, it keeps that certificate
// and asks nothing (the token, single-use, would be refused). The node
// stops afterwards at a missing coordinator key, before it binds anything.
func TestNodePlayerHost(t *testing.T) {
	dir := t.TempDir()
	ca, err := pki.InitCA(filepath.Join(dir, "plane-ca"), "test", time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	aud := player.Audience{World: player.DefaultWorld, Node: 999}
	p, err := plane.New(plane.Config{Nodes: []plane.Node{
		{ID: 1, Site: "London", Capacity: 2, Admin: "http://127.0.0.1:1", QUIC: "127.0.0.1:2"},
		{ID: 2, Site: "Tokyo", Capacity: 2, Admin: "http://127.0.0.1:3", QUIC: "127.0.0.1:4"},
	}, Hosts: &plane.Hosts{CA: ca, Key: pub, Audience: aud, First: 300, Last: 310, Validity: 30 * time.Minute}, AdminToken: "shared-secret-of-the-servers"})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(p.Handler())
	defer hs.Close()
	tok, err := player.IssueToken(priv, "erin", aud, time.Now(), time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	tokFile := filepath.Join(dir, "token")
	if err := os.WriteFile(tokFile, []byte(player.EncodeToken(tok)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	nodeFile, caFile := filepath.Join(dir, "host.pem"), filepath.Join(dir, "ca.crt")
	cfg := fmt.Sprintf("id = 5\n[tls]\nca_cert = %q\nnode_cert = %q\n[listen]\nnode = \"127.0.0.1:0\"\nadmin = \"\"\nplayer_quic = \"127.0.0.1:0\"\n[players]\ncoordinator_key = %q\n[[peers]]\nid = 1\naddr = \"127.0.0.1:1\"\n", caFile, nodeFile, filepath.Join(dir, "nope.pub"))
	path := filepath.Join(dir, "node.toml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		code, _, errs := run(t, "", "node", "--config", path, "--player-host", hs.URL, "--player-token", tokFile)
		if code != 2 || !strings.Contains(errs, "coordinator_key") {
			t.Fatalf("run %d: exit %d, stderr %q; want the coordinator key refused after the certificate", i, code, errs)
		}
		data, err := os.ReadFile(nodeFile)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := pem.Decode(data)
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		if id, err := pki.NodeIDOf(c); err != nil || id != 300 {
			t.Fatalf("run %d: certificate for node %d (%v), want 300", i, id, err)
		}
		// The host's own admin secret, beside its certificate.
		sec, err := os.ReadFile(nodeFile + ".admin")
		if want := plane.HostAdminToken("shared-secret-of-the-servers", 300); err != nil || strings.TrimSpace(string(sec)) != want {
			t.Fatalf("run %d: admin secret %q (%v), want %q", i, sec, err, want)
		}
	}
	// A first run that finds another secret where it would write its own
	// refuses it rather than overwrite it.
	os.Remove(nodeFile)
	if err := os.WriteFile(nodeFile+".admin", []byte("someone else's secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tok2, err := player.IssueToken(priv, "erin", aud, time.Now(), time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(tokFile, []byte(player.EncodeToken(tok2)+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if code, _, errs := run(t, "", "node", "--config", path, "--player-host", hs.URL, "--player-token", tokFile); code != 2 || !strings.Contains(errs, "another admin secret") {
		t.Fatalf("another secret in the way: exit %d, %q", code, errs)
	}
	if code, _, errs := run(t, "", "node", "--config", path, "--player-host", hs.URL); code != 2 || !strings.Contains(errs, "go together") {
		t.Fatalf("no token: exit %d, %q", code, errs)
	}
}
