package plane

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"time"
)

// Enrollment: the game servers of a region (the GameServers of its Agones
// Fleet) all start from one configuration, which names no node of its own;
// each asks the plane for its identity at start. What a region's servers
// share is its enrollment secret (a Kubernetes Secret mounted in every
// pod); a request proves it knows the secret without sending it: the
// proof is HMAC-SHA256 keyed by the secret over the GameServer's name, the
// region, the time, a random nonce and the certificate request
// (EnrollProof). So the plane's plain-HTTP API never carries the secret,
// a request whose certificate request, name or region was changed on the
// way fails its proof, a request replayed within the window is refused by
// its nonce (remembered for Hosts.Window), and one replayed later by its
// time. The plane gives each (region, GameServer name) its own node ID
// from the region's range, the same ID every time (a restarted pod is not
// a new node), and signs a certificate for it with the cluster CA.
//
// Trust: whoever holds a region's secret can enroll under any name in
// that region, as a node of the cluster (what a node certificate issued by
// hand allows, limited to the region's IDs). A one-time bootstrap token
// per GameServer would need something to mint and hand it to each pod as
// Agones creates it; a secret mounted by the Fleet's template needs
// nothing more than the Secret. Revoke an enrolled node as any node: the
// revocation list (tls.revoked) by node ID or serial.

// Enroll is one region whose game servers enroll.
type Enroll struct {
	// Region is the region's name (as its nodes' agones.region).
	Region string
	// Secret is the region's enrollment secret, at least MinEnrollSecret
	// bytes.
	Secret []byte
	// First and Last bound the node IDs given to the region's game
	// servers.
	First, Last uint32
}

// MinEnrollSecret is the shortest enrollment secret accepted.
const MinEnrollSecret = 16

// enrollRegion is one region's issuing state.
type enrollRegion struct {
	Enroll
	next uint32
}

// checkEnrollName checks a GameServer or region name: 1 to max
// characters of a-z, 0-9, '-' and '.', starting and ending with a letter
// or digit (a Kubernetes object name).
func checkEnrollName(what, s string, max int) error {
	if s == "" || len(s) > max {
		return fmt.Errorf("%s %q: want 1 to %d characters", what, s, max)
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		alnum := c >= 'a' && c <= 'z' || c >= '0' && c <= '9'
		if !alnum && (c != '-' && c != '.' || i == 0 || i == len(s)-1) {
			return fmt.Errorf("%s %q: want lower-case letters, digits, '-' and '.', starting and ending with a letter or digit", what, s)
		}
	}
	return nil
}

// checkEnrollRequest checks an enrollment's fields' form.
func checkEnrollRequest(r *HostRequest) error {
	if err := checkEnrollName("gameserver", r.GameServer, 253); err != nil {
		return err
	}
	if err := checkEnrollName("region", r.Region, 63); err != nil {
		return err
	}
	if r.Time <= 0 {
		return fmt.Errorf("time %d: want Unix seconds", r.Time)
	}
	if n, err := hex.DecodeString(r.Nonce); err != nil || len(n) != 16 {
		return fmt.Errorf("nonce %q: want 16 bytes as hex", r.Nonce)
	}
	if p, err := hex.DecodeString(r.Proof); err != nil || len(p) != sha256.Size {
		return fmt.Errorf("proof %q: want %d bytes as hex", r.Proof, sha256.Size)
	}
	return nil
}

// EnrollProof is an enrollment's proof: the hex HMAC-SHA256, keyed by the
// region's secret, of the GameServer's name, the region, the time (Unix
// seconds), the nonce (hex) and the certificate request (PEM), each on a
// line of its own after a version line.
func EnrollProof(secret []byte, gameServer, region string, unix int64, nonce, csr string) string {
	m := hmac.New(sha256.New, secret)
	sum := sha256.Sum256([]byte(csr))
	fmt.Fprintf(m, "overworld-enroll-v1\n%s\n%s\n%d\n%s\n%x\n", gameServer, region, unix, nonce, sum)
	return hex.EncodeToString(m.Sum(nil))
}

