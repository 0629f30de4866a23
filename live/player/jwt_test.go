package player

import (
	"crypto/ed25519"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// TestJWT: a verifier given a JWT key accepts a standard EdDSA JWT whose
// claims name this world and node, once; it refuses one for another node
// or world, an expired one, one valid for too long, one of another
// algorithm or key, one without jti, and "alg: none".
func TestJWT(t *testing.T) {
	pub, _ := testKey(1)
	jpub, jpriv := testKey(3)
	_, other := testKey(4)
	now := time.Unix(1_800_000_000, 0)
	v, err := NewVerifier(VerifierConfig{Key: pub, Audience: testAud, JWTKey: jpub, JWTIssuer: "backend"})
	if err != nil {
		t.Fatal(err)
	}
	sign := func(key ed25519.PrivateKey, m jwt.MapClaims) []byte {
		s, err := jwt.NewWithClaims(jwt.SigningMethodEdDSA, m).SignedString(key)
		if err != nil {
			t.Fatal(err)
		}
		return []byte(s)
	}
	claims := func(mod func(jwt.MapClaims)) jwt.MapClaims {
		m := jwt.MapClaims{"sub": "alice", "aud": []string{"other/9", "test/1"}, "iat": now.Unix(), "exp": now.Add(time.Minute).Unix(),
			"jti": "j-1", "iss": "backend"}
		if mod != nil {
			mod(m)
		}
		return m
	}
	good := sign(jpriv, claims(nil))
	c, err := v.Verify(good, now)
	if err != nil || c.Player != "alice" || c.Audience != testAud || !c.Expires.Equal(now.Add(time.Minute)) {
		t.Fatalf("a good JWT: %+v, %v", c, err)
	}
	if _, err := v.Verify(good, now); !errors.Is(err, ErrTokenReplayed) {
		t.Fatalf("the JWT again: %v, want ErrTokenReplayed", err)
	}
	none, _ := jwt.NewWithClaims(jwt.SigningMethodNone, claims(func(m jwt.MapClaims) { m["jti"] = "n" })).SignedString(jwt.UnsafeAllowNoneSignatureType)
	for _, tc := range []struct {
		name string
		tok  []byte
		want error
	}{
		{"another node", sign(jpriv, claims(func(m jwt.MapClaims) { m["aud"] = "test/2"; m["jti"] = "a" })), ErrTokenNode},
		{"another world", sign(jpriv, claims(func(m jwt.MapClaims) { m["aud"] = "elsewhere/1"; m["jti"] = "b" })), ErrTokenWorld},
		{"expired", sign(jpriv, claims(func(m jwt.MapClaims) { m["exp"] = now.Unix(); m["jti"] = "c" })), ErrTokenExpired},
		{"too long", sign(jpriv, claims(func(m jwt.MapClaims) { m["exp"] = now.Add(time.Hour).Unix(); m["jti"] = "d" })), ErrTokenTTL},
		{"another key", sign(other, claims(func(m jwt.MapClaims) { m["jti"] = "e" })), ErrTokenSignature},
		{"the coordinator's key", sign(func() ed25519.PrivateKey { _, k := testKey(1); return k }(), claims(func(m jwt.MapClaims) { m["jti"] = "f" })), ErrTokenSignature},
		{"no jti", sign(jpriv, claims(func(m jwt.MapClaims) { delete(m, "jti") })), ErrTokenMalformed},
		{"no exp", sign(jpriv, claims(func(m jwt.MapClaims) { delete(m, "exp"); m["jti"] = "g" })), ErrTokenMalformed},
		{"another issuer", sign(jpriv, claims(func(m jwt.MapClaims) { m["iss"] = "mallory"; m["jti"] = "h" })), ErrTokenMalformed},
		{"bad player", sign(jpriv, claims(func(m jwt.MapClaims) { m["sub"] = "has space"; m["jti"] = "i" })), ErrTokenMalformed},
		{"alg none", []byte(none), ErrTokenSignature},
		{"garbage", []byte("eyJ" + strings.Repeat("A", 50)), ErrTokenMalformed},
	} {
		if _, err := v.Verify(tc.tok, now); !errors.Is(err, tc.want) || !errors.Is(err, ErrToken) {
			t.Errorf("%s: %v, want %v", tc.name, err, tc.want)
		}
	}
	if v.Nonces() != 1 {
		t.Fatalf("%d nonces after the refusals, want 1", v.Nonces())
	}
	// A verifier without a JWT key refuses them.
	plain, _ := NewVerifier(VerifierConfig{Key: pub, Audience: testAud})
	if _, err := plain.Verify(sign(jpriv, claims(func(m jwt.MapClaims) { m["jti"] = "z" })), now); !errors.Is(err, ErrTokenMalformed) {
		t.Fatalf("a JWT at a node without a JWT key: %v", err)
	}
	// And the Join message carries one.
	tok, _, err := parseFirst(AppendJoin(nil, good))
	if err != nil || string(tok) != string(good) {
		t.Fatalf("a Join with a JWT: %v", err)
	}
}
