package plane

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/overworld/overworld/live/pki"
	"github.com/overworld/overworld/live/player"
)

// hostsPlane is a plane serving POST /v1/hosts: its CA, the token key,
// and a function that posts a request.
func hostsPlane(t *testing.T) (*httptest.Server, *pki.CA, ed25519.PrivateKey, player.Audience) {
	t.Helper()
	now := time.Now()
	ca, err := pki.InitCA(t.TempDir(), "test", now, 48*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	pub, priv, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	_, nodes := newFakeWorld(t, 2)
	aud := player.Audience{World: player.DefaultWorld, Node: 999}
	s, err := New(Config{Nodes: nodes, Hosts: &Hosts{CA: ca, Key: pub, Audience: aud, First: 100, Last: 101}, AdminToken: "shared-secret-of-the-servers"})
	if err != nil {
		t.Fatal(err)
	}
	hs := httptest.NewServer(s.Handler())
	t.Cleanup(hs.Close)
	return hs, ca, priv, aud
}

func csrPEM(t *testing.T) []byte {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{}, key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})
}

// TestHosts: a player's token and CSR get a certificate of the cluster's
// CA for a player host ID, the same ID for the same player; a replayed
// token, a token for another audience, a bad CSR and a full ID range are
// refused, and a refused request burns no token and gives no ID.
func TestHosts(t *testing.T) {
	hs, ca, key, aud := hostsPlane(t)
	token := func(p string, a player.Audience) string {
		tok, err := player.IssueToken(key, player.PlayerID(p), a, time.Now(), time.Minute, nil)
		if err != nil {
			t.Fatal(err)
		}
		return player.EncodeToken(tok)
	}
	post := func(tok string, csr []byte) (int, HostGrant, string) {
		b, _ := json.Marshal(HostRequest{Token: tok, CSR: string(csr)})
		resp, err := http.Post(hs.URL+"/v1/hosts", "application/json", bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var g HostGrant
		var msg bytes.Buffer
		msg.ReadFrom(resp.Body)
		if resp.StatusCode == http.StatusOK {
			if err := json.Unmarshal(msg.Bytes(), &g); err != nil {
				t.Fatal(err)
			}
		}
		return resp.StatusCode, g, msg.String()
	}
	check := func(g HostGrant, want uint32) {
		t.Helper()
		b, _ := pem.Decode([]byte(g.Cert))
		if b == nil {
			t.Fatalf("no certificate in %q", g.Cert)
		}
		c, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.Verify(x509.VerifyOptions{Roots: ca.Pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
			t.Fatalf("certificate does not verify: %v", err)
		}
		if id, err := pki.NodeIDOf(c); err != nil || uint32(id) != want || g.Node != want {
			t.Fatalf("certificate for node %d (%v), grant %d; want %d", id, err, g.Node, want)
		}
	}
	tokA := token("alice", aud)
	if code, _, msg := post(tokA, []byte("not a csr")); code != http.StatusBadRequest || !strings.Contains(msg, "certificate request") {
		t.Fatalf("bad CSR: %d %s", code, msg)
	}
	code, g, msg := post(tokA, csrPEM(t)) // the refused request burnt no token
	if code != http.StatusOK {
		t.Fatalf("alice: %d %s", code, msg)
	}
	check(g, 100)
	if code, _, msg := post(tokA, csrPEM(t)); code != http.StatusUnauthorized || !strings.Contains(msg, "already used") {
		t.Fatalf("replayed token: %d %s", code, msg)
	}
	if code, _, _ := post(token("bob", player.Audience{World: aud.World, Node: 1}), csrPEM(t)); code != http.StatusUnauthorized {
		t.Fatalf("token for node 1: %d", code)
	}
	code, g, _ = post(token("alice", aud), csrPEM(t))
	if code != http.StatusOK {
		t.Fatalf("alice again: %d", code)
	}
	check(g, 100)
	code, g, _ = post(token("bob", aud), csrPEM(t))
	if code != http.StatusOK {
		t.Fatalf("bob: %d", code)
	}
	check(g, 101)
	if code, _, msg := post(token("carol", aud), csrPEM(t)); code != http.StatusServiceUnavailable {
		t.Fatalf("IDs exhausted: %d %s", code, msg)
	}
	if code, _, _ := post(token("carol", aud)+"x", csrPEM(t)); code != http.StatusBadRequest {
		t.Fatalf("bad token encoding: %d", code)
	}
}

// TestHostsConfig: a plane refuses a host range that overlaps its nodes,
// and a CA without its key.
func TestHostsConfig(t *testing.T) {
	_, nodes := newFakeWorld(t, 2)
	ca, err := pki.InitCA(t.TempDir(), "test", time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	pub, _, _ := ed25519.GenerateKey(rand.Reader)
	aud := player.Audience{World: "main", Node: 999}
	for i, h := range []Hosts{
		{CA: ca, Key: pub, Audience: aud, First: 1, Last: 5},
		{CA: &pki.CA{Cert: ca.Cert, Pool: ca.Pool}, Key: pub, Audience: aud, First: 100, Last: 105},
		{CA: ca, Key: pub[:3], Audience: aud, First: 100, Last: 105},
		{CA: ca, Key: pub, Audience: aud, First: 105, Last: 100},
	} {
		if _, err := New(Config{Nodes: nodes, Hosts: &h}); !errors.Is(err, ErrConfig) {
			t.Errorf("hosts config %d: %v", i, err)
		}
	}
}

// TestHostsFile: a [hosts] section of the configuration file gives a
// plane serving POST /v1/hosts; a missing CA is refused.
func TestHostsFile(t *testing.T) {
	dir := t.TempDir()
	if _, err := pki.InitCA(filepath.Join(dir, "ca"), "test", time.Now(), time.Hour); err != nil {
		t.Fatal(err)
	}
	if _, err := player.InitKeys(filepath.Join(dir, "keys"), nil); err != nil {
		t.Fatal(err)
	}
	_, nodes := newFakeWorld(t, 2)
	var b strings.Builder
	b.WriteString("listen = \"127.0.0.1:0\"\n")
	for _, n := range nodes {
		fmt.Fprintf(&b, "[[nodes]]\nid = %d\nsite = %q\ncapacity = 3\nadmin = %q\nplayer_quic = %q\n", n.ID, n.Site, n.Admin, n.QUIC)
	}
	hosts := fmt.Sprintf("[hosts]\nca_dir = %q\ntoken_key = %q\naudience_node = 999\nfirst = 100\nlast = 199\nvalidity = \"1h\"\n",
		filepath.Join(dir, "ca"), filepath.Join(dir, "keys", player.PublicKeyFile))
	f, err := ParseFile([]byte(b.String() + hosts))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := f.Config()
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(cfg)
	if err != nil || s.hosts == nil || s.hosts.cfg.Validity != time.Hour {
		t.Fatalf("plane from [hosts]: %v", err)
	}
	f, err = ParseFile([]byte(b.String() + strings.Replace(hosts, filepath.Join(dir, "ca"), filepath.Join(dir, "nope"), 1)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Config(); !errors.Is(err, ErrConfig) {
		t.Fatalf("missing CA: %v", err)
	}
}

// TestRequestHostCert: the client's side gets a node file the node
// daemon loads (pki.ParseNode with the CA returned) for the node granted,
// and reports a refusal with the plane's message.
func TestRequestHostCert(t *testing.T) {
	hs, _, key, aud := hostsPlane(t)
	tok, err := player.IssueToken(key, "dave", aud, time.Now(), time.Minute, nil)
	if err != nil {
		t.Fatal(err)
	}
	hc, err := RequestHostCert(context.Background(), hs.Client(), hs.URL, player.EncodeToken(tok))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "ca.crt"), hc.CA, 0o644); err != nil {
		t.Fatal(err)
	}
	ca, err := pki.LoadCAFiles(filepath.Join(dir, "ca.crt"), "", false)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := pki.ParseNode(hc.NodeFile, ca); err != nil || hc.Node != 100 {
		t.Fatalf("node file for node %d: %v", hc.Node, err)
	}
	// Marked a player host's: it vouches only for avatars it created.
	if cb, _ := pem.Decode(hc.NodeFile); cb == nil {
		t.Fatal("no certificate in the node file")
	} else if c, err := x509.ParseCertificate(cb.Bytes); err != nil || !pki.IsPlayerHost(c) {
		t.Fatalf("the player host's certificate is not marked one (%v)", err)
	}
	// The host's own admin secret, not the servers'.
	if want := HostAdminToken("shared-secret-of-the-servers", 100); hc.Admin != want || strings.Contains(hc.Admin, "shared") {
		t.Fatalf("admin secret %q, want %q", hc.Admin, want)
	}
	if _, err := RequestHostCert(context.Background(), hs.Client(), hs.URL, player.EncodeToken(tok)); err == nil || !strings.Contains(err.Error(), "already used") {
		t.Fatalf("replayed token: %v", err)
	}
}
