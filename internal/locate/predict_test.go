package locate

import (
	"errors"
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/overworld/overworld/world"
)

// coveredTol reports whether p covers b in dims dimensions up to a
// rounding tolerance (future positions are sums of many small steps).
func coveredTol(p, b world.Box, dims int) bool {
	for d := range dims {
		tol := 1e-9 * (1 + math.Abs(b.Min[d]) + math.Abs(b.Max[d]))
		if !(p.Min[d] <= b.Min[d]+tol && b.Max[d] <= p.Max[d]+tol) {
			return false
		}
	}
	return true
}

func randPredictConfig(r *rand.Rand) PredictConfig {
	c := PredictConfig{
		PredTime: time.Duration(100+r.IntN(2900)) * time.Millisecond,
		PubTime:  time.Duration(r.IntN(200)) * time.Millisecond,
		PubTTL:   time.Duration(r.IntN(1000)) * time.Millisecond,
		Window:   1 + r.IntN(10),
	}
	for d := range world.MaxDims {
		if r.IntN(3) > 0 {
			c.PubSpeed[d] = r.Float64() * 20
		}
	}
	if r.IntN(2) == 0 {
		c.PubTime, c.PubTTL, c.PubSpeed = 0, 0, world.Point{} // no pad: the velocity term alone
	} else {
		for range r.IntN(3) {
			k := PubKind{TTL: time.Duration(r.IntN(5000)) * time.Millisecond}
			for d := range world.MaxDims {
				k.Speed[d] = r.Float64() * 30 * float64(r.IntN(2))
			}
			c.Kinds = append(c.Kinds, k)
		}
	}
	return c
}

