package plane

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/overworld/overworld/wire"
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
// Reclaim: Agones names every new GameServer anew, so each takes a new
// ID. When a region's range is used up, the plane gives again the ID of
// a game server whose last certificate has expired (each grant's expiry
// is kept in the state file), which the placement does not use and whose
// ID is not revoked: an expired certificate is refused by the mesh's
// mutual TLS and by the daemon at start, so no node can still act as
// that ID (reclaimable).
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
	// Site, if set, is where the region's game servers run (as
	// Node.Site: a WonderNetwork city gives their RTTs to start from):
	// the plane places players on those that enroll with a Placement.
	// Without it the region's game servers get certificates only.
	Site string
}

// Placement is what an enrolling game server tells the plane to become a
// placement target: its admin endpoint (as a configured node's admin),
// its player endpoints (at least one) and the most players it serves.
type Placement struct {
	Admin    string `json:"admin,omitempty"`
	QUIC     string `json:"player_quic,omitempty"`
	WS       string `json:"player_ws,omitempty"`
	Capacity int    `json:"capacity,omitempty"`
}

// MaxEnrollCapacity bounds an enrolled node's capacity (as a node's
// players.max_players).
const MaxEnrollCapacity = 100000

// IsZero reports whether p names nothing (a certificate only).
func (p Placement) IsZero() bool { return p == Placement{} }

// Check reports what is wrong with p (nil when nothing): an admin
// endpoint that is not http(s)://host:port, a QUIC endpoint that is not
// host:port, a WebSocket endpoint that is not ws(s)://host:port/..., no
// player endpoint, or a capacity outside 1…MaxEnrollCapacity.
func (p Placement) Check() error {
	for _, f := range []struct{ name, v string }{{"admin", p.Admin}, {"player_quic", p.QUIC}, {"player_ws", p.WS}} {
		if len(f.v) > 256 {
			return fmt.Errorf("%s: %d bytes, at most 256", f.name, len(f.v))
		}
		for _, c := range f.v {
			if c <= ' ' || c == 0x7f {
				return fmt.Errorf("%s %q: a space or control character", f.name, f.v)
			}
		}
	}
	u, err := url.Parse(p.Admin)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.Port() == "" ||
		u.Path != "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return fmt.Errorf("admin %q: want http://host:port", p.Admin)
	}
	if p.QUIC == "" && p.WS == "" {
		return errors.New("no player endpoint (player_quic or player_ws)")
	}
	if p.QUIC != "" {
		h, port, err := net.SplitHostPort(p.QUIC)
		if n, perr := strconv.Atoi(port); err != nil || h == "" || perr != nil || n < 1 || n > 65535 {
			return fmt.Errorf("player_quic %q: want host:port", p.QUIC)
		}
	}
	if p.WS != "" {
		u, err := url.Parse(p.WS)
		if err != nil || (u.Scheme != "ws" && u.Scheme != "wss") || u.Host == "" || u.User != nil || u.Fragment != "" {
			return fmt.Errorf("player_ws %q: want ws://host:port/path or wss://", p.WS)
		}
	}
	if p.Capacity < 1 || p.Capacity > MaxEnrollCapacity {
		return fmt.Errorf("capacity %d: want 1 to %d", p.Capacity, MaxEnrollCapacity)
	}
	return nil
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
	if !r.Placement.IsZero() {
		if err := r.Placement.Check(); err != nil {
			return fmt.Errorf("placement: %w", err)
		}
	}
	return nil
}

// EnrollProof is an enrollment's proof: the hex HMAC-SHA256, keyed by the
// region's secret, of the GameServer's name, the region, the time (Unix
// seconds), the nonce (hex) and the SHA-256 of the certificate request
// (PEM), each on a line of its own after a version line; with a
// Placement (version 2), its admin endpoint, player endpoints and
// capacity too, before the request's hash.
func EnrollProof(secret []byte, gameServer, region string, unix int64, nonce, csr string, pl Placement) string {
	m := hmac.New(sha256.New, secret)
	sum := sha256.Sum256([]byte(csr))
	if pl.IsZero() {
		fmt.Fprintf(m, "overworld-enroll-v1\n%s\n%s\n%d\n%s\n%x\n", gameServer, region, unix, nonce, sum)
	} else {
		fmt.Fprintf(m, "overworld-enroll-v2\n%s\n%s\n%d\n%s\n%s\n%s\n%s\n%d\n%x\n", gameServer, region, unix, nonce,
			pl.Admin, pl.QUIC, pl.WS, pl.Capacity, sum)
	}
	return hex.EncodeToString(m.Sum(nil))
}

