package plane

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/overworld/overworld/live"
	"github.com/overworld/overworld/live/pki"
	"github.com/overworld/overworld/live/player"
	"github.com/overworld/overworld/wire"
)

// Player hosts' certificates. A player's machine that will host an
// instance overflowed from the servers (a player host: the same node
// daemon) needs a node certificate of the cluster's CA to join the
// cluster's mesh. With Config.Hosts, the plane holds the CA's key and
// serves POST /v1/hosts: the player's client sends a certificate signing
// request (its key stays on its machine) with a player token whose
// audience is the plane's (Hosts.Audience), and gets back a certificate
// for a node ID of its own from Hosts.First…Hosts.Last (the same ID
// every time the same player asks), and the CA's certificate. The token
// is single-use, as at a node. A bad request changes nothing and burns no
// token.
//
// RequestHostCert is the client's side: `overworld node --player-host`
// calls it before it starts, when it has no certificate yet. What is not
// built yet: the plane placing instances on the hosts it certified.

// Hosts configures POST /v1/hosts.
type Hosts struct {
	// CA is the cluster's CA, with its key.
	CA *pki.CA
	// Key is the token issuer's public key; Audience names the world and
	// the node ID tokens for the plane carry (an ID no node has).
	Key      []byte
	Audience player.Audience
	// First and Last bound the node IDs given to player hosts (they
	// must not overlap the nodes').
	First, Last uint32
	// Validity is a host certificate's lifetime (default 24 h).
	Validity time.Duration
}

// HostRequest is the body of POST /v1/hosts.
type HostRequest struct {
	// Token is a player token for the plane's audience (base64url).
	Token string `json:"token"`
	// CSR is a PEM certificate signing request (ECDSA P-256 or Ed25519).
	CSR string `json:"csr"`
}

// HostGrant is the answer to POST /v1/hosts.
type HostGrant struct {
	Node uint32 `json:"node"`
	Cert string `json:"cert"` // PEM
	CA   string `json:"ca"`   // PEM
}

// hostIssuer is the state of POST /v1/hosts.
type hostIssuer struct {
	cfg    Hosts
	verify *player.Verifier
	mu     sync.Mutex
	ids    map[string]uint32 // player → its host's node ID
	next   uint32
	issued int
}

func newHostIssuer(h Hosts, nodes []Node) (*hostIssuer, error) {
	bad := func(format string, args ...any) (*hostIssuer, error) {
		return nil, fmt.Errorf("%w: hosts: %s", ErrConfig, fmt.Sprintf(format, args...))
	}
	if h.CA == nil || h.CA.Key == nil {
		return bad("no CA key (the plane signs the player hosts' certificates)")
	}
	if h.First < 1 || h.Last < h.First || h.Last > live.MaxNodeID {
		return bad("node IDs %d…%d: want 1 ≤ first ≤ last ≤ %d", h.First, h.Last, live.MaxNodeID)
	}
	for _, n := range nodes {
		if n.ID >= h.First && n.ID <= h.Last {
			return bad("node %d lies in the player hosts' IDs %d…%d", n.ID, h.First, h.Last)
		}
	}
	if h.Validity == 0 {
		h.Validity = 24 * time.Hour
	}
	if h.Validity < time.Minute {
		return bad("validity %v: want at least 1m", h.Validity)
	}
	v, err := player.NewVerifier(player.VerifierConfig{Key: h.Key, Audience: h.Audience})
	if err != nil {
		return bad("%v", err)
	}
	return &hostIssuer{cfg: h, verify: v, ids: map[string]uint32{}, next: h.First}, nil
}

