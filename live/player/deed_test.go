package player

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	crand "crypto/rand"
	"crypto/x509"
	"encoding/binary"
	"encoding/pem"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/overworld/overworld/live/pki"
	"github.com/overworld/overworld/wire"
	"github.com/overworld/overworld/world"
)

// testIdentities returns the identities of nodes 1 to n of a fresh
// cluster CA, valid around the current time (inside a synctest bubble,
// the bubble's).
func testIdentities(t testing.TB, n int) []*pki.Identity {
	t.Helper()
	return identitiesOf(t, testCA(t), n)
}

func testCA(t testing.TB) *pki.CA {
	t.Helper()
	ca, err := pki.NewCA("test", time.Now(), 30*24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	return ca
}

func identitiesOf(t testing.TB, ca *pki.CA, n int) []*pki.Identity {
	t.Helper()
	out := make([]*pki.Identity, n)
	for i := range out {
		data, err := ca.Issue(wire.NodeID(i+1), time.Now(), 7*24*time.Hour)
		if err != nil {
			t.Fatal(err)
		}
		if out[i], err = pki.ParseNode(data, ca); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// TestDeedRoundTrip: a deed a node issues parses back to what it
// says, verifies at another node of the cluster, and is refused once
// expired, before it is issued, by a node of another cluster, with a
// lifetime over the verifier's limit, altered, or signed by a revoked
// node.
func TestDeedRoundTrip(t *testing.T) {
	now := time.Now()
	idents := testIdentities(t, 2)
	b, err := IssueDeed(idents[0].Current(), 1<<33|7, "ann", "main", now, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	tk, err := VerifyDeed(b, idents[1], now.Add(time.Minute), DefaultDeedTTL)
	if err != nil {
		t.Fatal(err)
	}
	if tk.Avatar != 1<<33|7 || tk.Player != "ann" || tk.World != "main" || tk.Issued.Unix() != now.Unix() ||
		tk.Expires.Unix() != now.Add(time.Hour).Unix() || !bytes.Equal(tk.Cert, idents[0].Current().Certificate[0]) {
		t.Fatalf("deed says %+v", tk)
	}
	other := testIdentities(t, 1)[0]
	for _, c := range []struct {
		name string
		at   time.Time
		by   *pki.Identity
		ttl  time.Duration
		b    []byte
		want error
	}{
		{"expired", now.Add(time.Hour), idents[1], DefaultDeedTTL, b, ErrDeedExpired},
		{"early", now.Add(-time.Minute), idents[1], DefaultDeedTTL, b, ErrDeedEarly},
		{"another cluster", now, other, DefaultDeedTTL, b, ErrDeedIssuer},
		{"too long", now, idents[1], 30 * time.Minute, b, ErrDeedTTL},
		{"altered avatar", now, idents[1], DefaultDeedTTL, flip(b, 8), ErrDeedSignature},
		{"altered signature", now, idents[1], DefaultDeedTTL, flip(b, len(b)-1), ErrDeedSignature},
		{"truncated", now, idents[1], DefaultDeedTTL, b[:len(b)-1], ErrDeedMalformed},
		{"trailing", now, idents[1], DefaultDeedTTL, append(slices.Clip(b), 0), ErrDeedMalformed},
		{"garbage", now, idents[1], DefaultDeedTTL, []byte("not a deed"), ErrDeedMalformed},
	} {
		if _, err := VerifyDeed(c.b, c.by, c.at, c.ttl); !errors.Is(err, c.want) || !errors.Is(err, ErrDeed) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
	rv, err := pki.ParseRevocations([]byte(fmt.Sprintf("serial %x\n", idents[0].Leaf.SerialNumber)))
	if err != nil {
		t.Fatal(err)
	}
	idents[1].SetRevocations(rv)
	if _, err := VerifyDeed(b, idents[1], now, DefaultDeedTTL); !errors.Is(err, ErrDeedIssuer) || !errors.Is(err, pki.ErrRevoked) {
		t.Errorf("a revoked node's deed: %v", err)
	}
}

func flip(b []byte, i int) []byte {
	c := slices.Clone(b)
	c[i] ^= 1
	return c
}

// TestRejoinDeedRefusals: ann plays on node 1 and holds its deed.
// Rejoins at node 2 (same cluster) naming her avatar are refused, each
// with CodeBadDeed and its reason, before any state exists there: no
// deed, her deed with mallory's token, an expired deed, a forged
// signature, a deed from a node of another CA, a truncated and a
// garbage deed, her deed for another avatar, a deed for another
// world, one valid for too long. Her own deed and token pass (the
// rejoin then waits for the avatar), and a version-1 client is told to
// upgrade.
func TestRejoinDeedRefusals(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		idents := testIdentities(t, 2)
		tb := newTestbed(t, ctx, Config{Identity: idents[0]})
		g2, err := New(Config{Verifier: tb.ver, Controller: dots{}, Identity: idents[1]})
		if err != nil {
			t.Fatal(err)
		}
		n2 := newTestNode(t)
		conn := tb.connect()
		var ann *Client
		go func() {
			var err error
			if ann, err = Join(ctx, conn, tb.token("ann", time.Hour)); err != nil {
				t.Error(err)
				return
			}
			_ = ann.Run(ctx, &randomWalk{rand.New(rand.NewPCG(1, 2))}, 0)
		}()
		synctest.Wait()
		for range 3 {
			tb.step()
		}
		if ann == nil || ann.Deed() == nil {
			t.Fatal("ann joined without a deed")
		}
		avatar, deed := ann.Welcome().Avatar, ann.Deed()
		if tk, err := ParseDeed(deed); err != nil || tk.Avatar != avatar || tk.Player != "ann" || tk.World != testAud.World {
			t.Fatalf("ann's deed: %+v, %v", tk, err)
		}
		now := time.Now()
		issue := func(id *pki.Identity, av world.ObjectID, p PlayerID, w string, at time.Time, ttl time.Duration) []byte {
			t.Helper()
			b, err := IssueDeed(id.Current(), av, p, w, at, ttl)
			if err != nil {
				t.Fatal(err)
			}
			return b
		}
		foreign := testIdentities(t, 1)[0]
		annTok := tb.token("ann", time.Hour)
		objs := len(n2.Objects(nil))
		for _, c := range []struct {
			name   string
			token  []byte
			deed   []byte
			avatar world.ObjectID
			want   error
		}{
			{"no deed", annTok, nil, avatar, ErrDeedMissing},
			{"another player's deed", tb.token("mallory", time.Hour), deed, avatar, ErrDeedPlayer},
			{"expired", annTok, issue(idents[0], avatar, "ann", testAud.World, now.Add(-2*time.Hour), time.Hour), avatar, ErrDeedExpired},
			{"forged signature", annTok, flip(deed, len(deed)-1), avatar, ErrDeedSignature},
			{"another CA", annTok, issue(foreign, avatar, "ann", testAud.World, now, time.Hour), avatar, ErrDeedIssuer},
			{"truncated", annTok, deed[:len(deed)/2], avatar, ErrDeedMalformed},
			{"garbage", annTok, []byte("\x01garbage"), avatar, ErrDeedMalformed},
			{"another avatar", annTok, deed, avatar + 1, ErrDeedAvatar},
			{"another world", annTok, issue(idents[0], avatar, "ann", "other", now, time.Hour), avatar, ErrDeedWorld},
			{"too long", annTok, issue(idents[0], avatar, "ann", testAud.World, now, 48*time.Hour), avatar, ErrDeedTTL},
		} {
			a, b := Pipe(8)
			go func() { _ = g2.Serve(ctx, a) }()
			if err := b.WriteMessage(ctx, AppendRejoin(nil, Rejoin{Token: c.token, Deed: c.deed, Avatar: c.avatar, Seq: 1})); err != nil {
				t.Fatal(err)
			}
			synctest.Wait()
			g2.Frame(tb.now, n2)
			_, err := awaitJoinOK(ctx, b)
			var refused *RefusedError
			if !errors.As(err, &refused) || refused.Code != CodeBadDeed {
				t.Errorf("%s: %v, want a bad deed refusal", c.name, err)
				continue
			}
			// The text is the reason, as the gateway's error says it.
			want := fmt.Errorf("%w: %w", ErrDeed, c.want).Error()
			if !strings.HasPrefix(refused.Text, want) {
				t.Errorf("%s: refused with %q, want %q", c.name, refused.Text, want)
			}
		}
		if st := g2.Stats(); st.BadDeed != 10 || st.Players != 0 || st.Joins != 0 || st.Rejoins != 0 || g2.slots.Load() != 0 || len(n2.Objects(nil)) != objs {
			t.Fatalf("node 2 after the refusals: %+v, %d slots, %d objects", st, g2.slots.Load(), len(n2.Objects(nil)))
		}
		if st := tb.g.Stats(); st.Players != 1 {
			t.Fatalf("node 1 has %d players, want ann", st.Players)
		}
		// Her own deed with her token passes the check: node 2 admits
		// the rejoin and waits for the avatar.
		a, b := Pipe(8)
		go func() { _ = g2.Serve(ctx, a) }()
		if err := b.WriteMessage(ctx, AppendRejoin(nil, Rejoin{Token: annTok, Deed: deed, Avatar: avatar, Seq: 1})); err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		g2.Frame(tb.now, n2)
		if w, err := awaitJoinOK(ctx, b); err != nil || w.Avatar != avatar {
			t.Fatalf("ann's own rejoin: %+v, %v", w, err)
		}
		if st := g2.Stats(); st.Rejoins != 1 || st.BadDeed != 10 {
			t.Fatalf("node 2 after ann's rejoin: %+v", st)
		}
		// A version-1 client hears, in version 1, to upgrade.
		x, y := Pipe(8)
		go func() { _ = g2.Serve(ctx, x) }()
		if err := y.WriteMessage(ctx, []byte{1, byte(MsgJoin), 1, 0}); err != nil {
			t.Fatal(err)
		}
		msg, err := y.ReadMessage(ctx, MaxMessage)
		if err != nil || len(msg) < 4 || msg[0] != 1 || msg[1] != byte(MsgError) || msg[2] != byte(CodeMalformed) ||
			!strings.Contains(string(msg), "upgrade the client") {
			t.Fatalf("a version-1 join: %q, %v", msg, err)
		}
		if g2.Stats().OldClients != 1 {
			t.Fatalf("stats %+v", g2.Stats())
		}
		cancel()
		synctest.Wait()
	})
}

// TestDeedRenewed: a session's deed is renewed once half of its
// DeedTTL has passed, and the client keeps the newer one.
func TestDeedRenewed(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		var skip atomic.Int64 // added to the gateway's wall clock
		tb := newTestbed(t, ctx, Config{DeedTTL: time.Hour, Now: func() time.Time { return time.Now().Add(time.Duration(skip.Load())) }})
		conn := tb.connect()
		var c *Client
		go func() {
			var err error
			if c, err = Join(ctx, conn, tb.token("ann", time.Hour)); err != nil {
				t.Error(err)
				return
			}
			_ = c.Run(ctx, &randomWalk{rand.New(rand.NewPCG(1, 3))}, 0)
		}()
		synctest.Wait()
		for range 3 {
			tb.step()
		}
		if c == nil {
			t.Fatal("no join")
		}
		first, err := ParseDeed(c.Deed())
		if err != nil {
			t.Fatal(err)
		}
		skip.Store(int64(29 * time.Minute))
		tb.step()
		tb.step()
		if n := tb.g.Stats().Deeds; n != 1 {
			t.Fatalf("%d deeds before half the TTL, want 1", n)
		}
		skip.Store(int64(31 * time.Minute))
		tb.step()
		tb.step()
		second, err := ParseDeed(c.Deed())
		if err != nil || tb.g.Stats().Deeds != 2 || !second.Issued.After(first.Issued) {
			t.Fatalf("after half the TTL: %d deeds, the client's issued %v (first %v), %v", tb.g.Stats().Deeds, second.Issued, first.Issued, err)
		}
		cancel()
		synctest.Wait()
	})
}

// FuzzParseDeed: ParseDeed never panics, and a deed it accepts
// re-encodes to the same bytes (the layout has one encoding).
func FuzzParseDeed(f *testing.F) {
	id := identitiesOf(f, testCA(f), 1)[0]
	b, err := IssueDeed(id.Current(), 5, "ann", "main", time.Unix(1_800_000_000, 0), time.Hour)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add(b[:40])
	f.Add([]byte{deedVersion})
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		tk, err := ParseDeed(b)
		if err != nil {
			if !errors.Is(err, ErrDeedMalformed) || tk.Cert != nil {
				t.Fatalf("refusal %v with %+v", err, tk)
			}
			return
		}
		re := []byte{deedVersion}
		re = binary.BigEndian.AppendUint64(re, uint64(tk.Avatar))
		re = append(append(re, byte(len(tk.Player))), tk.Player...)
		re = append(append(re, byte(len(tk.World))), tk.World...)
		re = binary.BigEndian.AppendUint64(re, uint64(tk.Issued.Unix()))
		re = binary.BigEndian.AppendUint64(re, uint64(tk.Expires.Unix()))
		re = binary.BigEndian.AppendUint16(re, uint16(len(tk.Cert)))
		re = append(re, tk.Cert...)
		re = append(append(re, byte(len(tk.sig))), tk.sig...)
		if !bytes.Equal(re, b) {
			t.Fatalf("%x re-encodes to %x", b, re)
		}
		if _, _, err := DecodeDeed(AppendDeed(nil, b)[2:]); err != nil {
			t.Fatalf("a deed ParseDeed accepts, in a Deed message: %v", err)
		}
	})
}

