package plane

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/http"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/overworld/overworld/live"
	"github.com/overworld/overworld/live/pki"
	"github.com/overworld/overworld/live/player"
	"github.com/overworld/overworld/wire"
)

// Node certificates from the plane. With Config.Hosts, the plane holds
// the cluster CA's key and serves POST /v1/hosts, which certifies two
// kinds of node, each sending a certificate signing request (its key
// stays on its machine) with a credential:
//
//   - A player host (a player's machine hosting an instance overflowed
//     from the servers: the same node daemon) sends a player token whose
//     audience is the plane's (Hosts.Audience); it gets a node ID of its
//     own from Hosts.First…Hosts.Last, the same every time the same
//     player asks. The token is single-use, as at a node.
//   - A game server of a region (an Agones GameServer of the region's
//     Fleet, every one started from the same configuration) enrolls
//     (enroll.go): its GameServer name and region, with a proof keyed by
//     the region's enrollment secret; it gets a node ID of its own from
//     the region's range, the same every time the same GameServer asks.
//
// Both get back a certificate for that ID signed by the cluster CA, and
// the CA's certificate. A bad request changes nothing: it burns no
// token, gives no ID and spends no nonce; every refusal is counted by
// reason (GET /v1/hosts). Requests beyond Hosts.Rate are refused before
// they are read.
//
// RequestHostCert and RequestNodeCert are the client's side: `overworld
// node --player-host` and `overworld node --enroll` call them before the
// node starts, when it has no certificate yet. Player hosts it certified
// receive overflowing instances (instances.go); game servers that enroll
// with a Placement, in a region with a Site, become placement targets of
// the main world (enrolled.go).

// Hosts configures POST /v1/hosts.
type Hosts struct {
	// CA is the cluster's CA, with its key.
	CA *pki.CA
	// Key is the token issuer's public key; Audience names the world and
	// the node ID tokens for the plane carry (an ID no node has). Without
	// a Key the plane certifies no player host.
	Key      []byte
	Audience player.Audience
	// First and Last bound the node IDs given to player hosts (they
	// must not overlap the nodes'); both 0 without a Key.
	First, Last uint32
	// Enroll lists the regions whose game servers enroll, each with its
	// secret and its node IDs.
	Enroll []Enroll
	// Validity is a certificate's lifetime (default 24 h).
	Validity time.Duration
	// Window is how far an enrollment's time may lie from the plane's
	// clock (default 2 min); a nonce is remembered that long.
	Window time.Duration
	// Rate and Burst bound the requests POST /v1/hosts reads (a token
	// bucket: default 20 per second, bursts of 40); the others are
	// refused with 429.
	Rate  float64
	Burst int
	// StateFile, if set, keeps the IDs given (player → ID, GameServer →
	// ID), when each one's last certificate expires, and the enrolled
	// placement targets' records across restarts of the plane: read at
	// start, rewritten after every certificate granted. Without it a restarted plane would give IDs again from the
	// start of each range. A region with a Site requires it.
	StateFile string
	// ForgetAfter is how long an enrolled placement target may not answer
	// before the plane takes it out of the placement (default 10 min);
	// it is polled again when it enrolls again.
	ForgetAfter time.Duration
	// Revoked, if set, is the cluster's revocation list
	// (pki.ParseRevocations, the nodes' tls.revoked), read at start and
	// again whenever it changes: an enrolled node listed by ID is refused
	// its renewals and taken out of the placement.
	Revoked string
}

// HostRequest is the body of POST /v1/hosts: a player host's (Token) or
// an enrolling game server's (GameServer, Region, Time, Nonce, Proof).
type HostRequest struct {
	// Token is a player token for the plane's audience (base64url).
	Token string `json:"token,omitempty"`
	// CSR is a PEM certificate signing request (ECDSA P-256 or Ed25519).
	CSR string `json:"csr"`
	// GameServer and Region name the enrolling node; Time is its clock
	// (Unix seconds), Nonce 16 random bytes (hex), and Proof the hex
	// HMAC-SHA256 of all of them and the CSR keyed by the region's
	// enrollment secret (EnrollProof).
	GameServer string `json:"gameserver,omitempty"`
	Region     string `json:"region,omitempty"`
	Time       int64  `json:"time,omitempty"`
	Nonce      string `json:"nonce,omitempty"`
	Proof      string `json:"proof,omitempty"`
	// Placement, if any, asks the plane to place players on the node
	// (enroll.go); the proof covers it.
	Placement
}

