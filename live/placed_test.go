package live

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/overworld/overworld/node"
)

// TestPlacedEndpoints: a daemon's control-plane endpoints. /admin/players
// answers with its node and no player; /admin/pings refuses a bad player,
// malformed or out-of-range samples and a wrong method, each with a
// message naming the problem; /admin/migrate-region refuses a bad box or
// a node that is not a peer, /admin/prefer-backup a bad box or node
// list, and /admin/instances malformed records, and change nothing; the
// instance records kept are reported by /admin/players.
func TestPlacedEndpoints(t *testing.T) {
	cfg, _ := testNodeConfig(t, t.TempDir())
	cfg.Listen.Admin = "127.0.0.1:0"
	cfg.FrameRate = 50
	cfg.Peers = []PeerConfig{{ID: 2, Addr: "127.0.0.1:1"}}
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
	defer func() { cancel(); <-done }()
	base := "http://" + d.AdminAddr().String()
	do := func(method, path, body string) (int, string) {
		req, _ := http.NewRequest(method, base+path, strings.NewReader(body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	code, body := do("GET", "/admin/players", "")
	var rep PlayersReport
	if code != 200 || json.Unmarshal([]byte(body), &rep) != nil || rep.Node != 1 || len(rep.Players) != 0 {
		t.Fatalf("/admin/players: %d %q", code, body)
	}
	for _, c := range []struct{ method, path, body, want string }{
		{"GET", "/admin/pings?player=a", "", "use POST"},
		{"POST", "/admin/pings?player=", `[{"node":1,"rtt_ms":5}]`, "player"},
		{"POST", "/admin/pings?player=a", `nonsense`, "want a JSON array"},
		{"POST", "/admin/pings?player=a", `[]`, "0 samples"},
		{"POST", "/admin/pings?player=a", `[{"node":0,"rtt_ms":5}]`, "node 0"},
		{"POST", "/admin/pings?player=a", `[{"node":1,"rtt_ms":20000}]`, "RTT 20000"},
		{"POST", "/admin/pings?player=a", `[{"node":1,"rtt_ms":1},{"node":1,"rtt_ms":2}]`, "measured twice"},
		{"POST", "/admin/players", "", "use GET"},
		{"POST", "/admin/migrate-region?x0=0&y0=0&x1=1&y1=1&node=1", "", "want the ID of a peer"},
		{"POST", "/admin/migrate-region?x0=0&y0=0&x1=1&y1=1&node=7", "", "want the ID of a peer"},
		{"POST", "/admin/migrate-region?x0=a&y0=0&x1=1&y1=1&node=2", "", "x0"},
		{"POST", "/admin/migrate-region?x0=2&y0=0&x1=1&y1=1&node=2", "", "is empty"},
		{"POST", "/admin/migrate-region?x0=0&y0=0&x1=NaN&y1=1&node=2", "", "x1"},
		{"GET", "/admin/migrate-region", "", "use POST"},
		{"POST", "/admin/migrate-region?x0=0&y0=0&x1=1&y1=1&node=2&want=5,x", "", `object ID "x"`},
		{"POST", "/admin/migrate-region?x0=0&y0=0&x1=1&y1=1&node=2&want=0", "", `object ID "0"`},
		{"POST", "/admin/migrate-region?x0=0&y0=0&x1=1&y1=1&node=2&want=5,,6", "", `object ID ""`},
		{"POST", "/admin/migrate-region?x0=0&y0=0&x1=1&y1=1&node=2&want=" + strings.Repeat("1,", MaxWant) + "1", "", "at most"},
		{"GET", "/admin/prefer-backup", "", "use POST"},
		{"POST", "/admin/prefer-backup?x0=0&y0=0&x1=1&y1=1&nodes=2,x", "", "nodes"},
		{"POST", "/admin/prefer-backup?x0=0&y0=0&x1=1&y1=1&nodes=2,2", "", "distinct"},
		{"POST", "/admin/prefer-backup?x0=0&y0=0&x1=1&y1=1&nodes=0", "", "nodes"},
		{"POST", "/admin/prefer-backup?x0=0&y0=0&x1=1&y1=1&nodes=40000", "", "nodes"},
		{"POST", "/admin/prefer-backup?x0=2&y0=0&x1=1&y1=1&nodes=2", "", "is empty"},
		{"POST", "/admin/prefer-backup?x0=0&y0=Inf&x1=1&y1=1&nodes=2", "", "y0"},
		{"GET", "/admin/instances", "", "use POST"},
		{"POST", "/admin/instances", `null`, "want a JSON array"},
		{"POST", "/admin/instances", `{}`, "want a JSON array"},
		{"POST", "/admin/instances", `[{"id":"a","node":1,"box":[0,0,10,10],"players":[{"id":"p0"},{"id":"p1","host":101}]},{"id":"a","node":1,"box":[0,0,10,10],"players":[{"id":"p0"},{"id":"p1","host":101}]}]`, "listed twice"},
		{"POST", "/admin/instances", `[{"id":"a b","node":1,"box":[0,0,1,1],"players":[{"id":"p"}]}]`, "instance ID"},
		{"POST", "/admin/instances", `[{"id":"a","node":0,"box":[0,0,1,1],"players":[{"id":"p"}]}]`, "node 0"},
		{"POST", "/admin/instances", `[{"id":"a","node":1,"box":[2,0,1,1],"players":[{"id":"p"}]}]`, "x0 ≤ x1"},
		{"POST", "/admin/instances", `[{"id":"a","node":1,"box":[0,0,1,1],"players":[]}]`, "0 players"},
		{"POST", "/admin/instances", `[{"id":"a","node":1,"box":[0,0,1,1],"players":[{"id":"p"},{"id":"p"}]}]`, "listed twice"},
		{"POST", "/admin/instances", `[{"id":"a","node":1,"box":[0,0,1,1],"players":[{"id":"p","admin":"http://x:1"}]}]`, "for a player host"},
		{"POST", "/admin/instances", `[{"id":"a","node":1,"box":[0,0,1,1],"players":[{"id":"p","uptime_min_h":-1}]}]`, "uptime"},
		{"POST", "/admin/instances", `[{"id":"a","node":1,"box":[0,0,1,1],"players":[{"id":"p"}],"rtt_ms":[0,1]}]`, "2 RTTs"},
		{"POST", "/admin/instances", `[{"id":"a","node":1,"box":[0,0,1,1],"players":[{"id":"p"}],"rtt_ms":[-1]}]`, "RTT 0"},
		{"POST", "/admin/instances", `[{"id":"a","node":1,"box":[0,0,1,1],"players":[{"id":"p"}],"left":["q"]}]`, "left player"},
		{"POST", "/admin/instances", `[{"id":"a","node":1,"box":[0,0,1,1],"players":[{"id":"p"}],"replica":"q"}]`, "replica"},
		{"POST", "/admin/instances", `[{"id":"a","node":1,"box":[0,0,1,1],"players":[{"id":"p"}],"stamp":-1}]`, "stamp"},
	} {
		code, body := do(c.method, c.path, c.body)
		if code/100 != 4 || !strings.Contains(body, c.want) {
			t.Errorf("%s %s %s: %d %q, want 4xx naming %q", c.method, c.path, c.body, code, body, c.want)
		}
	}
	// Instance records kept, reported, then replaced by none.
	if code, body := do("POST", "/admin/instances", `[{"id":"a","node":1,"box":[0,0,10,10],"players":[{"id":"p0"},{"id":"p1","host":101}],"left":["p0"],"stamp":3}]`); code != 204 {
		t.Fatalf("instance records: %d %q", code, body)
	}
	_, body = do("GET", "/admin/players", "")
	rep = PlayersReport{}
	if err := json.Unmarshal([]byte(body), &rep); err != nil || len(rep.Instances) != 1 || rep.Instances[0].ID != "a" ||
		len(rep.Instances[0].Players) != 2 || rep.Instances[0].Left[0] != "p0" || rep.Instances[0].Stamp != 3 {
		t.Fatalf("/admin/players with an instance record: %q", body)
	}
	if code, body := do("POST", "/admin/instances", `[]`); code != 204 {
		t.Fatalf("no instance records: %d %q", code, body)
	}
	if _, body = do("GET", "/admin/players", ""); strings.Contains(body, "instances") {
		t.Fatalf("/admin/players after [] still reports records: %q", body)
	}
	if code, body := do("POST", "/admin/pings?player=a", `[{"node":2,"rtt_ms":12.5}]`); code != 204 {
		t.Fatalf("good pings: %d %q", code, body)
	}
	// Backups preferred in a box, then the preference removed.
	for _, nodes := range []string{"2,5", ""} {
		if code, body := do("POST", "/admin/prefer-backup?x0=0&y0=0&x1=10&y1=10&nodes="+nodes, ""); code != 204 {
			t.Fatalf("prefer-backup %q: %d %q", nodes, code, body)
		}
	}
	// A region migration with no object of this node inside, wanting one
	// it never knew, moves none and knows of no deletion.
	code, body = do("POST", "/admin/migrate-region?x0=1e6&y0=1e6&x1=2e6&y1=2e6&node=2&want=12345", "")
	var ans MigrateAnswer
	if err := json.Unmarshal([]byte(body), &ans); code != 200 || err != nil || ans.Moved != 0 || ans.IDs == nil || len(ans.IDs) != 0 || ans.Gone == nil || len(ans.Gone) != 0 || ans.Pending == nil || len(ans.Pending) != 0 {
		t.Fatalf("empty region: %d %q", code, body)
	}
}

// FuzzPingSamples: any body of POST /admin/pings is refused with an error
// or gives 1 to MaxPingSamples samples, each node once, every RTT in
// range.
func FuzzPingSamples(f *testing.F) {
	f.Add([]byte(`[{"node":1,"rtt_ms":5}]`))
	f.Add([]byte(`[{"node":1,"rtt_ms":5},{"node":1,"rtt_ms":6}]`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, b []byte) {
		ss, err := ParsePingSamples(b)
		if err != nil {
			return
		}
		seen := map[uint32]bool{}
		if len(ss) == 0 || len(ss) > MaxPingSamples {
			t.Fatalf("%d samples accepted", len(ss))
		}
		for _, s := range ss {
			if seen[s.Node] || s.Node < 1 || s.Node > MaxNodeID || !(s.RTTMs >= 0 && s.RTTMs <= maxPingRTTMs) {
				t.Fatalf("sample %+v accepted from %q", s, b)
			}
			seen[s.Node] = true
		}
	})
}
