package replica

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/overworld/overworld/wire"
	"github.com/overworld/overworld/world"
)

type obj struct{ st *world.State }

func (o *obj) State() *world.State                  { return o.st }
func (o *obj) Interest(dst []world.Box) []world.Box { return dst }
func (o *obj) Think(world.Context)                  {}

var (
	schema = world.MustSchema("thing", world.MustSpace("x", "y"), []world.Field{
		{Name: "x", Type: world.Float}, {Name: "y", Type: world.Float}, {Name: "hp", Type: world.Int},
	}, func(st *world.State) world.Object { return &obj{st} })
	registry, _ = world.NewRegistry(world.MustSpace("x", "y"), schema)
)

func newStore(t testing.TB, self wire.NodeID, mod func(*Config)) *Store {
	cfg := Config{Self: self, Registry: registry}
	if mod != nil {
		mod(&cfg)
	}
	s, err := NewStore(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// deliver moves every packet in o from one store to the other (both ways
// are the caller's business), validating each whole packet first.
func deliver(t testing.TB, now time.Duration, o *wire.Outbox, from wire.NodeID, stores map[wire.NodeID]*Store, drop func(wire.Packet) bool) {
	o.Release(now) // as a node does on its frame: frames that waited to ride go now
	for _, p := range o.Packets(from, nil) {
		if drop != nil && drop(p) {
			continue
		}
		if err := checkThenApply(stores[p.To], now, p.From, p.Payload); err != nil {
			t.Fatal(err)
		}
	}
}

// errRejected wraps what checkThenApply returns when Check refused a frame
// (nothing was applied).
var errRejected = errors.New("packet rejected by Check")

// checkThenApply runs a payload through s as a node does: every frame to
// Check and, only if all pass, every frame to Apply. A Check error comes
// wrapped in errRejected; an Apply error alone.
func checkThenApply(s *Store, now time.Duration, from wire.NodeID, payload []byte) error {
	for pass := range 2 {
		fr, err := wire.OpenFrames(payload)
		if err != nil {
			return fmt.Errorf("%w: %w", errRejected, err)
		}
		for {
			typ, body, ok := fr.Next()
			if !ok {
				break
			}
			if pass == 0 {
				if err := s.Check(from, typ, body); err != nil {
					return fmt.Errorf("%w: %v frame from %d: %w", errRejected, typ, from, err)
				}
			} else if err := s.Apply(now, from, typ, body); err != nil {
				return fmt.Errorf("apply after check: %v frame from %d: %w", typ, from, err)
			}
		}
	}
	return nil
}

func TestConfigValidate(t *testing.T) {
	bad := []Config{
		{},
		{Registry: registry, HistoryLen: -1},
		{Registry: registry, MaxFrame: 10},
		{Registry: registry, RetransmitAfter: -time.Second},
		{Registry: registry, KeepalivePeriod: 6 * time.Second},
		{Registry: registry, RegisterPeriod: 7 * time.Second},
		{Registry: registry, Self: MaxNode + 1}, // its epochs would collide with node Self - 32768's failovers
	}
	for i, c := range bad {
		if _, err := c.Validate(); !errors.Is(err, ErrConfig) {
			t.Errorf("config %d: got %v, want ErrConfig", i, err)
		}
	}
	c, err := Config{Registry: registry}.Validate()
	if err != nil || c.HistoryLen != 8 || c.KeepalivePeriod != 1500*time.Millisecond {
		t.Fatalf("defaults: %+v %v", c, err)
	}
}

// TestSyncAgainstAcked runs a primary on store 1 with a replica on store 2
// over a lossy link with random delays of whole frames: after every frame
// the replica's synced state must be a state the primary had, and after a
// quiet period it must equal the primary's.
func TestSyncAgainstAcked(t *testing.T) {
	for seed := uint64(1); seed <= 50; seed++ {
		r := rand.New(rand.NewPCG(seed, 1))
		a, b := newStore(t, 1, nil), newStore(t, 2, nil)
		stores := map[wire.NodeID]*Store{1: a, 2: b}
		st := schema.NewState(world.MakeObjectID(1, 1))
		p := &obj{st}
		if err := a.AddPrimary(0, p, 1); err != nil {
			t.Fatal(err)
		}
		past := map[uint64]*world.State{1: st.Clone()}
		b.Want(0, st.ID(), 1, time.Hour)
		type inflight struct {
			at   int
			from wire.NodeID
			o    *wire.Outbox
		}
		var q []inflight
		var oa, ob wire.Outbox
		loss := 0.3
		for f := 0; f < 300; f++ {
			now := time.Duration(f) * 100 * time.Millisecond
			if f < 200 && r.IntN(3) > 0 {
				st.SetFloat(0, st.Float(0)+r.Float64())
				if r.IntN(4) == 0 {
					st.SetInt(2, r.Int64N(100))
				}
			}
			if f == 200 {
				loss = 0
			}
			a.Commit(now)
			if in, _ := a.Object(st.ID()); past[in.Version] == nil {
				past[in.Version] = in.Synced.Clone()
			}
			if _, held := b.Object(st.ID()); !held {
				// A node wants what its view covers every frame (node.Node:
				// a replica lost to a timeout is asked for again).
				b.Want(now, st.ID(), 1, time.Hour)
			}
			a.Flush(now, nil, &oa)
			b.Flush(now, []world.Box{world.Unbounded()}, &ob)
			for _, x := range []struct {
				from wire.NodeID
				o    *wire.Outbox
			}{{1, &oa}, {2, &ob}} {
				x.o.Release(now)
				if x.o.Len() == 0 {
					continue
				}
				cp := &wire.Outbox{}
				for _, pk := range x.o.Packets(x.from, nil) {
					if r.Float64() < loss {
						continue
					}
					cp.Commit(pk.To, pk.Class, append(cp.Buf(), pk.Payload[1:]...))
				}
				q = append(q, inflight{at: f + r.IntN(3), from: x.from, o: cp})
			}
			rest := q[:0]
			for _, x := range q {
				if x.at <= f {
					deliver(t, now, x.o, x.from, stores, nil)
				} else {
					rest = append(rest, x)
				}
			}
			q = rest
			if in, ok := b.Object(st.ID()); ok && in.Version > 0 && !past[in.Version].Equal(in.Synced) {
				t.Fatalf("seed %d frame %d: replica version %d is not the primary's", seed, f, in.Version)
			}
		}
		in, ok := b.Object(st.ID())
		if !ok || !in.State.Equal(st) {
			t.Fatalf("seed %d: replica did not converge (held %v)\na %+v\nb %+v", seed, ok, a.Stats(), b.Stats())
		}
		if s := a.Stats(); s.FullSent == 0 || s.UpdatesSent <= s.FullSent {
			t.Fatalf("seed %d: stats %+v", seed, s)
		}
	}
}

// TestFlushDoesNotAllocate: in steady state, committing and encoding a
// frame of updates, acks and registrations allocates nothing (the packet
// arena, made by Outbox.Packets for the driver, is not part of it).
func TestFlushDoesNotAllocate(t *testing.T) {
	a, b := newStore(t, 1, nil), newStore(t, 2, nil)
	stores := map[wire.NodeID]*Store{1: a, 2: b}
	var sts []*world.State
	for i := range 20 {
		st := schema.NewState(world.MakeObjectID(1, uint32(i+1)))
		sts = append(sts, st)
		if err := a.AddPrimary(0, &obj{st}, 1); err != nil {
			t.Fatal(err)
		}
		b.Want(0, st.ID(), 1, time.Hour)
	}
	var oa, ob wire.Outbox
	now := time.Duration(0)
	frame := func() {
		now += 100 * time.Millisecond
		for _, st := range sts {
			st.SetFloat(0, st.Float(0)+0.5)
		}
		a.Commit(now)
		a.Flush(now, nil, &oa)
		b.Flush(now, []world.Box{world.Unbounded()}, &ob)
	}
	for range 20 {
		frame()
		deliver(t, now, &oa, 1, stores, nil)
		deliver(t, now, &ob, 2, stores, nil)
	}
	allocs := testing.AllocsPerRun(50, func() {
		frame()
		oa.Reset()
		ob.Reset()
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per frame", allocs)
	}
	if s := a.Stats(); s.UpdatesSent < 20*20 {
		t.Fatalf("stats %+v", s)
	}
}

func TestHandoffAndLifecycle(t *testing.T) {
	client, server := newStore(t, 2, nil), newStore(t, 1, nil)
	stores := map[wire.NodeID]*Store{1: server, 2: client}
	st := schema.NewState(world.MakeObjectID(2, 1))
	st.SetInt(2, 77)
	if err := client.Handoff(0, &obj{st}, 1); err != nil {
		t.Fatal(err)
	}
	var oc, os wire.Outbox
	client.Flush(0, nil, &oc)
	deliver(t, 0, &oc, 2, stores, nil)
	in, ok := server.Object(st.ID())
	if !ok || !in.Primary || in.Controller != 2 || in.State.Int(2) != 77 {
		t.Fatalf("server after handoff: %+v %v", in, ok)
	}
	server.Keep(0, st.ID(), 2)
	server.Flush(0, nil, &os)
	deliver(t, 0, &os, 1, stores, nil)
	if in, _ := client.Object(st.ID()); in.Version != 1 {
		t.Fatalf("client replica version %d after the server's first update", in.Version)
	}
	// Pushes stop: after PushTTL the server drops the client, which deletes
	// its replica.
	now := 2 * time.Second
	server.Flush(now, nil, &os)
	deliver(t, now, &os, 1, stores, nil)
	if _, ok := client.Object(st.ID()); ok {
		t.Fatal("client kept a replica the server dropped")
	}
	// Deleting a primary with holders tells them; a late registration for a
	// deleted object is answered with a deletion.
	server.Keep(now, st.ID(), 2)
	server.Flush(now, nil, &os)
	deliver(t, now, &os, 1, stores, nil)
	if err := server.Delete(now, st.ID()); err != nil {
		t.Fatal(err)
	}
	if err := server.Delete(now, st.ID()); !errors.Is(err, ErrUnknown) {
		t.Fatalf("second delete: %v", err)
	}
	server.Flush(now, nil, &os)
	deliver(t, now, &os, 1, stores, nil)
	if _, ok := client.Object(st.ID()); ok {
		t.Fatal("replica survived its object's deletion")
	}
	if err := server.AddPrimary(now, &obj{st}, 1); !errors.Is(err, ErrDeleted) {
		t.Fatalf("re-adding a deleted object: %v", err)
	}
}

// TestAnswerAtOnce checks that a registration from a new holder is answered
// with a full state by Answer, within the step that delivered it, once;
// the next Flush does not send it again unless the holder falls behind.
func TestAnswerAtOnce(t *testing.T) {
	a, b := newStore(t, 1, nil), newStore(t, 2, nil)
	stores := map[wire.NodeID]*Store{1: a, 2: b}
	st := schema.NewState(world.MakeObjectID(1, 1))
	if err := a.AddPrimary(0, &obj{st}, 1); err != nil {
		t.Fatal(err)
	}
	var oa, ob wire.Outbox
	b.Want(0, st.ID(), 1, time.Hour)
	b.Flush(0, []world.Box{world.Unbounded()}, &ob) // the registration
	deliver(t, 10*time.Millisecond, &ob, 2, stores, nil)
	a.Answer(10*time.Millisecond, &oa)
	if s := a.Stats(); s.FullSent != 1 || oa.Len() != 1 {
		t.Fatalf("after the registration: %d full states sent, %d frames queued; want 1 and 1", s.FullSent, oa.Len())
	}
	deliver(t, 20*time.Millisecond, &oa, 1, stores, nil)
	if in, ok := b.Object(st.ID()); !ok || in.Version != 1 || in.Produced != 10*time.Millisecond {
		t.Fatalf("replica after the answer: %+v %v", in, ok)
	}
	// A repeated registration (a refresh) is not answered again.
	b.Flush(2*time.Second, []world.Box{world.Unbounded()}, &ob)
	deliver(t, 2*time.Second, &ob, 2, stores, nil)
	a.Answer(2*time.Second, &oa)
	if oa.Len() != 0 {
		t.Fatalf("a refreshed registration was answered (%d frames)", oa.Len())
	}
	// Registrations of deleted objects and from self are not answered.
	if err := a.Delete(3*time.Second, st.ID()); err != nil {
		t.Fatal(err)
	}
	oa.Reset()
	m := wire.IDs{IDs: []world.ObjectID{st.ID()}}
	body := wire.AppendIDs(nil, wire.TypeRegister, &m)
	fr, _ := wire.OpenFrames(append(wire.AppendHeader(nil), body...))
	_, fb, _ := fr.Next()
	if err := a.Apply(3*time.Second, 2, wire.TypeRegister, fb); err != nil {
		t.Fatal(err)
	}
	a.Answer(3*time.Second, &oa)
	if s := a.Stats(); s.FullSent != 1 {
		t.Fatalf("answered a registration of a deleted object: %+v", s)
	}
}

// TestDeletedIDsStayDeleted: no object can be added again under the ID of
// one deleted here (the tombstone check on received updates relies on it).
func TestDeletedIDsStayDeleted(t *testing.T) {
	s := newStore(t, 1, nil)
	id := world.MakeObjectID(1, 1)
	if err := s.AddPrimary(0, &obj{schema.NewState(id)}, 1); err != nil {
		t.Fatal(err)
	}
	if err := s.Delete(time.Millisecond, id); err != nil {
		t.Fatal(err)
	}
	if err := s.AddPrimary(2*time.Millisecond, &obj{schema.NewState(id)}, 1); !errors.Is(err, ErrDeleted) {
		t.Fatalf("AddPrimary of a deleted ID: %v, want ErrDeleted", err)
	}
	if err := s.Handoff(2*time.Millisecond, &obj{schema.NewState(id)}, 2); !errors.Is(err, ErrDeleted) {
		t.Fatalf("Handoff of a deleted ID: %v, want ErrDeleted", err)
	}
	if s.Len() != 0 {
		t.Fatalf("%d objects after refused additions", s.Len())
	}
}

// TestLostAnswerResent: a request whose full state is lost on the way is
// answered again at its first retry (Config.RequestRetry), not at the
// primary's next keepalive. The primary counts the node as a holder from
// the first request on, and takes a plain registration for a refresh; the
// resync from version 0 that goes with every request makes it send the
// full state again. So does a node the primary still counts as a holder
// when it asks again (its drop lost).
func TestLostAnswerResent(t *testing.T) {
	a, b, stores, st := newPair(t, nil)
	cfg := a.Config()
	var oa, ob wire.Outbox
	view := []world.Box{world.Unbounded()}
	const frame = 20 * time.Millisecond
	lost := 0
	arrived := time.Duration(-1)
	for now := time.Duration(0); now < cfg.KeepalivePeriod && arrived < 0; now += frame {
		a.Commit(now)
		a.Flush(now, nil, &oa)
		deliver(t, now, &oa, 1, stores, func(p wire.Packet) bool {
			lost++
			return lost == 1 // the answer to the first request
		})
		b.Flush(now, view, &ob)
		deliver(t, now, &ob, 2, stores, nil)
		a.Answer(now, &oa)
		deliver(t, now, &oa, 1, stores, func(p wire.Packet) bool {
			lost++
			return lost == 1
		})
		if _, ok := b.Object(st.ID()); ok {
			arrived = now
		}
	}
	if lost == 0 {
		t.Fatal("no answer was sent")
	}
	if arrived < 0 || arrived > cfg.RequestRetry+frame {
		t.Fatalf("replica arrived at %v after its answer was lost, want by the first retry (%v)", arrived, cfg.RequestRetry)
	}
}

// TestAcksAskForResync: a holder acknowledges nothing while every update
// applies (the primary takes what it sent as received); when one is lost,
// the next does not apply, the holder asks for a resync from the version
// it has, and the primary's next update is a delta from that version.
func TestAcksAskForResync(t *testing.T) {
	a, b, stores, st := newPair(t, nil)
	var oa, ob wire.Outbox
	var acks []string
	for f := 0; f < 16; f++ {
		now := time.Duration(f) * 100 * time.Millisecond
		st.SetFloat(0, float64(f))
		a.Commit(now)
		a.Flush(now, nil, &oa)
		deliver(t, now, &oa, 1, stores, func(p wire.Packet) bool { return f == 6 }) // frame 6's update is lost
		b.Flush(now, []world.Box{world.Unbounded()}, &ob)
		ob.Release(now)
		for _, p := range ob.Packets(2, nil) {
			packetFrames(t, p, func(typ wire.Type, body []byte) {
				if typ == wire.TypeAcks {
					var ack wire.Acks
					if err := ack.Decode(body); err != nil {
						t.Fatal(err)
					}
					acks = append(acks, fmt.Sprintf("%d:%v", f, ack.Entries))
				}
			})
			o := &wire.Outbox{}
			o.Commit(p.To, p.Class, append(o.Buf(), p.Payload[1:]...))
			deliver(t, now, o, 2, stores, nil)
		}
		in, _ := b.Object(st.ID())
		// Version f+1 is sent in frame f (the first in frame 1); frame 7's
		// does not apply, frame 8's resyncs from version 6.
		want := uint64(f + 1)
		switch {
		case f == 0:
			want = 0
		case f == 6 || f == 7:
			want = 6
		}
		if in.Version != want {
			t.Fatalf("frame %d: replica at version %d, want %d", f, in.Version, want)
		}
	}
	// The request of frame 0 goes with a resync from nothing; the lost
	// update of frame 6 makes frame 7's ask for a resync from version 6.
	if want := []string{"0:[{1.1 0}]", "7:[{1.1 6}]"}; !slices.Equal(acks, want) {
		t.Errorf("acknowledgements %v, want %v", acks, want)
	}
	if s := a.Stats(); s.FullSent != 1 {
		t.Errorf("%d full states sent, want 1", s.FullSent)
	}
}

// TestDormantReplica: a replica out of view while it lingers goes dormant;
// its primary then sends it updates every DormantEvery, as deltas, until it
// is back in view, when the full rate resumes at once.
func TestDormantReplica(t *testing.T) {
	for _, c := range []struct {
		every time.Duration
		want  string // frames 0..29 in which the primary sends the replica an update
	}{
		{-1, "011111111111111111111111111111"},
		// The first update answers the request of frame 0. Out of view
		// from frame 10, dormant 100 ms after the last frame in view (told
		// in frame 10, after the primary's flush): an update every 4th
		// frame after the last; back in view in frame 25, registered then,
		// full rate from frame 26.
		{400 * time.Millisecond, "011111111110001000100010001111"},
	} {
		mod := func(cfg *Config) { cfg.DormantEvery, cfg.ReplicaLinger = c.every, 3*time.Second }
		a, b, stores, st := newPair(t, mod)
		var oa, ob wire.Outbox
		got := ""
		for f := 0; f < 30; f++ {
			now := time.Duration(f) * 100 * time.Millisecond
			st.SetFloat(0, float64(f))
			a.Commit(now)
			before := a.Stats().UpdatesSent
			a.Flush(now, nil, &oa)
			got += map[bool]string{true: "1", false: "0"}[a.Stats().UpdatesSent > before]
			deliver(t, now, &oa, 1, stores, nil)
			view := []world.Box{world.Unbounded()}
			if f >= 10 && f < 25 {
				view = nil
			}
			b.Flush(now, view, &ob)
			deliver(t, now, &ob, 2, stores, nil)
			if in, ok := b.Object(st.ID()); f >= 3 && (!ok || (f < 10 || f >= 26) && in.Version != uint64(f+1)) {
				t.Fatalf("every %v frame %d: replica %+v (held %v), primary at version %d", c.every, f, in, ok, f+1)
			}
		}
		if got != c.want {
			t.Errorf("every %v: updates in frames\n got %s\nwant %s", c.every, got, c.want)
		}
		if full := a.Stats().FullSent; full != 1 {
			t.Errorf("every %v: %d full states sent, want 1 (dormant updates are deltas)", c.every, full)
		}
	}
}

// shot is an object attached to the object whose ID is in its "to" field.
type shot struct{ st *world.State }

func (o *shot) State() *world.State                  { return o.st }
func (o *shot) Interest(dst []world.Box) []world.Box { return dst }
func (o *shot) Think(world.Context)                  {}
func (o *shot) AttachTo() world.ObjectID             { return world.ObjectID(o.st.Int(2)) }

// TestAttachedToDormant: an object attached to one whose replica is
// dormant is pushed at the dormant rate too, until it enters the holder's
// view on its own: the holder then registers it and gets the full rate.
// And a full state that was on its way when a replica was dropped does not
// bring the replica back.
func TestAttachedToDormant(t *testing.T) {
	shotSchema := world.MustSchema("shot", world.MustSpace("x", "y"), []world.Field{
		{Name: "x", Type: world.Float}, {Name: "y", Type: world.Float}, {Name: "to", Type: world.Int},
	}, func(st *world.State) world.Object { return &shot{st} })
	reg, err := world.NewRegistry(world.MustSpace("x", "y"), schema, shotSchema)
	if err != nil {
		t.Fatal(err)
	}
	mod := func(cfg *Config) { cfg.Registry, cfg.ReplicaLinger = reg, 2500*time.Millisecond }
	a, b := newStore(t, 1, mod), newStore(t, 2, mod)
	stores := map[wire.NodeID]*Store{1: a, 2: b}
	owner := schema.NewState(world.MakeObjectID(1, 1))
	sh := shotSchema.NewState(world.MakeObjectID(1, 2))
	sh.SetInt(2, int64(owner.ID()))
	sh.SetFloat(0, 500) // far from the view
	for _, o := range []world.Object{&obj{owner}, &shot{sh}} {
		if err := a.AddPrimary(0, o, 1); err != nil {
			t.Fatal(err)
		}
	}
	b.Want(0, owner.ID(), 1, time.Hour)
	var oa, ob wire.Outbox
	got := ""
	view := []world.Box{{Min: world.Point{-10, -10}, Max: world.Point{10, 10}}}
	for f := 0; f < 30; f++ {
		now := time.Duration(f) * 100 * time.Millisecond
		owner.SetFloat(1, float64(f%5))
		sh.SetFloat(1, float64(f%5))
		switch {
		case f == 5:
			owner.SetFloat(0, 100) // the owner leaves the view
		case f == 20:
			sh.SetFloat(0, 0) // the shot enters it
		}
		a.Commit(now)
		before := a.Stats().UpdatesSent
		a.Flush(now, nil, &oa)
		got += fmt.Sprint(a.Stats().UpdatesSent - before)
		deliver(t, now, &oa, 1, stores, nil)
		b.Flush(now, view, &ob)
		deliver(t, now, &ob, 2, stores, nil)
	}
	// Frame 1 answers the request, with the shot. The owner is out of
	// view from frame 5, dormant 100 ms after frame 4 (told in frame 5):
	// both every 4th frame from frame 9; the shot enters the view in
	// frame 20, seen by b in frame 21's dormant update; its registration
	// makes it full rate from frame 22 (the owner stays dormant).
	const want = "022222000200020002000211121112"
	if got != want {
		t.Errorf("update entries per frame\n got %s\nwant %s", got, want)
	}
	if in, ok := b.Object(sh.ID()); !ok || in.Version != 30 {
		t.Errorf("shot replica %+v (held %v), want version 30", in, ok)
	}

	// The shot leaves the view; b drops it after the linger; a full
	// state the primary sent before it heard of the drop is ignored.
	st := shotSchema.NewState(sh.ID())
	st.CopyFrom(sh)
	now := 5600 * time.Millisecond
	b.Flush(now, nil, &ob) // out of view since frame 29: dropped after 2.5 s
	ob.Reset()
	if _, ok := b.Object(sh.ID()); ok {
		t.Fatal("shot replica not dropped")
	}
	var o wire.Outbox
	b2, mark := wire.BeginUpdates(o.Buf(), now)
	kind, _ := reg.Kind(shotSchema)
	b2 = wire.AppendUpdateEntry(b2, &wire.Update{ID: sh.ID(), Kind: kind, Version: 40, Data: world.AppendDelta(nil, nil, st)})
	o.Commit(2, wire.ClassUpdate, wire.EndUpdates(b2, mark))
	deliver(t, now+50*time.Millisecond, &o, 1, stores, nil)
	if in, ok := b.Object(sh.ID()); ok {
		t.Errorf("a full state sent before the drop made an orphan replica: %+v", in)
	}
}

// TestRegistrationsRide: a holder's registration refresh, due every
// RegisterPeriod, goes with an updates frame to the primary's node from
// half the period on, not in a packet of its own.
func TestRegistrationsRide(t *testing.T) {
	a, b := newStore(t, 1, nil), newStore(t, 2, nil)
	stores := map[wire.NodeID]*Store{1: a, 2: b}
	sa, sb := schema.NewState(world.MakeObjectID(1, 1)), schema.NewState(world.MakeObjectID(2, 1))
	if err := a.AddPrimary(0, &obj{sa}, 1); err != nil {
		t.Fatal(err)
	}
	if err := b.AddPrimary(0, &obj{sb}, 2); err != nil {
		t.Fatal(err)
	}
	a.Want(0, sb.ID(), 2, time.Hour)
	b.Want(0, sa.ID(), 1, time.Hour)
	var oa, ob wire.Outbox
	var regs []int
	for f := 0; f < 40; f++ {
		now := time.Duration(f) * 100 * time.Millisecond
		sa.SetFloat(0, float64(f))
		sb.SetFloat(0, float64(f))
		a.Commit(now)
		b.Commit(now)
		a.Flush(now, []world.Box{world.Unbounded()}, &oa)
		deliver(t, now, &oa, 1, stores, nil)
		b.Flush(now, []world.Box{world.Unbounded()}, &ob)
		ob.Release(now)
		for _, p := range ob.Packets(2, nil) {
			fr, _ := wire.OpenFrames(p.Payload)
			var types []wire.Type
			for {
				typ, _, ok := fr.Next()
				if !ok {
					break
				}
				types = append(types, typ)
			}
			if slices.Contains(types, wire.TypeRegister) {
				regs = append(regs, f)
				if f > 0 && !slices.Contains(types, wire.TypeUpdates) {
					t.Errorf("frame %d: a registration refresh travels alone: %v", f, types)
				}
			}
			o := &wire.Outbox{}
			o.Commit(p.To, p.Class, append(o.Buf(), p.Payload[1:]...))
			deliver(t, now, o, 2, stores, nil)
		}
	}
	// The request in frame 0 (the replica arrives in frame 1), then a
	// refresh every half period.
	if want := []int{0, 11, 21, 31}; !slices.Equal(regs, want) {
		t.Errorf("registrations in frames %v, want %v", regs, want)
	}
}

// newPair returns store 1 with primary 1.1 and store 2, which wants a
// replica of it.
func newPair(t *testing.T, mod func(*Config)) (a, b *Store, stores map[wire.NodeID]*Store, st *world.State) {
	t.Helper()
	a, b = newStore(t, 1, mod), newStore(t, 2, mod)
	stores = map[wire.NodeID]*Store{1: a, 2: b}
	st = schema.NewState(world.MakeObjectID(1, 1))
	if err := a.AddPrimary(0, &obj{st}, 1); err != nil {
		t.Fatal(err)
	}
	b.Want(0, st.ID(), 1, time.Hour)
	return a, b, stores, st
}

// TestFlushRemovesInWalk: one flush times out every replica not heard from
// for ReplicaTimeout, however they lie in the entry list (runs of them,
// the first, the last), and keeps the others.
func TestFlushRemovesInWalk(t *testing.T) {
	for seed := uint64(1); seed <= 50; seed++ {
		r := rand.New(rand.NewPCG(seed, 29))
		s := newStore(t, 2, nil)
		const objs = 40
		quiet := map[world.ObjectID]bool{}
		for k := range objs {
			id := world.MakeObjectID(1, uint32(k+1))
			at := 5 * time.Second // heard recently
			if r.IntN(2) == 0 {
				at, quiet[id] = 0, true
			}
			b, mark := wire.BeginUpdates(wire.AppendHeader(nil), at)
			u := wire.Update{ID: id, Version: 1, Kind: 1, Data: world.AppendDelta(nil, nil, schema.NewState(id))}
			b = wire.EndUpdates(wire.AppendUpdateEntry(b, &u), mark)
			s.BeginPacket()
			if err := checkThenApply(s, at, 1, b); err != nil {
				t.Fatal(err)
			}
		}
		var o wire.Outbox
		s.Flush(6*time.Second, nil, &o)
		if got := s.Stats().Timeouts; got != int64(len(quiet)) {
			t.Fatalf("seed %d: %d replicas timed out, want %d", seed, got, len(quiet))
		}
		for k := range objs {
			id := world.MakeObjectID(1, uint32(k+1))
			if _, _, ok := s.Lookup(id); ok == quiet[id] {
				t.Fatalf("seed %d: replica %v held %v after the flush, quiet %v", seed, id, ok, quiet[id])
			}
		}
	}
}

// TestMembersSwap: Members returns the same records whether it copies them
// (a nil or non-empty dst) or hands over its own (an empty dst with room),
// across random additions, updates and removals of replicas, and records
// handed over stay intact until the caller hands their array back.
func TestMembersSwap(t *testing.T) {
	same := func(a, b Change) bool {
		return a.ID == b.ID && a.Loc == b.Loc && (a.Obj == nil) == (b.Obj == nil) &&
			(a.Obj == nil || a.Obj.State().Equal(b.Obj.State()))
	}
	for seed := uint64(1); seed <= 50; seed++ {
		r := rand.New(rand.NewPCG(seed, 31))
		fast, ref := newStore(t, 2, nil), newStore(t, 2, nil)
		fast.TrackMembers()
		ref.TrackMembers()
		var buf, bufWant []Change // the last records handed over, and a copy
		for op := range 300 {
			now := time.Duration(op) * time.Millisecond
			id := world.MakeObjectID(1, uint32(1+r.IntN(10)))
			b := wire.AppendHeader(nil)
			if r.IntN(4) == 0 {
				b = wire.AppendIDs(b, wire.TypeDrop, &wire.IDs{IDs: []world.ObjectID{id}})
			} else {
				var mark int
				b, mark = wire.BeginUpdates(b, now)
				st := schema.NewState(id)
				st.SetInt(2, int64(op))
				st.SetFloat(0, float64(op%7))
				u := wire.Update{ID: id, Version: uint64(1 + op), Kind: 1, Data: world.AppendDelta(nil, nil, st)}
				b = wire.EndUpdates(wire.AppendUpdateEntry(b, &u), mark)
			}
			for _, s := range []*Store{fast, ref} {
				s.BeginPacket()
				if err := checkThenApply(s, now, 1, b); err != nil {
					t.Fatal(err)
				}
			}
			if r.IntN(3) != 0 {
				continue
			}
			var got []Change
			handed := false
			switch r.IntN(4) {
			case 0: // a nil dst: copied
				got = fast.Members(nil)
			case 1: // a non-empty dst: appended to
				got = fast.Members([]Change{{ID: 99}})[1:]
			default: // the node's way: the previous records, emptied
				clear(buf)
				buf = fast.Members(buf[:0])
				got, handed = buf, true
			}
			w := ref.Members(nil)
			if len(got) != len(w) {
				t.Fatalf("seed %d op %d: %d records, want %d", seed, op, len(got), len(w))
			}
			for i := range w {
				if !same(got[i], w[i]) {
					t.Fatalf("seed %d op %d: record %d is %+v, want %+v", seed, op, i, got[i], w[i])
				}
			}
			if handed {
				bufWant = slices.Clone(w)
			}
			for i := range bufWant {
				if !same(buf[i], bufWant[i]) {
					t.Fatalf("seed %d op %d: records handed over were overwritten", seed, op)
				}
			}
		}
	}
}

// TestKeepalivesWait: a frame of keepalives alone waits up to KeepaliveWait
// for a packet to the holder to ride in, and goes alone when released; a
// frame with a change goes at once and takes a waiting keepalive along.
func TestKeepalivesWait(t *testing.T) {
	a, b, stores, st := newPair(t, func(c *Config) {
		c.KeepalivePeriod, c.RetransmitAfter, c.ReplicaTimeout = time.Second, time.Second, 3500*time.Millisecond
	})
	var oa, ob wire.Outbox
	frame := func(f int, change bool) string {
		now := time.Duration(f) * 100 * time.Millisecond
		if change {
			st.SetFloat(0, float64(f))
		}
		a.Commit(now)
		a.Flush(now, nil, &oa)
		r, w := oa.Len(), oa.Waiting()
		oa.Release(now)
		ps := oa.Packets(1, nil)
		for _, p := range ps {
			if err := checkThenApply(stores[p.To], now, p.From, p.Payload); err != nil {
				t.Fatal(err)
			}
		}
		b.Flush(now, []world.Box{world.Unbounded()}, &ob)
		deliver(t, now, &ob, 2, stores, nil)
		return fmt.Sprintf("%d/%d>%d", r, w, len(ps)) // ready/waiting>packets sent
	}
	for f := range 5 {
		frame(f, true)
	}
	// Idle from frame 5: the change of frame 4 is confirmed by the first
	// keepalive 1 s later, in frame 14, which waits until frame 19 and goes
	// alone; the next, in frame 24, rides with frame 25's change.
	var got []string
	for f := 5; f < 26; f++ {
		if g := frame(f, f == 25); g != "0/0>0" {
			got = append(got, fmt.Sprintf("%d:%s", f, g))
		}
	}
	want := []string{"14:0/1>0", "15:0/1>0", "16:0/1>0", "17:0/1>0", "18:0/1>0", "19:0/1>1", "24:0/1>0", "25:1/1>1"}
	if !slices.Equal(got, want) {
		t.Errorf("frames (frame:ready/waiting>packets)\n got %v\nwant %v", got, want)
	}
	if in, ok := b.Object(st.ID()); !ok || !in.State.Equal(st) {
		t.Errorf("replica %+v (held %v) not up to date", in, ok)
	}
}

// packetFrames calls fn with every frame of packet p.
func packetFrames(t *testing.T, p wire.Packet, fn func(typ wire.Type, body []byte)) {
	t.Helper()
	fr, err := wire.OpenFrames(p.Payload)
	if err != nil {
		t.Fatal(err)
	}
	for {
		typ, body, ok := fr.Next()
		if !ok {
			return
		}
		fn(typ, body)
	}
}

// eachFrame calls fn with every frame of every packet o holds from node
// from (the packets are taken out of o).
func eachFrame(t *testing.T, o *wire.Outbox, from wire.NodeID, fn func(p wire.Packet, typ wire.Type, body []byte)) {
	t.Helper()
	for _, p := range o.Packets(from, nil) {
		packetFrames(t, p, func(typ wire.Type, body []byte) { fn(p, typ, body) })
	}
}

// frameTypes appends the types of p's frames to dst.
func frameTypes(t *testing.T, p wire.Packet, dst []wire.Type) []wire.Type {
	t.Helper()
	packetFrames(t, p, func(typ wire.Type, _ []byte) { dst = append(dst, typ) })
	return dst
}

// TestDormantLapsesQuietly: a replica that lingers out of view goes
// dormant and is dropped when its linger ends without a TypeDrop either
// way (Config.DormantTTL): the primary forgets the holder on its own, in
// time to send it nothing after the drop; with DormantTTL negative the
// holder says TypeDrop, as before.
func TestDormantLapsesQuietly(t *testing.T) {
	for _, ttl := range []time.Duration{0, -1} {
		a, b, stores, st := newPair(t, func(cfg *Config) { cfg.DormantTTL = ttl })
		var oa, ob wire.Outbox
		var fromB, fromA []wire.Type
		dropped, lastSent, held := -1, -1, false
		for f := 0; f < 40; f++ {
			now := time.Duration(f) * 100 * time.Millisecond
			st.SetFloat(0, float64(f))
			a.Commit(now)
			before := a.Stats().UpdatesSent
			a.Flush(now, nil, &oa)
			if a.Stats().UpdatesSent > before {
				lastSent = f
			}
			deliver(t, now, &oa, 1, stores, func(p wire.Packet) bool { fromA = frameTypes(t, p, fromA); return false })
			view := []world.Box{world.Unbounded()}
			if f >= 10 {
				view = nil // out of view for good from frame 10
			}
			b.Flush(now, view, &ob)
			deliver(t, now, &ob, 2, stores, func(p wire.Packet) bool { fromB = frameTypes(t, p, fromB); return false })
			if _, ok := b.Object(st.ID()); ok {
				held = true
			} else if held && dropped < 0 {
				dropped = f
			}
		}
		if dropped < 0 {
			t.Fatalf("DormantTTL %v: the replica was never dropped", ttl)
		}
		if lastSent >= dropped {
			t.Errorf("DormantTTL %v: the primary sent an update in frame %d, the replica was dropped in frame %d", ttl, lastSent, dropped)
		}
		if !slices.Contains(fromB, wire.TypeDormant) {
			t.Errorf("DormantTTL %v: the holder never said TypeDormant (%v)", ttl, fromB)
		}
		if got, want := slices.Contains(fromB, wire.TypeDrop), ttl < 0; got != want {
			t.Errorf("DormantTTL %v: the holder sent TypeDrop: %v, want %v (%v)", ttl, got, want, fromB)
		}
		if slices.Contains(fromA, wire.TypeDrop) {
			t.Errorf("DormantTTL %v: the primary sent TypeDrop (%v)", ttl, fromA)
		}
		if in, ok := a.Object(st.ID()); !ok || in.Holders != 0 {
			t.Errorf("DormantTTL %v: the primary still has %d holders", ttl, in.Holders)
		}
	}
}

// TestDormantTTLConfig: a DormantTTL shorter than a replica can stay
// dormant is refused.
func TestDormantTTLConfig(t *testing.T) {
	_, err := NewStore(Config{Self: 1, Registry: registry, DormantTTL: 500 * time.Millisecond})
	if !errors.Is(err, ErrConfig) {
		t.Fatalf("DormantTTL 500 ms with a 1 s linger: %v, want ErrConfig", err)
	}
	// The default follows ReplicaLinger.
	cfg := DefaultConfig()
	cfg.Self, cfg.Registry, cfg.ReplicaLinger = 1, registry, 3*time.Second
	s, err := NewStore(cfg)
	if err != nil {
		t.Fatalf("the defaults with a 3 s linger: %v", err)
	}
	if got := s.cfg.DormantTTL; got != 3*time.Second {
		t.Errorf("DormantTTL %v with a 3 s linger, want 3s", got)
	}
}

// TestPushedTimeout: a replica pushed by Keep whose push ends and whose
// drop is lost is deleted once it has heard nothing for PushedTimeout,
// not ReplicaTimeout; a requested replica that hears nothing lives to
// ReplicaTimeout; and Validate refuses a PushedTimeout outside
// (KeepalivePeriod, ReplicaTimeout].
func TestPushedTimeout(t *testing.T) {
	for _, requested := range []bool{false, true} {
		a, b := newStore(t, 1, nil), newStore(t, 2, nil)
		stores := map[wire.NodeID]*Store{1: a, 2: b}
		st := schema.NewState(world.MakeObjectID(1, 1))
		if err := a.AddPrimary(0, &obj{st}, 1); err != nil {
			t.Fatal(err)
		}
		if requested {
			b.Want(0, st.ID(), 1, time.Hour)
		}
		var oa, ob wire.Outbox
		gone := -1
		for f := 0; f < 80; f++ {
			now := time.Duration(f) * 100 * time.Millisecond
			st.SetFloat(0, float64(f))
			if !requested && f < 10 {
				a.Keep(now, st.ID(), 2)
			}
			a.Commit(now)
			a.Flush(now, nil, &oa)
			oa.Release(now)
			lost := f >= 15 // from frame 15 on (before the push ends), nothing reaches store 2
			deliver(t, now, &oa, 1, stores, func(wire.Packet) bool { return lost })
			b.Flush(now, []world.Box{world.Unbounded()}, &ob)
			deliver(t, now, &ob, 2, stores, nil)
			if _, ok := b.Object(st.ID()); !ok && f > 0 && gone < 0 {
				gone = f
			}
			if requested && f == 5 {
				if in, ok := b.Object(st.ID()); !ok || !in.Requested {
					t.Fatalf("requested replica not held at frame 5: %+v", in)
				}
			}
		}
		cfg := b.cfg
		want := cfg.PushedTimeout
		if requested {
			want = cfg.ReplicaTimeout
		}
		if gone < 0 {
			t.Fatalf("requested %v: the replica was never deleted", requested)
		}
		// The last update that arrived was frame 14's (the push lasts to
		// 1.9 s, PushTTL after the last Keep, and its drop is lost).
		last := 1400 * time.Millisecond
		if got := time.Duration(gone) * 100 * time.Millisecond; got <= last+want-100*time.Millisecond || got > last+want+200*time.Millisecond {
			t.Errorf("requested %v: replica deleted at %v, want about %v (last heard %v + %v)", requested, got, last+want, last, want)
		}
	}
	for _, c := range []struct {
		pushed time.Duration
		ok     bool
	}{{0, true}, {2 * time.Second, true}, {5250 * time.Millisecond, true}, {1500 * time.Millisecond, false}, {6 * time.Second, false}, {-time.Second, false}} {
		cfg := DefaultConfig()
		cfg.Registry, cfg.PushedTimeout = registry, c.pushed
		if _, err := cfg.Validate(); (err == nil) != c.ok {
			t.Errorf("PushedTimeout %v: Validate error %v, want ok %v", c.pushed, err, c.ok)
		}
	}
}

// TestRangeReplicas: RangeReplicas visits the replicas Range visits, in
// the same order, each with its Source, and stops when fn says so.
func TestRangeReplicas(t *testing.T) {
	s := newStore(t, 2, nil)
	for k := range 6 {
		id := world.MakeObjectID(uint32(1+k%3), uint32(k+1))
		if k%3 == 1 {
			id = world.MakeObjectID(2, uint32(k+1))
			if err := s.AddPrimary(0, &obj{schema.NewState(id)}, 2); err != nil {
				t.Fatal(err)
			}
			continue
		}
		b, mark := wire.BeginUpdates(wire.AppendHeader(nil), 0)
		u := wire.Update{ID: id, Version: 1, Kind: 1, Data: world.AppendDelta(nil, nil, schema.NewState(id))}
		b = wire.EndUpdates(wire.AppendUpdateEntry(b, &u), mark)
		s.BeginPacket()
		if err := checkThenApply(s, 0, wire.NodeID(id.Origin()&0xffff), b); err != nil {
			t.Fatal(err)
		}
	}
	var want, got []string
	s.Range(func(o world.Object, primary bool) bool {
		if !primary {
			from, _ := s.Source(o.State().ID())
			want = append(want, fmt.Sprintf("%v@%d", o.State().ID(), from))
		}
		return true
	})
	s.RangeReplicas(func(o world.Object, from wire.NodeID) bool {
		got = append(got, fmt.Sprintf("%v@%d", o.State().ID(), from))
		return true
	})
	if len(want) != 4 || !slices.Equal(got, want) {
		t.Fatalf("RangeReplicas %v, want %v (4 replicas)", got, want)
	}
	n := 0
	s.RangeReplicas(func(world.Object, wire.NodeID) bool { n++; return n < 2 })
	if n != 2 {
		t.Fatalf("RangeReplicas went on after fn returned false: %d calls", n)
	}
}

// TestHoldersLeaveOutDormant: a holder whose replica is in its view is
// listed by Holders (its locator need not introduce the object to it);
// once the replica went dormant it is not, while the holder still has it:
// it may drop it without a word, and a locator that kept skipping it would
// leave it without news of the object until the registration lapsed.
func TestHoldersLeaveOutDormant(t *testing.T) {
	a, b, stores, st := newPair(t, nil)
	id := st.ID()
	var oa, ob wire.Outbox
	listed, dormantHeld := false, false
	for f := 0; f < 30; f++ {
		now := time.Duration(f) * 100 * time.Millisecond
		st.SetFloat(0, float64(f))
		a.Commit(now)
		a.Flush(now, nil, &oa)
		deliver(t, now, &oa, 1, stores, nil)
		view := []world.Box{world.Unbounded()}
		if f >= 10 {
			view = nil
		}
		b.Flush(now, view, &ob)
		deliver(t, now, &ob, 2, stores, nil)
		holders := a.Holders(now, id, nil)
		e := b.objs.Get(id)
		switch {
		case e != nil && !e.dormant && f < 10 && f > 1:
			if !slices.Contains(holders, 2) {
				t.Fatalf("frame %d: node 2 holds the replica in its view, Holders = %v", f, holders)
			}
			listed = true
		case e != nil && e.dormant:
			if slices.Contains(holders, 2) {
				t.Fatalf("frame %d: node 2's replica is dormant, Holders = %v still lists it", f, holders)
			}
			dormantHeld = true
		}
	}
	if !listed || !dormantHeld {
		t.Fatalf("a weak run: listed in view %v, dormant and held %v", listed, dormantHeld)
	}
}
