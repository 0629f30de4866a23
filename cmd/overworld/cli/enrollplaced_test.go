package cli

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/overworld/overworld/live"
	"github.com/overworld/overworld/live/pki"
	"github.com/overworld/overworld/live/plane"
)

// TestNodeEnrollPlaced: a game server enrolls into a running cluster as a
// placement target, with real processes. A control plane ("overworld
// control") places players on node 1 (the rendezvous, a real node) and
// node 2 (configured, never running), and enrolls region eu-west (site
// London) as nodes 100…120. A game server started with --enroll and
// --enroll-admin gets its ID, joins by gossip, and becomes a node of the
// plane's placement at its first poll; a player whose pings make it the
// nearest is admitted there, connects (overworld bot) and plays on it.
// An instance opens on it (node 1's seats taken by another), and it keeps
// the instance's record. Revoked in the plane's revocation list, it leaves
// the placement: the plane hands the player over to node 1, where it goes
// on playing, and moves the instance there, its objects migrated from it.
func TestNodeEnrollPlaced(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 3 processes and a bot for about 15 s")
	}
	fx := newEnrollFixture(t)
	dir, caDir, gossipKey, secret, rvNode := fx.dir, fx.caDir, fx.gossipKey, fx.secret, fx.rvNode
	write := func(name string, data []byte) string { return fx.write(name, data, 0o600) }
	coord := filepath.Join(dir, "coord")
	if code, _, errs := run(t, "", "token", "init", "--dir", coord); code != 0 {
		t.Fatalf("token init: %s", errs)
	}
	planeRevoked := write("plane-revoked", []byte("# none\n"))

	planeAddr, rvAdmin, rvGossip, gsAdmin := freePort(t, "tcp"), freePort(t, "tcp"), freePort(t, "tcp+udp"), freePort(t, "tcp")
	rvQUIC, gsQUIC, rvAddr := freePort(t, "udp"), freePort(t, "udp"), freePort(t, "udp")
	write("plane.toml", fmt.Appendf(nil, `listen = %q
poll = "300ms"
[[nodes]]
id = 1
site = "New York"
capacity = 8
admin = "http://%s"
player_quic = %q
[[nodes]]
id = 2
site = "Tokyo"
capacity = 8
admin = "http://127.0.0.1:1"
player_quic = "127.0.0.1:2"
[instances]
seats = 6
[hosts]
ca_dir = %q
validity = "1h"
state_file = %q
revoked = %q
[[hosts.enroll]]
region = "eu-west"
site = "London"
secret_file = %q
first = 100
last = 120
`, planeAddr, rvAdmin, rvQUIC, caDir, filepath.Join(dir, "plane-hosts.json"), planeRevoked, secret))
	top := "data_dir = \"\"\nframe_rate = 20.0\nfailover = true\ndrain_timeout = \"3s\"\nlog_format = \"json\"\n"
	game := "[game]\nmap = \"rect\"\nnodes = 1\nplayers_per_node = 2\nseed = 1\n"
	players := fmt.Sprintf("[players]\ncoordinator_key = %q\nmax_players = 8\n", filepath.Join(coord, "coordinator.pub"))
	_, rvGossipPort, _ := net.SplitHostPort(rvGossip)
	write("rv/node.toml", fmt.Appendf(nil, "id = 1\n"+top+"[listen]\nnode = %q\nadmin = %q\nplayer_quic = %q\n[tls]\nca_cert = %q\nnode_cert = %q\n[discovery]\narch = \"directory\"\nrendezvous = 1\n"+game+"slot = 0\n"+players+"[membership]\ngossip = \"127.0.0.1:%s\"\nkey_file = %q\nseeds = []\n",
		rvAddr, rvAdmin, rvQUIC, filepath.Join(caDir, pki.CACertFile), rvNode, rvGossipPort, gossipKey))
	write("pod/node.toml", fmt.Appendf(nil, "id = 100\n"+top+"[listen]\nnode = \"127.0.0.1:0\"\nadmin = %q\nplayer_quic = %q\n[tls]\nca_cert = %q\nnode_cert = \"node.pem\"\n[agones]\nregion = \"eu-west\"\n[discovery]\narch = \"directory\"\nrendezvous = 1\n"+game+"slot = 1\n"+players+"[membership]\ngossip = \"127.0.0.1:0\"\nkey_file = %q\nseeds = [%q]\n[[peers]]\nid = 1\naddr = %q\nplayer_quic = %q\n",
		gsAdmin, gsQUIC, filepath.Join(caDir, pki.CACertFile), gossipKey, rvGossip, rvAddr, rvQUIC))

	pl := startProc(t, "plane", dir, "control", "--config", filepath.Join(dir, "plane.toml"))
	defer pl.stop(t)
	rv := startProc(t, "rendezvous", filepath.Join(dir, "rv"), "node", "--config", filepath.Join(dir, "rv", "node.toml"))
	defer rv.stop(t)
	rv.waitLogged(t, "node running", 10*time.Second)
	gs := startProc(t, "gs", filepath.Join(dir, "pod"), "node", "--config", filepath.Join(dir, "pod", "node.toml"),
		"--enroll", "http://"+planeAddr, "--enroll-secret", secret, "--gameserver", "eu-west-7x2kq", "--enroll-admin", "http://"+gsAdmin)
	defer gs.stop(t)
	id := uint32(gs.waitLogged(t, "enrolled", 20*time.Second)["node"].(float64))
	gs.waitLogged(t, "node running", 10*time.Second)
	fail := func(format string, args ...any) {
		t.Helper()
		b, _ := os.ReadFile(pl.log)
		t.Fatalf(format+"\nplane log:\n%s", append(args, b)...)
	}
	state := func() plane.State {
		var st plane.State
		resp, err := http.Get("http://" + planeAddr + "/v1/state")
		if err == nil {
			json.NewDecoder(resp.Body).Decode(&st)
			resp.Body.Close()
		}
		return st
	}
	waitUntil := func(what string, d time.Duration, cond func() bool) time.Duration {
		t.Helper()
		start := time.Now()
		for !cond() {
			if time.Since(start) > d {
				fail("not within %v: %s (plane state %+v)", d, what, state())
			}
			time.Sleep(50 * time.Millisecond)
		}
		return time.Since(start)
	}
	placed := func() bool {
		for _, n := range state().Nodes {
			if n.ID == id && n.Enrolled && n.Up {
				return true
			}
		}
		return false
	}
	took := waitUntil(fmt.Sprintf("node %d a target of the plane", id), 10*time.Second, placed)
	t.Logf("node %d enrolled and became a placement target %v after it ran", id, took.Round(time.Millisecond))

	// A player near London joins through the plane and plays on node id.
	body, _ := json.Marshal(map[string]any{"player": "bot-1", "pings": []live.PingSample{{Node: 1, RTTMs: 80}, {Node: id, RTTMs: 5}}})
	resp, err := http.Post("http://"+planeAddr+"/v1/join", "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	var adm plane.Admission
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err := json.Unmarshal(b, &adm); err != nil || resp.StatusCode != http.StatusOK || adm.Node != id || adm.QUIC != gsQUIC {
		fail("join: %s %s; want node %d at %s", resp.Status, b, id, gsQUIC)
	}
	type botResult struct {
		code        int
		out, stderr string
	}
	botDone := make(chan botResult, 1)
	go func() {
		code, out, errs := run(t, "", "bot", "--addr", adm.QUIC, "--node-id", strconv.Itoa(int(id)), "--token-dir", coord,
			"--ca", filepath.Join(caDir, pki.CACertFile), "--server-name", fmt.Sprintf("node-%d.overworld", id),
			"--n", "1", "--duration", "8s", "--nodes", "1", "--players-per-node", "2", "--seed", "1", "--map", "rect", "--json")
		botDone <- botResult{code, out, errs}
	}()
	playersOn := func(admin string) []string {
		resp, err := http.Get("http://" + admin + "/admin/players")
		if err != nil {
			return nil
		}
		defer resp.Body.Close()
		var rep live.PlayersReport
		json.NewDecoder(resp.Body).Decode(&rep)
		var out []string
		for _, p := range rep.Players {
			out = append(out, p.ID)
		}
		return out
	}
	waitUntil("bot-1 in game on the enrolled node", 10*time.Second, func() bool { return slices.Contains(playersOn(gsAdmin), "bot-1") })
	waitUntil("bot-1 placed there by the plane", 5*time.Second, func() bool {
		st := state()
		return st.Players["bot-1"] == id && st.Stats.Unplaced == 0
	})

	// Instances: node 2 (never running) found down, one of 4 players fills
	// most of node 1's 6 seats, the next opens on the enrolled server,
	// which keeps its record. Its box holds the whole world, so every
	// lasting object of the enrolled node is the instance's.
	waitUntil("node 2 down", 10*time.Second, func() bool {
		for _, n := range state().Nodes {
			if n.ID == 2 {
				return !n.Up
			}
		}
		return false
	})
	openInst := func(name string, players int, box [4]float64) plane.InstancePlacement {
		t.Helper()
		req := plane.InstanceRequest{ID: name, Box: box}
		for i := range players {
			req.Players = append(req.Players, plane.InstancePlayerRequest{ID: fmt.Sprintf("%s-%d", name, i)})
		}
		b, _ := json.Marshal(req)
		resp, err := http.Post("http://"+planeAddr+"/v1/instances", "application/json", bytes.NewReader(b))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var p plane.InstancePlacement
		if resp.StatusCode != http.StatusOK || json.NewDecoder(resp.Body).Decode(&p) != nil {
			fail("open %s: %s", name, resp.Status)
		}
		return p
	}
	if p := openInst("big", 4, [4]float64{5e9, 5e9, 5e9 + 1, 5e9 + 1}); p.Node != 1 {
		fail("instance big on %+v, want node 1", p)
	}
	if p := openInst("dungeon", 2, [4]float64{-1e9, -1e9, 1e9, 1e9}); p.Node != id {
		fail("instance dungeon on %+v, want the enrolled node %d", p, id)
	}
	report := func(admin string) live.PlayersReport {
		var rep live.PlayersReport
		if resp, err := http.Get("http://" + admin + "/admin/players"); err == nil {
			json.NewDecoder(resp.Body).Decode(&rep)
			resp.Body.Close()
		}
		return rep
	}
	waitUntil("the enrolled node keeps the dungeon's record", 5*time.Second, func() bool {
		rs := report(gsAdmin).Instances
		return len(rs) == 1 && rs[0].ID == "dungeon" && rs[0].Node == id
	})
	world := func(admin string) live.WorldSnapshot {
		var w live.WorldSnapshot
		if resp, err := http.Get("http://" + admin + "/debug/world"); err == nil {
			json.NewDecoder(resp.Body).Decode(&w)
			resp.Body.Close()
		}
		return w
	}
	var items []uint64 // the enrolled node's lasting objects: the dungeon's
	for _, o := range world(gsAdmin).Objects {
		if o.Primary && o.Kind == "arena.item" {
			items = append(items, o.ID)
		}
	}
	if len(items) == 0 {
		fail("the enrolled node holds no item")
	}

	// Revoked: the plane takes it out and hands the player over to node 1.
	if err := os.WriteFile(planeRevoked, []byte("node "+strconv.Itoa(int(id))+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	took = waitUntil("bot-1 handed over to node 1", 15*time.Second, func() bool {
		return slices.Contains(playersOn(rvAdmin), "bot-1") && !slices.Contains(playersOn(gsAdmin), "bot-1")
	})
	st := state()
	if placed() || st.Players["bot-1"] != 1 || st.Stats.EnrolledRemoved != 1 {
		fail("after the revocation: %+v; want node %d out and bot-1 on node 1", st, id)
	}
	t.Logf("revoked, node %d left the placement and bot-1 was handed over to node 1 in %v", id, took.Round(time.Millisecond))
	// The dungeon moved off it while it ran: its objects migrated to node 1.
	took = waitUntil("the dungeon's items on node 1", 15*time.Second, func() bool {
		on := map[uint64]bool{}
		for _, o := range world(rvAdmin).Objects {
			if o.Primary {
				on[o.ID] = true
			}
		}
		for _, it := range items {
			if !on[it] {
				return false
			}
		}
		return true
	})
	var inst plane.InstancesState
	if resp, err := http.Get("http://" + planeAddr + "/v1/instances"); err == nil {
		json.NewDecoder(resp.Body).Decode(&inst)
		resp.Body.Close()
	}
	if i := slices.IndexFunc(inst.Instances, func(p plane.InstancePlacement) bool { return p.ID == "dungeon" }); i < 0 || inst.Instances[i].Node != 1 {
		fail("after the revocation the instances are %+v, want the dungeon on node 1", inst.Instances)
	}
	t.Logf("the dungeon's %d items migrated from node %d to node 1 within %v", len(items), id, took.Round(time.Millisecond))
	select {
	case r := <-botDone:
		var rep struct{ Joined, Dropped, Failed, Handoffs int }
		if err := json.Unmarshal([]byte(r.out), &rep); err != nil || r.code != 0 || rep.Joined != 1 || rep.Dropped != 0 || rep.Failed != 0 || rep.Handoffs != 1 {
			fail("bot: exit %d, %+v (%v); want one session, handed over once, not dropped\n%s\n%s", r.code, rep, err, r.out, r.stderr)
		}
	case <-time.After(20 * time.Second):
		fail("the bot did not end")
	}
}