// HostGrant is the answer to POST /v1/hosts.
type HostGrant struct {
	Node uint32 `json:"node"`
	Cert string `json:"cert"` // PEM
	CA   string `json:"ca"`   // PEM
	// Admin is a player host's own admin bearer secret
	// (HostAdminToken), which the plane sends when it calls the host's
	// admin endpoint; absent for an enrolled game server, which holds
	// the nodes' shared secret, and when the plane has none.
	Admin string `json:"admin,omitempty"`
}

// HostAdminToken is player host id's admin bearer secret: the hex
// HMAC-SHA256, keyed by the nodes' shared admin secret, of
// "overworld-host-admin-v1\n" and id. The plane derives it when it calls
// the host instead of keeping it, so a restarted plane knows it, and a
// player's machine never holds the secret that commands the servers.
func HostAdminToken(shared string, id uint32) string {
	m := hmac.New(sha256.New, []byte(shared))
	fmt.Fprintf(m, "overworld-host-admin-v1\n%d", id)
	return hex.EncodeToString(m.Sum(nil))
}

// Refusal reasons of POST /v1/hosts, as HostStats counts them.
const (
	RefusedFlood      = "flood"          // over Hosts.Rate (429)
	RefusedBadRequest = "bad_request"    // malformed body, CSR, name or nonce (400)
	RefusedCredential = "bad_credential" // bad token, unknown region or a proof that does not match (401)
	RefusedStale      = "stale"          // an enrollment's time outside the window (401)
	RefusedReplayed   = "replayed"       // a nonce seen within the window (409)
	RefusedExhausted  = "exhausted"      // no node ID left in the range (503)
	RefusedInternal   = "internal"       // signing or writing the state failed (500)
)

// HostStats is the answer to GET /v1/hosts: certificates issued, requests
// refused by reason, and the node IDs given.
type HostStats struct {
	Issued int `json:"issued"`
	// Reclaimed counts the node IDs given to a game server after another
	// one's certificate for it had expired (enroll.go).
	Reclaimed   int               `json:"reclaimed"`
	Refused     map[string]int    `json:"refused"`
	Players     map[string]uint32 `json:"players"`
	GameServers map[string]uint32 `json:"gameservers"` // "region/name" → ID
}

// hostIssuer is the state of POST /v1/hosts.
type hostIssuer struct {
	cfg     Hosts
	verify  *player.Verifier // nil without player hosts
	mu      sync.Mutex
	ids     map[string]uint32 // "player:P" or "gs:REGION/NAME" → node ID
	next    uint32            // the player hosts' next ID
	enroll  map[string]*enrollRegion
	nonces  map[string]time.Time // enrollment nonce → when it may be forgotten
	bucket  float64              // tokens left
	filled  time.Time            // when bucket was last filled
	issued  int
	refused map[string]int
	// expires is when each key's last certificate expires (Unix
	// seconds); reclaimed counts the game server IDs given again.
	expires   map[string]int64
	reclaimed int
	// placed are the enrolled placement targets' records, by node ID.
	placed map[uint32]enrolledRecord
	// revoked is the revocation list (nil: none), read from Revoked when
	// it had revStamp.
	revoked  *pki.Revocations
	revStamp string
	revErr   string // the last error reading it, logged once
}

// enrolledRecord is what the plane keeps of a game server that enrolled
// with a placement in a region with a site.
type enrolledRecord struct {
	Region     string `json:"region"`
	GameServer string `json:"gameserver"`
	Placement
	// Enrolled is when it last enrolled (Unix seconds).
	Enrolled int64 `json:"enrolled"`
}

