package player

import (
	"crypto/ed25519"
	"crypto/rand"
	"crypto/x509"
	"encoding/base64"
	"encoding/binary"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"
	"unicode"
)

// PlayerID names a player: 1 to MaxPlayerID bytes of printable,
// non-space characters (what the coordinator puts in a token).
type PlayerID string

// MaxPlayerID is the longest player ID in bytes.
const MaxPlayerID = 64

// Validate reports whether id is a usable player ID.
func (id PlayerID) Validate() error {
	if len(id) == 0 || len(id) > MaxPlayerID {
		return fmt.Errorf("%w: player ID has %d bytes, want 1 to %d", ErrToken, len(id), MaxPlayerID)
	}
	for _, r := range string(id) {
		if r == unicode.ReplacementChar || !unicode.IsPrint(r) || unicode.IsSpace(r) {
			return fmt.Errorf("%w: player ID %q has a non-printable or space character", ErrToken, string(id))
		}
	}
	return nil
}

// Token errors. Every refusal wraps ErrToken and one of the specific
// sentinels, so callers can count them by cause.
var (
	ErrToken          = errors.New("player: token refused")
	ErrTokenMalformed = errors.New("malformed token")
	ErrTokenSignature = errors.New("bad token signature")
	ErrTokenExpired   = errors.New("token expired")
	ErrTokenEarly     = errors.New("token issued in the future")
	ErrTokenTTL       = errors.New("token lifetime exceeds the verifier's MaxTTL")
	ErrTokenReplayed  = errors.New("token already used")
	ErrReplayFull     = errors.New("replay cache full")
	ErrTokenWorld     = errors.New("token is for another world")
	ErrTokenNode      = errors.New("token is for another node")
	ErrReplayStore    = errors.New("replay store failed")
)

const (
	tokenVersion = 2
	nonceLen     = 16
	// tokenDomain is prefixed to the signed bytes so that a token
	// signature cannot be confused with any other use of the key.
	tokenDomain = "overworld player token v2\x00"
	// MaxWorld is the longest world name in bytes.
	MaxWorld = 64
	// maxTokenLen bounds an encoded token: version, ID length, ID, world
	// length, world, node, two times, nonce and signature.
	maxTokenLen = 2 + MaxPlayerID + 1 + MaxWorld + 2 + 16 + nonceLen + ed25519.SignatureSize
	// MaxTokenLen is the longest token in bytes.
	MaxTokenLen = maxTokenLen
)

// DefaultWorld is the world a node serves and a token names when the
// configuration names none.
const DefaultWorld = "main"

// Audience is whom a token is for: one world, and the one node of it the
// player may join with it. A node refuses a token whose audience is not
// itself; the nonce's single use is then enforced by that node alone (its
// replay store), so a token cannot be replayed at another node, and a
// restarted node keeps refusing it when its replay store is a file.
type Audience struct {
	World string // 1 to MaxWorld printable bytes, no spaces
	Node  uint32 // 1 to 65535
}

// Validate reports whether a is a usable audience.
func (a Audience) Validate() error {
	if len(a.World) == 0 || len(a.World) > MaxWorld {
		return fmt.Errorf("%w: world name has %d bytes, want 1 to %d", ErrToken, len(a.World), MaxWorld)
	}
	for _, r := range a.World {
		if r == unicode.ReplacementChar || !unicode.IsPrint(r) || unicode.IsSpace(r) {
			return fmt.Errorf("%w: world name %q has a non-printable or space character", ErrToken, a.World)
		}
	}
	if a.Node < 1 || a.Node > 0xffff {
		return fmt.Errorf("%w: audience node %d, want 1 to 65535", ErrToken, a.Node)
	}
	return nil
}

// Claims is what a token says: who, for which world and node, when it
// was issued, until when it is valid, and a random nonce that makes it
// single-use.
type Claims struct {
	Player   PlayerID
	Audience Audience
	Issued   time.Time // second resolution
	Expires  time.Time // second resolution
	Nonce    [nonceLen]byte
}

