package cli

import (
	"bufio"
	"bytes"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/overworld/overworld/live"
	"github.com/overworld/overworld/live/pki"
	"github.com/overworld/overworld/live/plane"
)

// freePort returns a free loopback port for network ("tcp", "udp", or
// "tcp+udp": free on both, as a gossip address needs), never one it
// returned before in this test binary: the listeners are closed before the
// ports are used, so without that two picks could name one port (a TCP
// pick and a UDP pick are drawn independently).
func freePort(t *testing.T, network string) string {
	t.Helper()
	for range 100 {
		var addr string
		if network == "udp" {
			c, err := net.ListenPacket("udp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			addr = c.LocalAddr().String()
			c.Close()
		} else {
			l, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			addr = l.Addr().String()
			l.Close()
			if network == "tcp+udp" {
				c, err := net.ListenPacket("udp", addr)
				if err != nil {
					continue // taken for UDP: another pick
				}
				c.Close()
			}
		}
		_, port, _ := net.SplitHostPort(addr)
		portsMu.Lock()
		dup := portsGiven[port]
		portsGiven[port] = true
		portsMu.Unlock()
		if !dup {
			return addr
		}
	}
	t.Fatalf("no free %s port in 100 picks", network)
	return ""
}

var (
	portsMu    sync.Mutex
	portsGiven = map[string]bool{} // the ports freePort returned
)

// proc is one overworld process of a test, its log a JSON-lines file.
type proc struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
}

// startProc starts this test binary as "overworld ARGS" in dir.
func startProc(t *testing.T, name, dir string, args ...string) *proc {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	p := &proc{name: name, log: filepath.Join(dir, name+".log"), done: make(chan struct{})}
	f, err := os.Create(p.log)
	if err != nil {
		t.Fatal(err)
	}
	p.cmd = exec.Command(exe, args...)
	p.cmd.Env = append(os.Environ(), cliMainEnv+"=1")
	p.cmd.Dir, p.cmd.Stdout, p.cmd.Stderr = dir, f, f
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.cmd.Wait(); f.Close(); close(p.done) }()
	return p
}

// stop sends SIGTERM and waits up to 15 s, then kills.
func (p *proc) stop(t *testing.T) {
	t.Helper()
	select {
	case <-p.done:
		return
	default:
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(15 * time.Second):
		t.Errorf("%s did not stop within 15 s of SIGTERM", p.name)
		p.cmd.Process.Kill()
		<-p.done
	}
}

// logged returns the fields of the last line of p's JSON log whose msg is
// msg (nil if none yet).
func (p *proc) logged(msg string) map[string]any {
	b, _ := os.ReadFile(p.log)
	var last map[string]any
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var m map[string]any
		if json.Unmarshal(sc.Bytes(), &m) == nil && m["msg"] == msg {
			last = m
		}
	}
	return last
}