// serveEnroll serves an enrollment (h.mu held; b's form checked); busy
// are the enrolled nodes the placement uses (busyEnrolled).
func (s *Server) serveEnroll(w http.ResponseWriter, r *http.Request, b hostBody, busy map[uint32]bool, now time.Time) {
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
	want, _ := hex.DecodeString(EnrollProof(e.Secret, req.GameServer, req.Region, req.Time, req.Nonce, req.CSR, req.Placement))
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
	reclaim, unreclaim := "", func() {}
	if !known {
		if e.next <= e.Last {
			id = e.next
		} else {
			var next time.Time
			reclaim, id, next = h.reclaimable(e, now, busy)
			if reclaim == "" {
				why := "none is held by a game server whose last certificate has expired and which the placement does not use"
				if !next.IsZero() {
					why = fmt.Sprintf("none can be given again before %s, when the first certificate still valid expires", next.UTC().Format(time.RFC3339))
				}
				s.refuseHost(w, http.StatusServiceUnavailable, RefusedExhausted,
					fmt.Errorf("region %q's %d node IDs are all given, and %s", req.Region, e.Last-e.First+1, why), who...)
				return
			}
			unreclaim = h.take(reclaim)
		}
	}
	if h.revoked.RevokesNode(wire.NodeID(id)) {
		unreclaim()
		s.refuseHost(w, http.StatusUnauthorized, RefusedCredential, fmt.Errorf("node %d is revoked", id), who...)
		return
	}
	// A placement is recorded (and saved with the IDs) when the region
	// places players; a node that enrolls again records its endpoints
	// anew (a pod restarted at another address).
	undo := func() {}
	if !req.Placement.IsZero() && e.Site != "" {
		old, had := h.placed[id]
		rec := enrolledRecord{Region: req.Region, GameServer: req.GameServer, Placement: req.Placement, Enrolled: now.Unix()}
		h.placed[id] = rec
		undo = func() {
			if had {
				h.placed[id] = old
			} else {
				delete(h.placed, id)
			}
		}
	} else if !req.Placement.IsZero() {
		s.cfg.Log.Warn("game server enrolled with a placement in a region without a site: certified, not placed",
			"gameserver", req.GameServer, "region", req.Region, "node", id)
	}
	if !s.grant(w, key, id, func() { undo(); unreclaim() }, b.csr, now, false) {
		return
	}
	// The nonce is remembered as long as a request carrying it is in the
	// window.
	h.nonces[req.Nonce] = time.Unix(req.Time, 0).Add(h.cfg.Window)
	if reclaim != "" {
		h.reclaimed++
		s.cfg.Log.Info("node ID reclaimed: its last certificate has expired", "node", id, "from", strings.TrimPrefix(reclaim, "gs:"))
	} else if !known {
		e.next++
	}
	s.cfg.Log.Info("game server enrolled", "gameserver", req.GameServer, "region", req.Region, "node", id, "again", known)
}

// reclaimable returns region e's game server (its key) and node ID that
// may be given to another: its last certificate expired before now, the
// placement does not use it (busy) and the revocation list does not name
// its ID; of those, the one expired longest (then the lowest ID). With
// none, key is "" and next is when the first certificate still valid
// expires (zero if none is). h.mu held.
func (h *hostIssuer) reclaimable(e *enrollRegion, now time.Time, busy map[uint32]bool) (key string, id uint32, next time.Time) {
	prefix := "gs:" + e.Region + "/"
	var best int64
	for _, k := range sortedKeys(h.ids) {
		n := h.ids[k]
		if !strings.HasPrefix(k, prefix) || busy[n] || h.revoked.RevokesNode(wire.NodeID(n)) {
			continue
		}
		exp := h.expires[k]
		if now.Unix() <= exp {
			if t := time.Unix(exp, 0); next.IsZero() || t.Before(next) {
				next = t
			}
			continue
		}
		if key == "" || exp < best || exp == best && n < id {
			key, id, best = k, n, exp
		}
	}
	return key, id, next
}

// take forgets game server key's ID, its expiry and its placement record
// (its ID is given to another), and returns what puts them back (h.mu
// held).
func (h *hostIssuer) take(key string) (undo func()) {
	id, exp := h.ids[key], h.expires[key]
	rec, placed := h.placed[id]
	delete(h.ids, key)
	delete(h.expires, key)
	delete(h.placed, id)
	return func() {
		h.ids[key], h.expires[key] = id, exp
		if placed {
			h.placed[id] = rec
		}
	}
}

// busyEnrolled returns the enrolled nodes the placement uses: its
// targets and the nodes draining (takes s.mu).
func (s *Server) busyEnrolled() map[uint32]bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[uint32]bool{}
	for id, v := range s.enrolled {
		if v.target {
			out[id] = true
		}
	}
	for id := range s.draining {
		out[id] = true
	}
	return out
}

// Enrollment is what a game server enrolls with: its GameServer's name,
// its region and the region's enrollment secret, and the placement it
// asks for (zero: a certificate only).
type Enrollment struct {
	GameServer, Region string
	Secret             []byte
	Placement          Placement
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
	if !e.Placement.IsZero() {
		if err := e.Placement.Check(); err != nil {
			return fmt.Errorf("placement: %w", err)
		}
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
		req := HostRequest{CSR: csr, GameServer: e.GameServer, Region: e.Region, Time: now.Unix(), Nonce: hex.EncodeToString(n[:]),
			Placement: e.Placement}
		req.Proof = EnrollProof(e.Secret, req.GameServer, req.Region, req.Time, req.Nonce, csr, req.Placement)
		return req, nil
	})
}
