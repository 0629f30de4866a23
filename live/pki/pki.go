// Package pki owns a cluster's node identities: a certificate authority
// (an ECDSA P-256 key and a self-signed CA certificate), node certificates
// that carry a wire.NodeID, and the mutual-TLS configurations the live
// transport uses so that nodes accept only peers whose certificate chains to
// the cluster CA, is unexpired, and names the node the dialer expected.
//
// Files: a CA directory holds ca.crt (PEM certificate, 0644) and ca.key
// (PEM PKCS#8 key, 0600). A node file holds the node's certificate followed
// by its key (PEM, 0600).
//
// Callers must: create a CA once with InitCA, issue one certificate per node
// with Issue (the caller picks distinct NodeIDs), load them with LoadCA and
// LoadNode, set Identity.Admit (the nodes admitted to the cluster) and the
// revocations (ParseRevocations, SetRevocations) before the first
// handshake, and build TLS configurations with Identity.ServerConfig and
// Identity.ClientConfig; Identity.Reload swaps the certificate and the CA
// while they serve. Time is a value: every function that checks or
// sets validity takes the current time or a Now function.
package pki

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/overworld/overworld/wire"
)

// Errors. Refusals in the TLS handshake wrap ErrRefused.
var (
	ErrExists   = errors.New("pki: already exists")
	ErrBadFile  = errors.New("pki: bad certificate or key file")
	ErrRefused  = errors.New("pki: peer certificate refused")
	ErrValidity = errors.New("pki: bad validity")
)

// File names inside a CA directory.
const (
	CACertFile = "ca.crt"
	CAKeyFile  = "ca.key"
)

// uriPrefix is the URI SAN that carries a node's ID: "urn:overworld:node:7".
const uriPrefix = "overworld:node:"

// DNSName is the DNS SAN of node id's certificate (the TLS server name a
// dialer expects): "node-7.overworld".
func DNSName(id wire.NodeID) string { return fmt.Sprintf("node-%d.overworld", id) }

// CA is a loaded certificate authority.
type CA struct {
	Cert *x509.Certificate
	Key  crypto.Signer // nil when only the certificate was loaded
	Pool *x509.CertPool
}

// InitCA creates a CA valid from now for validity in dir (created if
// missing), named name. It refuses to overwrite an existing CA.
func InitCA(dir, name string, now time.Time, validity time.Duration) (*CA, error) {
	if validity <= 0 {
		return nil, fmt.Errorf("%w: CA validity %v: want > 0", ErrValidity, validity)
	}
	if name == "" {
		name = "overworld cluster CA"
	}
	certPath, keyPath := filepath.Join(dir, CACertFile), filepath.Join(dir, CAKeyFile)
	for _, p := range []string{certPath, keyPath} {
		if _, err := os.Stat(p); err == nil {
			return nil, fmt.Errorf("%w: %s (remove it to start a new CA)", ErrExists, p)
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	ca, err := NewCA(name, now, validity)
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(ca.Key)
	if err != nil {
		return nil, err
	}
	if err := writeFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		return nil, err
	}
	if err := writeFile(certPath, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ca.Cert.Raw}), 0o644); err != nil {
		return nil, err
	}
	return LoadCA(dir, true)
}

// NewCA creates a CA valid from now for validity, named name, in memory
// only (InitCA writes one to files): for a process that needs a cluster
// of its own, such as a one-node world or a test.
func NewCA(name string, now time.Time, validity time.Duration) (*CA, error) {
	if validity <= 0 {
		return nil, fmt.Errorf("%w: CA validity %v: want > 0", ErrValidity, validity)
	}
	if name == "" {
		name = "overworld cluster CA"
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: name, Organization: []string{"overworld"}},
		NotBefore:             now.Add(-time.Minute),
		NotAfter:              now.Add(validity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
		MaxPathLenZero:        true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	ca := &CA{Cert: cert, Key: key, Pool: x509.NewCertPool()}
	ca.Pool.AddCert(cert)
	return ca, nil
}

// writeFile creates path exclusively with mode perm.
func writeFile(path string, data []byte, perm os.FileMode) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 126))
	if err != nil {
		panic(err) // crypto/rand never fails on supported platforms
	}
	return n
}