// TestPredictContainsFuture is the property test of interest prediction:
// on seeded random trajectories (observed at irregular frame times, with
// velocities that change within the window, or overridden as a Mover), an
// object that then moves for PredTime with each velocity component
// between −PredMoveUpLeft and PredMoveDownRight (a fresh random velocity
// every sub-step) keeps its true interest box inside the predicted box at
// every moment; and every other object inside that true interest has its
// last publication (up to PubTime + PubTTL old, at a speed within
// PubSpeed) inside the predicted box too.
func TestPredictContainsFuture(t *testing.T) {
	seeds := 2000
	if testing.Short() {
		seeds = 300
	}
	for seed := range uint64(seeds) {
		r := rand.New(rand.NewPCG(seed, 31))
		cfg := randPredictConfig(r)
		p, err := NewPredictor(cfg)
		if err != nil {
			t.Fatal(err)
		}
		dims := 1 + r.IntN(world.MaxDims)
		const id = world.ObjectID(7)
		// The past: a few segments of constant velocity.
		var x world.Point
		for d := range dims {
			x[d] = (r.Float64() - 0.5) * 2000
		}
		now := time.Duration(r.IntN(10000)) * time.Millisecond
		var v world.Point
		for range 1 + r.IntN(3*cfg.Window+2) {
			if r.IntN(3) == 0 {
				for d := range dims {
					v[d] = 0
					if r.IntN(4) > 0 {
						v[d] = (r.Float64() - 0.5) * 40
					}
				}
			}
			p.Observe(id, now, x)
			dt := time.Duration(30+r.IntN(170)) * time.Millisecond
			now += dt
			for d := range dims {
				x[d] += v[d] * dt.Seconds()
			}
		}
		p.Observe(id, now, x)
		est := p.Velocity(id)
		over, isMover := world.Point{}, r.IntN(4) == 0
		if isMover {
			for d := range dims {
				over[d] = (r.Float64() - 0.5) * 40
			}
			est = over
		}
		var half world.Point
		for d := range dims {
			half[d] = 1 + r.Float64()*40
		}
		interest := []world.Box{world.BoxAround(x, half)}
		pred := p.Predict(id, over, isMover, interest, nil)
		if len(pred) != 1 {
			t.Fatalf("seed %d: %d predicted boxes, want 1", seed, len(pred))
		}
		// The future, within the velocity bound.
		x0, pos := x, x
		keep := r.IntN(2) == 0
		stale := (cfg.PubTime + cfg.PubTTL).Seconds()
		for elapsed := 0.0; elapsed <= cfg.PredTime.Seconds(); {
			var disp world.Point
			for d := range dims {
				disp[d] = pos[d] - x0[d]
			}
			truth := interest[0].Expand(world.Point{-disp[0], -disp[1], -disp[2], -disp[3]}, disp)
			if !coveredTol(pred[0], truth, dims) || !coveredTol(pred[0], world.Box{Min: pos, Max: pos}, dims) {
				t.Fatalf("seed %d (%+v, velocity %v, mover %v): at +%.3fs the interest %v left the predicted %v",
					seed, cfg, est, isMover, elapsed, truth, pred[0])
			}
			// Another object inside the true interest: its publication,
			// up to PubTime+PubTTL old, is in the predicted box.
			var q, pub world.Point
			kstale, kspeed := stale, cfg.PubSpeed // the object's kind
			if k := r.IntN(len(cfg.Kinds) + 1); k < len(cfg.Kinds) {
				kstale, kspeed = (cfg.PubTime + cfg.Kinds[k].TTL).Seconds(), cfg.Kinds[k].Speed
			}
			for d := range dims {
				q[d] = truth.Min[d] + r.Float64()*(truth.Max[d]-truth.Min[d])
				u, age := (2*r.Float64()-1)*kspeed[d], kstale*r.Float64()
				if r.IntN(2) == 0 { // the worst case: on the edge, as old and fast as allowed, moving inwards
					age = kstale
					if r.IntN(2) == 0 {
						q[d], u = truth.Min[d], kspeed[d]
					} else {
						q[d], u = truth.Max[d], -kspeed[d]
					}
				}
				pub[d] = q[d] - u*age
			}
			if !coveredTol(pred[0], world.Box{Min: pub, Max: pub}, dims) {
				t.Fatalf("seed %d (%+v): at +%.3fs an object at %v inside the interest was published at %v, outside the predicted %v",
					seed, cfg, elapsed, q, pub, pred[0])
			}
			step := math.Min(0.01+r.Float64()*0.2, cfg.PredTime.Seconds()-elapsed)
			if step <= 0 {
				break
			}
			for d := range dims {
				lo, hi := min(0, est[d]), max(0, est[d])
				switch {
				case keep: // keeps its estimated velocity: the extreme
					pos[d] += est[d] * step
				default:
					pos[d] += (lo + r.Float64()*(hi-lo)) * step
				}
			}
			elapsed += step
		}
	}
}

