package player

import (
	"cmp"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/overworld/overworld/world"
)

type dot struct{ st *world.State }

func (d *dot) State() *world.State { return d.st }
func (d *dot) Interest(dst []world.Box) []world.Box {
	return append(dst, world.BoxAround(d.st.Location(), world.Point{10, 10, 10}))
}
func (d *dot) Think(world.Context) {}

var (
	dotSchema = world.MustSchema("test.dot", world.XYZ, []world.Field{
		{Name: "x", Type: world.Float}, {Name: "y", Type: world.Float}, {Name: "z", Type: world.Float},
		{Name: "hp", Type: world.Int}, {Name: "on", Type: world.Bool}, {Name: "dx", Type: world.Float, Quantum: 0.125},
		{Name: "dy", Type: world.Float, Quantum: 0.125},
	}, func(st *world.State) world.Object { return &dot{st} })
	boxSchema = world.MustSchema("test.box", world.XYZ, []world.Field{
		{Name: "x", Type: world.Float}, {Name: "y", Type: world.Float}, {Name: "z", Type: world.Float},
		{Name: "owner", Type: world.Ref},
	}, func(st *world.State) world.Object { return &dot{st} })
	testReg, _ = world.NewRegistry(world.XYZ, dotSchema, boxSchema)
)

// clientRegistry is testReg as a client rebuilds it from JoinOK.
func clientRegistry(t testing.TB) *world.Registry {
	w, err := DecodeJoinOK(AppendJoinOK(nil, Welcome{Player: "p", Avatar: 1, FrameEvery: 1e8, History: 32, Registry: testReg})[2:])
	if err != nil {
		t.Fatal(err)
	}
	return w.Registry
}

// sameState reports whether a client's state equals the node's (same
// schema name, ID and quantised values).
func sameState(a, b *world.State) bool {
	if a.ID() != b.ID() || a.Schema().Name() != b.Schema().Name() || a.Schema().NumFields() != b.Schema().NumFields() {
		return false
	}
	for i := range a.Schema().NumFields() {
		if a.Int(i) != b.Int(i) {
			return false
		}
	}
	return true
}

// randomWorld is a set of objects that appear, change and disappear.
type randomWorld struct {
	rng  *rand.Rand
	objs []Seen
	next uint32
}

func (w *randomWorld) step() {
	kept := w.objs[:0]
	for _, o := range w.objs {
		if w.rng.IntN(20) == 0 {
			continue
		}
		st := o.State
		for i := range st.Schema().NumFields() {
			if w.rng.IntN(3) == 0 {
				switch st.Schema().FieldAt(i).Type {
				case world.Bool:
					st.SetBool(i, w.rng.IntN(2) == 0)
				case world.Ref:
					st.SetRef(i, world.ObjectID(w.rng.Uint64()))
				default:
					st.SetInt(i, st.Int(i)+w.rng.Int64N(200)-100)
				}
			}
		}
		kept = append(kept, o)
	}
	w.objs = kept
	for range w.rng.IntN(4) {
		w.next += 1 + uint32(w.rng.IntN(3))
		s, k := dotSchema, world.Kind(1)
		if w.rng.IntN(3) == 0 {
			s, k = boxSchema, 2
		}
		st := s.NewState(world.MakeObjectID(uint32(1+w.rng.IntN(3)), w.next))
		st.SetFloat(0, w.rng.Float64()*100)
		st.SetInt(1, w.rng.Int64())
		w.objs = append(w.objs, Seen{st.ID(), k, st})
	}
	slices.SortFunc(w.objs, func(a, b Seen) int { return cmp.Compare(a.ID, b.ID) })
}

// TestEncodeApplyRandom checks on random worlds, with lost and late
// messages and random acknowledgements, that whenever the client applies a
// frame its view equals the objects and states the node encoded.
func TestEncodeApplyRandom(t *testing.T) {
	seeds := 200
	if testing.Short() {
		seeds = 30
	}
	for seed := range uint64(seeds) {
		rng := rand.New(rand.NewPCG(seed, 7))
		hist := 2 + rng.IntN(8)
		enc := NewEncoder(hist)
		view := NewView(clientRegistry(t), hist)
		w := &randomWorld{rng: rng}
		var acked uint64
		type sent struct {
			frame uint64
			msg   []byte
			want  []Seen
		}
		var inflight []sent
		for frame := uint64(1); frame <= 150; frame++ {
			w.step()
			msg, _, err := enc.Encode(nil, frame, acked, frame, w.objs)
			if err != nil {
				t.Fatal(err)
			}
			want := make([]Seen, len(w.objs))
			for i, o := range w.objs {
				want[i] = Seen{o.ID, o.Kind, o.State.Clone()}
			}
			inflight = append(inflight, sent{frame, msg, want})
			// Deliver a random subset of the in-flight messages, in a
			// random order; lose some.
			rng.Shuffle(len(inflight), func(i, j int) { inflight[i], inflight[j] = inflight[j], inflight[i] })
			keep := inflight[:0]
			for _, m := range inflight {
				switch rng.IntN(4) {
				case 0: // lost
				case 1: // later
					keep = append(keep, m)
				default:
					typ, body, err := Open(m.msg)
					if err != nil || typ != MsgState {
						t.Fatalf("seed %d: frame %d: %v %v", seed, m.frame, typ, err)
					}
					ok, err := view.Apply(body)
					if err != nil {
						t.Fatalf("seed %d: frame %d: %v", seed, m.frame, err)
					}
					if !ok {
						continue
					}
					if view.Frame() != m.frame || view.InputSeq() != m.frame {
						t.Fatalf("seed %d: applied frame %d, view at %d", seed, m.frame, view.Frame())
					}
					got := view.Objects()
					if len(got) != len(m.want) {
						t.Fatalf("seed %d: frame %d: %d objects, want %d", seed, m.frame, len(got), len(m.want))
					}
					for i := range got {
						if got[i].ID != m.want[i].ID || got[i].Kind != m.want[i].Kind || !sameState(got[i].State, m.want[i].State) {
							t.Fatalf("seed %d: frame %d: object %d is %v, want %v", seed, m.frame, i, got[i].ID, m.want[i].ID)
						}
					}
					if rng.IntN(3) > 0 && view.Frame() > acked { // the ack arrives (or not)
						acked = view.Frame()
					}
				}
			}
			inflight = keep
		}
	}
}

