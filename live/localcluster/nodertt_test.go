package localcluster

import (
	"encoding/json"
	"fmt"
	"net/http"
	"testing"
	"time"

	"github.com/overworld/overworld/live"
	"github.com/overworld/overworld/wire"
)

// TestClusterPeerRTTs: nodes emulating the WAN between their cities
// report, in GET /admin/players, the RTT they measure to each peer they
// talk to: QUIC's least RTT on loopback plus the emulated delay both
// ways, so within a few ms above the cities' RTT (what the control plane
// then places the nodes with).
func TestClusterPeerRTTs(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 3 processes for about 3 s")
	}
	cities := []string{"New York", "Frankfurt", "Tokyo"}
	cfg := testConfig(t, cities, "broadcast", true)
	cfg.EmulateLatency = true
	c := startReady(t, cfg)
	ids := c.IDs()
	byID := map[wire.NodeID]string{}
	for i, id := range ids {
		byID[id] = cities[i]
	}
	delay, err := live.Delays(byID)
	if err != nil {
		t.Fatal(err)
	}
	report := func(i int) (live.PlayersReport, error) {
		var rep live.PlayersReport
		resp, err := http.Get("http://" + c.AdminAddr(i) + "/admin/players")
		if err != nil {
			return rep, err
		}
		defer resp.Body.Close()
		return rep, json.NewDecoder(resp.Body).Decode(&rep)
	}
	var last, seen string
	for deadline := time.Now().Add(15 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
		last = ""
		for i, id := range ids {
			rep, err := report(i)
			if err != nil {
				t.Fatal(err)
			}
			if err := live.CheckPeerRTTs(uint32(id), rep.Peers); err != nil {
				t.Fatalf("node %d: %v", id, err)
			}
			got := map[uint32]float64{}
			for _, p := range rep.Peers {
				got[p.Node] = p.RTTMs
			}
			for _, peer := range ids {
				if peer == id {
					continue
				}
				want := 2 * float64(delay(id, peer)) / float64(time.Millisecond)
				v, ok := got[uint32(peer)]
				seen += fmt.Sprintf("%d→%d %.1f (cities %.1f) ", id, peer, v, want)
				if !ok || v < want || v > want+20 {
					last += fmt.Sprintf("node %d → %d: %v ms measured (reported: %v), want %.1f to %.1f; ", id, peer, v, ok, want, want+20)
				}
			}
		}
		if last == "" {
			t.Logf("measured ms: %s", seen)
			return
		}
		seen = ""
	}
	t.Fatal(last)
}