func newHostIssuer(h Hosts, nodes []Node, now time.Time) (*hostIssuer, error) {
	bad := func(format string, args ...any) (*hostIssuer, error) {
		return nil, fmt.Errorf("%w: hosts: %s", ErrConfig, fmt.Sprintf(format, args...))
	}
	if h.CA == nil || h.CA.Key == nil {
		return bad("no CA key (the plane signs the nodes' certificates)")
	}
	if h.Key == nil && len(h.Enroll) == 0 {
		return bad("neither a token key (player hosts) nor an enrolling region: nothing to certify")
	}
	type span struct {
		what        string
		first, last uint32
	}
	var spans []span
	if h.Key != nil {
		if h.First < 1 || h.Last < h.First || h.Last > live.MaxNodeID {
			return bad("node IDs %d…%d: want 1 ≤ first ≤ last ≤ %d", h.First, h.Last, live.MaxNodeID)
		}
		spans = append(spans, span{"the player hosts'", h.First, h.Last})
	} else if h.First != 0 || h.Last != 0 {
		return bad("player host IDs %d…%d without a token key", h.First, h.Last)
	}
	sited := false
	for i, e := range h.Enroll {
		if e.Site != "" {
			if err := checkSite(e.Site); err != nil {
				return bad("enroll[%d] %q: %v", i, e.Region, err)
			}
			sited = true
		}
		if e.First < 1 || e.Last < e.First || e.Last > live.MaxNodeID {
			return bad("enroll[%d] %q: node IDs %d…%d: want 1 ≤ first ≤ last ≤ %d", i, e.Region, e.First, e.Last, live.MaxNodeID)
		}
		if err := checkEnrollName("region", e.Region, 63); err != nil {
			return bad("enroll[%d]: %v", i, err)
		}
		if len(e.Secret) < MinEnrollSecret {
			return bad("enroll[%d] %q: the secret has %d bytes, want at least %d", i, e.Region, len(e.Secret), MinEnrollSecret)
		}
		for _, f := range h.Enroll[:i] {
			if f.Region == e.Region {
				return bad("enroll: region %q listed twice", e.Region)
			}
		}
		spans = append(spans, span{fmt.Sprintf("region %q's", e.Region), e.First, e.Last})
	}
	for i, a := range spans {
		for _, b := range spans[:i] {
			if a.first <= b.last && b.first <= a.last {
				return bad("%s node IDs %d…%d overlap %s %d…%d", a.what, a.first, a.last, b.what, b.first, b.last)
			}
		}
		for _, n := range nodes {
			if n.ID >= a.first && n.ID <= a.last {
				return bad("node %d lies in %s node IDs %d…%d", n.ID, a.what, a.first, a.last)
			}
		}
	}
	if h.Validity == 0 {
		h.Validity = 24 * time.Hour
	}
	if h.Validity < time.Minute {
		return bad("validity %v: want at least 1m", h.Validity)
	}
	if h.Window == 0 {
		h.Window = 2 * time.Minute
	}
	if h.Window < time.Second || h.Window > time.Hour {
		return bad("window %v: want 1s to 1h", h.Window)
	}
	if sited && h.StateFile == "" {
		return bad("a region with a site needs a state_file (a restarted plane finds its enrolled game servers there)")
	}
	if h.ForgetAfter == 0 {
		h.ForgetAfter = 10 * time.Minute
	}
	if h.ForgetAfter < time.Second || h.ForgetAfter > 24*time.Hour {
		return bad("forget_after %v: want 1s to 24h", h.ForgetAfter)
	}
	if h.Rate == 0 && h.Burst == 0 {
		h.Rate, h.Burst = 20, 40
	}
	if !(h.Rate > 0) || h.Rate > 1e6 || h.Burst < 1 {
		return bad("rate %v, burst %d: want a rate > 0 per second and a burst ≥ 1", h.Rate, h.Burst)
	}
	hi := &hostIssuer{cfg: h, ids: map[string]uint32{}, next: h.First, enroll: map[string]*enrollRegion{},
		nonces: map[string]time.Time{}, bucket: float64(h.Burst), refused: map[string]int{}, placed: map[uint32]enrolledRecord{},
		expires: map[string]int64{}}
	if h.Key != nil {
		v, err := player.NewVerifier(player.VerifierConfig{Key: h.Key, Audience: h.Audience})
		if err != nil {
			return bad("%v", err)
		}
		hi.verify = v
	}
	for _, e := range h.Enroll {
		hi.enroll[e.Region] = &enrollRegion{Enroll: e, next: e.First}
	}
	if h.StateFile != "" {
		if err := hi.load(now); err != nil {
			return bad("state_file %s: %v", h.StateFile, err)
		}
	}
	if h.Revoked != "" {
		if err := hi.reloadRevoked(); err != nil {
			return bad("revoked %s: %v", h.Revoked, err)
		}
	}
	return hi, nil
}

