package tsclient_test

import (
	"bytes"
	"crypto/ed25519"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/overworld/overworld/arena"
	"github.com/overworld/overworld/internal/docvec"
	"github.com/overworld/overworld/live/player"
	"github.com/overworld/overworld/world"
)

var update = flag.Bool("update", false, "rewrite testdata/vectors.json and testdata/from-ts.json")

// VectorsFile is the shared test vectors: written by the Go side
// (MakeVectors), read by the TypeScript checks (test/run.ts).
var vectorsFile = filepath.Join("testdata", "vectors.json")

// fromTSFile holds every message the TypeScript SDK encoded from the
// vectors' fields, read back and decoded by the Go side.
var fromTSFile = filepath.Join("testdata", "from-ts.json")

// Vec is one message: its bytes and the fields they carry.
type Vec struct {
	Name   string `json:"name"`
	Type   string `json:"type"`
	Hex    string `json:"hex"`
	Fields any    `json:"fields"`
}

// Stream is a seeded random run of State messages and the view a Go
// client holds after each.
type Stream struct {
	Name    string      `json:"name"`
	JoinOK  string      `json:"joinok"`
	States  []string    `json:"states"`
	Applied []bool      `json:"applied"`
	Views   [][]viewObj `json:"views"`
}

// Bad is a mutated message and what the Go decoders make of it.
type Bad struct {
	Name    string   `json:"name"`
	JoinOK  string   `json:"joinok,omitempty"` // for a state: the name of the JoinOK vector
	Before  []string `json:"before,omitempty"` // the names of the State vectors applied first
	Hex     string   `json:"hex"`
	Verdict string   `json:"verdict"`
}

// Vectors is the file's content.
type Vectors struct {
	Messages  []Vec    `json:"messages"`
	Streams   []Stream `json:"streams"`
	Malformed []Bad    `json:"malformed"`
}

// viewObj is one object of a view: ID, kind, raw values (decimal).
type viewObj [3]any

type fieldJ struct {
	Name    string  `json:"name"`
	Type    int     `json:"type"`
	Quantum float64 `json:"quantum"`
}
type kindJ struct {
	Name   string   `json:"name"`
	Fields []fieldJ `json:"fields"`
}
type welcomeJ struct {
	Player       string   `json:"player"`
	Avatar       string   `json:"avatar"`
	FrameEveryNs int64    `json:"frameEveryNs"`
	History      int      `json:"history"`
	Space        []string `json:"space"`
	Kinds        []kindJ  `json:"kinds"`
}
type stateJ struct {
	Frame   uint64    `json:"frame"`
	Seq     uint64    `json:"seq"`
	Objects []viewObj `json:"objects"`
}

func welcomeFields(w player.Welcome) welcomeJ {
	j := welcomeJ{Player: string(w.Player), Avatar: fmt.Sprint(uint64(w.Avatar)), FrameEveryNs: int64(w.FrameEvery),
		History: w.History, Space: w.Registry.Space().Names(), Kinds: []kindJ{}}
	for k := 1; k <= w.Registry.Len(); k++ {
		s := w.Registry.Schema(world.Kind(k))
		kj := kindJ{Name: s.Name(), Fields: []fieldJ{}}
		for i := range s.NumFields() {
			f := s.FieldAt(i)
			kj.Fields = append(kj.Fields, fieldJ{f.Name, int(f.Type), f.Quantum})
		}
		j.Kinds = append(j.Kinds, kj)
	}
	return j
}

func viewOf(v *player.View) []viewObj {
	out := []viewObj{}
	for _, o := range v.Objects() {
		vals := []string{}
		for i := range o.State.Schema().NumFields() {
			vals = append(vals, fmt.Sprint(o.State.Int(i)))
		}
		out = append(out, viewObj{fmt.Sprint(uint64(o.ID)), int(o.Kind), vals})
	}
	return out
}

// The example game of docs/protocol.md: a two-dimensional space and one
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

func exState(id world.ObjectID, x, y float64, hp int64, alive bool) *world.State {
	st := exDot.NewState(id)
	st.SetFloat(exDot.MustField("x"), x)
	st.SetFloat(exDot.MustField("y"), y)
	st.SetInt(exDot.MustField("hp"), hp)
	st.SetBool(exDot.MustField("alive"), alive)
	return st
}