// Token layout (all integers big-endian):
//
//	version  1 byte (2)
//	idLen    1 byte (1..64)
//	id       idLen bytes
//	worldLen 1 byte (1..64)
//	world    worldLen bytes
//	node     2 bytes (1..65535)
//	issued   8 bytes, Unix seconds
//	expires  8 bytes, Unix seconds
//	nonce    16 bytes
//	sig      64 bytes: Ed25519 over tokenDomain || all the bytes above
//
// Printed tokens are this, base64url without padding.

// IssueToken signs a token for player, good at aud only, valid from now
// for ttl, with a nonce read from rnd (crypto/rand.Reader when nil).
func IssueToken(key ed25519.PrivateKey, player PlayerID, aud Audience, now time.Time, ttl time.Duration, rnd io.Reader) ([]byte, error) {
	if len(key) != ed25519.PrivateKeySize {
		return nil, fmt.Errorf("player: coordinator private key has %d bytes, want %d", len(key), ed25519.PrivateKeySize)
	}
	if err := player.Validate(); err != nil {
		return nil, err
	}
	if err := aud.Validate(); err != nil {
		return nil, err
	}
	if ttl < time.Second {
		return nil, fmt.Errorf("player: token TTL %v, want at least 1s", ttl)
	}
	if rnd == nil {
		rnd = rand.Reader
	}
	c := Claims{Player: player, Audience: aud, Issued: now.Truncate(time.Second), Expires: now.Add(ttl).Truncate(time.Second)}
	if _, err := io.ReadFull(rnd, c.Nonce[:]); err != nil {
		return nil, fmt.Errorf("player: token nonce: %w", err)
	}
	b := appendClaims(make([]byte, 0, maxTokenLen), c)
	return append(b, ed25519.Sign(key, signed(b))...), nil
}

func appendClaims(b []byte, c Claims) []byte {
	b = append(b, tokenVersion, byte(len(c.Player)))
	b = append(b, c.Player...)
	b = append(b, byte(len(c.Audience.World)))
	b = append(b, c.Audience.World...)
	b = binary.BigEndian.AppendUint16(b, uint16(c.Audience.Node))
	b = binary.BigEndian.AppendUint64(b, uint64(c.Issued.Unix()))
	b = binary.BigEndian.AppendUint64(b, uint64(c.Expires.Unix()))
	return append(b, c.Nonce[:]...)
}

func signed(body []byte) []byte { return append([]byte(tokenDomain), body...) }

// ParseToken decodes a token without checking its signature or times
// (Verifier.Verify does both). It returns the claims, the signed body and
// the signature.
func ParseToken(tok []byte) (c Claims, body, sig []byte, err error) {
	bad := func(format string, args ...any) (Claims, []byte, []byte, error) {
		return Claims{}, nil, nil, fmt.Errorf("%w: %w: %s", ErrToken, ErrTokenMalformed, fmt.Sprintf(format, args...))
	}
	if len(tok) < 2 {
		return bad("%d bytes", len(tok))
	}
	if tok[0] != tokenVersion {
		return bad("version %d, want %d", tok[0], tokenVersion)
	}
	n := int(tok[1])
	if len(tok) < 3+n {
		return bad("%d bytes, too short for a %d-byte player ID", len(tok), n)
	}
	w := int(tok[2+n])
	want := 3 + n + w + 2 + 16 + nonceLen + ed25519.SignatureSize
	if len(tok) != want {
		return bad("%d bytes, want %d for a %d-byte player ID and a %d-byte world", len(tok), want, n, w)
	}
	c.Player = PlayerID(tok[2 : 2+n])
	if err := c.Player.Validate(); err != nil {
		return bad("%v", err)
	}
	p := tok[3+n:]
	c.Audience = Audience{World: string(p[:w]), Node: uint32(binary.BigEndian.Uint16(p[w:]))}
	if err := c.Audience.Validate(); err != nil {
		return bad("%v", err)
	}
	p = p[w+2:]
	issued, expires := int64(binary.BigEndian.Uint64(p)), int64(binary.BigEndian.Uint64(p[8:]))
	if issued < 0 || expires < issued || expires > 1<<40 {
		return bad("times %d..%d out of range", issued, expires)
	}
	c.Issued, c.Expires = time.Unix(issued, 0), time.Unix(expires, 0)
	copy(c.Nonce[:], p[16:])
	return c, tok[:want-ed25519.SignatureSize], tok[want-ed25519.SignatureSize:], nil
}