// hostBody is a decoded POST /v1/hosts body: a player host's token or an
// enrollment, and the request.
type hostBody struct {
	req HostRequest
	tok []byte // player host
	csr string
}

// readHostRequest decodes and checks a POST /v1/hosts body: either a
// token (its encoding, not its signature) or an enrollment's fields (their
// form, not the proof), and the request's signature and key.
func readHostRequest(r *http.Request) (hostBody, error) {
	var b hostBody
	req := &b.req
	dec := json.NewDecoder(http.MaxBytesReader(nil, r.Body, maxBody))
	dec.DisallowUnknownFields()
	if err := dec.Decode(req); err != nil {
		return b, fmt.Errorf("bad request body: %v", err)
	}
	if dec.More() {
		return b, errors.New("bad request body: data after the request")
	}
	if req.CSR == "" {
		return b, errors.New("want a csr")
	}
	enrolling := req.GameServer != "" || req.Region != "" || req.Time != 0 || req.Nonce != "" || req.Proof != ""
	switch {
	case req.Token != "" && !req.Placement.IsZero():
		return b, errors.New("a placement (admin, player_quic, player_ws, capacity) comes with an enrollment, not with a token")
	case req.Token != "" && enrolling:
		return b, errors.New("want a token (player host) or an enrollment (gameserver, region, time, nonce, proof), not both")
	case req.Token != "":
		tok, err := player.DecodeToken(req.Token)
		if err != nil {
			return b, err
		}
		b.tok = tok
	case enrolling:
		if err := checkEnrollRequest(req); err != nil {
			return b, err
		}
	default:
		return b, errors.New("want a token (player host) or an enrollment (gameserver, region, time, nonce, proof)")
	}
	if _, err := pki.ParseCSR([]byte(req.CSR)); err != nil {
		return b, err
	}
	b.csr = req.CSR
	return b, nil
}

// allow takes a token from the request bucket (h.mu held).
func (h *hostIssuer) allow(now time.Time) bool {
	if dt := now.Sub(h.filled).Seconds(); dt > 0 {
		h.bucket = min(float64(h.cfg.Burst), h.bucket+dt*h.cfg.Rate)
	}
	if now.After(h.filled) {
		h.filled = now
	}
	if h.bucket < 1 {
		return false
	}
	h.bucket--
	return true
}

// refuseHost answers a refused request, counts it by reason and logs it
// (s.hosts.mu held).
func (s *Server) refuseHost(w http.ResponseWriter, code int, reason string, err error, attrs ...any) {
	s.hosts.refused[reason]++
	s.cfg.Log.Warn("hosts: request refused", append([]any{"reason", reason, "err", err}, attrs...)...)
	http.Error(w, fmt.Sprintf("hosts: %s: %v", reason, err), code)
}

