package locate

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/overworld/overworld/world"
)

// Interest prediction (Colyseus §6.2). A subscription is sent for the
// interest an object will have over the next PredTime, not only the one
// it has now, and is stored at the rendezvous with TTL = PredTime, so it
// rarely needs a refresh within its life. Each interest box Vol becomes
//
//	Vol.min −= PredTime × PredMoveUpLeft + PubTime
//	Vol.max += PredTime × PredMoveDownRight + PubTime
//
// per dimension d, where, with v the object's velocity (units/s):
//
//   - PredMoveUpLeft[d] = max(0, −v[d]): the largest speed at which the
//     object moves towards lower coordinates along d (the negative part of
//     its velocity component), and PredMoveDownRight[d] = max(0, v[d]) the
//     largest towards higher ones. PredTime × these is how far the interest
//     moves within the prediction horizon.
//   - v is the moving average of the object's observed velocity: the
//     displacement between the oldest and newest of its last Window+1
//     observed positions divided by the time between them (the
//     time-weighted mean of the last Window steps), clamped to ±MaxSpeed;
//     an object implementing world.Mover overrides it with its own
//     prediction (missiles fly straight).
//   - PubTime here is a distance: (PubTime + PubTTL) × PubSpeed[d] (the
//     largest such over the kinds of publishing objects, Kinds). An
//     object entering the interest is discovered only after its
//     publication is routed and matched (PubTime, a duration) and may have
//     been published up to PubTTL (its publication interval) earlier; at
//     a speed of at most PubSpeed it is within that distance of the
//     location it published. With this pad, every object inside the
//     true interest at any time of the horizon has its last publication
//     inside the predicted box (tested), which is the paper's "PubTime
//     widened by PubTTL × Velocity for objects that publish less often".
//
// If the object keeps each velocity component between −PredMoveUpLeft and
// PredMoveDownRight (in particular, if it keeps its estimated velocity)
// for PredTime, its true interest at every moment of the horizon lies
// inside the predicted box (property-tested on seeded random
// trajectories). Predictions are over-approximations: publications in the
// predicted but not the true interest are false matches, which the
// subscriber filters against its current, unpredicted interest before it
// creates a replica.

// PredictConfig configures a Predictor.
type PredictConfig struct {
	// PredTime is the prediction horizon and the subscription TTL. The
	// paper's sweet spot on its workload is about 1 s (Fig. 8).
	PredTime time.Duration
	// PubTime is how long a publication takes to reach a subscriber
	// (routing and matching: the discovery latency, ~100 ms at the
	// median on PlanetLab).
	PubTime time.Duration
	// PubTTL is the longest interval between two publications of an
	// object that may enter the interest (the publish period of the
	// slowest-publishing kind; 0 if objects publish every frame).
	PubTTL time.Duration
	// PubSpeed bounds the speed of publishing objects along each
	// dimension (units/s).
	PubSpeed world.Point
	// Kinds lists further kinds of publishing objects, each with its own
	// publication interval and speed bound (items that publish rarely and
	// never move, vehicles that publish often and move fast); the pad is
	// the largest over PubTTL/PubSpeed and every kind.
	Kinds []PubKind
	// Window is the number of steps the velocity is averaged over (the
	// last Window+1 observed positions).
	Window int
	// MaxSpeed clamps every component of an estimated or overriding
	// velocity to ±MaxSpeed (units/s), so that a teleport (respawn) does
	// not blow up the next predictions; 0 means no clamp.
	MaxSpeed float64
}

// PubKind is a kind of publishing object for PredictConfig.Kinds.
type PubKind struct {
	TTL   time.Duration // its publication interval
	Speed world.Point   // its speed bound per dimension (units/s)
}

// DefaultPredictConfig returns the model game's settings: PredTime 1 s
// (the paper's sweet spot), PubTime 100 ms (one frame: a median discovery
// on PlanetLab), PubTTL 500 ms (the directory's publish period), PubSpeed
// 10 units/s in x and y (the model game's run speed, 10 m/s; missiles are
// replicated with their shooter and need no discovery), a 5-step window
// (0.5 s at 10 frames/s) and MaxSpeed 30 units/s (three times the run
// speed: faster is a teleport).
func DefaultPredictConfig() PredictConfig {
	return PredictConfig{PredTime: time.Second, PubTime: 100 * time.Millisecond, PubTTL: 500 * time.Millisecond,
		PubSpeed: world.Point{10, 10}, Window: 5, MaxSpeed: 30}
}