// LoadCA reads the CA in dir; withKey also reads its private key (needed to
// issue, not to verify).
func LoadCA(dir string, withKey bool) (*CA, error) {
	return LoadCAFiles(filepath.Join(dir, CACertFile), filepath.Join(dir, CAKeyFile), withKey)
}

// LoadCAFiles reads a CA certificate and, with withKey, its key.
func LoadCAFiles(certPath, keyPath string, withKey bool) (*CA, error) {
	data, err := os.ReadFile(certPath)
	if err != nil {
		return nil, err
	}
	certs, _, err := parsePEM(data)
	if err != nil || len(certs) != 1 {
		return nil, fmt.Errorf("%w: %s: want exactly one CA certificate", ErrBadFile, certPath)
	}
	if !certs[0].IsCA {
		return nil, fmt.Errorf("%w: %s: not a CA certificate", ErrBadFile, certPath)
	}
	ca := &CA{Cert: certs[0], Pool: x509.NewCertPool()}
	ca.Pool.AddCert(ca.Cert)
	if withKey {
		kd, err := os.ReadFile(keyPath)
		if err != nil {
			return nil, err
		}
		_, key, err := parsePEM(kd)
		if err != nil || key == nil {
			return nil, fmt.Errorf("%w: %s: want one PEM private key", ErrBadFile, keyPath)
		}
		if !publicKeysEqual(key.Public(), ca.Cert.PublicKey) {
			return nil, fmt.Errorf("%w: %s does not match %s", ErrBadFile, keyPath, certPath)
		}
		ca.Key = key
	}
	return ca, nil
}

func publicKeysEqual(a, b crypto.PublicKey) bool {
	ea, ok := a.(interface{ Equal(crypto.PublicKey) bool })
	return ok && ea.Equal(b)
}

// parsePEM returns the certificates and the (single) private key in data.
func parsePEM(data []byte) ([]*x509.Certificate, crypto.Signer, error) {
	var certs []*x509.Certificate
	var key crypto.Signer
	for {
		var b *pem.Block
		b, data = pem.Decode(data)
		if b == nil {
			break
		}
		switch b.Type {
		case "CERTIFICATE":
			c, err := x509.ParseCertificate(b.Bytes)
			if err != nil {
				return nil, nil, err
			}
			certs = append(certs, c)
		case "PRIVATE KEY":
			if key != nil {
				return nil, nil, errors.New("two private keys")
			}
			k, err := x509.ParsePKCS8PrivateKey(b.Bytes)
			if err != nil {
				return nil, nil, err
			}
			s, ok := k.(crypto.Signer)
			if !ok {
				return nil, nil, errors.New("key cannot sign")
			}
			key = s
		default:
			return nil, nil, fmt.Errorf("unexpected PEM block %q", b.Type)
		}
	}
	if len(certs) == 0 && key == nil {
		return nil, nil, errors.New("no PEM data")
	}
	return certs, key, nil
}

// Issue signs a certificate for node id, valid from now for validity, and
// returns the node file's contents (certificate then key, PEM). The
// certificate names the node in its subject (CN "node-7"), a DNS SAN
// (DNSName) and a URI SAN ("urn:overworld:node:7"), and is good for both TLS
// client and server authentication.
func (ca *CA) Issue(id wire.NodeID, now time.Time, validity time.Duration) ([]byte, error) {
	if err := ca.canIssue(now, validity); err != nil {
		return nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	out, err := ca.sign(id, &key.PublicKey, now, validity)
	if err != nil {
		return nil, err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return nil, err
	}
	return append(out, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})...), nil
}

// MaxCSR bounds a PEM certificate request IssueCSR reads.
const MaxCSR = 8 << 10

// IssueCSR signs a certificate for node id, valid from now for validity,
// for the public key of a PEM certificate signing request whose
// signature it checks (the requester keeps its private key: a player's
// machine asking for a player host's certificate), and returns the
// certificate, PEM. The certificate names the node as Issue's do; what
// the request asks for besides its key is ignored. It accepts ECDSA
// P-256 and Ed25519 keys only.
func (ca *CA) IssueCSR(id wire.NodeID, csrPEM []byte, now time.Time, validity time.Duration) ([]byte, error) {
	return ca.issueCSR(id, csrPEM, now, validity, "")
}

