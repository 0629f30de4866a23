package estimate

import (
	"fmt"
	"math/rand/v2"
	"strings"
)

// Method names an estimation method.
type Method string

// The methods this package implements.
const (
	MethodVivaldi   Method = "vivaldi"  // serf's Vivaldi, neighbour probing
	MethodGNP       Method = "gnp"      // GNP, landmarks
	MethodLandmark  Method = "landmark" // Netvigator-style landmark bounds
	MethodFactor    Method = "mf"       // robust log-space matrix factorisation, neighbour probing
	MethodFactorGeo Method = "mf-geo"   // mf with the nodes' known positions as side information
)

// Methods lists every method.
func Methods() []Method {
	return []Method{MethodVivaldi, MethodGNP, MethodLandmark, MethodFactor, MethodFactorGeo}
}

// ParseMethod accepts a method name (any case).
func ParseMethod(s string) (Method, error) {
	m := Method(strings.ToLower(strings.TrimSpace(s)))
	for _, k := range Methods() {
		if m == k {
			return m, nil
		}
	}
	return "", fmt.Errorf("%w: unknown method %q (want vivaldi, gnp, landmark, mf or mf-geo)", ErrConfig, s)
}

// Spec is a complete estimator configuration: the method and its
// measurement budget.
type Spec struct {
	Method Method
	// Probe drives the neighbour-probing methods (vivaldi, mf) and supplies
	// the jitter of the landmark methods' probes.
	Probe ProbeConfig
	// Landmark configures gnp and landmark.
	Landmark LandmarkConfig
	// Vivaldi and Factor configure their methods.
	Vivaldi VivaldiConfig
	Factor  FactorConfig
}

// DefaultSpec returns the defaults of a method: a 32-neighbour,
// 2,000-round budget for vivaldi and mf, 15 landmarks in 7 dimensions for
// gnp (GNP's published setting) and 32 landmarks for landmark (the same
// per-node budget as 32 neighbours). mf's 32 neighbours are 24 random
// peers and 8 added, in 4 steps over the run, as the nearest by the
// profile distance of its fits (better accuracy on small RTTs and better
// core selection: see lab estimate); no node ever probes more than 32
// peers. mf-geo draws its random peers one per distance band, each the
// band's least-probed peer (ProbeConfig.Banded), and in its passes a pair
// one end adds is not added by the other (ProbeConfig.PairOnce).
func DefaultSpec(m Method) Spec {
	s := Spec{Method: m, Probe: DefaultProbeConfig(), Landmark: DefaultLandmarkConfig(),
		Vivaldi: DefaultVivaldiConfig(), Factor: DefaultFactorConfig()}
	switch m {
	case MethodLandmark:
		s.Landmark.Landmarks = 32
	case MethodFactor, MethodFactorGeo:
		s.Probe.Near, s.Probe.NearPasses, s.Probe.NearProfile = 8, 4, true
		s.Probe.Banded, s.Probe.PairOnce = m == MethodFactorGeo, m == MethodFactorGeo
	}
	return s
}

// Session runs one estimator over a network and carries its state from one
// snapshot of the network to the next (the PlanetLab time slices).
type Session struct {
	spec  Spec
	proc  *Process
	est   Estimator
	seed  [2]uint64 // landmark methods re-measure from this seed: same landmarks
	rng   *rand.Rand
	round int
}

// NewSession checks spec, starts the measurement process on t and runs
// the method's full budget (Probe.Rounds() rounds for neighbour probing;
// one measurement of every node to every landmark for the landmark
// methods). Randomness comes from rng only.
func NewSession(spec Spec, t *Truth, rng *rand.Rand) (*Session, error) {
	if rng == nil {
		return nil, ErrNilRand
	}
	if t == nil {
		return nil, fmt.Errorf("%w: nil truth", ErrShape)
	}
	if _, err := ParseMethod(string(spec.Method)); err != nil {
		return nil, err
	}
	if spec.Probe.Near > 0 && spec.Method != MethodFactor && spec.Method != MethodFactorGeo {
		return nil, fmt.Errorf("%w: %d near neighbours with method %s; only mf chooses near neighbours", ErrConfig, spec.Probe.Near, spec.Method)
	}
	if spec.Probe.Disputed > 0 && spec.Method != MethodFactorGeo {
		return nil, fmt.Errorf("%w: %d disputed neighbours with method %s; only mf-geo has two models to dispute", ErrConfig, spec.Probe.Disputed, spec.Method)
	}
	if _, _, ok := t.Positions(); !ok {
		// mf-geo without positions is plain mf: no committee, the
		// disputed peers stay random.
		spec.Probe.Disputed = 0
	}
	s := &Session{spec: spec, rng: rng, seed: [2]uint64{rng.Uint64(), rng.Uint64()}}
	var err error
	if s.proc, err = NewProcess(t, spec.Probe, rand.New(rand.NewPCG(rng.Uint64(), rng.Uint64()))); err != nil {
		return nil, err
	}
	n := t.Len()
	switch spec.Method {
	case MethodVivaldi:
		s.est, err = NewVivaldi(n, spec.Vivaldi, rand.New(rand.NewPCG(rng.Uint64(), rng.Uint64())))
	case MethodFactor, MethodFactorGeo:
		var f *Factor
		f, err = NewFactor(n, spec.Factor, rand.New(rand.NewPCG(rng.Uint64(), rng.Uint64())))
		s.est = f
		if lat, lon, ok := t.Positions(); err == nil && ok && spec.Method == MethodFactorGeo {
			var gf *Factor
			if gf, err = NewFactor(n, spec.Factor, rand.New(rand.NewPCG(rng.Uint64(), rng.Uint64()))); err == nil {
				s.est, err = NewGeoFactor(lat, lon, f, gf)
			}
		}
	}
	if err != nil {
		return nil, err
	}
	if err := s.Advance(nil, 0); err != nil {
		return nil, err
	}
	return s, nil
}

