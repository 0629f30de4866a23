package wire

import (
	"math/rand/v2"
	"testing"
)

// The ring messages join the generic codec table, so TestRoundTrip,
// FuzzPayload and the per-type fuzz targets below cover them like the
// others.
func init() {
	codecs = append(codecs,
		codec{TypeRingRoute, func(r *rand.Rand) any { return randRingRoute(r) },
			func(b []byte, m any) []byte { return AppendRingRoute(b, m.(*RingRoute)) },
			func(p []byte) (any, error) { m := &RingRoute{}; return m, m.Decode(p) }},
		codec{TypeRingJoinReply, func(r *rand.Rand) any { return randRingJoinReply(r) },
			func(b []byte, m any) []byte { return AppendRingJoinReply(b, m.(*RingJoinReply)) },
			func(p []byte) (any, error) { m := &RingJoinReply{}; return m, m.Decode(p) }},
		codec{TypeRingStabilize, func(r *rand.Rand) any { return &RingStabilize{Key: randKey(r)} },
			func(b []byte, m any) []byte { return AppendRingStabilize(b, m.(*RingStabilize)) },
			func(p []byte) (any, error) { m := &RingStabilize{}; return m, m.Decode(p) }},
	)
	for _, t := range []Type{TypeRingStabilizeReply, TypeRingLeave} {
		codecs = append(codecs, codec{t, func(r *rand.Rand) any { return randRingNeighbours(r) },
			func(b []byte, m any) []byte { return AppendRingNeighbours(b, t, m.(*RingNeighbours)) },
			func(p []byte) (any, error) { m := &RingNeighbours{}; return m, m.Decode(p) }})
	}
	for _, t := range []Type{TypeRingPing, TypeRingPong} {
		codecs = append(codecs, codec{t, func(r *rand.Rand) any {
			return &RingProbe{Seq: r.Uint64() >> r.IntN(64), Key: randKey(r), Load: r.Uint64() >> r.IntN(64)}
		},
			func(b []byte, m any) []byte { return AppendRingProbe(b, t, m.(*RingProbe)) },
			func(p []byte) (any, error) { m := &RingProbe{}; return m, m.Decode(p) }})
	}
	codecs = append(codecs, codec{TypeRingOwner, func(r *rand.Rand) any {
		m := &RingOwner{Tag: r.Uint32N(9), Key: randKey(r), Owner: randPeer(r), Lo: randKey(r), Hops: r.Uint32N(40)}
		if m.Tag == 0 {
			m.Key = 0 // a data route's answer carries no key
		}
		return m
	},
		func(b []byte, m any) []byte { return AppendRingOwner(b, m.(*RingOwner)) },
		func(p []byte) (any, error) { m := &RingOwner{}; return m, m.Decode(p) }})
	for _, t := range []Type{TypeRingSplit, TypeRingSplitReply} {
		codecs = append(codecs, codec{t, func(r *rand.Rand) any {
			return &RingSplit{OK: r.IntN(2) == 0, Key: randKey(r), Load: r.Uint64() >> r.IntN(64)}
		},
			func(b []byte, m any) []byte { return AppendRingSplit(b, t, m.(*RingSplit)) },
			func(p []byte) (any, error) { m := &RingSplit{}; return m, m.Decode(p) }})
	}
}

func randKey(r *rand.Rand) uint64 {
	switch r.IntN(4) {
	case 0:
		return 0
	case 1:
		return ^uint64(0) - r.Uint64N(3)
	}
	return r.Uint64()
}

func randPeer(r *rand.Rand) RingPeer {
	return RingPeer{ID: NodeID(r.Uint32() >> r.IntN(32)), Key: randKey(r)}
}

func randPeers(r *rand.Rand) []RingPeer {
	var ps []RingPeer
	for range randN(r) {
		ps = append(ps, randPeer(r))
	}
	return ps
}