// MakeVectors builds the shared vectors: every message type of the
// client protocol (the specification's examples, the arena game's
// JoinOK and input), seeded random State streams with their views, and
// mutated messages with the Go decoders' verdicts.
func MakeVectors(t testing.TB, seed uint64, nstreams int) Vectors {
	t.Helper()
	var vs Vectors
	reg := mustRegistry(t, exSpace, exDot)
	seedKey := make([]byte, ed25519.SeedSize)
	for i := range seedKey {
		seedKey[i] = byte(i)
	}
	nonce := make([]byte, 16)
	for i := range nonce {
		nonce[i] = 0xa0 + byte(i)
	}
	tok, err := player.IssueToken(ed25519.NewKeyFromSeed(seedKey), "alice", player.Audience{World: player.DefaultWorld, Node: 1}, time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), time.Hour, bytes.NewReader(nonce))
	if err != nil {
		t.Fatal(err)
	}
	avatar := world.MakeObjectID(1, 5)
	rock := world.MakeObjectID(2, 3)
	big := world.ObjectID(math.MaxUint64 - 7)
	add := func(name, typ string, msg []byte, fields any) {
		vs.Messages = append(vs.Messages, Vec{name, typ, hex.EncodeToString(msg), fields})
	}
	w := player.Welcome{Player: "alice", Avatar: avatar, FrameEvery: 100 * time.Millisecond, History: 32, Registry: reg}
	add("join", "join", player.AppendJoin(nil, tok), map[string]string{"token": hex.EncodeToString(tok)})
	add("joinok", "joinok", player.AppendJoinOK(nil, w), welcomeFields(w))
	enc := player.NewEncoder(32)
	view := player.NewView(reg, 32)
	state := func(name string, frame, acked, seq uint64, seen ...player.Seen) {
		b, _, err := enc.Encode(nil, frame, acked, seq, seen)
		if err != nil {
			t.Fatal(err)
		}
		_, body, _ := player.Open(b)
		if ok, err := view.Apply(body); !ok || err != nil {
			t.Fatalf("%s: applied %v, %v", name, ok, err)
		}
		add(name, "state", b, stateJ{view.Frame(), view.InputSeq(), viewOf(view)})
	}
	kind := world.Kind(1)
	state("state-1", 1, 0, 0, player.Seen{ID: avatar, Kind: kind, State: exState(avatar, 10.5, -3, 100, true)})
	state("state-2", 2, 1, 1,
		player.Seen{ID: avatar, Kind: kind, State: exState(avatar, 11, -3, 90, true)},
		player.Seen{ID: rock, Kind: kind, State: exState(rock, 12.25, 0, 0, false)})
	state("state-3", 3, 2, 2, player.Seen{ID: avatar, Kind: kind, State: exState(avatar, 11, -3, 90, true)})
	state("state-4", 5, 3, 9,
		player.Seen{ID: avatar, Kind: kind, State: exState(avatar, -1e9, 1e9, math.MinInt64, false)},
		player.Seen{ID: big, Kind: kind, State: exState(big, 0, 0, math.MaxInt64, true)})
	add("input", "input", player.AppendInput(nil, 1, []byte{1, 0, 0x28, 0xff, 0xd8, 0x40, 0}), map[string]any{"seq": 1, "input": "010028ffd84000"})
	add("input-big-seq", "input", player.AppendInput(nil, 1<<40+3, []byte{}), map[string]any{"seq": uint64(1<<40 + 3), "input": ""})
	add("ack", "ack", player.AppendAck(nil, 2), map[string]any{"frame": 2})
	add("leave", "leave", player.AppendLeave(nil), map[string]any{})
	add("error", "error", player.AppendError(nil, player.CodeFull, "node is full"), map[string]any{"code": int(player.CodeFull), "text": "node is full"})
	add("error-utf8", "error", player.AppendError(nil, player.CodeBadToken, "jeton refusé ✗"), map[string]any{"code": int(player.CodeBadToken), "text": "jeton refusé ✗"})
	// A node's answer to a Rejoin whose avatar did not come (Resume's
	// losing attempts): the message gateway.go sends.
	gone := fmt.Sprintf("avatar %v did not arrive here", avatar)
	add("error-avatar-gone", "error", player.AppendError(nil, player.CodeAvatarGone, gone), map[string]any{"code": int(player.CodeAvatarGone), "text": gone})
	r := player.Redirect{Node: 2, QUIC: "10.0.0.2:7101", WS: "ws://10.0.0.2:7102/play", Avatar: avatar, Seq: 2}
	add("redirect", "redirect", player.AppendRedirect(nil, r), map[string]any{"node": 2, "quic": r.QUIC, "ws": r.WS, "avatar": fmt.Sprint(uint64(avatar)), "seq": 2})
	r2 := player.Redirect{Node: math.MaxUint32, WS: "wss://node9.example:443/", Avatar: big, Seq: 0}
	add("redirect-ws-only", "redirect", player.AppendRedirect(nil, r2), map[string]any{"node": uint32(math.MaxUint32), "quic": "", "ws": r2.WS, "avatar": fmt.Sprint(uint64(big)), "seq": 0})
	// The specification's avatar deed (node 1 of its example cluster,
	// for alice's avatar 1.5).
	doc, err := docvec.Read(filepath.Join("..", "..", "docs", "protocol.md"), "player/")
	if err != nil {
		t.Fatal(err)
	}
	deed := doc["player/deed"]
	tk, err := player.ParseDeed(deed)
	if err != nil || tk.Avatar != avatar {
		t.Fatalf("the specification's deed: %+v, %v", tk, err)
	}
	add("deed", "deed", player.AppendDeed(nil, deed), map[string]any{"deed": hex.EncodeToString(deed),
		"avatar": fmt.Sprint(uint64(tk.Avatar)), "player": string(tk.Player), "world": tk.World, "issued": tk.Issued.Unix(), "expires": tk.Expires.Unix()})
	add("rejoin", "rejoin", player.AppendRejoin(nil, player.Rejoin{Token: tok, Deed: deed, Avatar: avatar, Seq: 2}),
		map[string]any{"token": hex.EncodeToString(tok), "deed": hex.EncodeToString(deed), "avatar": fmt.Sprint(uint64(avatar)), "seq": 2})
	add("rejoin-no-deed", "rejoin", player.AppendRejoin(nil, player.Rejoin{Token: tok, Avatar: avatar, Seq: 2}),
		map[string]any{"token": hex.EncodeToString(tok), "deed": "", "avatar": fmt.Sprint(uint64(avatar)), "seq": 2})
	// The arena game's JoinOK and an input.
	g, err := arena.New(arena.Federated(1, arena.Sqr))
	if err != nil {
		t.Fatal(err)
	}
	aw := player.Welcome{Player: "bob", Avatar: world.MakeObjectID(1<<16|3, 77), FrameEvery: arena.Frame, History: 32, Registry: g.Registry()}
	add("joinok-arena", "joinok", player.AppendJoinOK(nil, aw), welcomeFields(aw))
	ai := arena.Input{VX: 7.5, VY: -3.25, Fire: true, Aim: 2}
	add("input-arena", "arena-input", arena.AppendInput(nil, ai), map[string]any{"vx": ai.VX, "vy": ai.VY, "fire": ai.Fire, "aim": ai.Aim})

	rng := rand.New(rand.NewPCG(seed, 24))
	for k := range nstreams {
		vs.Streams = append(vs.Streams, randomStream(t, fmt.Sprintf("seed %d stream %d", seed, k), rng))
	}
	vs.Malformed = append(mutations(vs), crafted(t, vs)...)
	return vs
}