// waitLogged waits up to timeout for p to log msg.
func (p *proc) waitLogged(t *testing.T, msg string, timeout time.Duration) map[string]any {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		if m := p.logged(msg); m != nil {
			return m
		}
		select {
		case <-p.done:
			b, _ := os.ReadFile(p.log)
			t.Fatalf("%s ended before logging %q:\n%s", p.name, msg, b)
		default:
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(p.log)
			t.Fatalf("%s did not log %q within %v:\n%s", p.name, msg, timeout, b)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// debugWorld returns node admin's /debug/world.
func debugWorld(admin string) (*live.WorldSnapshot, error) {
	resp, err := http.Get("http://" + admin + "/debug/world")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s", resp.Status)
	}
	var w live.WorldSnapshot
	return &w, json.NewDecoder(resp.Body).Decode(&w)
}

// replicasFrom counts the replicas w holds of node from's primaries.
func replicasFrom(w *live.WorldSnapshot, from uint32) int {
	n := 0
	for _, o := range w.Objects {
		if !o.Primary && o.From == from {
			n++
		}
	}
	return n
}

// TestNodeEnrollGossip: game servers get their identity at start, with
// real processes. A control plane ("overworld control") enrolls region
// eu-west's game servers (node IDs 100…120) with the region's secret; a
// rendezvous node (ID 1, a certificate issued by hand) runs membership
// gossip. Two game servers start from the same configuration file (the
// same bytes in two directories, as one ConfigMap in two pods, each with
// its own volume for its certificate) with the same secret and different
// GameServer names: each obtains its own node ID from the plane, joins by
// gossip without the others being reconfigured or restarted, and the two
// hold replicas of each other's objects. Restarted, a game server keeps
// its certificate and node ID without asking the plane; killed and
// started again at once with its certificate gone (a new volume, new
// ports), the plane gives the same GameServer the same ID and it holds
// replicas both ways with the other game server again. Revoked by node ID (the revocation list, SIGHUP), it is
// refused by the others and its replicas are dropped. Takes about 15 s.
func TestNodeEnrollGossip(t *testing.T) {
	if testing.Short() {
		t.Skip("starts 4 processes for about 15 s")
	}
	fx := newEnrollFixture(t)
	dir, caDir, write, gossipKey, secret, rvNode := fx.dir, fx.caDir, fx.write, fx.gossipKey, fx.secret, fx.rvNode
	revoked := write("revoked", []byte("# no node revoked\n"), 0o644)

	planeAddr, rvAdmin, rvGossip := freePort(t, "tcp"), freePort(t, "tcp"), freePort(t, "tcp+udp")
	write("plane.toml", fmt.Appendf(nil, `listen = %q
poll = "500ms"
[[nodes]]
id = 1
site = "London"
capacity = 8
admin = "http://%s"
player_quic = "127.0.0.1:1"
[[nodes]]
id = 2
site = "Paris"
capacity = 8
admin = "http://127.0.0.1:1"
player_quic = "127.0.0.1:2"
[hosts]
ca_dir = %q
validity = "1h"
state_file = %q
[[hosts.enroll]]
region = "eu-west"
secret_file = %q
first = 100
last = 120
`, planeAddr, rvAdmin, caDir, filepath.Join(dir, "plane-hosts.json"), secret), 0o644)
	top := "data_dir = \"\"\nframe_rate = 20.0\nfailover = true\ndrain_timeout = \"3s\"\nlog_format = \"json\"\n"
	common := fmt.Sprintf(`[discovery]
arch = "directory"
rendezvous = 1
[game]
map = "rect"
nodes = 1
players_per_node = 2
seed = 1
%%s
[membership]
gossip = "127.0.0.1:%%s"
key_file = %q
%%s
`, gossipKey)
	_, rvGossipPort, _ := net.SplitHostPort(rvGossip)
	rvAddr := freePort(t, "udp")
	write("rv/node.toml", fmt.Appendf(nil, "id = 1\n"+top+"[listen]\nnode = %q\nadmin = %q\n[tls]\nca_cert = %q\nnode_cert = %q\nrevoked = %q\n"+common,
		rvAddr, rvAdmin, filepath.Join(caDir, pki.CACertFile), rvNode, revoked, "slot = 0", rvGossipPort, "seeds = []"), 0o644)
	// The game servers' configuration: its id is replaced by the one the
	// plane grants; everything a server binds is on a free port; the
	// rendezvous is its one static peer.
	gsConfig := fmt.Appendf(nil, "id = 100\n"+top+"[listen]\nnode = \"127.0.0.1:0\"\nadmin = \"127.0.0.1:0\"\n[tls]\nca_cert = %q\nnode_cert = \"node.pem\"\nrevoked = %q\n[agones]\nregion = \"eu-west\"\n"+common+"[[peers]]\nid = 1\naddr = %q\n",
		filepath.Join(caDir, pki.CACertFile), revoked, "slot = 1", "0", fmt.Sprintf("seeds = [%q]", rvGossip), rvAddr)
	write("pod-a/node.toml", gsConfig, 0o644)
	write("pod-b/node.toml", gsConfig, 0o644)

	pl := startProc(t, "plane", dir, "control", "--config", filepath.Join(dir, "plane.toml"))
	defer pl.stop(t)
	rv := startProc(t, "rendezvous", filepath.Join(dir, "rv"), "node", "--config", filepath.Join(dir, "rv", "node.toml"))
	defer rv.stop(t)
	rv.waitLogged(t, "node running", 10*time.Second)

	gs := func(pod, name string) *proc {
		return startProc(t, pod, filepath.Join(dir, pod), "node", "--config", filepath.Join(dir, pod, "node.toml"),
			"--enroll", "http://"+planeAddr, "--enroll-secret", secret, "--gameserver", name)
	}
	started := time.Now()
	a, b := gs("pod-a", "eu-west-7x2kq"), gs("pod-b", "eu-west-m4n8z")
	defer a.stop(t)
	defer b.stop(t)
	ea, eb := a.waitLogged(t, "enrolled", 20*time.Second), b.waitLogged(t, "enrolled", 20*time.Second)
	idA, idB := uint32(ea["node"].(float64)), uint32(eb["node"].(float64))
	if idA == idB || idA < 100 || idA > 120 || idB < 100 || idB > 120 {
		t.Fatalf("game servers enrolled as nodes %d and %d: want two IDs of 100…120", idA, idB)
	}
	adminA := a.waitLogged(t, "node running", 10*time.Second)["admin"].(string)
	adminB := b.waitLogged(t, "node running", 10*time.Second)["admin"].(string)

	// Both join by gossip (no node was given the other's ID) and replicate
	// each other's objects.
	var joined time.Duration
	deadline := time.Now().Add(15 * time.Second)
	for {
		wa, errA := debugWorld(adminA)
		wb, errB := debugWorld(adminB)
		if errA == nil && errB == nil && wa.Node == idA && wb.Node == idB && replicasFrom(wa, idB) > 0 && replicasFrom(wb, idA) > 0 {
			joined = time.Since(started)
			t.Logf("nodes %d and %d enrolled (%s, %s) and replicate each other's objects (%d and %d replicas) %v after they started",
				idA, idB, time.Duration(ea["took"].(float64)), time.Duration(eb["took"].(float64)), replicasFrom(wa, idB), replicasFrom(wb, idA), joined.Round(time.Millisecond))
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no replicas exchanged within 15 s: %v %v (world of %d: %+v; of %d: %+v)", errA, errB, idA, wa, idB, wb)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if p := a.logged("membership: peer joined"); p == nil {
		t.Errorf("node %d logged no gossiped peer", idA)
	}

	// A restart of the same pod keeps the identity, asking nothing.
	statsBefore := planeHostStats(t, planeAddr)
	a.stop(t)
	a2 := gs("pod-a", "eu-west-7x2kq")
	defer a2.stop(t)
	run2 := a2.waitLogged(t, "node running", 15*time.Second)
	if a2.logged("enrolled") != nil || planeHostStats(t, planeAddr).Issued != statsBefore.Issued {
		t.Fatalf("the restarted game server enrolled again (plane stats %+v before)", statsBefore)
	}
	adminA2 := run2["admin"].(string)
	deadline = time.Now().Add(15 * time.Second)
	for {
		wa, err := debugWorld(adminA2)
		wb, _ := debugWorld(adminB)
		if err == nil && wa.Node == idA && wb != nil && replicasFrom(wa, idB) > 0 && replicasFrom(wb, idA) > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the restarted node %d did not rejoin within 15 s: %v %+v", idA, err, wa)
		}
		time.Sleep(100 * time.Millisecond)
	}
	// A new volume (no certificate): the plane gives the GameServer its
	// ID again. The pod is killed (no drain, no leave) and starts again at
	// once on new ports, as a container restarted on a new IP address.
	a2.cmd.Process.Kill()
	<-a2.done
	if err := os.Remove(filepath.Join(dir, "pod-a", "node.pem")); err != nil {
		t.Fatal(err)
	}
	a3 := gs("pod-a", "eu-west-7x2kq")
	defer a3.stop(t)
	if e := a3.waitLogged(t, "enrolled", 20*time.Second); uint32(e["node"].(float64)) != idA {
		t.Fatalf("re-enrolled as node %v, want %d", e["node"], idA)
	}
	run3 := a3.waitLogged(t, "node running", 15*time.Second)
	rejoin := time.Now()
	deadline = rejoin.Add(15 * time.Second)
	for {
		wa, err := debugWorld(run3["admin"].(string))
		wb, _ := debugWorld(adminB)
		if err == nil && wa.Node == idA && wb != nil && replicasFrom(wa, idB) > 0 && replicasFrom(wb, idA) > 0 {
			t.Logf("the killed and re-enrolled node %d replicates with node %d again %v after it runs", idA, idB, time.Since(rejoin).Round(time.Millisecond))
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the killed and re-enrolled node %d did not rejoin within 15 s: %v %+v (node %d: %+v)", idA, err, wa, idB, wb)
		}
		time.Sleep(100 * time.Millisecond)
	}

	// Revoked (node ID in the list, SIGHUP), the enrolled node is refused
	// by the others, however valid its certificate and its gossip.
	if err := os.WriteFile(revoked, fmt.Appendf(nil, "node %d\n", idA), 0o644); err != nil {
		t.Fatal(err)
	}
	rv.cmd.Process.Signal(syscall.SIGHUP)
	b.cmd.Process.Signal(syscall.SIGHUP)
	deadline = time.Now().Add(15 * time.Second)
	for {
		m, err := scrape(rvAdmin)
		wb, _ := debugWorld(adminB)
		if err == nil && m[`overworld_peer_refusals_total{reason="revoked"}`] > 0 && wb != nil && replicasFrom(wb, idA) == 0 {
			break
		}
		if time.Now().After(deadline) {
			wa, _ := debugWorld(run3["admin"].(string))
			t.Fatalf("revoked node %d still accepted: the rendezvous refused %v for revocation (%v); node %d holds %d of its replicas; it holds %+v",
				idA, m[`overworld_peer_refusals_total{reason="revoked"}`], err, idB, replicasFrom(wb, idA), wa)
		}
		time.Sleep(200 * time.Millisecond)
	}
	st := planeHostStats(t, planeAddr)
	if st.Issued != 3 || len(st.GameServers) != 2 || st.GameServers["eu-west/eu-west-7x2kq"] != idA || st.GameServers["eu-west/eu-west-m4n8z"] != idB {
		t.Fatalf("plane stats %+v", st)
	}
}

// scrape returns a node's Prometheus samples, by name with labels.
func scrape(admin string) (map[string]float64, error) {
	resp, err := http.Get("http://" + admin + "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "#") {
			continue
		}
		if i := strings.LastIndexByte(line, ' '); i > 0 {
			var v float64
			if _, err := fmt.Sscan(line[i+1:], &v); err == nil {
				out[line[:i]] = v
			}
		}
	}
	return out, sc.Err()
}

