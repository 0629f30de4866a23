package agones

import (
	"bytes"
	"context"
	"encoding/json"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/overworld/overworld/place/balance"
)

// A FleetAutoscaleReview as a FleetAutoscaler's Webhook policy POSTs it
// (the Agones fleet autoscaler reference's request shape).
const reviewJSON = `{
  "request": {
    "uid": "c9a4ab18-0ad5-4bd5-a3fe-9c4c3a1b4d1b",
    "name": "overworld-eu",
    "namespace": "games",
    "status": {
      "replicas": 3,
      "readyReplicas": 1,
      "reservedReplicas": 0,
      "allocatedReplicas": 2,
      "players": {"count": 0, "capacity": 0},
      "counters": {"players": {"allocatedCount": 150, "allocatedCapacity": 200, "count": 150, "capacity": 300}}
    }
  },
  "response": null
}`

func newAutoscaler(t *testing.T, loads Loads) *Autoscaler {
	a, err := NewAutoscaler(AutoscalerConfig{Balance: balance.DefaultConfig(), MaxLoad: 100, PlayersCounter: "players",
		Buffer: 1, Min: 1, Max: 50}, loads, nil)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func post(t *testing.T, h http.Handler, body string) (*httptest.ResponseRecorder, *FleetAutoscaleReview) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("POST", "/autoscale", strings.NewReader(body)))
	if rec.Code != http.StatusOK {
		return rec, nil
	}
	var rev FleetAutoscaleReview
	if err := json.Unmarshal(rec.Body.Bytes(), &rev); err != nil {
		t.Fatalf("answer %q: %v", rec.Body, err)
	}
	return rec, &rev
}

// TestAutoscalerFromCounter: a fleet the control plane does not know is
// sized from its players counter: 150 players at a target of 90 per
// server need 2 servers, plus a buffer of 1: 3, the current replicas, so
// no scaling.
func TestAutoscalerFromCounter(t *testing.T) {
	_, rev := post(t, newAutoscaler(t, nil), reviewJSON)
	if rev == nil {
		t.Fatal("refused")
	}
	r := rev.Response
	if r == nil || r.UID != "c9a4ab18-0ad5-4bd5-a3fe-9c4c3a1b4d1b" || r.Scale || r.Replicas != 3 {
		t.Fatalf("response %+v, want uid echoed, no scale, 3 replicas", r)
	}
	// 400 players: 5 servers at the target, plus 1.
	more := strings.Replace(reviewJSON, `"count": 150`, `"count": 400`, 1)
	_, rev = post(t, newAutoscaler(t, nil), more)
	if r := rev.Response; !r.Scale || r.Replicas != 6 {
		t.Fatalf("400 players: %+v, want scale to 6", r)
	}
}

// TestAutoscalerFromBalance: with the control plane's load, the fleet is
// sized by a balancing round: server 0 is over its capacity with
// instances a new server can take.
func TestAutoscalerFromBalance(t *testing.T) {
	loads := func(_ context.Context, ns, fleet string) (balance.Cluster, bool, error) {
		if ns != "games" || fleet != "overworld-eu" {
			return balance.Cluster{}, false, nil
		}
		return balance.Cluster{MaxLoad: 100, Main: []int{60, 85, 80},
			Instances: []balance.Instance{{Size: 30, Server: 0}, {Size: 25, Server: 0}, {Size: 10, Server: 1}}}, true, nil
	}
	a := newAutoscaler(t, loads)
	_, rev := post(t, a, reviewJSON)
	if rev == nil {
		t.Fatal("refused")
	}
	// Loads 115, 95, 80: server 0 sheds 25 or 30, which fits nowhere
	// within the target (90) but on a new server: 4 servers, plus 1.
	if r := rev.Response; !r.Scale || r.Replicas != 5 {
		t.Fatalf("response %+v, want scale to 5", r)
	}
}

// TestAutoscalerRejects: malformed reviews are refused with 400 naming
// the problem; GET is refused with 405.
func TestAutoscalerRejects(t *testing.T) {
	a := newAutoscaler(t, nil)
	for _, tc := range []struct{ body, want string }{
		{"", "EOF"},
		{"{", "unexpected EOF"},
		{`{"response": {}}`, "no request"},
		{`{"request": {"uid": "x"}}`, "request.name"},
		{`{"request": {"name": "f", "status": {"replicas": -1}}}`, "negative"},
		{`{"request": {"name": "f", "status": {"players": {"count": -5}}}}`, "players -5"},
		{`{"request": {"name": "f", "status": {"replicas": "3"}}}`, "cannot unmarshal"},
	} {
		rec, _ := post(t, a, tc.body)
		if rec.Code != http.StatusBadRequest || !strings.Contains(rec.Body.String(), tc.want) {
			t.Errorf("%q: %d %q, want 400 naming %q", tc.body, rec.Code, rec.Body, tc.want)
		}
	}
	rec := httptest.NewRecorder()
	a.ServeHTTP(rec, httptest.NewRequest("GET", "/autoscale", nil))
	if rec.Code != http.StatusMethodNotAllowed {
		t.Errorf("GET: %d", rec.Code)
	}
	for _, cfg := range []AutoscalerConfig{{MaxLoad: 0, Max: 1}, {MaxLoad: 1, Max: 0}, {MaxLoad: 1, Min: 3, Max: 2},
		{MaxLoad: 1, Max: 1, Buffer: -1}, {MaxLoad: 1, Max: 1, Balance: balance.Config{Margin: 1}}} {
		if _, err := NewAutoscaler(cfg, nil, nil); err == nil {
			t.Errorf("%+v: want an error", cfg)
		}
	}
}