// TestApplyMalformedChangesNothing corrupts valid State messages and checks
// that a refused one leaves the view as it was.
func TestApplyMalformedChangesNothing(t *testing.T) {
	for seed := range uint64(50) {
		rng := rand.New(rand.NewPCG(seed, 9))
		enc := NewEncoder(8)
		view := NewView(clientRegistry(t), 8)
		w := &randomWorld{rng: rng}
		for frame := uint64(1); frame <= 40; frame++ {
			w.step()
			msg, _, _ := enc.Encode(nil, frame, view.Frame(), 0, w.objs)
			bad := slices.Clone(msg[2:])
			switch rng.IntN(3) {
			case 0:
				bad = bad[:rng.IntN(len(bad))]
			case 1:
				bad[rng.IntN(len(bad))] ^= byte(1 + rng.IntN(255))
			default:
				bad = append(bad, byte(rng.IntN(256)))
			}
			before := snapshotOf(view)
			if _, err := view.Apply(bad); err != nil {
				if after := snapshotOf(view); after != before {
					t.Fatalf("seed %d frame %d: refused message changed the view:\n%s\n%s", seed, frame, before, after)
				}
			}
			// Then the real message (a corrupted one that decoded may have
			// been applied as this frame: the next frame resynchronises).
			_, _ = view.Apply(msg[2:])
		}
	}
}

func snapshotOf(v *View) string {
	s := fmt.Sprint(v.Frame(), v.InputSeq())
	for _, o := range v.Objects() {
		s += fmt.Sprint(" ", o.ID, o.Kind)
		for i := range o.State.Schema().NumFields() {
			s += fmt.Sprint(",", o.State.Int(i))
		}
	}
	return s
}

// BenchmarkEncode measures one player's State per frame: n objects in
// view, a tenth of them moving each frame (as in the arena, where most
// objects in a 40 m box are items and standing bots), one appearing and one
// leaving, acknowledged every frame.
func BenchmarkEncode(b *testing.B) {
	for _, n := range []int{16, 64, 256} {
		b.Run(fmt.Sprintf("n=%d", n), func(b *testing.B) {
			rng := rand.New(rand.NewPCG(1, 2))
			all := make([]Seen, n+1) // the view is all but one, a different one each frame
			for i := range all {
				st := dotSchema.NewState(world.MakeObjectID(1, uint32(i+1)))
				st.SetFloat(0, rng.Float64()*40)
				st.SetFloat(1, rng.Float64()*40)
				st.SetInt(3, 100)
				all[i] = Seen{st.ID(), 1, st}
			}
			enc := NewEncoder(32)
			var buf []byte
			objs := make([]Seen, 0, n)
			var frame, bytes uint64
			b.ReportAllocs()
			for b.Loop() {
				frame++
				for k := range n/10 + 1 {
					st := all[(int(frame)*7+k*13)%len(all)].State
					st.SetFloat(0, st.Float(0)+0.6)
					st.SetFloat(1, st.Float(1)-0.3)
				}
				hole := int(frame) % len(all)
				objs = append(append(objs[:0], all[:hole]...), all[hole+1:]...)
				buf, _, _ = enc.Encode(buf[:0], frame, frame-1, frame, objs)
				bytes += uint64(len(buf))
			}
			b.ReportMetric(float64(bytes)/float64(frame), "bytes/frame")
		})
	}
}

func TestEncodeRefusesBadArguments(t *testing.T) {
	enc := NewEncoder(4)
	a := dotSchema.NewState(1)
	b := dotSchema.NewState(2)
	for _, c := range []struct {
		frame uint64
		cur   []Seen
	}{
		{1, []Seen{{2, 1, b}, {1, 1, a}}}, // out of order
		{1, []Seen{{1, 1, a}, {1, 1, a}}}, // duplicate
		{1, []Seen{{0, 1, a}}},            // zero ID
		{1, []Seen{{1, 1, nil}}},          // no state
		{1, []Seen{{1, 0, a}}},            // no kind
	} {
		if dst, _, err := enc.Encode([]byte("x"), c.frame, 0, 0, c.cur); !errors.Is(err, ErrEncode) || string(dst) != "x" {
			t.Errorf("%+v: %v", c.cur, err)
		}
	}
	if _, _, err := enc.Encode(nil, 1, 0, 0, []Seen{{1, 1, a}}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := enc.Encode(nil, 1, 0, 0, nil); !errors.Is(err, ErrEncode) {
		t.Errorf("a repeated frame: %v", err)
	}
}
