package player

import (
	"crypto/sha256"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Standard JWTs. A game backend that already issues JSON Web Tokens can
// admit players with them instead of overworld's own tokens: a Verifier
// given VerifierConfig.JWTKey accepts, besides its own tokens, a compact
// JWT signed with EdDSA (Ed25519) by that key, whose claims are
//
//	sub  the player ID (1 to 64 printable bytes, no spaces)
//	aud  one entry "WORLD/NODE": the world and the one node it admits to
//	     (other entries are ignored)
//	iat  issue time, exp  expiry (both required; exp − iat ≤ MaxTTL)
//	jti  a unique ID (1 to 128 bytes): the nonce of single use
//	iss  the issuer, checked when VerifierConfig.JWTIssuer is set
//
// and nothing else is required. The rules are those of overworld's tokens
// (audience, lifetime, single use at that node, remembered across
// restarts); any other algorithm, "none" included, is refused.

// jwtClaims is what a player JWT carries.
type jwtClaims struct {
	jwt.RegisteredClaims
}

// isJWT reports whether tok looks like a compact JWS (overworld's tokens
// start with their version byte, a JWT with the base64url of "{").
func isJWT(tok []byte) bool { return len(tok) > 2 && tok[0] == 'e' && tok[1] == 'y' }

// maxJWT bounds a JWT's length (it travels in a Join, at most
// MaxClientMessage bytes).
const maxJWT = 1000

// checkJWT verifies a JWT's signature and decodes its claims; the caller
// checks them like an overworld token's.
func (v *Verifier) checkJWT(tok []byte) (Claims, error) {
	bad := func(format string, args ...any) (Claims, error) {
		return Claims{}, fmt.Errorf("%w: %w: JWT: %s", ErrToken, ErrTokenMalformed, fmt.Sprintf(format, args...))
	}
	if v.cfg.JWTKey == nil {
		return bad("this node accepts no JWTs")
	}
	if len(tok) > maxJWT {
		return bad("%d bytes, want at most %d", len(tok), maxJWT)
	}
	var c jwtClaims
	p := jwt.NewParser(jwt.WithValidMethods([]string{"EdDSA"}), jwt.WithoutClaimsValidation(), jwt.WithStrictDecoding())
	_, err := p.ParseWithClaims(string(tok), &c, func(*jwt.Token) (any, error) { return v.cfg.JWTKey, nil })
	if err != nil {
		if strings.Contains(err.Error(), "signature") {
			return Claims{}, fmt.Errorf("%w: %w: JWT: %v", ErrToken, ErrTokenSignature, err)
		}
		return bad("%v", err)
	}
	out := Claims{Player: PlayerID(c.Subject)}
	if err := out.Player.Validate(); err != nil {
		return bad("sub: %v", err)
	}
	if c.IssuedAt == nil || c.ExpiresAt == nil {
		return bad("iat and exp are required")
	}
	out.Issued, out.Expires = c.IssuedAt.Truncate(time.Second), c.ExpiresAt.Truncate(time.Second)
	if out.Expires.Before(out.Issued) {
		return bad("exp before iat")
	}
	if c.ID == "" || len(c.ID) > 128 {
		return bad("jti has %d bytes, want 1 to 128", len(c.ID))
	}
	if v.cfg.JWTIssuer != "" && c.Issuer != v.cfg.JWTIssuer {
		return bad("iss %q, want %q", c.Issuer, v.cfg.JWTIssuer)
	}
	found := false
	for _, a := range c.Audience {
		world, node, ok := strings.Cut(a, "/")
		n, err := strconv.ParseUint(node, 10, 16)
		if !ok || err != nil {
			continue
		}
		aud := Audience{World: world, Node: uint32(n)}
		if aud.Validate() != nil {
			continue
		}
		// The entry for this world (and, if there are several, for this
		// node) is the token's audience.
		if !found || aud == v.cfg.Audience {
			out.Audience, found = aud, true
		}
	}
	if !found {
		return bad("aud names no WORLD/NODE")
	}
	h := sha256.Sum256([]byte("overworld jwt jti\x00" + c.ID))
	copy(out.Nonce[:], h[:])
	return out, nil
}
