package live

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/overworld/overworld/node"
)

// TestDaemonAgones runs a daemon with agones.enabled against a recording
// sidecar: it reads its GameServer, labels its region, asks for Ready once
// ready, pings health, asks for Allocated once it holds a primary, and
// after its drain (a cancelled context) asks for Shutdown last, with no
// Ready or Allocate after the shutdown began.
func TestDaemonAgones(t *testing.T) {
	var mu sync.Mutex
	var calls []string
	sidecar := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		calls = append(calls, strings.TrimSpace(r.Method+" "+r.URL.Path+" "+string(b)))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.URL.Path == "/gameserver":
			io.WriteString(w, `{"object_meta":{"name":"gs-1","namespace":"default"},"status":{"state":"Scheduled","address":"10.0.0.9","ports":[{"name":"node","port":7601}]}}`)
		case strings.HasPrefix(r.URL.Path, "/v1beta1/counters/"):
			w.WriteHeader(http.StatusNotFound)
			io.WriteString(w, `{"code":5,"message":"not found"}`)
		default:
			io.WriteString(w, "{}")
		}
	}))
	defer sidecar.Close()
	cfg, _ := testNodeConfig(t, t.TempDir())
	cfg.Listen.Admin = "127.0.0.1:0"
	cfg.FrameRate = 50
	cfg.Agones = AgonesConfig{Enabled: true, SDK: sidecar.URL, Region: "eu-west", Protect: "allocate",
		ReserveFor: Duration{30 * time.Second}, HealthEvery: Duration{100 * time.Millisecond}, PlayersCounter: "players"}
	g := newTestGame()
	d, err := NewDaemon(cfg, Game{Registry: g.registry, Spawn: func(now time.Duration, n *node.Node) error {
		_, err := n.Spawn(now, g.walker, nil)
		return err
	}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	has := func(call string) bool {
		mu.Lock()
		defer mu.Unlock()
		return slices.Contains(calls, call)
	}
	deadline := time.Now().Add(10 * time.Second)
	for !has("POST /allocate {}") {
		if time.Now().After(deadline) {
			mu.Lock()
			t.Fatalf("no Allocate within 10 s: %q", calls)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if ep, ok := d.Agones().Endpoint(); !ok || ep.Address != "10.0.0.9" || ep.Ports["node"] != 7601 {
		t.Errorf("endpoint %+v", ep)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	idx := func(c string) int { return slices.Index(calls, c) }
	for _, c := range []string{"GET /gameserver", `PUT /metadata/label {"key":"region","value":"eu-west"}`, "POST /ready {}", "POST /health {}"} {
		if idx(c) < 0 {
			t.Errorf("never called %q: %q", c, calls)
		}
	}
	if idx("POST /ready {}") > idx("POST /allocate {}") {
		t.Errorf("Allocate before Ready: %q", calls)
	}
	if last := calls[len(calls)-1]; last != "POST /shutdown {}" {
		t.Errorf("last call %q, want Shutdown: %q", last, calls)
	}
	if n := strings.Count(strings.Join(calls, "\n"), "PATCH /v1beta1/counters/players"); n != 1 {
		t.Errorf("%d counter updates, want 1 (the GameServer declares no counter)", n)
	}
}