// EncodeToken prints a token as base64url without padding.
func EncodeToken(tok []byte) string { return base64.RawURLEncoding.EncodeToString(tok) }

// DecodeToken parses a printed token (surrounding white space ignored).
func DecodeToken(s string) ([]byte, error) {
	s = strings.TrimSpace(s)
	if len(s) > base64.RawURLEncoding.EncodedLen(maxTokenLen) {
		return nil, fmt.Errorf("%w: %w: %d characters", ErrToken, ErrTokenMalformed, len(s))
	}
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("%w: %w: %v", ErrToken, ErrTokenMalformed, err)
	}
	return b, nil
}

// VerifierConfig configures a Verifier.
type VerifierConfig struct {
	// Key is the coordinator's public key (required).
	Key ed25519.PublicKey
	// Audience is this node: the world it serves and its node ID
	// (required). A token for another world or another node is refused.
	Audience Audience
	// MaxTTL refuses tokens valid for longer: it bounds how long a nonce
	// stays in the replay store, and how long a leaked token is good for.
	// Default DefaultMaxTTL.
	MaxTTL time.Duration
	// MaxSession bounds how long after its issue a token may still be
	// presented in a Rejoin (a player handed off keeps the token it
	// joined with). Default 24h.
	MaxSession time.Duration
	// Skew is the clock difference tolerated between the coordinator and
	// the node (a token issued up to Skew in the future is accepted; an
	// expired one is refused at once). Default 30s.
	Skew time.Duration
	// MaxNonces bounds the replay store: when it is full of unexpired
	// nonces, new tokens are refused (ErrReplayFull) rather than
	// forgetting a nonce that could be replayed. Default 100,000.
	MaxNonces int
	// Store keeps used nonces (nil: process memory only, forgotten at a
	// restart). OpenNonceFile gives one that survives restarts.
	Store NonceStore
	// JWTKey, if set, makes the verifier accept standard JWTs signed with
	// EdDSA by this key as well (see jwt.go for their claims); JWTIssuer,
	// if set, is the "iss" they must name.
	JWTKey    ed25519.PublicKey
	JWTIssuer string
}

// DefaultMaxTTL is VerifierConfig.MaxTTL's default: tokens are meant to be
// issued just before a join.
const DefaultMaxTTL = 10 * time.Minute

// NonceStore records the nonces of used tokens, each until its token
// expires. Use must be atomic: of two calls with one nonce, at most one
// succeeds. A store's Use is called under the verifier's lock.
type NonceStore interface {
	// Use records nonce as used until expires (Unix seconds), or returns
	// ErrTokenReplayed if it is already recorded, ErrReplayFull if the
	// store holds max unexpired nonces (after forgetting the expired ones
	// at now), or an error wrapping ErrReplayStore if it cannot record it.
	Use(nonce [nonceLen]byte, expires, now int64, max int) error
	// Len returns the number of nonces recorded.
	Len() int
}

// Verifier checks player tokens on a node: signature, audience, expiry
// and single use (a replay store of nonces, each kept until its token
// expires). It is safe for concurrent use.
type Verifier struct {
	cfg VerifierConfig
	mu  sync.Mutex
}

