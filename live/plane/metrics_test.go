package plane

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus/testutil"
)

// TestPlaneMetrics: GET /metrics serves the plane's counts and state,
// the same figures as its JSON API, and passes Prometheus' lint.
func TestPlaneMetrics(t *testing.T) {
	k := newEnrolledCluster(t)
	k.inst = &InstanceSetup{Seats: 4}
	s := k.plane()
	poll(s)
	n := k.target(s)
	k.join(s, "eu0", map[uint32]float64{1: 80, 2: 30, n: 5})
	h := httptest.NewServer(s.Handler())
	defer h.Close()
	if code, _ := openInstance(t, h.URL, "i0", [4]float64{0, 0, 1, 1}, 1); code != http.StatusOK {
		t.Fatalf("open: %d", code)
	}
	s.Wait()
	resp, err := http.Get(h.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET /metrics: %s", resp.Status)
	}
	for _, want := range []string{
		"overworld_plane_joins_total 1",
		"overworld_plane_players 1",
		"overworld_plane_rebuilt 1",
		fmt.Sprintf(`overworld_plane_node_up{node="%d",site="London"} 1`, n),
		fmt.Sprintf(`overworld_plane_node_players{node="%d"} 1`, n),
		`overworld_plane_node_capacity{node="1"} 3`,
		`overworld_plane_instances{on="server"} 1`,
		`overworld_plane_instance_events_total{kind="placed"} 1`,
		"overworld_plane_certificates_issued_total 1",
		`overworld_plane_certificate_requests_refused_total{reason="flood"} 0`,
		"overworld_plane_enrolled_added_total 1",
		"overworld_plane_region_migration_errors_total 0",
		"overworld_plane_region_migrations_pending 0",
		"overworld_plane_instance_migration_retries_total 0",
		"overworld_plane_instance_migrations_pending 0",
		"go_goroutines",
	} {
		if !strings.Contains(string(body), want+"\n") && !strings.Contains(string(body), want+" ") {
			t.Errorf("GET /metrics has no %q", want)
		}
	}
	problems, err := testutil.CollectAndLint(collector{s})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
}
