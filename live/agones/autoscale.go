package agones

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"slices"

	"github.com/overworld/overworld/place/balance"
)

// FleetAutoscaleReview is what a FleetAutoscaler's Webhook policy POSTs
// (Request filled in) and expects back (Response filled in), as Agones
// documents it.
type FleetAutoscaleReview struct {
	Request  *FleetAutoscaleRequest  `json:"request"`
	Response *FleetAutoscaleResponse `json:"response"`
}

// FleetAutoscaleRequest names the fleet and carries its status.
type FleetAutoscaleRequest struct {
	UID       string      `json:"uid"`
	Name      string      `json:"name"`
	Namespace string      `json:"namespace"`
	Status    FleetStatus `json:"status"`
}

// FleetStatus is the fleet's replicas by state, and its aggregated
// players and counters.
type FleetStatus struct {
	Replicas          int32                        `json:"replicas"`
	ReadyReplicas     int32                        `json:"readyReplicas"`
	ReservedReplicas  int32                        `json:"reservedReplicas"`
	AllocatedReplicas int32                        `json:"allocatedReplicas"`
	Players           *AggregatedPlayerStatus      `json:"players,omitempty"`
	Counters          map[string]AggregatedCounter `json:"counters,omitempty"`
}

// AggregatedPlayerStatus is the fleet's players (alpha player tracking).
type AggregatedPlayerStatus struct {
	Count    int64 `json:"count"`
	Capacity int64 `json:"capacity"`
}

// AggregatedCounter is one counter summed over the fleet's game servers.
type AggregatedCounter struct {
	AllocatedCount    int64 `json:"allocatedCount"`
	AllocatedCapacity int64 `json:"allocatedCapacity"`
	Count             int64 `json:"count"`
	Capacity          int64 `json:"capacity"`
}

// FleetAutoscaleResponse is the webhook's answer: whether to scale, and to
// how many replicas.
type FleetAutoscaleResponse struct {
	UID      string `json:"uid"`
	Scale    bool   `json:"scale"`
	Replicas int32  `json:"replicas"`
}

// Loads returns a fleet's current load as place/balance sees it: one
// server per game server holding players (MaxLoad its capacity, Main its
// main-world players, Instances the instances it runs). ok is false when
// the source does not know the fleet; the autoscaler then sizes the fleet
// from its players counter.
type Loads func(ctx context.Context, namespace, fleet string) (c balance.Cluster, ok bool, err error)

// AutoscalerConfig is the scaling policy.
type AutoscalerConfig struct {
	// Balance is the balancing round's configuration (its Margin sets the
	// target load; Overflow is ignored: the autoscaler sizes the fleet so
	// that nothing overflows).
	Balance balance.Config
	// MaxLoad is a server's capacity in players when Loads does not know
	// the fleet.
	MaxLoad int
	// PlayersCounter is the counter the fleet's players are read from
	// when Loads does not know the fleet ("" or absent: the fleet's
	// player tracking).
	PlayersCounter string
	// Buffer is how many servers beyond the load's need stay Ready for
	// arrivals.
	Buffer int
	// Min and Max bound the replicas.
	Min, Max int
	// Fleets bounds the replicas of the fleets it names
	// ("namespace/name") in place of Min and Max.
	Fleets map[string]Bounds
}

// Bounds are a fleet's least and most replicas.
type Bounds struct{ Min, Max int }

// check reports what is wrong with b (nil when nothing).
func (b Bounds) check() error {
	if b.Min < 0 || b.Max < max(b.Min, 1) || b.Max > 100000 {
		return fmt.Errorf("replicas %d..%d: want 0 ≤ min ≤ max, 1 ≤ max ≤ 100000", b.Min, b.Max)
	}
	return nil
}

// bounds returns fleet key's bounds.
func (c AutoscalerConfig) bounds(key string) Bounds {
	if b, ok := c.Fleets[key]; ok {
		return b
	}
	return Bounds{c.Min, c.Max}
}