// TestDesiredIsMinimal: on seeded random clusters, Desired's Need is the
// fewest servers (searched one by one from the current count) on which a
// balancing round leaves none above capacity, and the answer respects
// every floor and Max.
func TestDesiredIsMinimal(t *testing.T) {
	n := 2000
	if testing.Short() {
		n = 200
	}
	for seed := range uint64(n) {
		rng := rand.New(rand.NewPCG(seed, 23))
		maxLoad := 10 + rng.IntN(90)
		c := balance.Cluster{MaxLoad: maxLoad, Main: make([]int, 1+rng.IntN(6))}
		for i := range c.Main {
			c.Main[i] = rng.IntN(maxLoad)
		}
		for range rng.IntN(12) {
			c.Instances = append(c.Instances, balance.Instance{Size: 1 + rng.IntN(maxLoad/2), Server: rng.IntN(len(c.Main))})
		}
		cfg := AutoscalerConfig{Balance: balance.DefaultConfig(), MaxLoad: maxLoad, Buffer: rng.IntN(3), Min: rng.IntN(3), Max: 3 + rng.IntN(30)}
		a, err := NewAutoscaler(cfg, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		st := FleetStatus{AllocatedReplicas: int32(rng.IntN(8)), ReservedReplicas: int32(rng.IntN(2))}
		d, err := a.Desired(c, st)
		if err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		stuck := func(n int) bool {
			ext := c
			ext.Main = append(slices.Clone(c.Main), make([]int, n-len(c.Main))...)
			bc := cfg.Balance
			bc.Overflow = false
			r, err := balance.Balance(&ext, bc)
			if err != nil {
				t.Fatal(err)
			}
			return len(r.Stuck) > 0
		}
		limit := min(cfg.Max, len(c.Main)+len(c.Instances))
		want := len(c.Main)
		for want < limit && stuck(want) {
			want++
		}
		if d.Need != max(want, len(c.Main)) {
			t.Fatalf("seed %d: Need %d, the search gives %d (cluster %+v)", seed, d.Need, want, c)
		}
		floor := max(d.Need, d.Fit, d.Busy) + cfg.Buffer
		floor = max(floor, d.Protected, cfg.Min)
		if d.Replicas != min(floor, cfg.Max) || d.Limited != (floor > cfg.Max) {
			t.Fatalf("seed %d: decision %+v, want min(%d, max %d)", seed, d, floor, cfg.Max)
		}
		total := 0
		for _, l := range c.Loads() {
			total += l
		}
		if target := cfg.Balance.Target(maxLoad); d.Fit*target < total || (d.Fit > 0 && (d.Fit-1)*target >= total) {
			t.Fatalf("seed %d: Fit %d for %d players at %d", seed, d.Fit, total, target)
		}
	}
}

// FuzzDecodeReview: the review decoder never panics, and what it accepts
// has a request with a name and no negative replicas.
func FuzzDecodeReview(f *testing.F) {
	f.Add([]byte(reviewJSON))
	f.Add([]byte(`{"request":{"name":"f","status":{"replicas":1}}}`))
	f.Add([]byte(`{"request":null}`))
	a, err := NewAutoscaler(AutoscalerConfig{Balance: balance.DefaultConfig(), MaxLoad: 10, Max: 20}, nil, nil)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		rev, err := DecodeReview(bytes.NewReader(b))
		if err != nil {
			return
		}
		if rev.Request == nil || rev.Request.Name == "" || rev.Request.Status.Replicas < 0 {
			t.Fatalf("accepted %q", b)
		}
		rec := httptest.NewRecorder()
		a.ServeHTTP(rec, httptest.NewRequest("POST", "/", bytes.NewReader(b)))
		if rec.Code != http.StatusOK && rec.Code != http.StatusBadRequest {
			t.Fatalf("%q: status %d", b, rec.Code)
		}
	})
}

// TestAutoscalerFleetBounds: a fleet with bounds of its own is sized
// within them (the review of fleet games/overworld-eu needs 3 replicas:
// raised to its min 6, or capped at its max 2), the others within the
// global ones; bad bounds are refused.
func TestAutoscalerFleetBounds(t *testing.T) {
	for _, tc := range []struct {
		fleets map[string]Bounds
		want   int32
	}{
		{nil, 3},
		{map[string]Bounds{"games/overworld-eu": {Min: 6, Max: 10}}, 6},
		{map[string]Bounds{"games/overworld-eu": {Min: 0, Max: 2}}, 2},
		{map[string]Bounds{"other/overworld-eu": {Min: 6, Max: 10}}, 3},
	} {
		a, err := NewAutoscaler(AutoscalerConfig{Balance: balance.DefaultConfig(), MaxLoad: 100, PlayersCounter: "players",
			Buffer: 1, Min: 1, Max: 50, Fleets: tc.fleets}, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, rev := post(t, a, reviewJSON)
		if rev == nil || rev.Response.Replicas != tc.want || rev.Response.Scale != (tc.want != 3) {
			t.Errorf("bounds %v: %+v, want %d replicas", tc.fleets, rev, tc.want)
		}
	}
	for _, b := range []Bounds{{Min: 3, Max: 2}, {Min: -1, Max: 2}, {Min: 0, Max: 0}, {Min: 0, Max: 100001}} {
		_, err := NewAutoscaler(AutoscalerConfig{MaxLoad: 1, Max: 1, Fleets: map[string]Bounds{"g/f": b}}, nil, nil)
		if err == nil || !strings.Contains(err.Error(), "fleet g/f") {
			t.Errorf("bounds %+v: %v, want an error naming the fleet", b, err)
		}
	}
}