// RolePlayerHost is the organizational unit of a player host's
// certificate (IssuePlayerHostCSR): a node on a player's machine, a peer
// like any other on the mesh, but not trusted to vouch for what other
// nodes created (IsPlayerHost).
const RolePlayerHost = "player-host"

// IssuePlayerHostCSR is IssueCSR for a player host: the certificate also
// carries RolePlayerHost.
func (ca *CA) IssuePlayerHostCSR(id wire.NodeID, csrPEM []byte, now time.Time, validity time.Duration) ([]byte, error) {
	return ca.issueCSR(id, csrPEM, now, validity, RolePlayerHost)
}

// IsPlayerHost reports whether c is a player host's certificate.
func IsPlayerHost(c *x509.Certificate) bool {
	return slices.Contains(c.Subject.OrganizationalUnit, RolePlayerHost)
}

func (ca *CA) issueCSR(id wire.NodeID, csrPEM []byte, now time.Time, validity time.Duration, role string) ([]byte, error) {
	if err := ca.canIssue(now, validity); err != nil {
		return nil, err
	}
	csr, err := ParseCSR(csrPEM)
	if err != nil {
		return nil, err
	}
	return ca.signAs(id, csr.PublicKey, now, validity, role)
}

// ErrCSR reports a bad certificate signing request.
var ErrCSR = errors.New("pki: bad certificate request")

// ParseCSR decodes and checks a PEM certificate signing request: one
// CERTIFICATE REQUEST block, a valid signature, an ECDSA P-256 or Ed25519
// key. Errors wrap ErrCSR.
func ParseCSR(data []byte) (*x509.CertificateRequest, error) {
	if len(data) > MaxCSR {
		return nil, fmt.Errorf("%w: %d bytes, want at most %d", ErrCSR, len(data), MaxCSR)
	}
	b, rest := pem.Decode(data)
	if b == nil || b.Type != "CERTIFICATE REQUEST" {
		return nil, fmt.Errorf("%w: no PEM CERTIFICATE REQUEST block", ErrCSR)
	}
	if len(strings.TrimSpace(string(rest))) != 0 {
		return nil, fmt.Errorf("%w: data after the request", ErrCSR)
	}
	csr, err := x509.ParseCertificateRequest(b.Bytes)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrCSR, err)
	}
	if err := csr.CheckSignature(); err != nil {
		return nil, fmt.Errorf("%w: signature: %v", ErrCSR, err)
	}
	switch k := csr.PublicKey.(type) {
	case *ecdsa.PublicKey:
		if k.Curve != elliptic.P256() {
			return nil, fmt.Errorf("%w: ECDSA key on %s, want P-256", ErrCSR, k.Curve.Params().Name)
		}
	case ed25519.PublicKey:
	default:
		return nil, fmt.Errorf("%w: %T key, want ECDSA P-256 or Ed25519", ErrCSR, csr.PublicKey)
	}
	return csr, nil
}

func (ca *CA) canIssue(now time.Time, validity time.Duration) error {
	if ca.Key == nil {
		return fmt.Errorf("%w: CA loaded without its key", ErrBadFile)
	}
	if validity <= 0 {
		return fmt.Errorf("%w: certificate validity %v: want > 0", ErrValidity, validity)
	}
	if now.Add(validity).After(ca.Cert.NotAfter) {
		return fmt.Errorf("%w: certificate would outlive the CA (%s)", ErrValidity, ca.Cert.NotAfter.Format(time.RFC3339))
	}
	return nil
}

// sign makes node id's certificate for pub, PEM.
func (ca *CA) sign(id wire.NodeID, pub crypto.PublicKey, now time.Time, validity time.Duration) ([]byte, error) {
	return ca.signAs(id, pub, now, validity, "")
}