// TestPlayerHostDeeds: a player host's certificate (pki.RolePlayerHost)
// vouches for the avatars its node created, and for no other: a deed it
// signs for an avatar created elsewhere is refused, so a player's machine
// cannot hand its player someone else's avatar.
func TestPlayerHostDeeds(t *testing.T) {
	now := time.Now()
	ca := testCA(t)
	server := identitiesOf(t, ca, 1)[0]
	key, err := ecdsa.GenerateKey(elliptic.P256(), crand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.CreateCertificateRequest(crand.Reader, &x509.CertificateRequest{}, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := ca.IssuePlayerHostCSR(300, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE REQUEST", Bytes: der}), now, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	host, err := pki.ParseNode(append(cert, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER})...), ca)
	if err != nil {
		t.Fatal(err)
	}
	if !pki.IsPlayerHost(host.Leaf) || pki.IsPlayerHost(server.Leaf) {
		t.Fatal("IsPlayerHost does not tell the player host's certificate from the server's")
	}
	own := world.MakeObjectID(300, 9)
	b, err := IssueDeed(host.Current(), own, "ann", "main", now, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if d, err := VerifyDeed(b, server, now, DefaultDeedTTL); err != nil || d.Avatar != own {
		t.Fatalf("the host's deed for an avatar it created: %+v, %v", d, err)
	}
	stolen := world.MakeObjectID(1, 9) // created by the server
	b, err = IssueDeed(host.Current(), stolen, "mallory", "main", now, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := VerifyDeed(b, server, now, DefaultDeedTTL); !errors.Is(err, ErrDeedIssuer) || !strings.Contains(err.Error(), "vouches only for avatars it created") {
		t.Fatalf("the host's deed for another node's avatar: %v, want refused", err)
	}
	// The server's deed for the same avatar is good.
	b, err = IssueDeed(server.Current(), stolen, "ann", "main", now, time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := VerifyDeed(b, server, now, DefaultDeedTTL); err != nil {
		t.Fatalf("the server's deed: %v", err)
	}
}