// crafted returns State messages that break each of the view's rules
// one at a time, applied after state-1 (whose one object is the avatar
// 1.5, of the specification's four-field kind), and one that keeps them
// all (a removal and a creation of one ID: a new object), with the Go
// view's verdicts.
func crafted(t testing.TB, vs Vectors) []Bad {
	t.Helper()
	av := uint64(world.MakeObjectID(1, 5))
	u := binary.AppendUvarint
	// msg builds a State of frame 2 on base 1 from its three lists.
	msg := func(base uint64, creations, updates, removals []byte, nc, nu, nr uint64) []byte {
		b := u(u(u([]byte{player.Version, byte(player.MsgState)}, 2), base), 0)
		b = append(u(b, nc), creations...)
		b = append(u(b, nu), updates...)
		return append(u(b, nr), removals...)
	}
	cases := []struct {
		name string
		m    []byte
		want string
	}{
		{"updated-and-removed", msg(1, nil, append(u(nil, av), 0x04, 0x01), u(nil, av), 0, 1, 1), "error"},
		{"created-while-in-base", msg(1, append(u(nil, av), 1, 0), nil, nil, 1, 0, 0), "error"},
		{"update-not-in-base", msg(1, nil, append(u(nil, av+1), 0), nil, 0, 1, 0), "error"},
		{"removal-not-in-base", msg(1, nil, nil, u(nil, av+1), 0, 0, 1), "error"},
		{"creations-not-increasing", msg(1, append(append(u(nil, av+10), 1, 0), 0, 1, 0), nil, nil, 2, 0, 0), "error"},
		{"updates-not-increasing", msg(1, nil, append(append(u(nil, av), 0), 0, 0), nil, 0, 2, 0), "error"},
		{"removals-not-increasing", msg(1, nil, nil, append(u(nil, av), 0), 0, 0, 2), "error"},
		{"unknown-kind", msg(1, append(u(nil, av+10), 2, 0), nil, nil, 1, 0, 0), "error"},
		{"kind-0", msg(1, append(u(nil, av+10), 0, 0), nil, nil, 1, 0, 0), "error"},
		{"bool-is-2", msg(1, append(u(nil, av+10), 1, 0x08, 0x04), nil, nil, 1, 0, 0), "error"},
		{"mask-beyond-schema", msg(1, append(u(nil, av+10), 1, 0x10, 0x00), nil, nil, 1, 0, 0), "error"},
		{"more-updates-than-base", msg(1, nil, append(append(u(nil, av), 0), 1, 0), nil, 0, 2, 0), "error"},
		{"more-removals-than-base", msg(1, nil, nil, append(u(nil, av), 1), 0, 0, 2), "error"},
		{"more-creations-than-bytes", msg(1, nil, nil, nil, 9, 0, 0), "error"},
		{"creation-id-0", msg(1, []byte{0, 1, 0}, nil, nil, 1, 0, 0), "error"},
		{"id-overflow", msg(1, append(append(u(nil, av+10), 1, 0), append(u(nil, math.MaxUint64-av-5), 1, 0)...), nil, nil, 2, 0, 0), "error"},
		{"trailing-byte", append(msg(1, nil, nil, nil, 0, 0, 0), 0), "error"},
		{"base-not-held", msg(7, nil, nil, nil, 0, 0, 0), "error"},
		{"base-not-held-older", append(u(u(u([]byte{player.Version, byte(player.MsgState)}, 9), 5), 0), 0, 0, 0), "ignored"},
		{"removed-and-created-again", msg(1, append(u(nil, av), 1, 0), nil, u(nil, av), 1, 0, 1), "ok"},
		{"changes-nothing", msg(1, nil, nil, nil, 0, 0, 0), "ok"},
	}
	var joinok, state1 []byte
	for _, v := range vs.Messages {
		switch v.Name {
		case "joinok":
			joinok, _ = hex.DecodeString(v.Hex)
		case "state-1":
			state1, _ = hex.DecodeString(v.Hex)
		}
	}
	_, wb, _ := player.Open(joinok)
	w, err := player.DecodeJoinOK(wb)
	if err != nil {
		t.Fatal(err)
	}
	var out []Bad
	for _, c := range cases {
		view := player.NewView(w.Registry, w.History)
		_, b1, _ := player.Open(state1)
		if ok, err := view.Apply(b1); !ok || err != nil {
			t.Fatal(err)
		}
		verdict := "error"
		if _, body, err := player.Open(c.m); err == nil {
			switch ok, err := view.Apply(body); {
			case err != nil:
			case ok:
				verdict = "ok"
			default:
				verdict = "ignored"
			}
		}
		if verdict != c.want {
			t.Errorf("crafted state %s: the Go view says %s, want %s", c.name, verdict, c.want)
		}
		out = append(out, Bad{Name: "crafted/" + c.name, JoinOK: "joinok", Before: []string{"state-1"}, Hex: hex.EncodeToString(c.m), Verdict: verdict})
	}
	return out
}