// signAs is sign with role, when not "", as the certificate's
// organizational unit.
func (ca *CA) signAs(id wire.NodeID, pub crypto.PublicKey, now time.Time, validity time.Duration, role string) ([]byte, error) {
	u := &url.URL{Scheme: "urn", Opaque: uriPrefix + strconv.FormatUint(uint64(id), 10)}
	subject := pkix.Name{CommonName: fmt.Sprintf("node-%d", id), Organization: []string{"overworld"}}
	if role != "" {
		subject.OrganizationalUnit = []string{role}
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      subject,
		NotBefore:    now.Add(-time.Minute),
		NotAfter:     now.Add(validity),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		DNSNames:     []string{DNSName(id)},
		URIs:         []*url.URL{u},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.Cert, pub, ca.Key)
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), nil
}

// WriteNodeFile writes a node file made by Issue to path (mode 0600),
// refusing to overwrite.
func WriteNodeFile(path string, data []byte) error {
	if err := writeFile(path, data, 0o600); err != nil {
		if errors.Is(err, os.ErrExist) {
			return fmt.Errorf("%w: %s", ErrExists, path)
		}
		return err
	}
	return nil
}

// NodeIDOf returns the NodeID a certificate names (its URI SAN), checking
// that its common name and DNS SAN agree.
func NodeIDOf(c *x509.Certificate) (wire.NodeID, error) {
	var id wire.NodeID
	found := false
	for _, u := range c.URIs {
		if u.Scheme != "urn" || !strings.HasPrefix(u.Opaque, uriPrefix) {
			continue
		}
		v, err := strconv.ParseUint(strings.TrimPrefix(u.Opaque, uriPrefix), 10, 32)
		if err != nil || found {
			return 0, fmt.Errorf("%w: bad or repeated node URI %q", ErrRefused, u)
		}
		id, found = wire.NodeID(v), true
	}
	if !found {
		return 0, fmt.Errorf("%w: certificate %q names no node", ErrRefused, c.Subject.CommonName)
	}
	if c.Subject.CommonName != fmt.Sprintf("node-%d", id) || len(c.DNSNames) != 1 || c.DNSNames[0] != DNSName(id) {
		return 0, fmt.Errorf("%w: certificate subject/SANs disagree on node %d", ErrRefused, id)
	}
	return id, nil
}

// Identity is one node's credentials: its certificate and key and the
// cluster CA it trusts, the peers it admits and the certificates it no
// longer accepts. Reload replaces the certificate, the CA and the
// revocations while connections are made (the TLS configurations read the
// current ones at every handshake).
type Identity struct {
	ID   wire.NodeID
	Cert tls.Certificate // as loaded; Current gives the one in use
	Leaf *x509.Certificate
	CA   *CA
	// Now is the clock used to check peers' validity; nil means time.Now.
	Now func() time.Time
	// OnRefuse, if set, is called (from the handshake's goroutine) with the
	// reason whenever a peer certificate is refused.
	OnRefuse func(error)
	// Admit, if set, reports whether a NodeID is a member of the cluster:
	// a peer whose certificate names a node it refuses fails the handshake
	// (ErrNotMember), however valid its certificate. Set it before the
	// first handshake.
	Admit func(wire.NodeID) bool

	cur atomic.Pointer[creds]
}

// creds is what Reload swaps: the certificate in use, the CA and the
// revocations.
type creds struct {
	cert    *tls.Certificate
	ca      *CA
	revoked *Revocations
}

// ErrNotMember refuses a peer whose certificate is valid but names a node
// the cluster has not admitted; ErrRevoked one whose certificate was
// revoked. Both wrap ErrRefused.
var (
	ErrNotMember = fmt.Errorf("%w: node not admitted to the cluster", ErrRefused)
	ErrRevoked   = fmt.Errorf("%w: certificate revoked", ErrRefused)
)

func (id *Identity) state() *creds {
	if c := id.cur.Load(); c != nil {
		return c
	}
	c := &creds{cert: &id.Cert, ca: id.CA}
	if id.cur.CompareAndSwap(nil, c) {
		return c
	}
	return id.cur.Load()
}

// Current returns the certificate in use (the last loaded).
func (id *Identity) Current() *tls.Certificate { return id.state().cert }

// SetRevocations replaces the revoked certificates (nil: none).
func (id *Identity) SetRevocations(r *Revocations) {
	for {
		old := id.state()
		next := *old
		next.revoked = r
		if id.cur.CompareAndSwap(old, &next) {
			return
		}
	}
}