func randRingRoute(r *rand.Rand) *RingRoute {
	m := &RingRoute{Kind: RouteKind(r.IntN(int(numRouteKinds))), Cached: r.IntN(3) == 0, Final: r.IntN(2) == 0, Ack: r.IntN(4) == 0,
		Origin: NodeID(r.Uint32() >> r.IntN(32)), Key: randKey(r), Hops: r.Uint32() >> r.IntN(32)}
	if m.Final {
		m.Hint = HintOf(randKey(r))
	}
	switch m.Kind {
	case RouteRange:
		m.Hi, m.Walk = randKey(r), r.IntN(2) == 0
		m.Back = m.Walk && r.IntN(3) == 0
		m.Leaf = m.Walk && r.IntN(3) == 0
		fallthrough
	case RouteData:
		m.Class = Class(r.IntN(NumClasses))
		m.Data = randBytes(r)
	case RouteJoin, RouteLookup:
		m.Tag = r.Uint32() >> r.IntN(32)
	}
	return m
}

func randRingJoinReply(r *rand.Rand) *RingJoinReply {
	m := &RingJoinReply{Accepted: r.IntN(4) != 0, Key: randKey(r)}
	if m.Accepted {
		m.Pred, m.Succs = randPeer(r), randPeers(r)
	}
	return m
}

func randRingNeighbours(r *rand.Rand) *RingNeighbours {
	m := &RingNeighbours{Key: randKey(r), HasPred: r.IntN(3) != 0, Succs: randPeers(r)}
	if m.HasPred {
		m.Pred = randPeer(r)
	}
	return m
}

func FuzzRingRoute(f *testing.F)          { fuzzType(f, TypeRingRoute) }
func FuzzRingJoinReply(f *testing.F)      { fuzzType(f, TypeRingJoinReply) }
func FuzzRingStabilize(f *testing.F)      { fuzzType(f, TypeRingStabilize) }
func FuzzRingStabilizeReply(f *testing.F) { fuzzType(f, TypeRingStabilizeReply) }
func FuzzRingLeave(f *testing.F)          { fuzzType(f, TypeRingLeave) }
func FuzzRingPing(f *testing.F)           { fuzzType(f, TypeRingPing) }
func FuzzRingPong(f *testing.F)           { fuzzType(f, TypeRingPong) }
func FuzzRingOwner(f *testing.F)          { fuzzType(f, TypeRingOwner) }
func FuzzRingSplit(f *testing.F)          { fuzzType(f, TypeRingSplit) }
func FuzzRingSplitReply(f *testing.F)     { fuzzType(f, TypeRingSplitReply) }

func TestRingDecodeRejects(t *testing.T) {
	cases := []struct {
		name string
		typ  Type
		body []byte
	}{
		{"route leaf without walk", TypeRingRoute, []byte{byte(RouteRange) | routeLeaf, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}},
		{"route back without walk", TypeRingRoute, []byte{byte(RouteRange) | routeBack, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}},
		{"route walk on data", TypeRingRoute, []byte{routeWalk, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}},
		{"route key truncated", TypeRingRoute, []byte{byte(RouteLookup), 0, 0x80}},
		{"route class 7", TypeRingRoute, []byte{0, 0, 0, 7, 0}},
		{"route trailing byte", TypeRingRoute, []byte{byte(RouteLookup), 0, 0, 0, 0, 7}},
		{"join reply bool 2", TypeRingJoinReply, []byte{2, 0, 0, 0, 0, 0, 0, 0, 0}},
		{"join refusal trailing", TypeRingJoinReply, []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 1}},
		{"neighbours half a peer", TypeRingLeave, []byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 5, 1, 2}},
		{"probe key truncated", TypeRingPing, []byte{1, 1, 2, 3}},
		{"owner node beyond 32 bits", TypeRingOwner, []byte{1, 0, 0, 0, 0, 0, 0, 0, 0, 0x80, 0x80, 0x80, 0x80, 0x10}},
		{"route answer node beyond 32 bits", TypeRingOwner, []byte{0, 0x80, 0x80, 0x80, 0x80, 0x10}},
		{"split trailing", TypeRingSplitReply, []byte{1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}},
	}
	for _, c := range cases {
		if _, err := codecOf(c.typ).decode(c.body); err == nil {
			t.Errorf("%s: decoded without error", c.name)
		}
	}
}
