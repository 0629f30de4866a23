package agones

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// TestClientCalls makes every call against the fake sidecar and checks the
// documented request bodies and the GameServer they leave.
func TestClientCalls(t *testing.T) {
	s, c := newSidecar(t)
	s.counters["players"] = &Counter{Capacity: 64}
	ctx := context.Background()
	gs, err := c.GameServer(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if gs.Status.State != "Scheduled" || gs.Status.Address != "203.0.113.7" {
		t.Fatalf("GameServer %+v", gs.Status)
	}
	if p, ok := gs.Port("player-quic"); !ok || p != 7602 {
		t.Fatalf("port player-quic: %d %v", p, ok)
	}
	if err := c.Allocate(ctx); err == nil {
		t.Fatal("Allocate before Ready: want refused")
	}
	steps := []struct {
		call  func() error
		sent  string
		state string
	}{
		{func() error { return c.Ready(ctx) }, "POST /ready {}", "Ready"},
		{func() error { return c.Health(ctx) }, "POST /health {}", "Ready"},
		{func() error { return c.SetLabel(ctx, "region", "eu-west") }, `PUT /metadata/label {"key":"region","value":"eu-west"}`, "Ready"},
		{func() error { return c.SetAnnotation(ctx, "node", "7") }, `PUT /metadata/annotation {"key":"node","value":"7"}`, "Ready"},
		{func() error { return c.Reserve(ctx, 5*time.Second) }, `POST /reserve {"seconds":"5"}`, "Reserved"},
		{func() error { return c.Allocate(ctx) }, "POST /allocate {}", "Allocated"},
		{func() error { return c.Reserve(ctx, 5*time.Second) }, `POST /reserve {"seconds":"5"}`, "Allocated"},
		{func() error { return c.Ready(ctx) }, "POST /ready {}", "Ready"},
		{func() error { _, err := c.SetCounter(ctx, "players", 17); return err }, `PATCH /v1beta1/counters/players {"count":"17","name":"players"}`, "Ready"},
		{func() error { _, err := c.UpdateCounter(ctx, "players", -2); return err }, `PATCH /v1beta1/counters/players {"countDiff":"-2","name":"players"}`, "Ready"},
		{func() error { return c.Shutdown(ctx) }, "POST /shutdown {}", "Shutdown"},
	}
	for i, st := range steps {
		if err := st.call(); err != nil {
			t.Fatalf("step %d (%s): %v", i, st.sent, err)
		}
		if got := s.lastCall(); got != st.sent {
			t.Errorf("step %d: sent %q, want %q", i, got, st.sent)
		}
		if got := s.State(); got != st.state {
			t.Errorf("step %d (%s): state %s, want %s", i, st.sent, got, st.state)
		}
	}
	gs, err = c.GameServer(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if gs.ObjectMeta.Labels["agones.dev/sdk-region"] != "eu-west" || gs.ObjectMeta.Annotations["agones.dev/sdk-node"] != "7" {
		t.Errorf("labels %v, annotations %v", gs.ObjectMeta.Labels, gs.ObjectMeta.Annotations)
	}
	if ct := gs.Status.Counters["players"]; ct.Count != 15 || ct.Capacity != 64 {
		t.Errorf("players counter %+v, want 15 of 64", ct)
	}
	if err := c.Ready(ctx); err == nil {
		t.Error("Ready after Shutdown: want refused")
	}
	if _, err := c.SetCounter(ctx, "rooms", 1); !errors.Is(err, ErrNotFound) {
		t.Errorf("an undeclared counter: %v, want ErrNotFound", err)
	}
	if _, err := c.SetCounter(ctx, "players", 65); err == nil || !strings.Contains(err.Error(), "out of range") {
		t.Errorf("a count above capacity: %v", err)
	}
	if err := c.Reserve(ctx, -time.Second); err == nil {
		t.Error("a negative reservation: want an error")
	}
}

// TestReserveLapses: a reservation ends by itself, back to Ready; 0
// seconds holds until Ready.
func TestReserveLapses(t *testing.T) {
	s, c := newSidecar(t)
	var now atomic.Int64
	base := time.Unix(1_800_000_000, 0)
	s.mu.Lock()
	s.now = func() time.Time { return base.Add(time.Duration(now.Load())) }
	s.start = base
	s.period = time.Hour // no health checking in this test
	s.mu.Unlock()
	ctx := context.Background()
	if err := c.Ready(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.Reserve(ctx, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	now.Store(int64(4 * time.Second))
	if s.State() != "Reserved" {
		t.Fatalf("after 4 s: %s", s.State())
	}
	now.Store(int64(5 * time.Second))
	if s.State() != "Ready" {
		t.Fatalf("after 5 s: %s, want Ready", s.State())
	}
	if err := c.Reserve(ctx, 0); err != nil {
		t.Fatal(err)
	}
	now.Store(int64(time.Hour / 2))
	if s.State() != "Reserved" {
		t.Fatalf("Reserve(0) after 30 min: %s", s.State())
	}
}

// TestWatch: the watch stream delivers the GameServer at every change.
func TestWatch(t *testing.T) {
	_, c := newSidecar(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	seen := make(chan string, 16)
	done := make(chan error, 1)
	go func() {
		done <- c.WatchGameServer(ctx, func(g *GameServer) error {
			seen <- g.Status.State + " " + g.ObjectMeta.Labels["agones.dev/sdk-region"]
			if g.Status.State == "Allocated" {
				return errStop
			}
			return nil
		})
	}()
	want := []string{"Scheduled ", "Ready ", "Ready eu", "Allocated eu"}
	if got := <-seen; got != want[0] {
		t.Fatalf("first: %q", got)
	}
	for _, f := range []func(context.Context) error{c.Ready, func(ctx context.Context) error { return c.SetLabel(ctx, "region", "eu") }, c.Allocate} {
		if err := f(ctx); err != nil {
			t.Fatal(err)
		}
	}
	for _, w := range want[1:] {
		if got := <-seen; got != w {
			t.Fatalf("got %q, want %q", got, w)
		}
	}
	if err := <-done; err != errStop {
		t.Fatalf("watch ended with %v", err)
	}
}

var errStop = errors.New("stop")

// node is a node status the tests set.
type node struct {
	mu        sync.Mutex
	ready     bool
	last      time.Time
	frames    bool // LastFrame reports now while true
	primaries int
	players   int
}

func (n *node) Ready() (bool, string) { n.mu.Lock(); defer n.mu.Unlock(); return n.ready, "test" }
func (n *node) LastFrame() time.Time {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.frames {
		n.last = time.Now()
	}
	return n.last
}
func (n *node) Primaries() int { n.mu.Lock(); defer n.mu.Unlock(); return n.primaries }
func (n *node) Players() int   { n.mu.Lock(); defer n.mu.Unlock(); return n.players }
func (n *node) set(f func(*node)) {
	n.mu.Lock()
	f(n)
	n.mu.Unlock()
}

// eventually polls cond for up to 5 s.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 5 s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// TestAgentLifecycle drives a node through its life against the fake
// sidecar: Ready only once the node is, Allocated while it holds
// primaries and Ready when it holds none, the players counter and the
// region label kept, health pings while frames run and Unhealthy when the
// loop stalls; and, for a second node, Shutdown after its drain.
func TestAgentLifecycle(t *testing.T) {
	s, c := newSidecar(t)
	s.counters["players"] = &Counter{Capacity: 100}
	s.mu.Lock()
	s.period, s.threshold = 100*time.Millisecond, 2
	s.mu.Unlock()
	n := &node{frames: true}
	a, err := NewAgent(c, n, AgentConfig{Region: "eu-west", HealthEvery: 20 * time.Millisecond, StallAfter: 50 * time.Millisecond,
		PlayersCounter: "players", Poll: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go a.Run(ctx)
	eventually(t, "endpoint read", func() bool { _, ok := a.Endpoint(); return ok })
	if ep, _ := a.Endpoint(); ep.Address != "203.0.113.7" || ep.Ports["node"] != 7601 || ep.Ports["player-quic"] != 7602 {
		t.Fatalf("endpoint %+v", ep)
	}
	time.Sleep(50 * time.Millisecond)
	if st := s.State(); st != "Scheduled" {
		t.Fatalf("before the node is ready: %s", st)
	}
	n.set(func(n *node) { n.ready = true })
	eventually(t, "Ready", func() bool { return s.State() == "Ready" })
	n.set(func(n *node) { n.primaries, n.players = 12, 3 })
	eventually(t, "Allocated with players 3", func() bool {
		g, _ := c.GameServer(ctx)
		return g.Status.State == "Allocated" && g.Status.Counters["players"].Count == 3
	})
	n.set(func(n *node) { n.primaries, n.players = 0, 0 })
	eventually(t, "Ready again with players 0", func() bool {
		g, _ := c.GameServer(ctx)
		return g.Status.State == "Ready" && g.Status.Counters["players"].Count == 0
	})
	g, _ := c.GameServer(ctx)
	if g.ObjectMeta.Labels["agones.dev/sdk-region"] != "eu-west" {
		t.Errorf("labels %v", g.ObjectMeta.Labels)
	}
	if st := a.Stats(); st.Pings == 0 || !st.Healthy {
		t.Errorf("stats %+v: want health pings", st)
	}
	// The frame loop stalls: no more pings, Unhealthy after 2 periods.
	n.set(func(n *node) { n.frames = false })
	eventually(t, "Unhealthy", func() bool { return s.State() == "Unhealthy" })
	if a.Stats().Healthy {
		t.Error("a stalled loop counted as healthy")
	}
	cancel()

	s2, c2 := newSidecar(t)
	n2 := &node{frames: true, ready: true, primaries: 5}
	a2, err := NewAgent(c2, n2, AgentConfig{Poll: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	go a2.Run(context.Background())
	eventually(t, "second node Allocated", func() bool { return s2.State() == "Allocated" })
	a2.Draining()
	n2.set(func(n *node) { n.primaries = 0 }) // the drain moved them
	time.Sleep(30 * time.Millisecond)
	if st := s2.State(); st != "Allocated" {
		t.Fatalf("draining node asked for %s: it must not be made Ready", st)
	}
	if err := a2.Done(context.Background()); err != nil {
		t.Fatal(err)
	}
	if st := s2.State(); st != "Shutdown" {
		t.Fatalf("after Done: %s", st)
	}
}

// TestAgentReserve: with ProtectReserve the node renews a reservation
// while it holds primaries.
func TestAgentReserve(t *testing.T) {
	s, c := newSidecar(t)
	n := &node{frames: true, ready: true}
	a, err := NewAgent(c, n, AgentConfig{Protect: ProtectReserve, ReserveFor: 2 * time.Second, Poll: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go a.Run(ctx)
	eventually(t, "Ready", func() bool { return s.State() == "Ready" })
	n.set(func(n *node) { n.primaries = 1 })
	eventually(t, "Reserved", func() bool { return s.State() == "Reserved" })
	s.mu.Lock()
	till := s.reserveTill
	s.mu.Unlock()
	if d := time.Until(till); d < time.Second || d > 2*time.Second {
		t.Errorf("reserved for %v more, want about 2 s", d)
	}
}

// TestAgentWithoutCounter: a GameServer that declares no players counter
// is left alone after one warning.
func TestAgentWithoutCounter(t *testing.T) {
	s, c := newSidecar(t)
	n := &node{frames: true, ready: true, players: 4}
	a, err := NewAgent(c, n, AgentConfig{PlayersCounter: "players", Poll: 5 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go a.Run(ctx)
	eventually(t, "Ready", func() bool { return s.State() == "Ready" })
	time.Sleep(30 * time.Millisecond)
	s.mu.Lock()
	patches := 0
	for _, call := range s.calls {
		if strings.HasPrefix(call, "PATCH") {
			patches++
		}
	}
	s.mu.Unlock()
	if patches != 1 {
		t.Errorf("%d counter updates, want the one that found no counter", patches)
	}
}

// TestAgentConfigRejects: bad configurations are refused with the field.
func TestAgentConfigRejects(t *testing.T) {
	for _, tc := range []struct {
		cfg  AgentConfig
		want string
	}{
		{AgentConfig{Region: "New York"}, "region"},
		{AgentConfig{Region: strings.Repeat("a", 64)}, "region"},
		{AgentConfig{Protect: "hold"}, "protect"},
		{AgentConfig{HealthEvery: time.Nanosecond}, "health period"},
		{AgentConfig{ReserveFor: 500 * time.Millisecond}, "reservation"},
	} {
		if _, err := tc.cfg.Validate(); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: %v, want an error naming %s", tc.cfg, err, tc.want)
		}
	}
	if _, err := NewClient("localhost:9358"); err == nil {
		t.Error("an address without a scheme: want an error")
	}
	t.Setenv("AGONES_SDK_HTTP_PORT", "x")
	if _, err := FromEnv(); err == nil {
		t.Error("a bad AGONES_SDK_HTTP_PORT: want an error")
	}
	t.Setenv("AGONES_SDK_HTTP_PORT", "9400")
	if c, err := FromEnv(); err != nil || c.base != "http://localhost:9400" {
		t.Errorf("FromEnv: %v %v", c, err)
	}
}

// TestWaitEndpoint: a node reads its player endpoints from the
// GameServer once Agones has given it an address (none while it is not
// scheduled yet), and gives up when its context ends first.
func TestWaitEndpoint(t *testing.T) {
	s, c := newSidecar(t)
	s.mu.Lock()
	s.address = ""
	s.ports = append(s.ports, Port{Name: PlayerPortWS, Port: 7603})
	s.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	if _, err := c.WaitEndpoint(ctx, 10*time.Millisecond); err == nil || !strings.Contains(err.Error(), "no address yet") {
		t.Errorf("no address: %v, want an error saying so", err)
	}
	go func() {
		time.Sleep(50 * time.Millisecond)
		s.mu.Lock()
		s.address = "203.0.113.9"
		s.mu.Unlock()
	}()
	ctx2, cancel2 := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel2()
	ep, err := c.WaitEndpoint(ctx2, 10*time.Millisecond)
	if err != nil || ep.Address != "203.0.113.9" {
		t.Fatalf("endpoint %+v, %v", ep, err)
	}
	if q, w := ep.PlayerEndpoints(); q != "203.0.113.9:7602" || w != "ws://203.0.113.9:7603/" {
		t.Errorf("player endpoints %q %q", q, w)
	}
	if q, w := (Endpoint{Address: "2001:db8::1", Ports: map[string]int{PlayerPortQUIC: 9}}).PlayerEndpoints(); q != "[2001:db8::1]:9" || w != "" {
		t.Errorf("IPv6, QUIC only: %q %q", q, w)
	}
	if _, err := c.WaitEndpoint(ctx2, 0); err == nil {
		t.Error("poll 0: want an error")
	}
}
