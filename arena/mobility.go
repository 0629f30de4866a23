package arena

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/overworld/overworld/world"
)

// The paper's Quake III path-length statistics (Fig. 2(b)): regions
// travelled in 10 s on a map 20 regions in diameter.
const (
	PaperPathMean   = 14.8
	PaperPathSD     = 3.6
	PaperPathMedian = 15
	PaperPathP95    = 20
)

// Window is the interval of the path-length and distance measures.
const Window = 10 * time.Second

// Summary describes a sample.
type Summary struct {
	N                          int
	Mean, SD, Median, P95, Max float64
}

// Summarise returns the summary of xs (zero for an empty sample). The
// median and the 95th percentile interpolate linearly between order
// statistics.
func Summarise(xs []float64) Summary {
	if len(xs) == 0 {
		return Summary{}
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	sum := 0.0
	for _, x := range s {
		sum += x
	}
	mean := sum / float64(len(s))
	ss := 0.0
	for _, x := range s {
		ss += (x - mean) * (x - mean)
	}
	sd := 0.0
	if len(s) > 1 {
		sd = math.Sqrt(ss / float64(len(s)-1))
	}
	return Summary{N: len(s), Mean: mean, SD: sd, Median: Quantile(s, 0.5), P95: Quantile(s, 0.95), Max: s[len(s)-1]}
}

// Quantile returns the q-quantile of the sorted sample s (linear
// interpolation; NaN for an empty sample).
func Quantile(s []float64, q float64) float64 {
	if len(s) == 0 {
		return math.NaN()
	}
	pos := q * float64(len(s)-1)
	i := int(pos)
	if i >= len(s)-1 {
		return s[len(s)-1]
	}
	return s[i] + (pos-float64(i))*(s[i+1]-s[i])
}

// ZipfFit is the least-squares line through (log rank, log share) of the
// regions with a non-zero share: share ∝ rank^-Exponent.
type ZipfFit struct {
	Exponent, R2 float64
	Regions      int // regions with a non-zero share (the points fitted)
	// Top10 is the share of the most popular tenth of those regions.
	Top10 float64
}

// FitZipf fits shares sorted in decreasing order.
func FitZipf(shares []float64) ZipfFit {
	var xs, ys []float64
	for i, s := range shares {
		if s > 0 {
			xs = append(xs, math.Log(float64(i+1)))
			ys = append(ys, math.Log(s))
		}
	}
	f := ZipfFit{Regions: len(xs)}
	if len(xs) < 2 {
		return f
	}
	n := float64(len(xs))
	var sx, sy, sxx, sxy, syy float64
	for i := range xs {
		sx, sy = sx+xs[i], sy+ys[i]
		sxx, sxy, syy = sxx+xs[i]*xs[i], sxy+xs[i]*ys[i], syy+ys[i]*ys[i]
	}
	vx, vy, cxy := sxx-sx*sx/n, syy-sy*sy/n, sxy-sx*sy/n
	if vx > 0 {
		f.Exponent = -cxy / vx
		if vy > 0 {
			f.R2 = cxy * cxy / (vx * vy)
		}
	}
	top := max(1, len(xs)/10)
	total := 0.0
	for _, s := range shares {
		total += s
	}
	for _, s := range shares[:top] {
		f.Top10 += s / total
	}
	return f
}

// shares returns counts as fractions of their sum, sorted in decreasing
// order.
func shares(counts []float64) []float64 {
	total := 0.0
	for _, c := range counts {
		total += c
	}
	out := make([]float64, len(counts))
	if total > 0 {
		for i, c := range counts {
			out[i] = c / total
		}
	}
	slices.SortFunc(out, func(a, b float64) int {
		switch {
		case a > b:
			return -1
		case a < b:
			return 1
		}
		return 0
	})
	return out
}

// Mobility is what a recorded game or trace set says about movement: per
// 10 s window and player, the regions travelled and the distance, and the
// popularity of regions.
type Mobility struct {
	// PathRegions are the regions entered in each window (the paper's path
	// length; bots only, sampled every frame).
	PathRegions []float64
	// Metres are the distances travelled in each window, summing the
	// straight-line steps between samples taken every Sample.
	Metres []float64
	Sample time.Duration
	// Occupancy is the share of samples in each region (the paper's
	// Fig. 2(a) popularity), Entries the share of entries into each region
	// (Fig. 6(b)); both sorted in decreasing order.
	Occupancy, Entries []float64
	// Regions is the number of regions of the map.
	Regions int
}

// MobilityComparison puts the model game's mobility beside the paper's
// Quake III numbers and the Fortnite traces.
type MobilityComparison struct {
	Config   Config
	Duration time.Duration
	// Game is the model game sampled every frame (PathRegions, Metres);
	// Game1Hz the same run sampled once a second, as the Fortnite traces.
	Game, Game1Hz *Mobility
	Fortnite      *Mobility
	// Fortnite traces and samples used.
	FortniteTraces, FortniteSamples int
	// Summaries and fits.
	PathRegions                     Summary
	GameMetres, Game1HzMetres       Summary
	FortniteMetres                  Summary
	GameOccupancy, GameEntries      ZipfFit
	FortniteOccupancy               ZipfFit
	FortniteEntries                 ZipfFit
	DeathsPerBotMinute, FightsShare float64
	// Stats is the per-kind delta accounting of the run.
	Stats []KindStats
}

// CompareMobility runs game cfg in a Local (seed cfg.Seed) for duration and
// compares its mobility with the paper and the Fortnite traces. progress,
// if not nil, is called with the frames done and the total.
func CompareMobility(cfg Config, duration time.Duration, progress func(done, total int)) (*MobilityComparison, error) {
	if duration < Window || duration > 24*time.Hour {
		return nil, fmt.Errorf("%w: duration %v: want %v to 24h", ErrConfig, duration, Window)
	}
	g, err := New(cfg)
	if err != nil {
		return nil, err
	}
	l, err := Run(g, g.cfg.Seed)
	if err != nil {
		return nil, err
	}
	l.MeasureDeltas(true)
	frames := int(duration / Frame)
	rec := newRecorder(g)
	for f := range frames {
		rec.sample(l, f)
		l.Step()
		if progress != nil && (f%100 == 99 || f == frames-1) {
			progress(f+1, frames)
		}
	}
	rec.sample(l, frames)
	deaths := int64(0)
	l.Range(func(obj world.Object, _ int) bool {
		if st := obj.State(); st.Schema() == g.Bot {
			deaths += st.Int(BotDeaths)
		}
		return true
	})
	fightFrames, botFrames := rec.fight, rec.botFrames
	c := &MobilityComparison{Config: g.cfg, Duration: duration, Game: rec.fine(), Game1Hz: rec.coarse(), Stats: l.Stats()}
	traces, err := Fortnite()
	if err != nil {
		return nil, err
	}
	c.Fortnite = FortniteMobility(traces)
	c.FortniteTraces = len(traces)
	for _, t := range traces {
		c.FortniteSamples += len(t)
	}
	c.PathRegions = Summarise(c.Game.PathRegions)
	c.GameMetres = Summarise(c.Game.Metres)
	c.Game1HzMetres = Summarise(c.Game1Hz.Metres)
	c.FortniteMetres = Summarise(c.Fortnite.Metres)
	c.GameOccupancy, c.GameEntries = FitZipf(c.Game.Occupancy), FitZipf(c.Game.Entries)
	c.FortniteOccupancy, c.FortniteEntries = FitZipf(c.Fortnite.Occupancy), FitZipf(c.Fortnite.Entries)
	minutes := duration.Minutes() * float64(g.cfg.Players())
	c.DeathsPerBotMinute = float64(deaths) / minutes
	if botFrames > 0 {
		c.FightsShare = float64(fightFrames) / float64(botFrames)
	}
	return c, nil
}

// recorder samples every bot's position each frame.
type recorder struct {
	g                *Game
	regions          int
	occupancy        []float64 // per region, every frame
	entries          []float64
	occupancy1, ent1 []float64 // once a second
	bots             map[uint64]*botTrack
	order            []uint64
	windowFrames     int
	fight, botFrames int
	pathRegions      []float64
	metres, metres1  []float64
}

type botTrack struct {
	x, y           float64 // last frame
	region         int
	x1, y1         float64 // last 1 Hz sample
	region1        int
	regions        int     // entered this window
	dist, dist1    float64 // this window
	started        bool
	started1, last bool
}

func newRecorder(g *Game) *recorder {
	_, n := g.Map.Region(0, 0)
	return &recorder{g: g, regions: n, occupancy: make([]float64, n), entries: make([]float64, n),
		occupancy1: make([]float64, n), ent1: make([]float64, n), bots: map[uint64]*botTrack{},
		windowFrames: int(Window / Frame)}
}

// maxStep is the longest distance a bot walks in a frame; a longer jump is
// a respawn, which is not movement.
var maxStep = 2 * RunSpeed * Frame.Seconds()

func (r *recorder) sample(l *Local, f int) {
	perSecond := int(time.Second / Frame)
	endWindow := f > 0 && f%r.windowFrames == 0
	l.Range(func(obj world.Object, _ int) bool {
		st := obj.State()
		if st.Schema() != r.g.Bot {
			return true
		}
		id := uint64(st.ID())
		t, ok := r.bots[id]
		if !ok {
			t = &botTrack{}
			r.bots[id] = t
			r.order = append(r.order, id)
		}
		x, y := st.Float(BotX), st.Float(BotY)
		reg, _ := r.g.Map.Region(x, y)
		r.botFrames++
		if st.Int(BotMode) == ModeFight {
			r.fight++
		}
		if t.started {
			if d := math.Hypot(x-t.x, y-t.y); d <= maxStep {
				t.dist += d
				if reg != t.region {
					t.regions++
					r.entries[reg]++
				}
			}
		}
		r.occupancy[reg]++
		t.x, t.y, t.region, t.started = x, y, reg, true
		if f%perSecond == 0 {
			if t.started1 {
				if d := math.Hypot(x-t.x1, y-t.y1); d <= maxStep*float64(perSecond) {
					t.dist1 += d
					if reg != t.region1 {
						r.ent1[reg]++
					}
				}
			}
			r.occupancy1[reg]++
			t.x1, t.y1, t.region1, t.started1 = x, y, reg, true
		}
		if endWindow {
			r.pathRegions = append(r.pathRegions, float64(t.regions))
			r.metres = append(r.metres, t.dist)
			r.metres1 = append(r.metres1, t.dist1)
			t.regions, t.dist, t.dist1 = 0, 0, 0
		}
		return true
	})
}

func (r *recorder) fine() *Mobility {
	return &Mobility{PathRegions: r.pathRegions, Metres: r.metres, Sample: Frame,
		Occupancy: shares(r.occupancy), Entries: shares(r.entries), Regions: r.regions}
}

func (r *recorder) coarse() *Mobility {
	return &Mobility{Metres: r.metres1, Sample: time.Second,
		Occupancy: shares(r.occupancy1), Entries: shares(r.ent1), Regions: r.regions}
}

// FortniteGrid is the number of regions across the Fortnite minimap: 20, the
// paper's bucketing of a map's diameter.
const FortniteGrid = 20

// FortniteMaxStep is the longest one-second step (pixels, 33 m) taken as
// movement in the Fortnite traces: longer steps are misdetections of the
// minimap analysis (the fastest on-foot movement, a glide from a launch
// pad, is under 20 px/s); a window holding one is dropped.
const FortniteMaxStep = 20

// FortniteMobility measures the traces: distance (m) in every 10 s window of
// 10 consecutive one-second steps (windows with a gap or a step longer than
// FortniteMaxStep are dropped), and the popularity of the cells of a 20 × 20
// grid over the minimap.
func FortniteMobility(traces []FortniteTrace) *Mobility {
	n := FortniteGrid * FortniteGrid
	occ, ent := make([]float64, n), make([]float64, n)
	cell := func(s FortniteSample) int {
		cx := min(int(s.X)*FortniteGrid/FortniteMapPixels, FortniteGrid-1)
		cy := min(int(s.Y)*FortniteGrid/FortniteMapPixels, FortniteGrid-1)
		return cy*FortniteGrid + cx
	}
	steps := int(Window / time.Second)
	var metres []float64
	for _, tr := range traces {
		run, dist := 0, 0.0
		for i, s := range tr {
			c := cell(s)
			occ[c]++
			if i == 0 || s.T-tr[i-1].T != 1 {
				run, dist = 0, 0
				continue
			}
			p := tr[i-1]
			if cell(p) != c {
				ent[c]++
			}
			step := math.Hypot(float64(s.X-p.X), float64(s.Y-p.Y))
			if step > FortniteMaxStep {
				run, dist = 0, 0
				continue
			}
			dist += step * FortniteMetresPerPix
			run++
			if run == steps {
				metres = append(metres, dist)
				run, dist = 0, 0
			}
		}
	}
	return &Mobility{Metres: metres, Sample: time.Second, Occupancy: shares(occ), Entries: shares(ent), Regions: n}
}