// Reload replaces the node's certificate and key (nodeFile) and the CA
// (caFile), as LoadNode would load them: the new certificate must name
// the same node, chain to the new CA and be valid at now. On an error
// nothing changes. Handshakes from now on use the new ones; established
// connections are kept.
func (id *Identity) Reload(nodeFile, caFile string, now time.Time) error {
	ca, err := LoadCAFiles(caFile, "", false)
	if err != nil {
		return err
	}
	n, err := LoadNode(nodeFile, ca)
	if err != nil {
		return err
	}
	if n.ID != id.ID {
		return fmt.Errorf("%w: %s names node %d, this node is %d", ErrBadFile, nodeFile, n.ID, id.ID)
	}
	if now.After(n.Leaf.NotAfter) || now.Before(n.Leaf.NotBefore) {
		return fmt.Errorf("%w: %s is not valid now (%s to %s)", ErrValidity, nodeFile,
			n.Leaf.NotBefore.Format(time.RFC3339), n.Leaf.NotAfter.Format(time.RFC3339))
	}
	for {
		old := id.state()
		next := &creds{cert: &n.Cert, ca: ca, revoked: old.revoked}
		if id.cur.CompareAndSwap(old, next) {
			return nil
		}
	}
}

// LoadNode reads a node file (certificate and key) and the CA certificate.
func LoadNode(nodeFile string, ca *CA) (*Identity, error) {
	data, err := os.ReadFile(nodeFile)
	if err != nil {
		return nil, err
	}
	return ParseNode(data, ca)
}

// ParseNode parses a node file's contents (see Issue).
func ParseNode(data []byte, ca *CA) (*Identity, error) {
	certs, key, err := parsePEM(data)
	if err != nil || len(certs) != 1 || key == nil {
		return nil, fmt.Errorf("%w: want one certificate and one private key", ErrBadFile)
	}
	leaf := certs[0]
	if !publicKeysEqual(key.Public(), leaf.PublicKey) {
		return nil, fmt.Errorf("%w: key does not match certificate", ErrBadFile)
	}
	id, err := NodeIDOf(leaf)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrBadFile, err)
	}
	if err := leaf.CheckSignatureFrom(ca.Cert); err != nil {
		return nil, fmt.Errorf("%w: certificate of node %d is not signed by this CA: %v", ErrBadFile, id, err)
	}
	return &Identity{ID: id, Leaf: leaf, CA: ca,
		Cert: tls.Certificate{Certificate: [][]byte{leaf.Raw}, PrivateKey: key, Leaf: leaf}}, nil
}

func (id *Identity) now() time.Time {
	if id.Now != nil {
		return id.Now()
	}
	return time.Now()
}

// Verify checks a peer's certificate chain (leaf first, as TLS presents
// it): it must chain to the cluster CA, be valid now, be meant for usage,
// and name a node; want, if not nil, is the node the caller expected. It
// returns the peer's NodeID or an error wrapping ErrRefused.
func (id *Identity) Verify(raw [][]byte, usage x509.ExtKeyUsage, want *wire.NodeID) (wire.NodeID, error) {
	if len(raw) == 0 {
		return 0, fmt.Errorf("%w: no certificate", ErrRefused)
	}
	leaf, err := x509.ParseCertificate(raw[0])
	if err != nil {
		return 0, fmt.Errorf("%w: %v", ErrRefused, err)
	}
	inter := x509.NewCertPool()
	for _, r := range raw[1:] {
		c, err := x509.ParseCertificate(r)
		if err != nil {
			return 0, fmt.Errorf("%w: %v", ErrRefused, err)
		}
		inter.AddCert(c)
	}
	st := id.state()
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: st.ca.Pool, Intermediates: inter,
		CurrentTime: id.now(), KeyUsages: []x509.ExtKeyUsage{usage}}); err != nil {
		return 0, fmt.Errorf("%w: %v", ErrRefused, err)
	}
	peer, err := NodeIDOf(leaf)
	if err != nil {
		return 0, err
	}
	if want != nil && peer != *want {
		return 0, fmt.Errorf("%w: dialled node %d but the certificate names node %d", ErrRefused, *want, peer)
	}
	if st.revoked.Has(leaf, peer) {
		return 0, fmt.Errorf("%w (node %d, serial %x)", ErrRevoked, peer, leaf.SerialNumber)
	}
	if id.Admit != nil && !id.Admit(peer) {
		return 0, fmt.Errorf("%w (node %d)", ErrNotMember, peer)
	}
	return peer, nil
}

