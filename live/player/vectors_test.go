package player_test

import (
	"bytes"
	"crypto/ed25519"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/overworld/overworld/internal/docvec"
	"github.com/overworld/overworld/live/pki"
	"github.com/overworld/overworld/live/player"
	"github.com/overworld/overworld/world"
)

// protocolDoc is the byte-level specification whose test vectors this
// file checks: every "```hex player/..." block in it must equal what the
// encoders produce here, and every vector made here must be in it.
var protocolDoc = filepath.Join("..", "..", "docs", "protocol.md")

// The example game of the specification: a two-dimensional space and one
// kind of object.
var (
	exSpace = world.MustSpace("x", "y")
	exDot   = world.MustSchema("dot", exSpace, []world.Field{
		{Name: "x", Type: world.Float, Quantum: 1.0 / 16},
		{Name: "y", Type: world.Float, Quantum: 1.0 / 16},
		{Name: "hp", Type: world.Int},
		{Name: "alive", Type: world.Bool},
	}, player.NewClientObject)
)

func exRegistry(t *testing.T) *world.Registry {
	t.Helper()
	reg, err := world.NewRegistry(exSpace, exDot)
	if err != nil {
		t.Fatal(err)
	}
	return reg
}

// exState returns a dot's state.
func exState(id world.ObjectID, x, y float64, hp int64, alive bool) *world.State {
	st := exDot.NewState(id)
	st.SetFloat(exDot.MustField("x"), x)
	st.SetFloat(exDot.MustField("y"), y)
	st.SetInt(exDot.MustField("hp"), hp)
	st.SetBool(exDot.MustField("alive"), alive)
	return st
}

// The token of the specification: a fixed coordinator key (its Ed25519
// seed is the bytes 00 01 … 1f), player "alice", world "main", node 1,
// issued 2026-01-01T00:00:00Z for five minutes, nonce a0 a1 … af.
func exToken(t *testing.T) (tok []byte, pub ed25519.PublicKey, issued time.Time) {
	t.Helper()
	seed := make([]byte, ed25519.SeedSize)
	for i := range seed {
		seed[i] = byte(i)
	}
	key := ed25519.NewKeyFromSeed(seed)
	nonce := make([]byte, 16)
	for i := range nonce {
		nonce[i] = 0xa0 + byte(i)
	}
	issued = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	tok, err := player.IssueToken(key, "alice", player.Audience{World: "main", Node: 1}, issued, 5*time.Minute, bytes.NewReader(nonce))
	if err != nil {
		t.Fatal(err)
	}
	return tok, key.Public().(ed25519.PublicKey), issued
}

// seedKey returns the Ed25519 key whose seed is the 32 bytes from first
// up.
func seedKey(first byte) ed25519.PrivateKey {
	seed := make([]byte, ed25519.SeedSize)
	for i := range seed {
		seed[i] = first + byte(i)
	}
	return ed25519.NewKeyFromSeed(seed)
}

// exCluster is the specification's cluster: a CA whose Ed25519 key has
// the seed 40 41 … 5f, and node 1, whose Ed25519 key has the seed 20 21
// … 3f; both certificates valid from 2025-01-01 to 2035-01-01, with
// serial numbers 1 and 2 (Ed25519 signatures are deterministic, so the
// certificates are too).
func exCluster(t *testing.T) *pki.Identity {
	t.Helper()
	caKey, nodeKey := seedKey(0x40), seedKey(0x20)
	from, to := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(2035, 1, 1, 0, 0, 0, 0, time.UTC)
	caTmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "example CA"},
		NotBefore: from, NotAfter: to, KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true, IsCA: true, MaxPathLenZero: true}
	caDER, err := x509.CreateCertificate(nil, caTmpl, caTmpl, caKey.Public(), caKey)
	if err != nil {
		t.Fatal(err)
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		t.Fatal(err)
	}
	nodeTmpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "node-1"},
		NotBefore: from, NotAfter: to, KeyUsage: x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		DNSNames:    []string{pki.DNSName(1)}, URIs: []*url.URL{{Scheme: "urn", Opaque: "overworld:node:1"}}}
	nodeDER, err := x509.CreateCertificate(nil, nodeTmpl, caCert, nodeKey.Public(), caKey)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(nodeKey)
	if err != nil {
		t.Fatal(err)
	}
	ca := &pki.CA{Cert: caCert, Pool: x509.NewCertPool()}
	ca.Pool.AddCert(caCert)
	id, err := pki.ParseNode(append(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: nodeDER}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})...), ca)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// TestProtocolVectors checks the client protocol's test vectors in the