func planeHostStats(t *testing.T, addr string) plane.HostStats {
	t.Helper()
	resp, err := http.Get("http://" + addr + "/v1/hosts")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st plane.HostStats
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		t.Fatal(err)
	}
	return st
}

// TestNodeEnrollBadInput: the enrollment flags are checked before
// anything is asked or bound, and a plane's refusal (a wrong secret) is
// an error naming it.
func TestNodeEnrollBadInput(t *testing.T) {
	dir := t.TempDir()
	ca, err := pki.InitCA(filepath.Join(dir, "ca"), "test", time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	p, err := plane.New(plane.Config{Nodes: []plane.Node{
		{ID: 1, Site: "London", Capacity: 2, Admin: "http://127.0.0.1:1", QUIC: "127.0.0.1:2"},
		{ID: 2, Site: "Tokyo", Capacity: 2, Admin: "http://127.0.0.1:3", QUIC: "127.0.0.1:4"},
	}, Hosts: &plane.Hosts{CA: ca, Enroll: []plane.Enroll{{Region: "eu-west", Secret: []byte("0123456789abcdef0123"), First: 100, Last: 101}}}})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(p.Handler())
	defer srv.Close()
	hs := srv.URL
	cfg := fmt.Sprintf("id = 100\n[tls]\nca_cert = %q\nnode_cert = \"node.pem\"\n[listen]\nnode = \"127.0.0.1:0\"\nadmin = \"\"\n[discovery]\nrendezvous = 100\n[agones]\nregion = \"eu-west\"\n",
		filepath.Join(dir, "ca", pki.CACertFile))
	path := filepath.Join(dir, "node.toml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	wrong, short := filepath.Join(dir, "wrong"), filepath.Join(dir, "short")
	os.WriteFile(wrong, []byte("not the region's secret\n"), 0o600)
	os.WriteFile(short, []byte("short\n"), 0o600)
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"--enroll", hs}, "go together"},
		{[]string{"--enroll-secret", wrong}, "go together"},
		{[]string{"--enroll", hs, "--enroll-secret", short}, "at least 16"},
		{[]string{"--enroll", hs, "--enroll-secret", filepath.Join(dir, "nope")}, "--enroll-secret"},
		{[]string{"--enroll", hs, "--enroll-secret", wrong, "--enroll-wait", "0s"}, "--enroll-wait"},
		{[]string{"--enroll", hs, "--enroll-secret", wrong, "--player-host", hs, "--player-token", wrong}, "choose one"},
		{[]string{"--enroll", hs, "--enroll-secret", wrong, "--gameserver", "Bad_Name"}, "gameserver"},
		{[]string{"--enroll", hs, "--enroll-secret", wrong, "--gameserver", "gs-1"}, "proof does not match"},
		{[]string{"--enroll-admin", "http://127.0.0.1:7001"}, "go together"},
		{[]string{"--enroll", hs, "--enroll-secret", wrong, "--enroll-admin", "http://127.0.0.1:7001"}, "no player endpoint"},
	} {
		code, _, errs := run(t, "", append([]string{"node", "--config", path}, c.args...)...)
		if code != 2 || !strings.Contains(errs, c.want) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", c.args, code, errs, c.want)
		}
		if _, err := os.Stat(filepath.Join(dir, "node.pem")); err == nil {
			t.Fatalf("%v: a node certificate was written", c.args)
		}
	}
}