func (s *Server) serveHosts(w http.ResponseWriter, r *http.Request) {
	h := s.hosts
	h.mu.Lock()
	if !h.allow(s.cfg.Clock()) {
		s.refuseHost(w, http.StatusTooManyRequests, RefusedFlood, fmt.Errorf("over %v requests a second: retry later", h.cfg.Rate), "from", r.RemoteAddr)
		h.mu.Unlock()
		return
	}
	h.mu.Unlock()
	// The body is read outside the lock: a slow client delays no other.
	b, err := readHostRequest(r)
	var busy map[uint32]bool
	if err == nil && b.tok == nil {
		// Which enrolled nodes the placement uses, read before h.mu
		// (s.mu is never taken under it).
		busy = s.busyEnrolled()
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	now := s.cfg.Clock()
	if err != nil {
		s.refuseHost(w, http.StatusBadRequest, RefusedBadRequest, err, "from", r.RemoteAddr)
		return
	}
	if b.tok == nil {
		s.serveEnroll(w, r, b, busy, now)
		return
	}
	if h.verify == nil {
		s.refuseHost(w, http.StatusUnauthorized, RefusedCredential, errors.New("this plane certifies no player host"), "from", r.RemoteAddr)
		return
	}
	// Which ID the player would get, before the token's nonce is spent.
	c, _, _, err := player.ParseToken(b.tok)
	if err != nil {
		s.refuseHost(w, http.StatusBadRequest, RefusedBadRequest, err, "from", r.RemoteAddr)
		return
	}
	key := "player:" + string(c.Player)
	id, known := h.ids[key]
	if !known && h.next > h.cfg.Last {
		s.refuseHost(w, http.StatusServiceUnavailable, RefusedExhausted, fmt.Errorf("the %d player host IDs are all given", h.cfg.Last-h.cfg.First+1))
		return
	}
	if _, err := h.verify.Verify(b.tok, now); err != nil {
		s.refuseHost(w, http.StatusUnauthorized, RefusedCredential, err, "from", r.RemoteAddr)
		return
	}
	if !known {
		id = h.next
	}
	if !s.grant(w, key, id, nil, b.csr, now, true) {
		return
	}
	if !known {
		h.next++
	}
	s.cfg.Log.Info("player host certified", "player", string(c.Player), "node", id)
}

// grant signs node id's certificate for csr and answers it, recording id
// as key's and the certificate's expiry, and writing the state file (undo,
// if any, takes back the caller's own changes when the write fails); it
// reports whether it did (h.mu held).
func (s *Server) grant(w http.ResponseWriter, key string, id uint32, undo func(), csr string, now time.Time, playerHost bool) bool {
	h := s.hosts
	issue := h.cfg.CA.IssueCSR
	if playerHost {
		issue = h.cfg.CA.IssuePlayerHostCSR
	}
	cert, err := issue(wire.NodeID(id), []byte(csr), now, h.cfg.Validity)
	if err != nil {
		if undo != nil {
			undo()
		}
		s.refuseHost(w, http.StatusInternalServerError, RefusedInternal, err)
		return false
	}
	oldID, had := h.ids[key]
	oldExp, hadExp := h.expires[key]
	h.ids[key] = id
	h.expires[key] = now.Add(h.cfg.Validity).Unix()
	if err := h.save(); err != nil {
		delete(h.ids, key)
		delete(h.expires, key)
		if had {
			h.ids[key] = oldID
		}
		if hadExp {
			h.expires[key] = oldExp
		}
		if undo != nil {
			undo()
		}
		s.refuseHost(w, http.StatusInternalServerError, RefusedInternal, fmt.Errorf("state_file: %v", err))
		return false
	}
	h.issued++
	g := HostGrant{Node: id, Cert: string(cert), CA: string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: h.cfg.CA.Cert.Raw}))}
	if playerHost && s.cfg.AdminToken != "" {
		g.Admin = HostAdminToken(s.cfg.AdminToken, id)
	}
	writeJSON(w, g)
	return true
}

// serveHostStats answers GET /v1/hosts.
func (s *Server) serveHostStats(w http.ResponseWriter, _ *http.Request) {
	h := s.hosts
	h.mu.Lock()
	defer h.mu.Unlock()
	st := HostStats{Issued: h.issued, Reclaimed: h.reclaimed, Refused: map[string]int{}, Players: map[string]uint32{}, GameServers: map[string]uint32{}}
	for _, r := range []string{RefusedFlood, RefusedBadRequest, RefusedCredential, RefusedStale, RefusedReplayed, RefusedExhausted, RefusedInternal} {
		st.Refused[r] = h.refused[r]
	}
	for k, id := range h.ids {
		if p, ok := strings.CutPrefix(k, "player:"); ok {
			st.Players[p] = id
		} else if g, ok := strings.CutPrefix(k, "gs:"); ok {
			st.GameServers[g] = id
		}
	}
	writeJSON(w, st)
}