// TestPredictVelocity checks the moving average: a constant velocity is
// recovered, the window forgets old steps, and degenerate observations
// (NaN, infinite, repeated times, time going backwards, teleports) are
// handled.
func TestPredictVelocity(t *testing.T) {
	p, _ := NewPredictor(PredictConfig{PredTime: time.Second, Window: 3, MaxSpeed: 50})
	const id = 1
	if v := p.Velocity(id); v != (world.Point{}) {
		t.Errorf("unknown object: velocity %v, want 0", v)
	}
	for i := range 10 {
		p.Observe(id, time.Duration(i)*100*time.Millisecond, world.Point{float64(i), -2 * float64(i)})
	}
	if v := p.Velocity(id); math.Abs(v[0]-10) > 1e-9 || math.Abs(v[1]+20) > 1e-9 {
		t.Errorf("constant velocity (10, -20): estimated %v", v)
	}
	// The window: after 3 steps at a new velocity, only they count.
	for i := 10; i < 13; i++ {
		p.Observe(id, time.Duration(i)*100*time.Millisecond, world.Point{9, -18 + 3*float64(i-9)})
	}
	if v := p.Velocity(id); math.Abs(v[0]) > 1e-9 || math.Abs(v[1]-30) > 1e-9 {
		t.Errorf("after a 3-step window at (0, 30): estimated %v", v)
	}
	// NaN and infinite locations are ignored.
	before := p.Velocity(id)
	p.Observe(id, 1400*time.Millisecond, world.Point{math.NaN(), 0})
	p.Observe(id, 1400*time.Millisecond, world.Point{math.Inf(1), 0})
	if v := p.Velocity(id); v != before {
		t.Errorf("a NaN/Inf observation changed the velocity: %v, was %v", v, before)
	}
	// A second observation at the same time replaces the first.
	p.Observe(id, 1200*time.Millisecond, world.Point{9, -12})
	if v := p.Velocity(id); math.Abs(v[1]-20) > 1e-9 {
		t.Errorf("replaced newest observation: velocity %v, want (0, 20)", v)
	}
	// A teleport is clamped to MaxSpeed.
	p.Observe(id, 1400*time.Millisecond, world.Point{1e6, -1e6})
	if v := p.Velocity(id); v[0] != 50 || v[1] != -50 {
		t.Errorf("teleport: velocity %v, want clamped to (50, -50)", v)
	}
	// Time going backwards restarts the history.
	p.Observe(id, 100*time.Millisecond, world.Point{3, 3})
	if v := p.Velocity(id); v != (world.Point{}) {
		t.Errorf("after time went backwards: velocity %v, want 0", v)
	}
	// Overflowing coordinates give an unknown (zero) velocity, not NaN.
	q, _ := NewPredictor(PredictConfig{PredTime: time.Second})
	q.Observe(2, 0, world.Point{-math.MaxFloat64})
	q.Observe(2, time.Millisecond, world.Point{math.MaxFloat64})
	if v := q.Velocity(2); v != (world.Point{}) {
		t.Errorf("overflowing displacement: velocity %v, want 0", v)
	}
	if p.Len() != 1 {
		t.Errorf("tracking %d objects, want 1", p.Len())
	}
	p.Sweep(200 * time.Millisecond)
	p.Observe(3, time.Second, world.Point{})
	p.Sweep(500 * time.Millisecond)
	if p.Len() != 1 {
		t.Errorf("after Sweep: tracking %d objects, want 1 (the one seen since)", p.Len())
	}
	p.Forget(3)
	if p.Len() != 0 {
		t.Errorf("after Forget: tracking %d objects", p.Len())
	}
}

type moverObj struct{ v world.Point }

func (m moverObj) State() *world.State                  { return nil }
func (m moverObj) Interest(dst []world.Box) []world.Box { return dst }
func (m moverObj) Think(world.Context)                  {}
func (m moverObj) Velocity() world.Point                { return m.v }

type plainObj struct{}

func (plainObj) State() *world.State                  { return nil }
func (plainObj) Interest(dst []world.Box) []world.Box { return dst }
func (plainObj) Think(world.Context)                  {}

