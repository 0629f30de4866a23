package player

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestNonceFile: a nonce used before a restart is refused after it (the
// verifier reopened on the same file); a torn last record (a crash while
// writing a nonce whose token was never accepted) is dropped; expired
// nonces are forgotten when the file opens; a token for another node or
// world is refused before its nonce is recorded.
func TestNonceFile(t *testing.T) {
	pub, priv := testKey(1)
	path := filepath.Join(t.TempDir(), NonceFile)
	now := time.Unix(1_800_000_000, 0)
	open := func(at time.Time) (*Verifier, *FileNonces) {
		s, err := OpenNonceFile(path, at.Unix())
		if err != nil {
			t.Fatal(err)
		}
		v, err := NewVerifier(VerifierConfig{Key: pub, Audience: testAud, Store: s})
		if err != nil {
			t.Fatal(err)
		}
		return v, s
	}
	v, s := open(now)
	tok, _ := IssueToken(priv, "alice", testAud, now, time.Minute, nil)
	long, _ := IssueToken(priv, "bob", testAud, now, 5*time.Minute, nil)
	other, _ := IssueToken(priv, "carol", Audience{World: testAud.World, Node: 2}, now, time.Minute, nil)
	world, _ := IssueToken(priv, "dave", Audience{World: "elsewhere", Node: 1}, now, time.Minute, nil)
	for _, tk := range [][]byte{tok, long} {
		if _, err := v.Verify(tk, now); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := v.Verify(other, now); !errors.Is(err, ErrTokenNode) {
		t.Fatalf("a token for node 2: %v", err)
	}
	if _, err := v.Verify(world, now); !errors.Is(err, ErrTokenWorld) {
		t.Fatalf("a token for another world: %v", err)
	}
	s.Close()
	// A torn record at the end.
	f, _ := os.OpenFile(path, os.O_WRONLY|os.O_APPEND, 0)
	f.Write([]byte{1, 2, 3})
	f.Close()
	v, s = open(now.Add(10 * time.Second))
	if _, err := v.Verify(tok, now.Add(10*time.Second)); !errors.Is(err, ErrTokenReplayed) {
		t.Fatalf("alice's token after a restart: %v, want ErrTokenReplayed", err)
	}
	if v.Nonces() != 2 {
		t.Fatalf("%d nonces after the restart, want 2", v.Nonces())
	}
	s.Close()
	// Two minutes later alice's token has expired: her nonce is forgotten,
	// bob's kept.
	v, s = open(now.Add(2 * time.Minute))
	defer s.Close()
	if v.Nonces() != 1 {
		t.Fatalf("%d nonces after alice's token expired, want 1", v.Nonces())
	}
	if _, err := v.Verify(long, now.Add(2*time.Minute)); !errors.Is(err, ErrTokenReplayed) {
		t.Fatalf("bob's token: %v, want ErrTokenReplayed", err)
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 || fi.Size()%nonceRecord != 0 {
		t.Fatalf("nonce file mode %v, size %d", fi.Mode(), fi.Size())
	}
}