// hostState is the state file's contents.
type hostState struct {
	IDs map[string]uint32 `json:"ids"`
	// Expires is when each key's last certificate expires (Unix
	// seconds). A key without one (a file an older plane wrote) counts
	// as expiring one validity after the plane read it.
	Expires map[string]int64 `json:"expires,omitempty"`
	// Nodes are the enrolled placement targets' records, by node ID.
	Nodes map[uint32]enrolledRecord `json:"nodes,omitempty"`
}

// load reads the state file (absent: nothing given yet) and moves each
// range's next ID past the IDs given in it; now is when (a key without
// an expiry counts as expiring one validity later).
func (h *hostIssuer) load(now time.Time) error {
	b, err := os.ReadFile(h.cfg.StateFile)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	var st hostState
	if err := json.Unmarshal(b, &st); err != nil {
		return fmt.Errorf("bad JSON: %v", err)
	}
	for k, id := range st.IDs {
		switch {
		case strings.HasPrefix(k, "player:") && h.verify != nil && id >= h.cfg.First && id <= h.cfg.Last:
			h.next = max(h.next, id+1)
		case strings.HasPrefix(k, "gs:"):
			region, _, _ := strings.Cut(strings.TrimPrefix(k, "gs:"), "/")
			e := h.enroll[region]
			if e == nil || id < e.First || id > e.Last {
				return fmt.Errorf("%s has node %d, outside its region's IDs", k, id)
			}
			e.next = max(e.next, id+1)
		default:
			return fmt.Errorf("%s has node %d, outside the player hosts' IDs", k, id)
		}
		h.ids[k] = id
		exp, ok := st.Expires[k]
		if !ok {
			exp = now.Add(h.cfg.Validity).Unix()
		}
		if exp <= 0 {
			return fmt.Errorf("expires: %s: %d, want Unix seconds", k, exp)
		}
		h.expires[k] = exp
	}
	for k := range st.Expires {
		if _, ok := st.IDs[k]; !ok {
			return fmt.Errorf("expires: %s was given no node ID", k)
		}
	}
	seen := map[uint32]string{}
	for k, id := range st.IDs {
		if o, dup := seen[id]; dup {
			return fmt.Errorf("node %d given to both %s and %s", id, o, k)
		}
		seen[id] = k
	}
	for id, r := range st.Nodes {
		if h.ids["gs:"+r.Region+"/"+r.GameServer] != id {
			return fmt.Errorf("nodes: node %d: game server %s/%s was not given that ID", id, r.Region, r.GameServer)
		}
		if e := h.enroll[r.Region]; e == nil || e.Site == "" {
			continue // the region places no players any more
		}
		if err := r.Placement.Check(); err != nil {
			return fmt.Errorf("nodes: node %d: %v", id, err)
		}
		h.placed[id] = r
	}
	return nil
}

// reloadRevoked reads the revocation list again if its file changed
// (h.mu held). On an error the list read last stays.
func (h *hostIssuer) reloadRevoked() error {
	fi, err := os.Stat(h.cfg.Revoked)
	if err != nil {
		return err
	}
	stamp := fmt.Sprint(fi.ModTime().UnixNano(), fi.Size())
	if stamp == h.revStamp {
		return nil
	}
	r, err := pki.LoadRevocations(h.cfg.Revoked)
	if err != nil {
		return err
	}
	h.revoked, h.revStamp = r, stamp
	return nil
}

// save writes the state file, if any, atomically.
func (h *hostIssuer) save() error {
	if h.cfg.StateFile == "" {
		return nil
	}
	b, err := json.MarshalIndent(hostState{IDs: h.ids, Expires: h.expires, Nodes: h.placed}, "", "  ")
	if err != nil {
		return err
	}
	tmp := h.cfg.StateFile + ".tmp"
	if err := os.WriteFile(tmp, append(b, '\n'), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, h.cfg.StateFile)
}

// HostCert is what RequestHostCert obtained: the node ID, the node file
// (certificate then key, PEM, as pki.Issue writes it) and the CA's
// certificate (PEM).
type HostCert struct {
	Node     uint32
	NodeFile []byte
	CA       []byte
	// Admin is the host's admin bearer secret, "" when the plane gave
	// none (HostGrant.Admin).
	Admin string
}