// specification against the encoders, and decodes each with the decoders.
func TestProtocolVectors(t *testing.T) {
	reg := exRegistry(t)
	tok, pub, issued := exToken(t)
	avatar := world.MakeObjectID(1, 5)
	rock := world.MakeObjectID(2, 3)

	enc := player.NewEncoder(32)
	state := func(frame, acked, seq uint64, seen ...player.Seen) []byte {
		b, _, err := enc.Encode(nil, frame, acked, seq, seen)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	kind := world.Kind(1)
	s1 := state(1, 0, 0, player.Seen{ID: avatar, Kind: kind, State: exState(avatar, 10.5, -3, 100, true)})
	s2 := state(2, 1, 1,
		player.Seen{ID: avatar, Kind: kind, State: exState(avatar, 11, -3, 90, true)},
		player.Seen{ID: rock, Kind: kind, State: exState(rock, 12.25, 0, 0, false)})
	s3 := state(3, 2, 2, player.Seen{ID: avatar, Kind: kind, State: exState(avatar, 11, -3, 90, true)})

	node1 := exCluster(t)
	deed, err := player.IssueDeed(node1.Current(), avatar, "alice", "main", issued, 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	made := map[string][]byte{
		"player/node-cert":  node1.Leaf.Raw,
		"player/deed":       deed,
		"player/deed-msg":   player.AppendDeed(nil, deed),
		"player/token":      tok,
		"player/public-key": pub,
		"player/join":       player.AppendJoin(nil, tok),
		"player/joinok": player.AppendJoinOK(nil, player.Welcome{Player: "alice", Avatar: avatar,
			FrameEvery: 100 * time.Millisecond, History: 32, Registry: reg}),
		"player/input":   player.AppendInput(nil, 1, []byte{0x01, 0x00, 0x28, 0xff, 0xd8, 0x40, 0x00}),
		"player/state-1": s1,
		"player/state-2": s2,
		"player/state-3": s3,
		"player/ack":     player.AppendAck(nil, 2),
		"player/leave":   player.AppendLeave(nil),
		"player/error":   player.AppendError(nil, player.CodeFull, "node is full"),
		"player/redirect": player.AppendRedirect(nil, player.Redirect{Node: 2, QUIC: "10.0.0.2:7101",
			WS: "ws://10.0.0.2:7102/play", Avatar: avatar, Seq: 2}),
		"player/rejoin": player.AppendRejoin(nil, player.Rejoin{Token: tok, Deed: deed, Avatar: avatar, Seq: 2}),
	}
	doc, err := docvec.Read(protocolDoc, "player/")
	if err != nil {
		t.Fatal(err)
	}
	docvec.Check(t, protocolDoc, doc, made)
	if t.Failed() {
		return
	}

	// The token verifies with the document's public key at node 1 of
	// world "main", within its five minutes.
	v, err := player.NewVerifier(player.VerifierConfig{Key: ed25519.PublicKey(doc["player/public-key"]),
		Audience: player.Audience{World: "main", Node: 1}})
	if err != nil {
		t.Fatal(err)
	}
	c, err := v.Verify(doc["player/token"], issued.Add(time.Minute))
	if err != nil || c.Player != "alice" || !c.Expires.Equal(issued.Add(5*time.Minute)) {
		t.Errorf("the document's token: claims %+v, %v", c, err)
	}
	if got := player.EncodeToken(doc["player/token"]); !strings.Contains(mustRead(t, protocolDoc), got) {
		t.Errorf("%s does not show the printed token %s", protocolDoc, got)
	}

	// Every message opens with its type and decodes.
	open := func(name string, want player.MsgType) []byte {
		t.Helper()
		mt, body, err := player.Open(doc[name])
		if err != nil || mt != want {
			t.Fatalf("%s: type %v, %v; want %v", name, mt, err, want)
		}
		return body
	}
	if got, err := player.DecodeJoin(open("player/join", player.MsgJoin)); err != nil || !bytes.Equal(got, tok) {
		t.Errorf("join: token %x, %v", got, err)
	}
	w, err := player.DecodeJoinOK(open("player/joinok", player.MsgJoinOK))
	if err != nil || w.Player != "alice" || w.Avatar != avatar || w.FrameEvery != 100*time.Millisecond || w.History != 32 ||
		w.Registry.Len() != 1 || w.Registry.Schema(1).Name() != "dot" || w.Registry.Schema(1).NumFields() != 4 {
		t.Fatalf("joinok: %+v, %v", w, err)
	}
	if seq, in, err := player.DecodeInput(open("player/input", player.MsgInput)); err != nil || seq != 1 || len(in) != 7 {
		t.Errorf("input: seq %d, %x, %v", seq, in, err)
	}
	if f, err := player.DecodeAck(open("player/ack", player.MsgAck)); err != nil || f != 2 {
		t.Errorf("ack: %d, %v", f, err)
	}
	if err := player.DecodeLeave(open("player/leave", player.MsgLeave)); err != nil {
		t.Errorf("leave: %v", err)
	}
	if e, err := player.DecodeError(open("player/error", player.MsgError)); err != nil || e.Code != player.CodeFull || e.Text != "node is full" {
		t.Errorf("error: %+v, %v", e, err)
	}

	if m, err := player.DecodeRedirect(open("player/redirect", player.MsgRedirect)); err != nil || m.Node != 2 ||
		m.QUIC != "10.0.0.2:7101" || m.WS != "ws://10.0.0.2:7102/play" || m.Avatar != avatar || m.Seq != 2 {
		t.Errorf("redirect: %+v, %v", m, err)
	}
	if m, err := player.DecodeRejoin(open("player/rejoin", player.MsgRejoin)); err != nil || !bytes.Equal(m.Token, tok) ||
		!bytes.Equal(m.Deed, doc["player/deed"]) || m.Avatar != avatar || m.Seq != 2 {
		t.Errorf("rejoin: %+v, %v", m, err)
	}
	// The deed verifies, at any node of the example cluster, within its
	// day, and says what the document says.
	if b, tk, err := player.DecodeDeed(open("player/deed-msg", player.MsgDeed)); err != nil || !bytes.Equal(b, doc["player/deed"]) ||
		tk.Avatar != avatar || tk.Player != "alice" || tk.World != "main" || !bytes.Equal(tk.Cert, doc["player/node-cert"]) {
		t.Errorf("deed message: %+v, %v", tk, err)
	}
	if tk, err := player.VerifyDeed(doc["player/deed"], node1, issued.Add(time.Hour), player.DefaultDeedTTL); err != nil ||
		!tk.Issued.Equal(issued) || !tk.Expires.Equal(issued.Add(24*time.Hour)) {
		t.Errorf("the document's deed: %+v, %v", tk, err)
	}

	// A client applying the three States sees what the node encoded.
	view := player.NewView(w.Registry, w.History)
	for _, st := range []struct {
		name string
		want []*world.State
	}{
		{"player/state-1", []*world.State{exState(avatar, 10.5, -3, 100, true)}},
		{"player/state-2", []*world.State{exState(avatar, 11, -3, 90, true), exState(rock, 12.25, 0, 0, false)}},
		{"player/state-3", []*world.State{exState(avatar, 11, -3, 90, true)}},
	} {
		ok, err := view.Apply(open(st.name, player.MsgState))
		if err != nil || !ok {
			t.Fatalf("%s: applied %v, %v", st.name, ok, err)
		}
		got := view.Objects()
		if len(got) != len(st.want) {
			t.Fatalf("%s: %d objects in view, want %d", st.name, len(got), len(st.want))
		}
		for i, o := range got {
			// A full state from nothing lists every quantised value.
			g, w := world.AppendDelta(nil, nil, o.State), world.AppendDelta(nil, nil, st.want[i])
			if o.ID != st.want[i].ID() || !bytes.Equal(g, w) {
				t.Errorf("%s: object %v with values %x, want %v with %x", st.name, o.ID, g, st.want[i].ID(), w)
			}
		}
	}
}

func mustRead(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