// TestEnrollPlacement: the placement an enrolling node asks for takes
// the advertised player endpoints first, the listen addresses when they
// name a host, and refuses what the plane would.
func TestEnrollPlacement(t *testing.T) {
	var cfg live.DaemonConfig
	cfg.Players.MaxPlayers = 64
	cfg.Listen.PlayerQUIC, cfg.Listen.PlayerWS = "10.0.0.5:7000", "0.0.0.0:7002"
	p, err := placement(cfg, "http://10.0.0.5:7001")
	if err != nil || p != (plane.Placement{Admin: "http://10.0.0.5:7001", QUIC: "10.0.0.5:7000", Capacity: 64}) {
		t.Errorf("listen addresses: %+v, %v", p, err)
	}
	cfg.Membership.PlayerWS = "wss://game.example.com:443/"
	cfg.Listen.PlayerQUIC = ":7000"
	p, err = placement(cfg, "http://10.0.0.5:7001")
	if err != nil || p.QUIC != "" || p.WS != "wss://game.example.com:443/" {
		t.Errorf("advertised: %+v, %v", p, err)
	}
	for _, admin := range []string{"10.0.0.5:7001", "http://10.0.0.5", "ftp://10.0.0.5:1", "http://10.0.0.5:7001/admin"} {
		if _, err := placement(cfg, admin); err == nil || !strings.Contains(err.Error(), "admin") {
			t.Errorf("admin %q: %v", admin, err)
		}
	}
	cfg.Players.MaxPlayers = 0
	if _, err := placement(cfg, "http://10.0.0.5:7001"); err == nil || !strings.Contains(err.Error(), "capacity") {
		t.Errorf("capacity 0: %v", err)
	}
}