// NewVerifier returns a verifier for tokens signed by cfg.Key for
// cfg.Audience.
func NewVerifier(cfg VerifierConfig) (*Verifier, error) {
	if len(cfg.Key) != ed25519.PublicKeySize {
		return nil, fmt.Errorf("player: coordinator public key has %d bytes, want %d", len(cfg.Key), ed25519.PublicKeySize)
	}
	if cfg.JWTKey != nil && len(cfg.JWTKey) != ed25519.PublicKeySize {
		return nil, fmt.Errorf("player: JWT public key has %d bytes, want %d", len(cfg.JWTKey), ed25519.PublicKeySize)
	}
	if err := cfg.Audience.Validate(); err != nil {
		return nil, fmt.Errorf("player: verifier audience: %w", err)
	}
	if cfg.MaxTTL == 0 {
		cfg.MaxTTL = DefaultMaxTTL
	}
	if cfg.MaxSession == 0 {
		cfg.MaxSession = 24 * time.Hour
	}
	if cfg.Skew == 0 {
		cfg.Skew = 30 * time.Second
	}
	if cfg.MaxNonces == 0 {
		cfg.MaxNonces = 100_000
	}
	if cfg.MaxTTL < time.Second || cfg.MaxSession < cfg.MaxTTL || cfg.Skew < 0 || cfg.MaxNonces < 1 {
		return nil, fmt.Errorf("player: bad verifier config (MaxTTL %v, MaxSession %v, Skew %v, MaxNonces %d)", cfg.MaxTTL, cfg.MaxSession, cfg.Skew, cfg.MaxNonces)
	}
	if cfg.Store == nil {
		cfg.Store = NewMemoryNonces()
	}
	return &Verifier{cfg: cfg}, nil
}

// Audience returns the audience the verifier accepts.
func (v *Verifier) Audience() Audience { return v.cfg.Audience }

// Verify checks tok at time now and, when it is valid, records its nonce
// so that it is refused if presented again. A refused token changes
// nothing; the error wraps ErrToken and the specific cause.
func (v *Verifier) Verify(tok []byte, now time.Time) (Claims, error) {
	c, err := v.check(tok, now)
	if err != nil {
		return Claims{}, err
	}
	switch {
	case !now.Before(c.Expires):
		return Claims{}, fmt.Errorf("%w: %w at %v", ErrToken, ErrTokenExpired, c.Expires.UTC())
	case c.Audience.Node != v.cfg.Audience.Node:
		return Claims{}, fmt.Errorf("%w: %w (node %d, this is node %d)", ErrToken, ErrTokenNode, c.Audience.Node, v.cfg.Audience.Node)
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	if err := v.cfg.Store.Use(c.Nonce, c.Expires.Unix(), now.Unix(), v.cfg.MaxNonces); err != nil {
		return Claims{}, fmt.Errorf("%w: %w", ErrToken, err)
	}
	return c, nil
}

// VerifyRejoin checks tok at time now for a Rejoin: its signature, its
// world, and that it was issued at most MaxSession ago. Its node, its
// expiry and its nonce are not checked: a player handed off rejoins with
// the token it joined with, at another node (the gateway accepts a Rejoin
// only for an avatar that migrates here, see Gateway).
func (v *Verifier) VerifyRejoin(tok []byte, now time.Time) (Claims, error) {
	c, err := v.check(tok, now)
	if err != nil {
		return Claims{}, err
	}
	if now.Sub(c.Issued) > v.cfg.MaxSession {
		return Claims{}, fmt.Errorf("%w: %w: issued %v, more than %v ago", ErrToken, ErrTokenExpired, c.Issued.UTC(), v.cfg.MaxSession)
	}
	return c, nil
}

// check verifies tok's signature, world, issue time and lifetime.
func (v *Verifier) check(tok []byte, now time.Time) (Claims, error) {
	var c Claims
	if isJWT(tok) {
		var err error
		if c, err = v.checkJWT(tok); err != nil {
			return Claims{}, err
		}
	} else {
		var body, sig []byte
		var err error
		if c, body, sig, err = ParseToken(tok); err != nil {
			return Claims{}, err
		}
		if !ed25519.Verify(v.cfg.Key, signed(body), sig) {
			return Claims{}, fmt.Errorf("%w: %w", ErrToken, ErrTokenSignature)
		}
	}
	switch {
	case c.Audience.World != v.cfg.Audience.World:
		return Claims{}, fmt.Errorf("%w: %w (%q, this is %q)", ErrToken, ErrTokenWorld, c.Audience.World, v.cfg.Audience.World)
	case c.Issued.After(now.Add(v.cfg.Skew)):
		return Claims{}, fmt.Errorf("%w: %w (%v)", ErrToken, ErrTokenEarly, c.Issued.UTC())
	case c.Expires.Sub(c.Issued) > v.cfg.MaxTTL:
		return Claims{}, fmt.Errorf("%w: %w (%v > %v)", ErrToken, ErrTokenTTL, c.Expires.Sub(c.Issued), v.cfg.MaxTTL)
	}
	return c, nil
}

// Nonces returns the number of nonces in the replay store.
func (v *Verifier) Nonces() int {
	v.mu.Lock()
	defer v.mu.Unlock()
	return v.cfg.Store.Len()
}

// Key files in a coordinator directory.
const (
	PrivateKeyFile = "coordinator.key"
	PublicKeyFile  = "coordinator.pub"
)

// InitKeys creates a coordinator key pair in dir (created if missing): the
// private key (PKCS #8 PEM, mode 0600) and the public key (PKIX PEM). It
// refuses to overwrite existing keys.
func InitKeys(dir string, rnd io.Reader) (ed25519.PublicKey, error) {
	if rnd == nil {
		rnd = rand.Reader
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("player: %w", err)
	}
	for _, f := range []string{PrivateKeyFile, PublicKeyFile} {
		if _, err := os.Stat(filepath.Join(dir, f)); err == nil {
			return nil, fmt.Errorf("player: %s already exists; refusing to overwrite a coordinator key", filepath.Join(dir, f))
		}
	}
	pub, priv, err := ed25519.GenerateKey(rnd)
	if err != nil {
		return nil, fmt.Errorf("player: %w", err)
	}
	privDER, err := x509.MarshalPKCS8PrivateKey(priv)
	if err != nil {
		return nil, fmt.Errorf("player: %w", err)
	}
	pubDER, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		return nil, fmt.Errorf("player: %w", err)
	}
	if err := writeNew(filepath.Join(dir, PrivateKeyFile), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: privDER}), 0o600); err != nil {
		return nil, err
	}
	if err := writeNew(filepath.Join(dir, PublicKeyFile), pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER}), 0o644); err != nil {
		return nil, err
	}
	return pub, nil
}