// TestPredictBoxes checks the formula on exact values and the degenerate
// boxes and velocities.
func TestPredictBoxes(t *testing.T) {
	cfg := PredictConfig{PredTime: 2 * time.Second, PubTime: 100 * time.Millisecond, PubTTL: 400 * time.Millisecond,
		PubSpeed: world.Point{10, 4}, Window: 2, MaxSpeed: 100}
	p, err := NewPredictor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if p.TTL() != 2*time.Second {
		t.Errorf("TTL %v, want PredTime", p.TTL())
	}
	box := world.Box{Min: world.Point{0, 0}, Max: world.Point{10, 10}}
	// Velocity (3, -1): x grows by 2×3 above, y by 2×1 below; pad 0.5 s × (10, 4).
	got := p.Predict(9, world.Point{3, -1}, true, []world.Box{box}, nil)
	want := world.Box{Min: world.Point{-5, -4}, Max: world.Point{21, 12}}
	if len(got) != 1 || got[0] != want {
		t.Errorf("Predict = %v, want %v", got, want)
	}
	// Zero velocity: the pad alone.
	got = p.Predict(9, world.Point{}, false, []world.Box{box}, nil)
	if want := (world.Box{Min: world.Point{-5, -2}, Max: world.Point{15, 12}}); got[0] != want {
		t.Errorf("zero velocity: %v, want %v", got[0], want)
	}
	if need := p.Need([]world.Box{box}, nil); len(need) != 1 || need[0] != got[0] {
		t.Errorf("Need = %v, want the zero-velocity prediction %v", need, got[0])
	}
	// A kind that publishes every 2.9 s at 1 unit/s in y: pad 3 s × 1 = 3 > 0.5 s × 4.
	kc := cfg
	kc.Kinds = []PubKind{{TTL: 2900 * time.Millisecond, Speed: world.Point{0, 1}}, {TTL: time.Hour}}
	pk, _ := NewPredictor(kc)
	if g := pk.Predict(9, world.Point{}, false, []world.Box{box}, nil); g[0] != (world.Box{Min: world.Point{-5, -3}, Max: world.Point{15, 13}}) {
		t.Errorf("with kinds: %v, want y widened by 3", g[0])
	}
	// A NaN or infinite override falls back to the average (zero here).
	for _, over := range []world.Point{{math.NaN(), 1}, {math.Inf(1), 0}} {
		if g := p.Predict(9, over, true, []world.Box{box}, nil); g[0] != got[0] {
			t.Errorf("override %v: %v, want the unoverridden %v", over, g[0], got[0])
		}
	}
	// An override beyond MaxSpeed is clamped.
	if g := p.Predict(9, world.Point{1e9}, true, []world.Box{box}, nil); g[0].Max[0] != 10+200+5 {
		t.Errorf("clamped override: max x %v, want 215", g[0].Max[0])
	}
	// Empty and NaN boxes are left out, unbounded sides stay unbounded.
	ub := world.Unbounded()
	half := world.Box{Min: world.Point{math.Inf(-1), 0}, Max: world.Point{5, 5}}
	got = p.Predict(9, world.Point{1, 1}, true, []world.Box{
		{Min: world.Point{5, 5}, Max: world.Point{4, 6}}, {Min: world.Point{math.NaN()}}, ub, half}, []world.Box{box})
	if len(got) != 3 || got[0] != box || got[1] != ub || !math.IsInf(got[2].Min[0], -1) || got[2].Max[0] != 5+2+5 {
		t.Errorf("degenerate boxes: %v", got)
	}
	if v, ok := MoverVelocity(moverObj{world.Point{1, 2}}); !ok || v != (world.Point{1, 2}) {
		t.Errorf("MoverVelocity(mover) = %v, %v", v, ok)
	}
	if _, ok := MoverVelocity(plainObj{}); ok {
		t.Errorf("MoverVelocity of an object that is not a Mover: ok")
	}
	for _, c := range []PredictConfig{{PredTime: -1}, {PubTime: -1}, {PubTTL: -1}, {PubSpeed: world.Point{-1}},
		{PubSpeed: world.Point{0, math.NaN()}}, {PubSpeed: world.Point{math.Inf(1)}}, {MaxSpeed: -1},
		{MaxSpeed: math.NaN()}, {Window: -1}, {Window: 5000}, {Kinds: []PubKind{{TTL: -1}}},
		{Kinds: []PubKind{{Speed: world.Point{math.NaN()}}}}, {Kinds: []PubKind{{Speed: world.Point{0, -2}}}}} {
		if _, err := NewPredictor(c); !errors.Is(err, ErrLocateConfig) {
			t.Errorf("%+v: %v, want ErrLocateConfig", c, err)
		}
	}
	if _, err := NewPredictor(DefaultPredictConfig()); err != nil {
		t.Errorf("defaults: %v", err)
	}
}
