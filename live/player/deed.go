package player

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"errors"
	"fmt"
	"time"

	"github.com/overworld/overworld/live/pki"
	"github.com/overworld/overworld/world"
)

// Avatar deeds. A node gives a player that joined (or took its avatar
// back with a Rejoin) a deed: the avatar, the player (the subject of
// the token it joined with), the world, issue and expiry times, signed
// with the node's TLS key and carrying the node's certificate. A Rejoin
// must present it: any node of the cluster verifies the certificate
// against the cluster CA (pki.Identity.VerifyIssuer: chained to the CA,
// unexpired, a node certificate, not revoked) and the signature with it,
// so that only the player who owned an avatar takes it back after a
// handoff or a failover, whichever node issued the deed and whether or
// not that node still lives. Nodes share no key and no state for it: the
// CA that already admits them to the cluster vouches for their deeds. A
// player host's certificate (pki.RolePlayerHost, a player's machine)
// vouches only for the avatars its node created.

// Deed errors. Every refusal wraps ErrDeed and one of the specific
// sentinels.
var (
	ErrDeed          = errors.New("player: avatar deed refused")
	ErrDeedMissing   = errors.New("no avatar deed (the node that gave the avatar issues one after the join)")
	ErrDeedMalformed = errors.New("malformed deed")
	ErrDeedIssuer    = errors.New("deed issuer is not a node of this cluster")
	ErrDeedSignature = errors.New("bad deed signature")
	ErrDeedExpired   = errors.New("deed expired")
	ErrDeedEarly     = errors.New("deed issued in the future")
	ErrDeedTTL       = errors.New("deed lifetime exceeds the node's DeedTTL")
	ErrDeedWorld     = errors.New("deed is for another world")
	ErrDeedAvatar    = errors.New("deed is for another avatar")
	ErrDeedPlayer    = errors.New("deed is another player's")
)

const (
	deedVersion = 1
	// deedDomain is prefixed to the signed bytes so that a deed
	// signature cannot be confused with any other use of a node's key
	// (its TLS handshakes sign with a different context string).
	deedDomain = "overworld avatar deed v1\x00"
	maxDeedSig = 96
	// MaxDeed is the longest deed in bytes: version, avatar, player,
	// world, two times, the certificate and the signature.
	MaxDeed = 1 + 8 + 1 + MaxPlayerID + 1 + MaxWorld + 16 + 2 + pki.MaxIssuerCert + 1 + maxDeedSig
	// DefaultDeedTTL is Config.DeedTTL's default, as long as a Rejoin's
	// token stays good (VerifierConfig.MaxSession's default): a playing
	// player's deed is renewed at half its life, and a lost session's
	// stays good for a day.
	DefaultDeedTTL = 24 * time.Hour
	// deedSkew is the clock difference tolerated between the issuing
	// node and the verifying one.
	deedSkew = 30 * time.Second
)

// Deed is what an avatar deed says: which avatar of which world
// belongs to which player, from when to when, and the certificate of
// the node that says so (Cert, DER).
type Deed struct {
	Avatar  world.ObjectID
	Player  PlayerID
	World   string
	Issued  time.Time // second resolution
	Expires time.Time // second resolution
	Cert    []byte

	signed, sig []byte
}

// Deed layout (all integers big-endian):
//
//	version   1 byte (1)
//	avatar    8 bytes (not 0)
//	idLen     1 byte (1..64), then the player ID
//	worldLen  1 byte (1..64), then the world
//	issued    8 bytes, Unix seconds
//	expires   8 bytes, Unix seconds (after issued)
//	certLen   2 bytes (1..pki.MaxIssuerCert), then the issuing node's certificate, DER
//	sigLen    1 byte (1..96), then the signature by the certificate's key
//	          over deedDomain || every byte above: ECDSA with SHA-256
//	          (ASN.1) for an ECDSA key, Ed25519 for an Ed25519 key