// Advance switches to snapshot t (nil: stay) and spends the budget again:
// rounds more probe rounds (≤ 0: Probe.Rounds()) for neighbour probing,
// warm-starting from the current state, or a fresh measurement to the same
// landmarks.
func (s *Session) Advance(t *Truth, rounds int) error {
	if t != nil {
		if err := s.proc.SetTruth(t); err != nil {
			return err
		}
	}
	if rounds <= 0 {
		rounds = s.spec.Probe.Rounds()
	}
	n := s.proc.Truth().Len()
	var err error
	switch s.spec.Method {
	case MethodGNP:
		s.est, err = NewGNP(n, s.proc, s.spec.Landmark, rand.New(rand.NewPCG(s.seed[0], s.seed[1])))
	case MethodLandmark:
		s.est, err = NewLandmark(n, s.proc, s.spec.Landmark, rand.New(rand.NewPCG(s.seed[0], s.seed[1])))
	case MethodVivaldi:
		Run(s.proc, s.est.(Learner), rounds, nil)
		s.round += rounds
	case MethodFactor, MethodFactorGeo:
		var f interface {
			Learner
			Fit() error
		}
		// near ranks the peers a node adds: by mf's profile distance (or
		// estimates), or by geography for mf-geo.
		var near, disputed func() Estimator
		switch e := s.est.(type) {
		case *Factor:
			near = func() Estimator {
				if s.proc.Config().NearProfile {
					return e.Profile()
				}
				return e
			}
			f = e
		case *GeoFactor:
			f, near, disputed = e, e.Distance, e.Disputed
		}
		if pc := s.proc.Config(); s.round == 0 && pc.Near+pc.Disputed > 0 {
			// Random neighbours first, then the nearest by each fit, then
			// one disputed peer per pass (at least one round before each
			// pass, however short the budget).
			passes := pc.NearPasses + pc.Disputed
			part := max(1, rounds/(passes+1))
			for pass := range passes {
				Run(s.proc, f, part, nil)
				if err = f.Fit(); err != nil {
					return err
				}
				if pass < pc.NearPasses {
					add := pc.Near*(pass+1)/pc.NearPasses - pc.Near*pass/pc.NearPasses
					s.proc.AddNear(near(), add)
				} else if disputed != nil {
					s.proc.AddNear(disputed(), 1)
				}
				rounds -= part
				s.round += part
			}
		}
		if rounds > 0 {
			Run(s.proc, f, rounds, nil)
			s.round += rounds
		}
		err = f.Fit()
	}
	return err
}

// Estimator returns the current estimator.
func (s *Session) Estimator() Estimator { return s.est }

// Process returns the measurement process.
func (s *Session) Process() *Process { return s.proc }

// Spec returns the configuration.
func (s *Session) Spec() Spec { return s.spec }

// Measured reports whether the pair {i, j} is measured by the method
// (neighbours for probing methods; a landmark at either end otherwise).
func (s *Session) Measured(i, j int) bool {
	switch e := s.est.(type) {
	case *GNP:
		return e.d.isMark(i) || e.d.isMark(j)
	case *Landmark:
		return e.isL[i] >= 0 || e.isL[j] >= 0
	}
	return s.proc.Measured(i, j)
}

// EverMeasured reports whether the pair {i, j} has been measured at any
// point of the session, across Advance (neighbour probing: a neighbour at
// any time; landmark methods: a landmark at either end, the landmarks
// staying the same). Pairs for which it is false were never probed: the
// held-out pairs on which accuracy is judged.
func (s *Session) EverMeasured(i, j int) bool {
	switch s.est.(type) {
	case *GNP, *Landmark:
		return s.Measured(i, j)
	}
	return s.proc.EverMeasured(i, j)
}

// PerNode returns the measurement budget per node: neighbours or landmarks.
func (s Spec) PerNode() int {
	if s.Method == MethodGNP || s.Method == MethodLandmark {
		return s.Landmark.Landmarks
	}
	return s.Probe.Neighbours
}

func (d *landmarkData) isMark(i int) bool {
	for _, m := range d.marks {
		if m == i {
			return true
		}
	}
	return false
}
