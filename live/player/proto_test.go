package player

import (
	"bytes"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/overworld/overworld/world"
)

func TestMessagesRoundTrip(t *testing.T) {
	tok := bytes.Repeat([]byte{7}, 100)
	typ, body, err := Open(AppendJoin(nil, tok))
	if got, err2 := DecodeJoin(body); err != nil || err2 != nil || typ != MsgJoin || !bytes.Equal(got, tok) {
		t.Fatalf("join: %v %v %v", typ, err, err2)
	}
	_, body, _ = Open(AppendInput(nil, 42, []byte("go")))
	if seq, in, err := DecodeInput(body); err != nil || seq != 42 || string(in) != "go" {
		t.Fatalf("input: %d %q %v", seq, in, err)
	}
	_, body, _ = Open(AppendAck(nil, 9))
	if f, err := DecodeAck(body); err != nil || f != 9 {
		t.Fatalf("ack: %d %v", f, err)
	}
	_, body, _ = Open(AppendError(nil, CodeFull, "node full"))
	if e, err := DecodeError(body); err != nil || e.Code != CodeFull || e.Text != "node full" {
		t.Fatalf("error: %v %v", e, err)
	}
	w := Welcome{Player: "bob", Avatar: 77, FrameEvery: 100 * time.Millisecond, History: 9, Registry: testReg}
	_, body, _ = Open(AppendJoinOK(nil, w))
	got, err := DecodeJoinOK(body)
	if err != nil || got.Player != "bob" || got.Avatar != 77 || got.FrameEvery != w.FrameEvery || got.History != 9 || got.Registry.Len() != 2 {
		t.Fatalf("joinok: %+v %v", got, err)
	}
	for k := 1; k <= 2; k++ {
		a, b := testReg.Schema(1), got.Registry.Schema(1)
		if a.Name() != b.Name() || a.NumFields() != b.NumFields() {
			t.Fatalf("kind %d: %q vs %q", k, a.Name(), b.Name())
		}
		for i := range a.NumFields() {
			if a.FieldAt(i) != b.FieldAt(i) {
				t.Fatalf("kind %d field %d: %+v vs %+v", k, i, a.FieldAt(i), b.FieldAt(i))
			}
		}
	}
	for _, bad := range [][]byte{nil, {Version}, {1, 1}, {Version + 1, 1}, {Version, 0}, {Version, 99}} {
		if _, _, err := Open(bad); err == nil {
			t.Fatalf("Open(%v) accepted", bad)
		}
	}
}

// fuzzSeeds returns encoder output for the message fuzzers.
func fuzzSeeds() [][]byte {
	seeds := [][]byte{AppendJoin(nil, []byte("tok")), AppendInput(nil, 3, []byte{1, 2}), AppendAck(nil, 5),
		AppendLeave(nil), AppendError(nil, CodeMalformed, "x"),
		AppendJoinOK(nil, Welcome{Player: "p", Avatar: 1, FrameEvery: 1e8, History: 32, Registry: testReg}),
		AppendRedirect(nil, Redirect{Node: 2, QUIC: "127.0.0.1:7001", WS: "ws://127.0.0.1:7002/play", Avatar: 1 << 33, Seq: 9}),
		AppendRejoin(nil, Rejoin{Token: []byte("tok"), Deed: []byte("deed"), Avatar: 1 << 33, Seq: 9}),
		AppendDeed(nil, []byte("deed"))}
	return seeds
}

// FuzzMessages decodes arbitrary bytes as every message type: no panic,
// and what decodes re-encodes to the same bytes.
func FuzzMessages(f *testing.F) {
	for _, s := range fuzzSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, msg []byte) {
		typ, body, err := Open(msg)
		if err != nil {
			return
		}
		var re []byte
		switch typ {
		case MsgJoin:
			if tok, err := DecodeJoin(body); err == nil {
				re = AppendJoin(nil, tok)
			}
		case MsgInput:
			if seq, in, err := DecodeInput(body); err == nil {
				re = AppendInput(nil, seq, in)
			}
		case MsgAck:
			if f, err := DecodeAck(body); err == nil {
				re = AppendAck(nil, f)
			}
		case MsgLeave:
			if DecodeLeave(body) == nil {
				re = AppendLeave(nil)
			}
		case MsgError:
			if e, err := DecodeError(body); err == nil {
				re = AppendError(nil, e.Code, e.Text)
			}
		case MsgJoinOK:
			if w, err := DecodeJoinOK(body); err == nil {
				re = AppendJoinOK(nil, w)
			}
		case MsgRedirect:
			if m, err := DecodeRedirect(body); err == nil {
				re = AppendRedirect(nil, m)
			}
		case MsgRejoin:
			if m, err := DecodeRejoin(body); err == nil {
				re = AppendRejoin(nil, m)
			}
		case MsgDeed:
			if b, _, err := DecodeDeed(body); err == nil {
				re = AppendDeed(nil, b)
			}
		case MsgState:
			v := NewView(clientRegistry(t), 4)
			_, _ = v.Apply(body)
			return
		}
		if re != nil && !bytes.Equal(re, msg) {
			t.Fatalf("%v: %x re-encodes to %x", typ, msg, re)
		}
	})
}

// FuzzState applies arbitrary State bodies after a valid frame: no panic,
// and a refused body leaves the view unchanged.
func FuzzState(f *testing.F) {
	rng := rand.New(rand.NewPCG(1, 1))
	w := &randomWorld{rng: rng}
	enc := NewEncoder(4)
	var msgs [][]byte
	for frame := uint64(1); frame <= 4; frame++ {
		w.step()
		m, _, _ := enc.Encode(nil, frame, frame-1, 0, w.objs)
		msgs = append(msgs, m[2:])
	}
	for _, m := range msgs[1:] {
		f.Add(m)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		v := NewView(clientRegistry(t), 4)
		if ok, err := v.Apply(msgs[0]); !ok || err != nil {
			t.Fatal("seed frame refused")
		}
		before := snapshotOf(v)
		if _, err := v.Apply(body); err != nil && snapshotOf(v) != before {
			t.Fatal("refused state changed the view")
		}
	})
}

// TestLargestRejoinFits: a Rejoin with the longest token (a JWT) and the
// longest deed is within MaxClientMessage.
func TestLargestRejoinFits(t *testing.T) {
	m := AppendRejoin(nil, Rejoin{Token: make([]byte, maxJWT), Deed: make([]byte, MaxDeed), Avatar: ^world.ObjectID(0), Seq: ^uint64(0)})
	if len(m) > MaxClientMessage {
		t.Fatalf("the largest Rejoin has %d bytes, MaxClientMessage %d", len(m), MaxClientMessage)
	}
}
