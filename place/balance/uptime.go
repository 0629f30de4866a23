package balance

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
)

// Gamma is a gamma distribution of session lengths in hours: shape K,
// scale Theta.
type Gamma struct {
	K, Theta float64
}

// WoWSessions is the paper's fit (§5) of World of Warcraft session lengths
// with its mean 2.8 h and standard deviation 1.8 h: shape 2.419754, scale
// 1.157143 h. The text prints the two labels the other way round
// (WoWSessionsAsPrinted), but that distribution has a standard deviation of
// 2.6 h, and only this one gives the paper's worked example, P(X > 2 h) =
// 60.9 % (60.8 %); TestWoWSessionsSwap checks both.
var WoWSessions = Gamma{K: 2.419754, Theta: 1.157143}

// WoWSessionsAsPrinted is the distribution with the labels as §5 prints
// them: shape 1.157143, scale 2.419754 h (mean 2.8 h, sd 2.6 h).
var WoWSessionsAsPrinted = Gamma{K: 1.157143, Theta: 2.419754}

// ErrGamma reports a gamma distribution whose shape or scale is not
// positive and finite.
var ErrGamma = errors.New("balance: bad gamma distribution")

func (g Gamma) validate() error {
	if !(g.K > 0) || !(g.Theta > 0) || math.IsInf(g.K, 0) || math.IsInf(g.Theta, 0) {
		return fmt.Errorf("%w: shape %g, scale %g (want both positive and finite)", ErrGamma, g.K, g.Theta)
	}
	return nil
}

// Mean returns K·Theta.
func (g Gamma) Mean() float64 { return g.K * g.Theta }

// SD returns the standard deviation √K·Theta.
func (g Gamma) SD() float64 { return math.Sqrt(g.K) * g.Theta }

// CDF returns P(X ≤ x): the regularized lower incomplete gamma function
// P(K, x/Theta), by its series below K+1 and Lentz's continued fraction
// above (Numerical Recipes §6.2), to about 1e-14.
func (g Gamma) CDF(x float64) float64 {
	if !(x > 0) {
		return 0
	}
	if math.IsInf(x, 1) {
		return 1
	}
	return regGammaP(g.K, x/g.Theta)
}

// Survival returns P(X > x) = 1 − CDF(x), computed without cancellation.
func (g Gamma) Survival(x float64) float64 {
	if !(x > 0) {
		return 1
	}
	if math.IsInf(x, 1) {
		return 0
	}
	return regGammaQ(g.K, x/g.Theta)
}

// Sample draws one value with rng (Marsaglia and Tsang's method; for
// K < 1 the K+1 draw is scaled by U^(1/K)).
func (g Gamma) Sample(rng *rand.Rand) float64 {
	k := g.K
	boost := 1.0
	if k < 1 {
		boost = math.Pow(1-rng.Float64(), 1/k)
		k++
	}
	d := k - 1.0/3
	c := 1 / math.Sqrt(9*d)
	for {
		x := rng.NormFloat64()
		v := 1 + c*x
		if v <= 0 {
			continue
		}
		v = v * v * v
		u := 1 - rng.Float64()
		if u < 1-0.0331*x*x*x*x || math.Log(u) < 0.5*x*x+d*(1-v+math.Log(v)) {
			return d * v * boost * g.Theta
		}
	}
}

// FitMoments returns the gamma distribution with the given mean and
// standard deviation (K = mean²/sd², Theta = sd²/mean).
func FitMoments(mean, sd float64) (Gamma, error) {
	g := Gamma{K: mean * mean / (sd * sd), Theta: sd * sd / mean}
	return g, g.validate()
}

func regGammaP(a, x float64) float64 {
	if x < a+1 {
		return gammaSeries(a, x)
	}
	return 1 - gammaCF(a, x)
}

func regGammaQ(a, x float64) float64 {
	if x < a+1 {
		return 1 - gammaSeries(a, x)
	}
	return gammaCF(a, x)
}

func gammaPrefix(a, x float64) float64 {
	lg, _ := math.Lgamma(a)
	return math.Exp(-x + a*math.Log(x) - lg)
}

func gammaSeries(a, x float64) float64 {
	ap, sum := a, 1/a
	del := sum
	for n := 0; n < 1000; n++ {
		ap++
		del *= x / ap
		sum += del
		if math.Abs(del) < math.Abs(sum)*1e-16 {
			break
		}
	}
	return sum * gammaPrefix(a, x)
}