// randomSchema returns a random registry: one to three kinds over (x, y)
// with fields of every type.
func randomRegistry(t testing.TB, rng *rand.Rand) *world.Registry {
	space := world.MustSpace("x", "y")
	var schemas []*world.Schema
	for k := range 1 + rng.IntN(3) {
		fs := []world.Field{{Name: "x", Type: world.Float, Quantum: 1.0 / float64(1+rng.IntN(64))}, {Name: "y", Type: world.Int}}
		for i := range rng.IntN(12) {
			typ := world.FieldType(1 + rng.IntN(4))
			f := world.Field{Name: fmt.Sprintf("f%d", i), Type: typ}
			if typ == world.Float {
				f.Quantum = math.Ldexp(1, -rng.IntN(20))
			}
			fs = append(fs, f)
		}
		rng.Shuffle(len(fs), func(i, j int) { fs[i], fs[j] = fs[j], fs[i] })
		schemas = append(schemas, world.MustSchema(fmt.Sprintf("kind%d", k), space, fs, player.NewClientObject))
	}
	return mustRegistry(t, space, schemas...)
}

// randomValue draws a raw value: mostly small steps, sometimes extremes.
func randomValue(rng *rand.Rand, typ world.FieldType, old int64) int64 {
	switch typ {
	case world.Bool:
		return int64(rng.IntN(2))
	case world.Ref:
		return int64(rng.Uint64() >> uint(rng.IntN(64)))
	}
	switch rng.IntN(8) {
	case 0:
		return math.MinInt64 + int64(rng.IntN(3))
	case 1:
		return math.MaxInt64 - int64(rng.IntN(3))
	case 2:
		return int64(rng.Uint64())
	default:
		return old + int64(rng.IntN(200)) - 100
	}
}