// Validate returns c with Window 0 replaced by 1, or an error naming the
// bad field.
func (c PredictConfig) Validate() (PredictConfig, error) {
	if c.PredTime < 0 || c.PubTime < 0 || c.PubTTL < 0 {
		return c, fmt.Errorf("%w: prediction PredTime %v, PubTime %v, PubTTL %v (want non-negative)",
			ErrLocateConfig, c.PredTime, c.PubTime, c.PubTTL)
	}
	for d, s := range c.PubSpeed {
		if !(s >= 0) || math.IsInf(s, 0) {
			return c, fmt.Errorf("%w: prediction PubSpeed %v in dimension %d (want finite, non-negative)", ErrLocateConfig, s, d)
		}
	}
	for k, kind := range c.Kinds {
		if kind.TTL < 0 {
			return c, fmt.Errorf("%w: prediction kind %d TTL %v (want non-negative)", ErrLocateConfig, k, kind.TTL)
		}
		for d, s := range kind.Speed {
			if !(s >= 0) || math.IsInf(s, 0) {
				return c, fmt.Errorf("%w: prediction kind %d speed %v in dimension %d (want finite, non-negative)", ErrLocateConfig, k, s, d)
			}
		}
	}
	c.Kinds = slices.Clone(c.Kinds)
	if !(c.MaxSpeed >= 0) || math.IsInf(c.MaxSpeed, 0) {
		return c, fmt.Errorf("%w: prediction MaxSpeed %v (want finite, non-negative; 0 for no clamp)", ErrLocateConfig, c.MaxSpeed)
	}
	if c.Window == 0 {
		c.Window = 1
	}
	if c.Window < 0 || c.Window > 1024 {
		return c, fmt.Errorf("%w: prediction Window %d (want 1 to 1024)", ErrLocateConfig, c.Window)
	}
	return c, nil
}

// Predictor tracks the recent positions of a node's primaries and widens
// their interests (Colyseus' interest prediction). Its caller must, once
// per frame, Observe every primary's location, then Predict its interest;
// Forget deleted or migrated objects (or Sweep idle ones). It is
// deterministic and not safe for concurrent use.
type Predictor struct {
	cfg    PredictConfig
	tracks map[world.ObjectID]*track
}

// track is a ring buffer of an object's last Window+1 observations.
type track struct {
	t    []time.Duration
	p    []world.Point
	head int // index of the oldest
	n    int
}

// NewPredictor returns a predictor, or an error naming a bad field of cfg.
func NewPredictor(cfg PredictConfig) (*Predictor, error) {
	c, err := cfg.Validate()
	if err != nil {
		return nil, err
	}
	return &Predictor{cfg: c, tracks: map[world.ObjectID]*track{}}, nil
}

// Config returns the predictor's configuration.
func (p *Predictor) Config() PredictConfig { return p.cfg }

// TTL returns the TTL of predicted subscriptions: PredTime.
func (p *Predictor) TTL() time.Duration { return p.cfg.PredTime }

// Len returns the number of objects tracked.
func (p *Predictor) Len() int { return len(p.tracks) }

func finitePoint(v *world.Point) bool {
	for _, x := range v {
		if math.IsNaN(x) || math.IsInf(x, 0) {
			return false
		}
	}
	return true
}

// Observe records that object id was at loc at time now. A location with
// a NaN or infinite coordinate is ignored; a second observation at the
// same time replaces the first; an observation before the newest one
// (time went backwards) restarts the object's history.
func (p *Predictor) Observe(id world.ObjectID, now time.Duration, loc world.Point) {
	if !finitePoint(&loc) {
		return
	}
	tr := p.tracks[id]
	if tr == nil {
		k := p.cfg.Window + 1
		tr = &track{t: make([]time.Duration, k), p: make([]world.Point, k)}
		p.tracks[id] = tr
	}
	if tr.n > 0 {
		last := (tr.head + tr.n - 1) % len(tr.t)
		switch {
		case now == tr.t[last]:
			tr.p[last] = loc
			return
		case now < tr.t[last]:
			tr.n = 0
		}
	}
	if tr.n < len(tr.t) {
		i := (tr.head + tr.n) % len(tr.t)
		tr.t[i], tr.p[i] = now, loc
		tr.n++
		return
	}
	tr.t[tr.head], tr.p[tr.head] = now, loc // overwrite the oldest
	tr.head = (tr.head + 1) % len(tr.t)
}

