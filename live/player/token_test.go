package player

import (
	"bytes"
	"crypto/ed25519"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func testKey(seed byte) (ed25519.PublicKey, ed25519.PrivateKey) {
	pub, priv, _ := ed25519.GenerateKey(rand.NewChaCha8([32]byte{seed}))
	return pub, priv
}

func TestTokenVerify(t *testing.T) {
	pub, priv := testKey(1)
	_, other := testKey(2)
	now := time.Unix(1_800_000_000, 0)
	v, err := NewVerifier(VerifierConfig{Key: pub, Audience: testAud, MaxTTL: 24 * time.Hour, MaxNonces: 3})
	if err != nil {
		t.Fatal(err)
	}
	tok, err := IssueToken(priv, "alice", testAud, now, time.Hour, nil)
	if err != nil {
		t.Fatal(err)
	}
	s, err := DecodeToken(EncodeToken(tok) + "\n")
	if err != nil || !bytes.Equal(s, tok) {
		t.Fatalf("printed token does not round-trip: %v", err)
	}
	forged, _ := IssueToken(other, "alice", testAud, now, time.Hour, nil)
	long, _ := IssueToken(priv, "alice", testAud, now, 48*time.Hour, nil)
	early, _ := IssueToken(priv, "alice", testAud, now.Add(time.Hour), time.Hour, nil)
	for _, c := range []struct {
		name string
		tok  []byte
		at   time.Time
		want error
	}{
		{"forged", forged, now, ErrTokenSignature},
		{"truncated", tok[:len(tok)-1], now, ErrTokenMalformed},
		{"expired", tok, now.Add(time.Hour), ErrTokenExpired},
		{"too long", long, now, ErrTokenTTL},
		{"early", early, now, ErrTokenEarly},
	} {
		if _, err := v.Verify(c.tok, c.at); !errors.Is(err, c.want) || !errors.Is(err, ErrToken) {
			t.Errorf("%s: got %v, want %v", c.name, err, c.want)
		}
	}
	for i := range tok { // every single-bit change is refused
		bad := bytes.Clone(tok)
		bad[i] ^= 1 << (i % 8)
		if _, err := v.Verify(bad, now); err == nil {
			t.Fatalf("token with bit flipped in byte %d accepted", i)
		}
	}
	if v.Nonces() != 0 {
		t.Fatalf("refused tokens left %d nonces", v.Nonces())
	}
	c, err := v.Verify(tok, now)
	if err != nil || c.Player != "alice" || !c.Expires.Equal(now.Add(time.Hour)) {
		t.Fatalf("valid token: %+v %v", c, err)
	}
	if _, err := v.Verify(tok, now.Add(time.Minute)); !errors.Is(err, ErrTokenReplayed) {
		t.Fatalf("replay: %v", err)
	}
	// The replay cache is bounded: full of unexpired nonces it refuses; once
	// they expire it forgets them.
	for i := range 2 {
		tk, _ := IssueToken(priv, "bob", testAud, now, time.Duration(i+1)*time.Minute, nil)
		if _, err := v.Verify(tk, now); err != nil {
			t.Fatal(err)
		}
	}
	tk, _ := IssueToken(priv, "carol", testAud, now, time.Hour, nil)
	if _, err := v.Verify(tk, now); !errors.Is(err, ErrReplayFull) {
		t.Fatalf("full cache: %v", err)
	}
	if _, err := v.Verify(tk, now.Add(3*time.Minute)); err != nil || v.Nonces() != 2 {
		t.Fatalf("after expiry: %v, %d nonces", err, v.Nonces())
	}
	if _, err := IssueToken(priv, "has space", testAud, now, time.Hour, nil); err == nil {
		t.Fatal("player ID with a space accepted")
	}
}

func TestKeyFiles(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "coord")
	pub, err := InitKeys(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := InitKeys(dir, nil); err == nil {
		t.Fatal("InitKeys overwrote a key")
	}
	priv, err := LoadPrivateKey(dir)
	if err != nil {
		t.Fatal(err)
	}
	pub2, err := LoadPublicKey(dir)
	if err != nil || !pub.Equal(pub2) || !priv.Public().(ed25519.PublicKey).Equal(pub) {
		t.Fatalf("keys do not match: %v", err)
	}
	if fi, _ := os.Stat(filepath.Join(dir, PrivateKeyFile)); fi.Mode().Perm() != 0o600 {
		t.Fatalf("private key mode %v", fi.Mode())
	}
	if err := os.WriteFile(filepath.Join(dir, PublicKeyFile), []byte("junk"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LoadPublicKey(dir); err == nil {
		t.Fatal("junk public key accepted")
	}
}

func FuzzParseToken(f *testing.F) {
	_, priv := testKey(1)
	tok, _ := IssueToken(priv, "alice", testAud, time.Unix(1_800_000_000, 0), time.Hour, nil)
	f.Add(tok)
	f.Add([]byte{1, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		c, body, sig, err := ParseToken(b)
		if err != nil {
			return
		}
		if got := append(appendClaims(nil, c), sig...); !bytes.Equal(got, b) || !bytes.Equal(body, b[:len(b)-len(sig)]) {
			t.Fatalf("parsed token does not re-encode to its bytes")
		}
	})
}

// testAud is the audience of the package's test verifiers and tokens.
var testAud = Audience{World: "test", Node: 1}