// Autoscaler is the FleetAutoscaler webhook (an http.Handler): for every
// review it sizes the fleet with Desired and answers the replicas.
type Autoscaler struct {
	cfg   AutoscalerConfig
	loads Loads
	log   *slog.Logger
}

// NewAutoscaler returns the webhook; loads may be nil (every fleet is then
// sized from its players counter).
func NewAutoscaler(cfg AutoscalerConfig, loads Loads, log *slog.Logger) (*Autoscaler, error) {
	switch {
	case cfg.MaxLoad < 1:
		return nil, fmt.Errorf("agones: autoscaler: max load %d: want ≥ 1", cfg.MaxLoad)
	case cfg.Buffer < 0:
		return nil, fmt.Errorf("agones: autoscaler: buffer %d: want ≥ 0", cfg.Buffer)
	case Bounds{cfg.Min, cfg.Max}.check() != nil:
		return nil, fmt.Errorf("agones: autoscaler: %v", Bounds{cfg.Min, cfg.Max}.check())
	case !(cfg.Balance.Margin >= 0 && cfg.Balance.Margin < 1):
		return nil, fmt.Errorf("agones: autoscaler: margin %g: want 0 ≤ margin < 1", cfg.Balance.Margin)
	}
	for key, b := range cfg.Fleets {
		if err := b.check(); err != nil {
			return nil, fmt.Errorf("agones: autoscaler: fleet %s: %v", key, err)
		}
	}
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Autoscaler{cfg: cfg, loads: loads, log: log}, nil
}

// Decision is how Desired sized a fleet.
type Decision struct {
	Replicas int
	// Need is the fewest servers on which a balancing round leaves no
	// server above its capacity (the current servers plus empty ones);
	// Fit the fewest that hold the total load at the target; Busy the
	// servers with players (and Protected the fleet's Allocated and
	// Reserved servers, which a scale-down does not delete anyway).
	Need, Fit, Busy, Protected int
	// Limited is true when Max capped the answer.
	Limited bool
}

// Desired sizes a fleet: max(Need, Fit, Busy) + Buffer, at least
// Protected, within [Min, Max].
func (a *Autoscaler) Desired(c balance.Cluster, st FleetStatus) (Decision, error) {
	return a.desired(c, st, Bounds{a.cfg.Min, a.cfg.Max})
}

// DesiredFor sizes fleet namespace/name as Desired, within its own
// bounds (AutoscalerConfig.Fleets) when it has some.
func (a *Autoscaler) DesiredFor(namespace, name string, c balance.Cluster, st FleetStatus) (Decision, error) {
	return a.desired(c, st, a.cfg.bounds(namespace+"/"+name))
}

func (a *Autoscaler) desired(c balance.Cluster, st FleetStatus, lim Bounds) (Decision, error) {
	if err := c.Validate(); err != nil {
		return Decision{}, err
	}
	cfg := a.cfg.Balance
	cfg.Overflow = false
	d := Decision{Protected: int(st.AllocatedReplicas + st.ReservedReplicas)}
	total := 0
	for _, l := range c.Loads() {
		total += l
		if l > 0 {
			d.Busy++
		}
	}
	target := max(1, cfg.Target(c.MaxLoad))
	d.Fit = (total + target - 1) / target
	// The fewest servers (the current ones plus empty ones) on which one
	// round leaves none stuck. A server whose main world alone exceeds
	// the capacity stays stuck however many are added, and each added
	// server takes at least one instance or none at all, so the search
	// ends at Max or after one more server per instance.
	ext := c
	for n := len(c.Main); ; n++ {
		ext.Main = append(slices.Clone(c.Main), make([]int, n-len(c.Main))...)
		r, err := balance.Balance(&ext, cfg)
		if err != nil {
			return Decision{}, err
		}
		if len(r.Stuck) == 0 || n >= lim.Max || n >= len(c.Main)+len(c.Instances) {
			d.Need = n
			break
		}
	}
	want := max(d.Need, d.Fit, d.Busy) + a.cfg.Buffer
	want = max(want, d.Protected, lim.Min)
	if want > lim.Max {
		want, d.Limited = lim.Max, true
	}
	d.Replicas = want
	return d, nil
}