// Velocity returns the moving-average velocity of id (units/s), clamped
// to ±MaxSpeed: zero until two observations at different times exist.
func (p *Predictor) Velocity(id world.ObjectID) world.Point {
	var v world.Point
	tr := p.tracks[id]
	if tr == nil || tr.n < 2 {
		return v
	}
	first, last := tr.head, (tr.head+tr.n-1)%len(tr.t)
	dt := (tr.t[last] - tr.t[first]).Seconds()
	for d := range v {
		v[d] = (tr.p[last][d] - tr.p[first][d]) / dt
	}
	return p.clamp(v)
}

func (p *Predictor) clamp(v world.Point) world.Point {
	if !finitePoint(&v) { // an overflow of huge coordinates: unknown
		return world.Point{}
	}
	if m := p.cfg.MaxSpeed; m > 0 {
		for d := range v {
			v[d] = max(-m, min(m, v[d]))
		}
	}
	return v
}

// Margins returns how far the prediction widens a box below (lo) and
// above (hi) in each dimension for an object of velocity v:
// lo = PredTime × PredMoveUpLeft + pad, hi = PredTime × PredMoveDownRight
// + pad, with pad = (PubTime + PubTTL) × PubSpeed, or the largest
// (PubTime + TTL) × Speed over Kinds if larger. A velocity with a NaN
// or infinite component counts as zero.
func (p *Predictor) Margins(v world.Point) (lo, hi world.Point) {
	if !finitePoint(&v) {
		v = world.Point{}
	}
	h, stale := p.cfg.PredTime.Seconds(), (p.cfg.PubTime + p.cfg.PubTTL).Seconds()
	for d := range v {
		pad := stale * p.cfg.PubSpeed[d]
		for _, k := range p.cfg.Kinds {
			pad = max(pad, (p.cfg.PubTime+k.TTL).Seconds()*k.Speed[d])
		}
		lo[d] = h*max(0, -v[d]) + pad
		hi[d] = h*max(0, v[d]) + pad
	}
	return lo, hi
}

// Predict appends to dst the predicted interest of object id: every box
// of interest widened by Margins of its velocity — over, when ok is true
// and over is finite (a world.Mover's own prediction, clamped to
// ±MaxSpeed), else the moving average. Boxes with a NaN bound or empty
// ones contain nothing and are left out; unbounded sides stay unbounded.
func (p *Predictor) Predict(id world.ObjectID, over world.Point, ok bool, interest []world.Box, dst []world.Box) []world.Box {
	v := p.Velocity(id)
	if ok && finitePoint(&over) {
		v = p.clamp(over)
	}
	lo, hi := p.Margins(v)
	for _, b := range interest {
		if b.Validate(world.MaxDims) != nil || b.Empty(world.MaxDims) {
			continue
		}
		dst = append(dst, b.Expand(lo, hi))
	}
	return dst
}

// Need appends to dst what must be subscribed at once for interest to
// discover in time the objects that enter it: every box widened by the
// publication pad alone (Margins of a zero velocity: no motion term).
// Predict's boxes cover these; the Aggregator re-sends a prediction only
// when a need is no longer covered by a live one.
func (p *Predictor) Need(interest []world.Box, dst []world.Box) []world.Box {
	lo, hi := p.Margins(world.Point{})
	for _, b := range interest {
		if b.Validate(world.MaxDims) != nil || b.Empty(world.MaxDims) {
			continue
		}
		dst = append(dst, b.Expand(lo, hi))
	}
	return dst
}

// MoverVelocity returns o's own velocity prediction when it implements
// world.Mover.
func MoverVelocity(o world.Object) (world.Point, bool) {
	if m, ok := o.(world.Mover); ok {
		return m.Velocity(), true
	}
	return world.Point{}, false
}

// Forget drops the history of id.
func (p *Predictor) Forget(id world.ObjectID) { delete(p.tracks, id) }

// Sweep drops the history of every object last observed before since.
func (p *Predictor) Sweep(since time.Duration) {
	for id, tr := range p.tracks {
		if tr.n == 0 || tr.t[(tr.head+tr.n-1)%len(tr.t)] < since {
			delete(p.tracks, id)
		}
	}
}