func gammaCF(a, x float64) float64 {
	const tiny = 1e-300
	b := x + 1 - a
	c := 1 / tiny
	d := 1 / b
	h := d
	for i := 1; i < 1000; i++ {
		an := -float64(i) * (float64(i) - a)
		b += 2
		d = an*d + b
		if math.Abs(d) < tiny {
			d = tiny
		}
		c = b + an/c
		if math.Abs(c) < tiny {
			c = tiny
		}
		d = 1 / d
		del := d * c
		h *= del
		if math.Abs(del-1) < 1e-16 {
			break
		}
	}
	return h * gammaPrefix(a, x)
}

// HistoryLen is the most sessions a History keeps (§3.2: "a maximum of 50
// records per each player").
const HistoryLen = 50

// History is one player's most recent session lengths (hours), at most
// HistoryLen of them; older ones are forgotten. The zero value is empty
// and ready to use.
type History struct {
	s    [HistoryLen]float32
	n    uint8 // stored
	next uint8 // ring position of the next write
}

// Add records a finished session of h hours (negative or NaN values are
// ignored).
func (h *History) Add(hours float64) {
	if !(hours >= 0) || math.IsInf(hours, 0) {
		return
	}
	h.s[h.next] = float32(hours)
	h.next = (h.next + 1) % HistoryLen
	if h.n < HistoryLen {
		h.n++
	}
}

// Len returns the number of sessions stored.
func (h *History) Len() int { return int(h.n) }

// MeanSD returns the mean and (population) standard deviation of the
// stored sessions; both are NaN when the history is empty.
func (h *History) MeanSD() (mean, sd float64) {
	if h.n == 0 {
		return math.NaN(), math.NaN()
	}
	var s float64
	for i := 0; i < int(h.n); i++ {
		s += float64(h.s[i])
	}
	mean = s / float64(h.n)
	var v float64
	for i := 0; i < int(h.n); i++ {
		d := float64(h.s[i]) - mean
		v += d * d
	}
	return mean, math.Sqrt(v / float64(h.n))
}

// Uptime is a predicted uptime interval, in hours: [mean − sd, mean + sd]
// of a player's history (equation 1), Min clamped at 0.
type Uptime struct {
	Min, Max float64
}

// Predict returns the player's predicted uptime interval. With no history
// it falls back on prior (the population's distribution): the pessimistic
// player nobody knows gets [mean − sd, mean + sd] of the prior.
func (h *History) Predict(prior Gamma) Uptime {
	m, s := h.MeanSD()
	if h.n == 0 {
		m, s = prior.Mean(), prior.SD()
	}
	return Uptime{Min: math.Max(0, m-s), Max: m + s}
}

// Fit returns a gamma distribution of this player's sessions by moments,
// shrunk towards prior with the weight of two pseudo-sessions so that one
// or two records do not give a degenerate fit.
func (h *History) Fit(prior Gamma) Gamma {
	m, s := h.MeanSD()
	if h.n == 0 {
		return prior
	}
	const w0 = 2.0
	n := float64(h.n)
	pm, ps := prior.Mean(), prior.SD()
	mean := (n*m + w0*pm) / (n + w0)
	// pooled second moment about the new mean
	v := (n*(s*s+(m-mean)*(m-mean)) + w0*(ps*ps+(pm-mean)*(pm-mean))) / (n + w0)
	g, err := FitMoments(mean, math.Sqrt(v))
	if err != nil {
		return prior
	}
	return g
}

// PaperPD is the disconnection probability of §5.2.1: the histogram of the
// fitted distribution has bins of binHours; the bin [y−binHours, y) that
// holds minUptime is found and PD = P(X > y) under dist. The paper's example
// (Uptime_min = 1.5 h in bin [1 h, 2 h]) gives "PD(Uptime_min > 2h) =
// 60.9 %"; PaperPD(WoWSessions, 1.5, 1) is 60.8 %.
func PaperPD(dist Gamma, minUptime, binHours float64) float64 {
	if !(binHours > 0) {
		binHours = 1
	}
	if !(minUptime >= 0) {
		minUptime = 0
	}
	y := (math.Floor(minUptime/binHours) + 1) * binHours
	return dist.Survival(y)
}

// LeaveProb returns the probability that a player whose session follows
// dist and has lasted elapsed hours leaves within the next horizon hours:
// 1 − S(elapsed+horizon)/S(elapsed).
func LeaveProb(dist Gamma, elapsed, horizon float64) float64 {
	if !(horizon > 0) {
		return 0
	}
	elapsed = math.Max(0, elapsed)
	s0 := dist.Survival(elapsed)
	if s0 <= 0 {
		return 1
	}
	return math.Min(1, math.Max(0, 1-dist.Survival(elapsed+horizon)/s0))
}