// readHostRequest decodes and checks a POST /v1/hosts body: the token's
// encoding and the request's signature and key, not the token's.
func readHostRequest(r *http.Request) (tok []byte, csr string, err error) {
	var req HostRequest
	dec := json.NewDecoder(http.MaxBytesReader(nil, r.Body, maxBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&req); err != nil {
		return nil, "", fmt.Errorf("bad request body: %v", err)
	}
	if dec.More() {
		return nil, "", errors.New("bad request body: data after the request")
	}
	if req.Token == "" || req.CSR == "" {
		return nil, "", errors.New("want a token and a csr")
	}
	if tok, err = player.DecodeToken(req.Token); err != nil {
		return nil, "", err
	}
	if _, err := pki.ParseCSR([]byte(req.CSR)); err != nil {
		return nil, "", err
	}
	return tok, req.CSR, nil
}

func (s *Server) serveHosts(w http.ResponseWriter, r *http.Request) {
	h := s.hosts
	tok, csr, err := readHostRequest(r)
	if err != nil {
		http.Error(w, "hosts: "+err.Error(), http.StatusBadRequest)
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	now := s.cfg.Clock()
	// Which ID the player would get, before the token's nonce is spent.
	c, _, _, err := player.ParseToken(tok)
	if err != nil {
		http.Error(w, "hosts: "+err.Error(), http.StatusBadRequest)
		return
	}
	id, known := h.ids[string(c.Player)]
	if !known && h.next > h.cfg.Last {
		http.Error(w, fmt.Sprintf("hosts: the %d player host IDs are all given", h.cfg.Last-h.cfg.First+1), http.StatusServiceUnavailable)
		return
	}
	if _, err := h.verify.Verify(tok, now); err != nil {
		http.Error(w, "hosts: "+err.Error(), http.StatusUnauthorized)
		return
	}
	if !known {
		id = h.next
	}
	cert, err := h.cfg.CA.IssueCSR(wire.NodeID(id), []byte(csr), now, h.cfg.Validity)
	if err != nil {
		http.Error(w, "hosts: "+err.Error(), http.StatusInternalServerError)
		return
	}
	if !known {
		h.ids[string(c.Player)] = id
		h.next++
	}
	h.issued++
	s.cfg.Log.Info("player host certified", "player", string(c.Player), "node", id)
	writeJSON(w, HostGrant{Node: id, Cert: string(cert), CA: string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: h.cfg.CA.Cert.Raw}))})
}

// HostCert is what RequestHostCert obtained: the node ID, the node file
// (certificate then key, PEM, as pki.Issue writes it) and the CA's
// certificate (PEM).
type HostCert struct {
	Node     uint32
	NodeFile []byte
	CA       []byte
}

// RequestHostCert asks the plane at base ("http://host:port") for a
// player host's certificate with token (encoded): it makes an ECDSA P-256
// key, sends its certificate request, and checks the grant (the
// certificate chains to the CA returned, names the node granted, and is
// for the key made) before returning it. The key never leaves this
// process but in the returned node file.
func RequestHostCert(ctx context.Context, client *http.Client, base, token string) (HostCert, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return HostCert{}, err
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{}, key)
	if err != nil {
		return HostCert{}, err
	}
	body, _ := json.Marshal(HostRequest{Token: token, CSR: string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}))})
	u, err := url.JoinPath(base, "/v1/hosts")
	if err != nil {
		return HostCert{}, fmt.Errorf("plane: player host: plane URL %q: %w", base, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytesReader(body))
	if err != nil {
		return HostCert{}, fmt.Errorf("plane: player host: %w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return HostCert{}, fmt.Errorf("plane: player host: %w", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return HostCert{}, fmt.Errorf("plane: player host: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return HostCert{}, fmt.Errorf("plane: player host: %s: %s", resp.Status, bytes.TrimSpace(b))
	}
	var g HostGrant
	if err := json.Unmarshal(b, &g); err != nil {
		return HostCert{}, fmt.Errorf("plane: player host: bad grant: %w", err)
	}
	cb, _ := pem.Decode([]byte(g.Cert))
	ab, _ := pem.Decode([]byte(g.CA))
	if cb == nil || ab == nil {
		return HostCert{}, errors.New("plane: player host: bad grant: no certificate or no CA")
	}
	cert, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return HostCert{}, fmt.Errorf("plane: player host: bad certificate: %w", err)
	}
	caCert, err := x509.ParseCertificate(ab.Bytes)
	if err != nil {
		return HostCert{}, fmt.Errorf("plane: player host: bad CA: %w", err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(caCert)
	if _, err := cert.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		return HostCert{}, fmt.Errorf("plane: player host: the certificate does not chain to the CA: %w", err)
	}
	if id, err := pki.NodeIDOf(cert); err != nil || uint32(id) != g.Node || g.Node < 1 || g.Node > live.MaxNodeID {
		return HostCert{}, fmt.Errorf("plane: player host: the certificate names node %d, the grant node %d", id, g.Node)
	}
	if pub, ok := cert.PublicKey.(*ecdsa.PublicKey); !ok || !pub.Equal(&key.PublicKey) {
		return HostCert{}, errors.New("plane: player host: the certificate is not for the key sent")
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return HostCert{}, err
	}
	nodeFile := append([]byte(g.Cert), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})...)
	return HostCert{Node: g.Node, NodeFile: nodeFile, CA: []byte(g.CA)}, nil
}