func randomStream(t testing.TB, name string, rng *rand.Rand) Stream {
	reg := randomRegistry(t, rng)
	hist := 4 + rng.IntN(8)
	w := player.Welcome{Player: "p", Avatar: 1, FrameEvery: arena.Frame, History: hist, Registry: reg}
	s := Stream{Name: name, JoinOK: hex.EncodeToString(player.AppendJoinOK(nil, w))}
	enc := player.NewEncoder(hist)
	view := player.NewView(reg, hist)
	objs := map[world.ObjectID]player.Seen{}
	var sent [][]byte
	var acked uint64
	for frame := uint64(1); frame <= 30; frame++ {
		// Objects come, go and change.
		for range rng.IntN(4) {
			id := world.ObjectID(rng.Uint64()>>uint(rng.IntN(64)) | 1)
			if rng.IntN(4) == 0 {
				id = world.MakeObjectID(uint32(rng.IntN(4)), uint32(rng.IntN(16)+1))
			}
			kind := world.Kind(1 + rng.IntN(reg.Len()))
			st := reg.Schema(kind).NewState(id)
			objs[id] = player.Seen{ID: id, Kind: kind, State: st}
		}
		for _, id := range slices.Sorted(maps.Keys(objs)) {
			o := objs[id]
			switch rng.IntN(10) {
			case 0:
				delete(objs, id)
			case 1, 2, 3:
				st := o.State.Clone()
				sc := st.Schema()
				for range 1 + rng.IntN(3) {
					i := rng.IntN(sc.NumFields())
					st.SetInt(i, randomValue(rng, sc.FieldAt(i).Type, st.Int(i)))
				}
				objs[id] = player.Seen{ID: id, Kind: o.Kind, State: st}
			}
		}
		var cur []player.Seen
		for _, o := range objs {
			cur = append(cur, o)
		}
		sortSeen(cur)
		b, _, err := enc.Encode(nil, frame, acked, frame/2, cur)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		sent = append(sent, b)
		// The client gets this message, an older one, or nothing.
		var got []byte
		switch rng.IntN(6) {
		case 0:
			continue
		case 1:
			got = sent[rng.IntN(len(sent))]
		default:
			got = b
		}
		_, body, _ := player.Open(got)
		ok, err := view.Apply(body)
		if err != nil {
			t.Fatalf("%s: frame %d: %v", name, frame, err)
		}
		if ok && rng.IntN(3) > 0 {
			acked = view.Frame()
		}
		s.States = append(s.States, hex.EncodeToString(got))
		s.Applied = append(s.Applied, ok)
		s.Views = append(s.Views, viewOf(view))
	}
	return s
}

func sortSeen(s []player.Seen) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j].ID < s[j-1].ID; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}