// IssueDeed signs a deed for player's avatar in world with cert (the
// node's certificate and private key, as pki.Identity.Current returns),
// valid from now for ttl.
func IssueDeed(cert *tls.Certificate, avatar world.ObjectID, player PlayerID, worldName string, now time.Time, ttl time.Duration) ([]byte, error) {
	if cert == nil || len(cert.Certificate) == 0 {
		return nil, fmt.Errorf("player: deed: no node certificate")
	}
	key, ok := cert.PrivateKey.(crypto.Signer)
	if !ok {
		return nil, fmt.Errorf("player: deed: node key %T cannot sign", cert.PrivateKey)
	}
	der := cert.Certificate[0]
	switch {
	case avatar == 0:
		return nil, fmt.Errorf("player: deed: avatar 0")
	case len(der) > pki.MaxIssuerCert:
		return nil, fmt.Errorf("player: deed: node certificate of %d bytes, limit %d", len(der), pki.MaxIssuerCert)
	case ttl < time.Second:
		return nil, fmt.Errorf("player: deed TTL %v, want at least 1s", ttl)
	}
	if err := player.Validate(); err != nil {
		return nil, err
	}
	if err := (Audience{World: worldName, Node: 1}).Validate(); err != nil {
		return nil, err
	}
	b := make([]byte, 0, 40+len(player)+len(worldName)+len(der)+80)
	b = append(b, deedVersion)
	b = binary.BigEndian.AppendUint64(b, uint64(avatar))
	b = append(b, byte(len(player)))
	b = append(b, player...)
	b = append(b, byte(len(worldName)))
	b = append(b, worldName...)
	b = binary.BigEndian.AppendUint64(b, uint64(now.Unix()))
	b = binary.BigEndian.AppendUint64(b, uint64(now.Add(ttl).Unix()))
	b = binary.BigEndian.AppendUint16(b, uint16(len(der)))
	b = append(b, der...)
	msg := append([]byte(deedDomain), b...)
	var sig []byte
	var err error
	switch key.Public().(type) {
	case *ecdsa.PublicKey:
		d := sha256.Sum256(msg)
		sig, err = key.Sign(rand.Reader, d[:], crypto.SHA256)
	case ed25519.PublicKey:
		sig, err = key.Sign(nil, msg, crypto.Hash(0))
	default:
		return nil, fmt.Errorf("player: deed: node key %T, want ECDSA or Ed25519", key.Public())
	}
	if err != nil {
		return nil, fmt.Errorf("player: deed: signing: %w", err)
	}
	if len(sig) == 0 || len(sig) > maxDeedSig {
		return nil, fmt.Errorf("player: deed: a %d-byte signature", len(sig))
	}
	b = append(b, byte(len(sig)))
	return append(b, sig...), nil
}

// ParseDeed decodes a deed without checking its issuer, signature or
// times (VerifyDeed does). Cert aliases b. Errors wrap ErrDeed and
// ErrDeedMalformed and say what is wrong.
func ParseDeed(b []byte) (Deed, error) {
	bad := func(format string, args ...any) (Deed, error) {
		return Deed{}, fmt.Errorf("%w: %w: %s", ErrDeed, ErrDeedMalformed, fmt.Sprintf(format, args...))
	}
	if len(b) == 0 {
		return bad("empty")
	}
	if len(b) > MaxDeed {
		return bad("%d bytes, limit %d", len(b), MaxDeed)
	}
	if b[0] != deedVersion {
		return bad("version %d, want %d", b[0], deedVersion)
	}
	p := b[1:]
	take := func(n int) []byte {
		if p == nil {
			return nil
		}
		if len(p) < n {
			p = nil
			return nil
		}
		v := p[:n]
		p = p[n:]
		return v
	}
	var t Deed
	av := take(8)
	if av == nil {
		return bad("%d bytes, truncated in the avatar", len(b))
	}
	t.Avatar = world.ObjectID(binary.BigEndian.Uint64(av))
	if t.Avatar == 0 {
		return bad("avatar 0")
	}
	n := take(1)
	var id []byte
	if n != nil {
		id = take(int(n[0]))
	}
	if id == nil {
		return bad("%d bytes, truncated in the player ID", len(b))
	}
	t.Player = PlayerID(id)
	if err := t.Player.Validate(); err != nil {
		return bad("player: %v", errors.Unwrap(err))
	}
	n = take(1)
	var w []byte
	if n != nil {
		w = take(int(n[0]))
	}
	if w == nil {
		return bad("%d bytes, truncated in the world", len(b))
	}
	t.World = string(w)
	if err := (Audience{World: t.World, Node: 1}).Validate(); err != nil {
		return bad("world: %v", errors.Unwrap(err))
	}
	times := take(16)
	if times == nil {
		return bad("%d bytes, truncated in the times", len(b))
	}
	issued, expires := int64(binary.BigEndian.Uint64(times)), int64(binary.BigEndian.Uint64(times[8:]))
	if issued < 0 || expires <= issued || expires > 1<<40 {
		return bad("times %d..%d out of range", issued, expires)
	}
	t.Issued, t.Expires = time.Unix(issued, 0), time.Unix(expires, 0)
	cl := take(2)
	if cl == nil {
		return bad("%d bytes, truncated in the certificate length", len(b))
	}
	if c := int(binary.BigEndian.Uint16(cl)); c == 0 || c > pki.MaxIssuerCert {
		return bad("certificate of %d bytes, want 1 to %d", c, pki.MaxIssuerCert)
	}
	t.Cert = take(int(binary.BigEndian.Uint16(cl)))
	if t.Cert == nil {
		return bad("%d bytes, truncated in the certificate", len(b))
	}
	t.signed = b[:len(b)-len(p)]
	sl := take(1)
	if sl == nil {
		return bad("%d bytes, truncated before the signature", len(b))
	}
	if sl[0] == 0 || sl[0] > maxDeedSig {
		return bad("signature of %d bytes, want 1 to %d", sl[0], maxDeedSig)
	}
	t.sig = take(int(sl[0]))
	if t.sig == nil {
		return bad("%d bytes, truncated in the signature", len(b))
	}
	if len(p) != 0 {
		return bad("%d trailing bytes", len(p))
	}
	return t, nil
}