// serveEnroll serves an enrollment (h.mu held; b's form checked).
func (s *Server) serveEnroll(w http.ResponseWriter, r *http.Request, b hostBody, now time.Time) {
	h := s.hosts
	req := b.req
	who := []any{"gameserver", req.GameServer, "region", req.Region, "from", r.RemoteAddr}
	// Forget the nonces whose requests are out of the window (at most
	// Rate × 2 × Window are remembered).
	for n, until := range h.nonces {
		if now.After(until) {
			delete(h.nonces, n)
		}
	}
	e := h.enroll[req.Region]
	if e == nil {
		s.refuseHost(w, http.StatusUnauthorized, RefusedCredential, fmt.Errorf("region %q does not enroll here", req.Region), who...)
		return
	}
	if d := now.Sub(time.Unix(req.Time, 0)); d > h.cfg.Window || d < -h.cfg.Window {
		s.refuseHost(w, http.StatusUnauthorized, RefusedStale,
			fmt.Errorf("the request's time is %v from the plane's, more than %v: check the node's clock", d.Round(time.Second), h.cfg.Window), who...)
		return
	}
	want, _ := hex.DecodeString(EnrollProof(e.Secret, req.GameServer, req.Region, req.Time, req.Nonce, req.CSR))
	got, _ := hex.DecodeString(req.Proof)
	if !hmac.Equal(want, got) {
		s.refuseHost(w, http.StatusUnauthorized, RefusedCredential,
			errors.New("the proof does not match the request (another enrollment secret, or the request was changed)"), who...)
		return
	}
	if _, seen := h.nonces[req.Nonce]; seen {
		s.refuseHost(w, http.StatusConflict, RefusedReplayed, errors.New("nonce already used: a replayed request"), who...)
		return
	}
	key := "gs:" + req.Region + "/" + req.GameServer
	id, known := h.ids[key]
	if !known {
		if e.next > e.Last {
			s.refuseHost(w, http.StatusServiceUnavailable, RefusedExhausted,
				fmt.Errorf("region %q's %d node IDs are all given", req.Region, e.Last-e.First+1), who...)
			return
		}
		id = e.next
	}
	if !s.grant(w, key, id, known, b.csr, now) {
		return
	}
	// The nonce is remembered as long as a request carrying it is in the
	// window.
	h.nonces[req.Nonce] = time.Unix(req.Time, 0).Add(h.cfg.Window)
	if !known {
		e.next++
	}
	s.cfg.Log.Info("game server enrolled", "gameserver", req.GameServer, "region", req.Region, "node", id, "again", known)
}

// Enrollment is what a game server enrolls with: its GameServer's name,
// its region and the region's enrollment secret.
type Enrollment struct {
	GameServer, Region string
	Secret             []byte
}

// Check reports what is wrong with e (nil when nothing): a GameServer
// or region name the plane would refuse, or a short secret.
func (e Enrollment) Check() error {
	if err := checkEnrollName("gameserver", e.GameServer, 253); err != nil {
		return err
	}
	if err := checkEnrollName("region", e.Region, 63); err != nil {
		return err
	}
	if len(e.Secret) < MinEnrollSecret {
		return fmt.Errorf("the enrollment secret has %d bytes, want at least %d", len(e.Secret), MinEnrollSecret)
	}
	return nil
}

// RequestNodeCert enrolls a game server with the plane at base
// ("http://host:port"): it makes an ECDSA P-256 key and its certificate
// request, proves the enrollment secret over them with the time now and a
// fresh nonce, and checks the grant as RequestHostCert does. An error
// wrapping ErrPlaneRefused is the plane's refusal; others (the plane
// unreachable, busy or failing) may pass.
func RequestNodeCert(ctx context.Context, client *http.Client, base string, e Enrollment, now time.Time) (HostCert, error) {
	return requestCert(ctx, client, base, "enroll", func(csr string) (HostRequest, error) {
		if err := e.Check(); err != nil {
			return HostRequest{}, err
		}
		var n [16]byte
		if _, err := rand.Read(n[:]); err != nil {
			return HostRequest{}, err
		}
		req := HostRequest{CSR: csr, GameServer: e.GameServer, Region: e.Region, Time: now.Unix(), Nonce: hex.EncodeToString(n[:])}
		req.Proof = EnrollProof(e.Secret, req.GameServer, req.Region, req.Time, req.Nonce, csr)
		return req, nil
	})
}