// goVerdict is what the Go decoders make of a message: "ok" or "error".
func goVerdict(m []byte) string {
	t, body, err := player.Open(m)
	if err != nil {
		return "error"
	}
	switch t {
	case player.MsgJoin:
		_, err = player.DecodeJoin(body)
	case player.MsgJoinOK:
		_, err = player.DecodeJoinOK(body)
	case player.MsgInput:
		_, _, err = player.DecodeInput(body)
	case player.MsgAck:
		_, err = player.DecodeAck(body)
	case player.MsgLeave:
		err = player.DecodeLeave(body)
	case player.MsgError:
		_, err = player.DecodeError(body)
	case player.MsgRedirect:
		_, err = player.DecodeRedirect(body)
	case player.MsgRejoin:
		_, err = player.DecodeRejoin(body)
	case player.MsgDeed:
		_, _, err = player.DecodeDeed(body)
	default:
		return "skip" // states are checked against a view
	}
	if err != nil {
		return "error"
	}
	return "ok"
}

// mutations returns every message of vs truncated at every length, with
// each byte changed three ways, and with a byte appended, with Go's
// verdict on each; states are applied after the states before them.
func mutations(vs Vectors) []Bad {
	var out []Bad
	var joinok, joinokName string
	var before, beforeNames []string
	variants := func(m []byte) [][]byte {
		var vs [][]byte
		stride := 1 + len(m)/40 // long messages: a sample of the positions
		for n := 0; n < len(m); n += stride {
			vs = append(vs, m[:n])
		}
		for i := 0; i < len(m); i += stride {
			for _, f := range []func(byte) byte{func(b byte) byte { return b ^ 0x80 }, func(byte) byte { return 0xff }, func(b byte) byte { return b + 1 }} {
				c := bytes.Clone(m)
				c[i] = f(c[i])
				vs = append(vs, c)
			}
		}
		return append(vs, append(bytes.Clone(m), 0))
	}
	for _, v := range vs.Messages {
		m, _ := hex.DecodeString(v.Hex)
		switch v.Type {
		case "joinok":
			joinok, joinokName, before, beforeNames = v.Hex, v.Name, nil, nil
		case "arena-input":
			continue
		case "state":
			reg, _ := hex.DecodeString(joinok)
			_, wb, _ := player.Open(reg)
			w, _ := player.DecodeJoinOK(wb)
			for i, c := range variants(m) {
				view := player.NewView(w.Registry, w.History)
				for _, h := range before {
					b, _ := hex.DecodeString(h)
					_, body, _ := player.Open(b)
					_, _ = view.Apply(body)
				}
				verdict := "error"
				if t, body, err := player.Open(c); err == nil && t == player.MsgState {
					ok, err := view.Apply(body)
					switch {
					case err != nil:
					case ok:
						verdict = "ok"
					default:
						verdict = "ignored"
					}
				}
				out = append(out, Bad{Name: fmt.Sprintf("%s/%d", v.Name, i), JoinOK: joinokName, Before: append([]string(nil), beforeNames...), Hex: hex.EncodeToString(c), Verdict: verdict})
			}
			before, beforeNames = append(before, v.Hex), append(beforeNames, v.Name)
			continue
		}
		for i, c := range variants(m) {
			if verdict := goVerdict(c); verdict != "skip" {
				out = append(out, Bad{Name: fmt.Sprintf("%s/%d", v.Name, i), Hex: hex.EncodeToString(c), Verdict: verdict})
			}
		}
	}
	return out
}

func marshal(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return append(b, '\n')
}

// TestVectorsCurrent keeps testdata/vectors.json what the Go encoders
// write today (go test ./clients/ts -run Vectors -update rewrites it).
func TestVectorsCurrent(t *testing.T) {
	want := marshal(t, MakeVectors(t, 1, 3))
	if *update {
		if err := os.WriteFile(vectorsFile, want, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(vectorsFile)
	if err != nil {
		t.Fatalf("%v (go test ./clients/ts -run Vectors -update writes it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("%s is not what the Go encoders write today: run go test ./clients/ts -run Vectors -update", vectorsFile)
	}
}

func mustRegistry(t testing.TB, space world.Space, schemas ...*world.Schema) *world.Registry {
	t.Helper()
	reg, err := world.NewRegistry(space, schemas...)
	if err != nil {
		t.Fatal(err)
	}
	return reg
}