// MaxIssuerCert bounds the certificate VerifyIssuer parses (a node
// certificate Issue makes has about 500 bytes).
const MaxIssuerCert = 1024

// VerifyIssuer checks the certificate of the node that signed a
// statement other nodes rely on (an avatar deed), one DER certificate
// alone: it must chain to the cluster CA directly, be valid at now, be
// good for TLS server authentication (as every node certificate is),
// name a node (NodeIDOf) and not be revoked. Unlike Verify it does not
// ask Admit: the node that signed may have left the cluster since (it
// died, and its avatars failed over), and what it signed stays good
// while its certificate does. It returns the certificate and its node,
// or an error wrapping ErrRefused.
func (id *Identity) VerifyIssuer(der []byte, now time.Time) (*x509.Certificate, wire.NodeID, error) {
	if len(der) == 0 || len(der) > MaxIssuerCert {
		return nil, 0, fmt.Errorf("%w: issuer certificate of %d bytes, want 1 to %d", ErrRefused, len(der), MaxIssuerCert)
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, 0, fmt.Errorf("%w: %v", ErrRefused, err)
	}
	st := id.state()
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: st.ca.Pool, CurrentTime: now,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
		return nil, 0, fmt.Errorf("%w: %v", ErrRefused, err)
	}
	node, err := NodeIDOf(leaf)
	if err != nil {
		return nil, 0, err
	}
	if st.revoked.Has(leaf, node) {
		return nil, 0, fmt.Errorf("%w (node %d, serial %x)", ErrRevoked, node, leaf.SerialNumber)
	}
	return leaf, node, nil
}

func (id *Identity) refuse(err error) error {
	if err != nil && id.OnRefuse != nil {
		id.OnRefuse(err)
	}
	return err
}

// ServerConfig is the TLS configuration of a node accepting connections:
// it requires a client certificate and verifies it with Verify (so an
// unknown, expired or nameless certificate fails the handshake).
func (id *Identity) ServerConfig(alpn string) *tls.Config {
	return &tls.Config{
		MinVersion:     tls.VersionTLS13,
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) { return id.Current(), nil },
		ClientAuth:     tls.RequestClientCert, // verified below (a missing certificate too), so refusals are counted
		NextProtos:     []string{alpn},
		VerifyPeerCertificate: func(raw [][]byte, _ [][]*x509.Certificate) error {
			_, err := id.Verify(raw, x509.ExtKeyUsageClientAuth, nil)
			return id.refuse(err)
		},
	}
}

// ClientConfig is the TLS configuration for dialling node peer: the
// server's certificate must chain to the CA and name peer.
func (id *Identity) ClientConfig(alpn string, peer wire.NodeID) *tls.Config {
	return &tls.Config{
		MinVersion:           tls.VersionTLS13,
		GetClientCertificate: func(*tls.CertificateRequestInfo) (*tls.Certificate, error) { return id.Current(), nil },
		ServerName:           DNSName(peer),
		InsecureSkipVerify:   true, // the standard check is replaced by Verify, which also checks the node ID
		NextProtos:           []string{alpn},
		VerifyPeerCertificate: func(raw [][]byte, _ [][]*x509.Certificate) error {
			_, err := id.Verify(raw, x509.ExtKeyUsageServerAuth, &peer)
			return id.refuse(err)
		},
	}
}

// PeerID returns the NodeID of a completed handshake's peer.
func PeerID(cs tls.ConnectionState) (wire.NodeID, error) {
	if len(cs.PeerCertificates) == 0 {
		return 0, fmt.Errorf("%w: no peer certificate", ErrRefused)
	}
	return NodeIDOf(cs.PeerCertificates[0])
}
