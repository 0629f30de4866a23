package pki

import (
	"crypto/x509"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/overworld/overworld/wire"
)

func newCA(t *testing.T, now time.Time) (*CA, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "ca")
	ca, err := InitCA(dir, "", now, 365*24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return ca, dir
}

func TestCAFiles(t *testing.T) {
	now := time.Now()
	_, dir := newCA(t, now)
	st, err := os.Stat(filepath.Join(dir, CAKeyFile))
	if err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("CA key mode %v (err %v), want 0600", st.Mode().Perm(), err)
	}
	if _, err := InitCA(dir, "", now, time.Hour); !errors.Is(err, ErrExists) {
		t.Errorf("second InitCA: %v, want ErrExists", err)
	}
	if _, err := InitCA(t.TempDir(), "", now, 0); !errors.Is(err, ErrValidity) {
		t.Errorf("InitCA with zero validity: %v, want ErrValidity", err)
	}
	ca, err := LoadCA(dir, true)
	if err != nil {
		t.Fatal(err)
	}
	data, err := ca.Issue(7, now, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "n7.pem")
	if err := WriteNodeFile(out, data); err != nil {
		t.Fatal(err)
	}
	if err := WriteNodeFile(out, data); !errors.Is(err, ErrExists) {
		t.Errorf("overwriting a node file: %v, want ErrExists", err)
	}
	id, err := LoadNode(out, ca)
	if err != nil || id.ID != 7 {
		t.Fatalf("LoadNode: id %v, err %v", id, err)
	}
	if _, err := ca.Issue(8, now, 2*365*24*time.Hour); !errors.Is(err, ErrValidity) {
		t.Errorf("a certificate outliving the CA: %v, want ErrValidity", err)
	}
	verifyOnly, _ := LoadCA(dir, false)
	if _, err := verifyOnly.Issue(8, now, time.Hour); !errors.Is(err, ErrBadFile) {
		t.Errorf("issuing without the key: %v, want ErrBadFile", err)
	}
	// A node file from another CA does not load against this one.
	other, _ := newCA(t, now)
	od, _ := other.Issue(7, now, time.Hour)
	if _, err := ParseNode(od, ca); !errors.Is(err, ErrBadFile) {
		t.Errorf("node file of another CA: %v, want ErrBadFile", err)
	}
	for _, bad := range [][]byte{nil, []byte("junk"), data[:len(data)/2]} {
		if _, err := ParseNode(bad, ca); !errors.Is(err, ErrBadFile) {
			t.Errorf("ParseNode(%d bytes of junk): %v, want ErrBadFile", len(bad), err)
		}
	}
}

// TestVerify checks every refusal: another CA, expired, not yet valid,
// another node than expected; and acceptance otherwise.
func TestVerify(t *testing.T) {
	now := time.Now()
	ca, _ := newCA(t, now.Add(-72*time.Hour))
	other, _ := newCA(t, now)
	self := mustIdentity(t, ca, 1, now, time.Hour)
	good := mustIdentity(t, ca, 2, now, time.Hour)
	expired := mustIdentity(t, ca, 2, now.Add(-48*time.Hour), time.Hour)
	foreign := mustIdentity(t, other, 2, now, time.Hour)
	var refused int
	self.OnRefuse = func(error) { refused++ }
	two, three := wire.NodeID(2), wire.NodeID(3)
	raw := func(id *Identity) [][]byte { return id.Cert.Certificate }
	if got, err := self.Verify(raw(good), x509.ExtKeyUsageClientAuth, nil); err != nil || got != 2 {
		t.Errorf("good peer: %v %v", got, err)
	}
	if got, err := self.Verify(raw(good), x509.ExtKeyUsageServerAuth, &two); err != nil || got != 2 {
		t.Errorf("good peer, expected node 2: %v %v", got, err)
	}
	for name, c := range map[string]struct {
		raw  [][]byte
		want *wire.NodeID
	}{
		"another CA": {raw(foreign), nil}, "expired": {raw(expired), nil},
		"wrong node": {raw(good), &three}, "no certificate": {nil, nil}, "garbage": {[][]byte{{1, 2, 3}}, nil},
	} {
		if _, err := self.Verify(c.raw, x509.ExtKeyUsageClientAuth, c.want); !errors.Is(err, ErrRefused) {
			t.Errorf("%s: %v, want ErrRefused", name, err)
		}
		cfg := self.ServerConfig(ALPNTest)
		if err := cfg.VerifyPeerCertificate(c.raw, nil); err == nil {
			if c.want == nil {
				t.Errorf("%s: the server config accepted it", name)
			}
		}
	}
	if refused != 4 { // the wrong-node case is accepted by a server (it expects no node)
		t.Errorf("%d refusals counted by the server config, want 4", refused)
	}
	// Not yet valid.
	self.Now = func() time.Time { return now.Add(-2 * time.Hour) }
	if _, err := self.Verify(raw(good), x509.ExtKeyUsageClientAuth, nil); !errors.Is(err, ErrRefused) {
		t.Errorf("not yet valid: %v, want ErrRefused", err)
	}
}

const ALPNTest = "test"

func mustIdentity(t *testing.T, ca *CA, id wire.NodeID, now time.Time, validity time.Duration) *Identity {
	t.Helper()
	data, err := ca.Issue(id, now, validity)
	if err != nil {
		t.Fatal(err)
	}
	ident, err := ParseNode(data, ca)
	if err != nil {
		t.Fatal(err)
	}
	return ident
}

// TestVerifyIssuer: a node certificate of the CA verifies as an issuer,
// even for a node Admit refuses; one of another CA, an expired one, a
// revoked one, a CA certificate and garbage do not.
func TestVerifyIssuer(t *testing.T) {
	now := time.Now()
	ca, err := NewCA("", now, 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := NewCA("", now, 0); !errors.Is(err, ErrValidity) {
		t.Errorf("NewCA with zero validity: %v", err)
	}
	other, _ := NewCA("", now, 24*time.Hour)
	ident := func(ca *CA, id wire.NodeID) *Identity {
		data, err := ca.Issue(id, now, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		n, err := ParseNode(data, ca)
		if err != nil {
			t.Fatal(err)
		}
		return n
	}
	verifier, n3, foreign := ident(ca, 1), ident(ca, 3), ident(other, 3)
	verifier.Admit = func(wire.NodeID) bool { return false }
	if _, node, err := verifier.VerifyIssuer(n3.Leaf.Raw, now); err != nil || node != 3 {
		t.Fatalf("node 3's certificate: node %d, %v", node, err)
	}
	for name, c := range map[string]struct {
		der []byte
		at  time.Time
	}{
		"another CA's": {foreign.Leaf.Raw, now},
		"expired":      {n3.Leaf.Raw, now.Add(2 * time.Hour)},
		"the CA's":     {ca.Cert.Raw, now},
		"garbage":      {[]byte("garbage"), now},
		"empty":        {nil, now},
		"too long":     {make([]byte, MaxIssuerCert+1), now},
	} {
		if _, _, err := verifier.VerifyIssuer(c.der, c.at); !errors.Is(err, ErrRefused) {
			t.Errorf("%s certificate: %v, want a refusal", name, err)
		}
	}
	rv, err := ParseRevocations([]byte("node 3\n"))
	if err != nil {
		t.Fatal(err)
	}
	verifier.SetRevocations(rv)
	if _, _, err := verifier.VerifyIssuer(n3.Leaf.Raw, now); !errors.Is(err, ErrRevoked) {
		t.Errorf("a revoked node's certificate: %v", err)
	}
}