// ErrPlaneRefused wraps a refusal the plane answered (a 4xx status but
// 429): asking again with the same credential will not help.
var ErrPlaneRefused = errors.New("plane: refused")

// RequestHostCert asks the plane at base ("http://host:port") for a
// player host's certificate with token (encoded): it makes an ECDSA P-256
// key, sends its certificate request, and checks the grant (the
// certificate chains to the CA returned, names the node granted, and is
// for the key made) before returning it. The key never leaves this
// process but in the returned node file.
func RequestHostCert(ctx context.Context, client *http.Client, base, token string) (HostCert, error) {
	return requestCert(ctx, client, base, "player host", func(csr string) (HostRequest, error) {
		return HostRequest{Token: token, CSR: csr}, nil
	})
}

// requestCert makes a key and its certificate request, posts the body
// build makes of it to POST /v1/hosts, and checks the grant.
func requestCert(ctx context.Context, client *http.Client, base, what string, build func(csr string) (HostRequest, error)) (HostCert, error) {
	fail := func(format string, args ...any) (HostCert, error) {
		return HostCert{}, fmt.Errorf("plane: %s: %w", what, fmt.Errorf(format, args...))
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return HostCert{}, err
	}
	der, err := x509.CreateCertificateRequest(rand.Reader, &x509.CertificateRequest{}, key)
	if err != nil {
		return HostCert{}, err
	}
	hr, err := build(string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der})))
	if err != nil {
		return fail("%w", err)
	}
	body, _ := json.Marshal(hr)
	u, err := url.JoinPath(base, "/v1/hosts")
	if err != nil {
		return fail("plane URL %q: %w", base, err)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u, bytes.NewReader(body))
	if err != nil {
		return fail("%w", err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return fail("%w", err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return fail("%w", err)
	}
	if resp.StatusCode != http.StatusOK {
		if resp.StatusCode/100 == 4 && resp.StatusCode != http.StatusTooManyRequests {
			return fail("%w: %s: %s", ErrPlaneRefused, resp.Status, bytes.TrimSpace(b))
		}
		return fail("%s: %s", resp.Status, bytes.TrimSpace(b))
	}
	var g HostGrant
	if err := json.Unmarshal(b, &g); err != nil {
		return fail("bad grant: %w", err)
	}
	cb, _ := pem.Decode([]byte(g.Cert))
	ab, _ := pem.Decode([]byte(g.CA))
	if cb == nil || ab == nil {
		return fail("bad grant: no certificate or no CA")
	}
	cert, err := x509.ParseCertificate(cb.Bytes)
	if err != nil {
		return fail("bad certificate: %w", err)
	}
	caCert, err := x509.ParseCertificate(ab.Bytes)
	if err != nil {
		return fail("bad CA: %w", err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(caCert)
	if _, err := cert.Verify(x509.VerifyOptions{Roots: pool, KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}}); err != nil {
		return fail("the certificate does not chain to the CA: %w", err)
	}
	if id, err := pki.NodeIDOf(cert); err != nil || uint32(id) != g.Node || g.Node < 1 || g.Node > live.MaxNodeID {
		return fail("the certificate names node %d, the grant node %d", id, g.Node)
	}
	if pub, ok := cert.PublicKey.(*ecdsa.PublicKey); !ok || !pub.Equal(&key.PublicKey) {
		return fail("the certificate is not for the key sent")
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return HostCert{}, err
	}
	nodeFile := append([]byte(g.Cert), pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})...)
	if !validAdminToken(g.Admin) {
		return fail("bad grant: admin secret %q: want 64 hex digits", g.Admin)
	}
	return HostCert{Node: g.Node, NodeFile: nodeFile, CA: []byte(g.CA), Admin: g.Admin}, nil
}

// validAdminToken reports whether s is absent or a HostAdminToken's form.
func validAdminToken(s string) bool {
	if s == "" {
		return true
	}
	_, err := hex.DecodeString(s)
	return err == nil && len(s) == 2*sha256.Size
}