// enrollFixture is the files of a real-process enrollment test in dir: the
// cluster's CA (caDir), the rendezvous node's file (node 1), a gossip key
// and region eu-west's enrollment secret, and write, which writes a file
// under dir (its directories made) and returns its path.
type enrollFixture struct {
	dir, caDir                string
	gossipKey, secret, rvNode string
	write                     func(name string, data []byte, mode os.FileMode) string
}

func newEnrollFixture(t *testing.T) *enrollFixture {
	t.Helper()
	fx := &enrollFixture{dir: t.TempDir()}
	fx.caDir = filepath.Join(fx.dir, "ca")
	ca, err := pki.InitCA(fx.caDir, "test", time.Now(), 24*time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	rvFile, err := ca.Issue(1, time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	fx.write = func(name string, data []byte, mode os.FileMode) string {
		t.Helper()
		p := filepath.Join(fx.dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, mode); err != nil {
			t.Fatal(err)
		}
		return p
	}
	var key [32]byte
	rand.Read(key[:])
	fx.gossipKey = fx.write("gossip.key", []byte(hex.EncodeToString(key[:])+"\n"), 0o600)
	rand.Read(key[:])
	fx.secret = fx.write("eu-west.secret", []byte(hex.EncodeToString(key[:])+"\n"), 0o600)
	fx.rvNode = fx.write("rv/node.pem", rvFile, 0o600)
	return fx
}