func writeNew(path string, data []byte, mode os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, mode)
	if err != nil {
		return fmt.Errorf("player: %w", err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("player: %w", err)
	}
	return f.Close()
}

// LoadPrivateKey reads the coordinator private key from dir.
func LoadPrivateKey(dir string) (ed25519.PrivateKey, error) {
	der, err := readPEM(filepath.Join(dir, PrivateKeyFile), "PRIVATE KEY")
	if err != nil {
		return nil, err
	}
	k, err := x509.ParsePKCS8PrivateKey(der)
	if err != nil {
		return nil, fmt.Errorf("player: %s: %w", filepath.Join(dir, PrivateKeyFile), err)
	}
	priv, ok := k.(ed25519.PrivateKey)
	if !ok {
		return nil, fmt.Errorf("player: %s holds a %T, want an Ed25519 key", filepath.Join(dir, PrivateKeyFile), k)
	}
	return priv, nil
}

// LoadPublicKey reads the coordinator public key from dir.
func LoadPublicKey(dir string) (ed25519.PublicKey, error) {
	return LoadPublicKeyFile(filepath.Join(dir, PublicKeyFile))
}

// LoadPublicKeyFile reads a coordinator public key (PKIX PEM, as InitKeys
// writes it) from path.
func LoadPublicKeyFile(path string) (ed25519.PublicKey, error) {
	der, err := readPEM(path, "PUBLIC KEY")
	if err != nil {
		return nil, err
	}
	k, err := x509.ParsePKIXPublicKey(der)
	if err != nil {
		return nil, fmt.Errorf("player: %s: %w", path, err)
	}
	pub, ok := k.(ed25519.PublicKey)
	if !ok {
		return nil, fmt.Errorf("player: %s holds a %T, want an Ed25519 key", path, k)
	}
	return pub, nil
}

func readPEM(path, typ string) ([]byte, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("player: %w", err)
	}
	blk, _ := pem.Decode(data)
	if blk == nil || blk.Type != typ {
		return nil, fmt.Errorf("player: %s: no %q PEM block", path, typ)
	}
	return blk.Bytes, nil
}