// VerifyDeed parses b and checks it at now: its certificate is a node's
// of ident's cluster (ident.VerifyIssuer), the signature verifies with
// it, it was issued at most 30 s in the future, is unexpired, and is
// valid for at most maxTTL. It does not check what it is for (avatar,
// player, world): the caller compares them with the Rejoin. Errors wrap
// ErrDeed and a specific sentinel.
func VerifyDeed(b []byte, ident *pki.Identity, now time.Time, maxTTL time.Duration) (Deed, error) {
	t, err := ParseDeed(b)
	if err != nil {
		return Deed{}, err
	}
	cert, node, err := ident.VerifyIssuer(t.Cert, now)
	if err != nil {
		return Deed{}, fmt.Errorf("%w: %w: %w", ErrDeed, ErrDeedIssuer, err)
	}
	if pki.IsPlayerHost(cert) && t.Avatar.Origin() != uint32(node) {
		// A player's machine vouches only for the avatars it created: any
		// other deed from it could hand its player someone else's avatar.
		return Deed{}, fmt.Errorf("%w: %w: player host %d vouches only for avatars it created, not %v", ErrDeed, ErrDeedIssuer, node, t.Avatar)
	}
	var alg x509.SignatureAlgorithm
	switch cert.PublicKeyAlgorithm {
	case x509.ECDSA:
		alg = x509.ECDSAWithSHA256
	case x509.Ed25519:
		alg = x509.PureEd25519
	default:
		return Deed{}, fmt.Errorf("%w: %w: node %d has a %v key", ErrDeed, ErrDeedSignature, node, cert.PublicKeyAlgorithm)
	}
	if err := cert.CheckSignature(alg, append([]byte(deedDomain), t.signed...), t.sig); err != nil {
		return Deed{}, fmt.Errorf("%w: %w (issuer node %d)", ErrDeed, ErrDeedSignature, node)
	}
	switch {
	case t.Issued.After(now.Add(deedSkew)):
		return Deed{}, fmt.Errorf("%w: %w (%v)", ErrDeed, ErrDeedEarly, t.Issued.UTC())
	case !now.Before(t.Expires):
		return Deed{}, fmt.Errorf("%w: %w at %v", ErrDeed, ErrDeedExpired, t.Expires.UTC())
	case t.Expires.Sub(t.Issued) > maxTTL:
		return Deed{}, fmt.Errorf("%w: %w (%v > %v)", ErrDeed, ErrDeedTTL, t.Expires.Sub(t.Issued), maxTTL)
	}
	return t, nil
}