// fromCounter is the load a fleet's players counter describes: its
// players spread over its busy servers as main-world players.
func (a *Autoscaler) fromCounter(st FleetStatus) (balance.Cluster, error) {
	var players int64
	if ct, ok := st.Counters[a.cfg.PlayersCounter]; ok && a.cfg.PlayersCounter != "" {
		players = ct.Count
	} else if st.Players != nil {
		players = st.Players.Count
	}
	if players < 0 || players > math.MaxInt32 {
		return balance.Cluster{}, fmt.Errorf("players %d: want 0 to %d", players, math.MaxInt32)
	}
	servers := max(1, int(st.AllocatedReplicas+st.ReservedReplicas))
	c := balance.Cluster{MaxLoad: a.cfg.MaxLoad, Main: make([]int, servers)}
	// Spread evenly: the counter does not say who is where.
	for i := range c.Main {
		c.Main[i] = int(players) / servers
		if i < int(players)%servers {
			c.Main[i]++
		}
	}
	return c, nil
}

// ErrBadReview wraps every problem with a review the webhook refuses.
var ErrBadReview = errors.New("agones: bad FleetAutoscaleReview")

// DecodeReview reads a review, refusing one without a request, a fleet
// name or with negative counts.
func DecodeReview(r io.Reader) (*FleetAutoscaleReview, error) {
	var rev FleetAutoscaleReview
	dec := json.NewDecoder(io.LimitReader(r, 1<<20))
	if err := dec.Decode(&rev); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadReview, err)
	}
	q := rev.Request
	switch {
	case q == nil:
		return nil, fmt.Errorf("%w: no request", ErrBadReview)
	case q.Name == "":
		return nil, fmt.Errorf("%w: request.name is empty", ErrBadReview)
	case q.Status.Replicas < 0 || q.Status.ReadyReplicas < 0 || q.Status.ReservedReplicas < 0 || q.Status.AllocatedReplicas < 0:
		return nil, fmt.Errorf("%w: request.status: negative replicas", ErrBadReview)
	}
	return &rev, nil
}

// ServeHTTP answers one review (POST, JSON).
func (a *Autoscaler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", "POST")
		http.Error(w, "a FleetAutoscaleReview is POSTed", http.StatusMethodNotAllowed)
		return
	}
	rev, err := DecodeReview(r.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	q := rev.Request
	var c balance.Cluster
	ok := false
	if a.loads != nil {
		if c, ok, err = a.loads(r.Context(), q.Namespace, q.Name); err != nil {
			a.log.Error("autoscaler: the fleet's load", "fleet", q.Name, "err", err)
			http.Error(w, "the fleet's load: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
	}
	if !ok {
		if c, err = a.fromCounter(q.Status); err != nil {
			http.Error(w, fmt.Sprintf("%v: request.status: %v", ErrBadReview, err), http.StatusBadRequest)
			return
		}
	}
	d, err := a.DesiredFor(q.Namespace, q.Name, c, q.Status)
	if err != nil {
		a.log.Error("autoscaler: sizing the fleet", "fleet", q.Name, "err", err)
		http.Error(w, "sizing the fleet: "+err.Error(), http.StatusServiceUnavailable)
		return
	}
	rev.Response = &FleetAutoscaleResponse{UID: q.UID, Scale: d.Replicas != int(q.Status.Replicas), Replicas: int32(d.Replicas)}
	a.log.Info("autoscaler", "fleet", q.Name, "namespace", q.Namespace, "replicas", q.Status.Replicas, "desired", d.Replicas,
		"need", d.Need, "fit", d.Fit, "busy", d.Busy, "protected", d.Protected, "limited", d.Limited, "from_counter", !ok)
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(rev)
}
