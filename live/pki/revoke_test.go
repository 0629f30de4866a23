package pki

import (
	"bytes"
	"crypto/x509"
	"encoding/binary"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/overworld/overworld/wire"
)

// TestAdmitRevokeReload: a peer whose valid certificate names a node the
// cluster has not admitted is refused (ErrNotMember); a revoked
// certificate (by serial or by node) is refused (ErrRevoked); Reload
// swaps the node's certificate and keeps the node ID, and refuses a file
// of another node without changing anything.
func TestAdmitRevokeReload(t *testing.T) {
	now := time.Now()
	ca, dir := newCA(t, now)
	self := mustIdentity(t, ca, 1, now, time.Hour)
	peer := mustIdentity(t, ca, 2, now, time.Hour)
	raw := [][]byte{peer.Leaf.Raw}
	self.Admit = func(id wire.NodeID) bool { return id == 3 }
	if _, err := self.Verify(raw, x509.ExtKeyUsageClientAuth, nil); !errors.Is(err, ErrNotMember) || !errors.Is(err, ErrRefused) {
		t.Fatalf("a node not admitted: %v, want ErrNotMember", err)
	}
	self.Admit = func(wire.NodeID) bool { return true }
	if _, err := self.Verify(raw, x509.ExtKeyUsageClientAuth, nil); err != nil {
		t.Fatal(err)
	}
	for _, list := range []string{"serial " + peer.Leaf.SerialNumber.Text(16) + "\n", "# comment\nnode 2 # all of it\n"} {
		r, err := ParseRevocations([]byte(list))
		if err != nil {
			t.Fatal(err)
		}
		self.SetRevocations(r)
		if _, err := self.Verify(raw, x509.ExtKeyUsageClientAuth, nil); !errors.Is(err, ErrRevoked) {
			t.Errorf("revoked by %q: %v, want ErrRevoked", list, err)
		}
	}
	self.SetRevocations(nil)
	if _, err := self.Verify(raw, x509.ExtKeyUsageClientAuth, nil); err != nil {
		t.Fatalf("after the revocation is lifted: %v", err)
	}
	for _, bad := range []string{"serial\n", "serial zz\n", "node 0\n", "node x\n", "host 1\n", "serial -5\n"} {
		if _, err := ParseRevocations([]byte(bad)); !errors.Is(err, ErrBadFile) {
			t.Errorf("revocation list %q: %v, want ErrBadFile", bad, err)
		}
	}

	// Reload: a new certificate for node 1 replaces the old one.
	write := func(name string, id wire.NodeID) string {
		data, err := ca.Issue(id, now, time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(t.TempDir(), name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	caFile := filepath.Join(dir, CACertFile)
	old := self.Current()
	if err := self.Reload(write("two.pem", 2), caFile, now); err == nil || self.Current() != old {
		t.Fatalf("reload with node 2's certificate: %v, certificate changed %v", err, self.Current() != old)
	}
	if err := self.Reload(write("one.pem", 1), caFile, now); err != nil || self.Current() == old {
		t.Fatalf("reload: %v, certificate changed %v", err, self.Current() != old)
	}
}

// FuzzVerifyCert: whatever certificate chain a peer presents in the
// handshake (all a node parses of a peer before it is authenticated),
// Verify accepts it only if it is the genuine certificate of an admitted
// node, refuses anything else with an error wrapping ErrRefused, and never
// panics.
func FuzzVerifyCert(f *testing.F) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	ca, err := InitCA(filepath.Join(f.TempDir(), "ca"), "", now, 24*time.Hour)
	if err != nil {
		f.Fatal(err)
	}
	data, err := ca.Issue(2, now, time.Hour)
	if err != nil {
		f.Fatal(err)
	}
	peer, err := ParseNode(data, ca)
	if err != nil {
		f.Fatal(err)
	}
	self := &Identity{ID: 1, CA: ca, Now: func() time.Time { return now.Add(time.Minute) }}
	self.Admit = func(id wire.NodeID) bool { return id == 2 }
	chain := func(parts ...[]byte) []byte {
		var b []byte
		for _, p := range parts {
			b = binary.AppendUvarint(b, uint64(len(p)))
			b = append(b, p...)
		}
		return b
	}
	f.Add(chain(peer.Leaf.Raw))
	f.Add(chain(peer.Leaf.Raw, ca.Cert.Raw))
	f.Add(chain(ca.Cert.Raw))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		var raw [][]byte
		for len(b) > 0 && len(raw) < 4 {
			n, k := binary.Uvarint(b)
			if k <= 0 || n > uint64(len(b)-k) {
				break
			}
			raw = append(raw, b[k:k+int(n)])
			b = b[k+int(n):]
		}
		id, err := self.Verify(raw, x509.ExtKeyUsageClientAuth, nil)
		if err != nil {
			if !errors.Is(err, ErrRefused) {
				t.Fatalf("refusal %v does not wrap ErrRefused", err)
			}
			return
		}
		if id != 2 || !bytes.Equal(raw[0], peer.Leaf.Raw) {
			t.Fatalf("accepted a chain naming node %d that is not node 2's certificate", id)
		}
	})
}

// FuzzRevocations: a revocation list parses or is refused with ErrBadFile;
// a parsed list revokes exactly what it names.
func FuzzRevocations(f *testing.F) {
	f.Add([]byte("serial 0a:1b\nnode 7 # gone\n\n"))
	f.Add([]byte("node 65535\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := ParseRevocations(b)
		if err != nil {
			if !errors.Is(err, ErrBadFile) {
				t.Fatalf("refusal %v does not wrap ErrBadFile", err)
			}
			return
		}
		if r.Len() > MaxRevocations {
			t.Fatalf("%d entries", r.Len())
		}
		for id := range r.nodes {
			if id == 0 || !r.RevokesNode(id) {
				t.Fatalf("node %d", id)
			}
		}
	})
}
