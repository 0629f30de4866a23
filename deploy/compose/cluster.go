// Package compose drives the compose cluster of deploy/compose (five
// overworld node containers on a private Docker network, the control
// plane, and bot containers playing on them) from Go: it builds the image,
// generates the cluster's files with init.sh (the overworld PKI commands),
// starts and stops the containers, injects faults (kill, network
// disconnect, pause, restart) and reads the nodes' admin endpoints
// (/readyz, /metrics, /debug/world, /debug/authority), the plane's API
// (/readyz, /v1/state) and the bots' JSON reports. It drives the
// enrollment cluster of deploy/compose/enroll too (enroll.go: game servers
// scaled from one configuration, each enrolling with the plane).
//
// The fault scenarios that use it are tests behind the build tag "docker"
// (go test -tags docker ./compose, in the deploy module). The caller must:
// call Build once (the image), then per scenario Start, use the cluster,
// and Down it (also on failure); the host must reach the containers'
// addresses on the Docker network (Linux; the admin ports are not
// published).
package compose

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/overworld/overworld/live"
	"github.com/overworld/overworld/live/localcluster"
	"github.com/overworld/overworld/live/plane"
)

// Nodes is the number of node containers of the compose file.
const Nodes = 5

// BotsPerNode is how many players each bot container plays (BOTS).
const BotsPerNode = 3

// PlaneBots is how many players the planebots container plays through the
// control plane (PLANE_BOTS).
const PlaneBots = 15

// Plane is the control plane's service name, PlaneBotsService the bot
// container that plays through it.
const (
	Plane            = "plane"
	PlaneBotsService = "planebots"
)

// Docker is the docker command line and the compose command that works on
// this host ("docker compose", else "docker-compose").
type Docker struct {
	Compose []string
}

// FindDocker returns the Docker tools, or an error saying why they cannot
// be used (no docker binary, no engine, no compose).
func FindDocker() (*Docker, error) {
	if _, err := exec.LookPath("docker"); err != nil {
		return nil, errors.New("no docker command")
	}
	if out, err := exec.Command("docker", "info", "--format", "{{.ServerVersion}}").CombinedOutput(); err != nil {
		return nil, fmt.Errorf("docker info: %v: %s", err, firstLine(out))
	}
	if exec.Command("docker", "compose", "version").Run() == nil {
		return &Docker{Compose: []string{"docker", "compose"}}, nil
	}
	if exec.Command("docker-compose", "version").Run() == nil {
		return &Docker{Compose: []string{"docker-compose"}}, nil
	}
	return nil, errors.New("neither docker compose nor docker-compose works")
}

func firstLine(b []byte) string {
	s, _, _ := strings.Cut(strings.TrimSpace(string(b)), "\n")
	return s
}

// Root returns the repository's root (the directory of the main module's
// go.mod, two levels above this package's directory).
func Root() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := wd; ; d = filepath.Dir(d) {
		if b, err := os.ReadFile(filepath.Join(d, "go.mod")); err == nil && bytes.Contains(b, []byte("module github.com/overworld/overworld\n")) {
			return d, nil
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("no github.com/overworld/overworld module above %s", wd)
		}
	}
}

// Build builds the static binary into root/bin/overworld and the image
// tagged tag from the repository's Dockerfile: the README's one-line build.
func Build(ctx context.Context, root, tag string) error {
	gb := exec.CommandContext(ctx, "go", "build", "-trimpath", "-o", "bin/overworld", "./cmd/overworld")
	gb.Dir = root
	gb.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := gb.CombinedOutput(); err != nil {
		return fmt.Errorf("go build: %v: %s", err, out)
	}
	db := exec.CommandContext(ctx, "docker", "build", "-q", "-t", tag, ".")
	db.Dir = root
	if out, err := db.CombinedOutput(); err != nil {
		return fmt.Errorf("docker build: %v: %s", err, out)
	}
	return nil
}

// Cluster is one running compose project.
type Cluster struct {
	d       *Docker
	root    string
	file    string // the compose file, relative to root
	Project string
	Dir     string    // the files init.sh generated
	Epoch   time.Time // the nodes' shared clock origin
	token   string    // the admin endpoint's bearer secret
	env     []string
	client  *http.Client

	mu  sync.Mutex
	ids map[string]string // service → container ID
}

// Start generates a cluster's files in dir with init.sh (overworld at
// root/bin/overworld) and starts the five node containers of image
// (project name project). It does not wait for them to be ready.
func Start(ctx context.Context, d *Docker, root, project, image, dir string) (*Cluster, error) {
	c, err := prepare(ctx, d, root, project, image, dir, "deploy/compose")
	if err != nil {
		return nil, err
	}
	toml, err := os.ReadFile(filepath.Join(dir, "nodes/node1.toml"))
	if err != nil {
		return nil, err
	}
	m := regexp.MustCompile(`(?m)^epoch = "([^"]+)"`).FindSubmatch(toml)
	if m == nil {
		return nil, errors.New("init.sh wrote no epoch")
	}
	if c.Epoch, err = time.Parse(time.RFC3339, string(m[1])); err != nil {
		return nil, err
	}
	c.env = append(c.env, fmt.Sprintf("BOTS=%d", BotsPerNode), fmt.Sprintf("PLANE_BOTS=%d", PlaneBots), "BOT_DURATION=10m")
	if _, err := c.compose(ctx, append([]string{"up", "-d", "--no-deps"}, services("node")...)...); err != nil {
		return c, err
	}
	return c, nil
}

// prepare generates a cluster's files in dir with sub/init.sh (overworld
// at root/bin/overworld) and returns the Cluster of sub/docker-compose.yml
// with its admin token and the environment its compose file reads:
// CLUSTER_DIR, OVERWORLD_IMAGE, and the containers' user (65532, or the
// caller's own when it is not root) as OVERWORLD_USER, OVERWORLD_UID and
// OVERWORLD_GID.
func prepare(ctx context.Context, d *Docker, root, project, image, dir, sub string) (*Cluster, error) {
	c := &Cluster{d: d, root: root, file: sub + "/docker-compose.yml", Project: project, Dir: dir,
		client: &http.Client{Timeout: 3 * time.Second}, ids: map[string]string{}}
	init := exec.CommandContext(ctx, filepath.Join(root, sub, "init.sh"), dir)
	init.Env = append(os.Environ(), "OVERWORLD="+filepath.Join(root, "bin/overworld"))
	if out, err := init.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("%s/init.sh: %v: %s", sub, err, out)
	}
	tok, err := os.ReadFile(filepath.Join(dir, "admin.token"))
	if err != nil {
		return nil, err
	}
	c.token = strings.TrimSpace(string(tok))
	uid, gid := 65532, 65532
	if os.Getuid() != 0 {
		uid, gid = os.Getuid(), os.Getgid()
	}
	c.env = append(os.Environ(), "CLUSTER_DIR="+dir, "OVERWORLD_IMAGE="+image, fmt.Sprintf("OVERWORLD_USER=%d:%d", uid, gid),
		fmt.Sprintf("OVERWORLD_UID=%d", uid), fmt.Sprintf("OVERWORLD_GID=%d", gid))
	return c, nil
}

func services(prefix string) []string {
	var s []string
	for i := 1; i <= Nodes; i++ {
		s = append(s, fmt.Sprintf("%s%d", prefix, i))
	}
	return s
}

// compose runs a compose command on the project and returns its stdout.
func (c *Cluster) compose(ctx context.Context, args ...string) ([]byte, error) {
	full := append(append(append([]string(nil), c.d.Compose[1:]...), "-p", c.Project,
		"-f", filepath.Join(c.root, c.file)), args...)
	cmd := exec.CommandContext(ctx, c.d.Compose[0], full...)
	cmd.Env = c.env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, fmt.Errorf("%s %s: %v: %s", strings.Join(c.d.Compose, " "), strings.Join(args, " "), err, stderr.String())
	}
	return out, nil
}

// docker runs a docker command and returns its stdout.
func docker(ctx context.Context, args ...string) ([]byte, error) {
	cmd := exec.CommandContext(ctx, "docker", args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return out, fmt.Errorf("docker %s: %v: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return out, nil
}

// Container returns a service's container ID.
func (c *Cluster) Container(ctx context.Context, service string) (string, error) {
	c.mu.Lock()
	id := c.ids[service]
	c.mu.Unlock()
	if id != "" {
		return id, nil
	}
	out, err := c.compose(ctx, "ps", "-q", service)
	if err != nil {
		return "", err
	}
	id = strings.TrimSpace(string(out))
	if id == "" {
		return "", fmt.Errorf("service %s has no container", service)
	}
	c.mu.Lock()
	c.ids[service] = id
	c.mu.Unlock()
	return id, nil
}

// Network returns the project's Docker network.
func (c *Cluster) Network() string { return c.Project + "_overworld" }

// Node returns node i's service name (i from 1).
func Node(i int) string { return fmt.Sprintf("node%d", i) }

// IP returns node i's address on the project network ("" while it has
// none: disconnected or stopped).
func (c *Cluster) IP(ctx context.Context, i int) (string, error) {
	return c.ServiceIP(ctx, Node(i))
}

// ServiceIP returns a service's address on the project network ("" while
// it has none).
func (c *Cluster) ServiceIP(ctx context.Context, service string) (string, error) {
	id, err := c.Container(ctx, service)
	if err != nil {
		return "", err
	}
	out, err := docker(ctx, "inspect", "-f", `{{with index .NetworkSettings.Networks "`+c.Network()+`"}}{{.IPAddress}}{{end}}`, id)
	if err != nil {
		return "", err
	}
	return strings.TrimSpace(string(out)), nil
}

// get fetches node i's admin path.
func (c *Cluster) get(ctx context.Context, i int, path string) (*http.Response, error) {
	ip, err := c.IP(ctx, i)
	if err != nil {
		return nil, err
	}
	if ip == "" {
		return nil, fmt.Errorf("node %d has no address", i)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+ip+":7180"+path, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", "Bearer "+c.token)
	return c.client.Do(req)
}

// Ready reports whether node i answers /readyz with 200.
func (c *Cluster) Ready(ctx context.Context, i int) bool {
	resp, err := c.get(ctx, i, "/readyz")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// WaitReady waits until every node in which is ready, or timeout passes.
func (c *Cluster) WaitReady(ctx context.Context, timeout time.Duration, which ...int) error {
	if len(which) == 0 {
		for i := 1; i <= Nodes; i++ {
			which = append(which, i)
		}
	}
	deadline := time.Now().Add(timeout)
	for _, i := range which {
		for !c.Ready(ctx, i) {
			if time.Now().After(deadline) {
				return fmt.Errorf("node %d not ready after %v", i, timeout)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	return nil
}

// Metrics scrapes node i's /metrics.
func (c *Cluster) Metrics(ctx context.Context, i int) (map[string]float64, error) {
	resp, err := c.get(ctx, i, "/metrics")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	return localcluster.ParseMetrics(resp.Body)
}

// Authority fetches node i's /debug/authority.
func (c *Cluster) Authority(ctx context.Context, i int) (*live.AuthorityLog, error) {
	resp, err := c.get(ctx, i, "/debug/authority")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var a live.AuthorityLog
	if err := json.NewDecoder(resp.Body).Decode(&a); err != nil {
		return nil, fmt.Errorf("node %d: /debug/authority: %w", i, err)
	}
	return &a, nil
}

// Worlds fetches the /debug/world of the nodes in which (none: every
// node) at once; a node not asked, or that does not answer (stopped,
// paused, cut off), has a nil snapshot. Index i-1 is node i.
func (c *Cluster) Worlds(ctx context.Context, which ...int) []*live.WorldSnapshot {
	out := make([]*live.WorldSnapshot, Nodes)
	if len(which) == 0 {
		for i := 1; i <= Nodes; i++ {
			which = append(which, i)
		}
	}
	var wg sync.WaitGroup
	for _, i := range which {
		wg.Go(func() {
			wctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			defer cancel()
			resp, err := c.get(wctx, i, "/debug/world")
			if err != nil {
				return
			}
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return
			}
			var s live.WorldSnapshot
			if json.NewDecoder(resp.Body).Decode(&s) == nil {
				out[i-1] = &s
			}
		})
	}
	wg.Wait()
	return out
}

// Now is the time on the nodes' shared clock (since the epoch).
func (c *Cluster) Now() time.Duration { return time.Since(c.Epoch) }

// Kill sends node i SIGKILL.
func (c *Cluster) Kill(ctx context.Context, i int) error {
	return c.dockerOn(ctx, i, "kill", "-s", "KILL")
}

// Pause freezes node i's processes (docker pause); Unpause thaws them.
func (c *Cluster) Pause(ctx context.Context, i int) error { return c.dockerOn(ctx, i, "pause") }

// Unpause thaws node i.
func (c *Cluster) Unpause(ctx context.Context, i int) error { return c.dockerOn(ctx, i, "unpause") }

// Restart stops node i with SIGTERM (giving it grace to drain before
// SIGKILL) and starts it again.
func (c *Cluster) Restart(ctx context.Context, i int, grace time.Duration) error {
	return c.dockerOn(ctx, i, "restart", "-t", fmt.Sprint(int(grace.Seconds())))
}

// Disconnect cuts node i off the project network.
func (c *Cluster) Disconnect(ctx context.Context, i int) error {
	id, err := c.Container(ctx, Node(i))
	if err != nil {
		return err
	}
	_, err = docker(ctx, "network", "disconnect", c.Network(), id)
	return err
}

// Connect puts node i back on the project network under its service name.
func (c *Cluster) Connect(ctx context.Context, i int) error {
	id, err := c.Container(ctx, Node(i))
	if err != nil {
		return err
	}
	_, err = docker(ctx, "network", "connect", "--alias", Node(i), c.Network(), id)
	return err
}

func (c *Cluster) dockerOn(ctx context.Context, i int, args ...string) error {
	id, err := c.Container(ctx, Node(i))
	if err != nil {
		return err
	}
	_, err = docker(ctx, append(args, id)...)
	return err
}

// StartPlane starts the control plane's container (or starts it again
// after KillService).
func (c *Cluster) StartPlane(ctx context.Context) error {
	c.mu.Lock()
	id := c.ids[Plane]
	c.mu.Unlock()
	if id != "" {
		_, err := docker(ctx, "start", id)
		return err
	}
	_, err := c.compose(ctx, "up", "-d", "--no-deps", Plane)
	return err
}

// KillService sends a service's container SIGKILL.
func (c *Cluster) KillService(ctx context.Context, service string) error {
	id, err := c.Container(ctx, service)
	if err != nil {
		return err
	}
	_, err = docker(ctx, "kill", "-s", "KILL", id)
	return err
}

// planeGet fetches a path of the plane's API.
func (c *Cluster) planeGet(ctx context.Context, path string) (*http.Response, error) {
	ip, err := c.ServiceIP(ctx, Plane)
	if err != nil {
		return nil, err
	}
	if ip == "" {
		return nil, errors.New("the plane has no address")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+ip+":7400"+path, nil)
	if err != nil {
		return nil, err
	}
	return c.client.Do(req)
}

// PlaneReady reports whether the plane answers /readyz with 200 (it has
// rebuilt its state from the nodes).
func (c *Cluster) PlaneReady(ctx context.Context) bool {
	resp, err := c.planeGet(ctx, "/readyz")
	if err != nil {
		return false
	}
	resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// PlaneState fetches the plane's GET /v1/state: the nodes it sees up, the
// node it places each player on, and what it did.
func (c *Cluster) PlaneState(ctx context.Context) (*plane.State, error) {
	resp, err := c.planeGet(ctx, "/v1/state")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("plane: /v1/state: %s", resp.Status)
	}
	var st plane.State
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
		return nil, fmt.Errorf("plane: /v1/state: %w", err)
	}
	return &st, nil
}

// PlayersOn reads the players in game on node i (GET /admin/players).
func (c *Cluster) PlayersOn(ctx context.Context, i int) ([]string, error) {
	resp, err := c.get(ctx, i, "/admin/players")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("node %d: /admin/players: %s", i, resp.Status)
	}
	var r live.PlayersReport
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		return nil, fmt.Errorf("node %d: /admin/players: %w", i, err)
	}
	var ids []string
	for _, p := range r.Players {
		ids = append(ids, p.ID)
	}
	return ids, nil
}

// StartPlaneBots starts the planebots container (PlaneBots players that
// join through the plane).
func (c *Cluster) StartPlaneBots(ctx context.Context) error {
	_, err := c.compose(ctx, "up", "-d", "--no-deps", PlaneBotsService)
	return err
}

// StopPlaneBots interrupts the planebots container and returns its report.
func (c *Cluster) StopPlaneBots(ctx context.Context) (BotReport, error) {
	return c.stopBot(ctx, PlaneBotsService)
}

// stopBot interrupts a bot container (its bots leave and report), waits
// for it and returns its report.
func (c *Cluster) stopBot(ctx context.Context, service string) (BotReport, error) {
	var r BotReport
	id, err := c.Container(ctx, service)
	if err != nil {
		return r, err
	}
	_, _ = docker(ctx, "kill", "-s", "INT", id) // already gone is fine: its report is in its log
	if _, err := docker(ctx, "wait", id); err != nil {
		return r, err
	}
	cmd := exec.CommandContext(ctx, "docker", "logs", id)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	b, err := cmd.Output()
	if err != nil {
		return r, fmt.Errorf("%s: docker logs: %v", service, err)
	}
	if err := json.Unmarshal(b, &r); err != nil {
		return r, fmt.Errorf("%s: report: %v (stdout %q, stderr %q)", service, err, b, stderr.String())
	}
	return r, nil
}

// StartBots starts the bot containers (BotsPerNode players on each node).
func (c *Cluster) StartBots(ctx context.Context) error {
	_, err := c.compose(ctx, append([]string{"up", "-d", "--no-deps"}, services("bots")...)...)
	return err
}

// BotReport is a bot container's report ("overworld bot --json").
type BotReport struct {
	Bots []struct {
		Player   string  `json:"player"`
		Seconds  float64 `json:"seconds"`
		Handoffs int     `json:"handoffs"`
		MaxGapMs float64 `json:"max_handoff_gap_ms"`
		Error    string  `json:"error"`
	} `json:"bots"`
	Joined   int `json:"joined"`
	Dropped  int `json:"dropped"`
	Failed   int `json:"failed"`
	Handoffs int `json:"handoffs"`
}

// StopBots interrupts every bot container (the bots leave and report),
// waits for them and returns their reports, index i-1 for the bots that
// started on node i.
func (c *Cluster) StopBots(ctx context.Context) ([]BotReport, error) {
	out := make([]BotReport, Nodes)
	for i := 1; i <= Nodes; i++ {
		id, err := c.Container(ctx, fmt.Sprintf("bots%d", i))
		if err != nil {
			return nil, err
		}
		// A bot container already gone is fine: its report is in its log.
		_, _ = docker(ctx, "kill", "-s", "INT", id)
	}
	for i := 1; i <= Nodes; i++ {
		id, _ := c.Container(ctx, fmt.Sprintf("bots%d", i))
		if _, err := docker(ctx, "wait", id); err != nil {
			return nil, err
		}
		cmd := exec.CommandContext(ctx, "docker", "logs", id)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		b, err := cmd.Output()
		if err != nil {
			return nil, fmt.Errorf("bots%d: docker logs: %v", i, err)
		}
		if err := json.Unmarshal(b, &out[i-1]); err != nil {
			return nil, fmt.Errorf("bots%d: report: %v (stdout %q, stderr %q)", i, err, b, stderr.String())
		}
	}
	return out, nil
}

// Logs returns a service's container log (stdout and stderr).
func (c *Cluster) Logs(ctx context.Context, service string) string {
	id, err := c.Container(ctx, service)
	if err != nil {
		return err.Error()
	}
	out, _ := exec.CommandContext(ctx, "docker", "logs", id).CombinedOutput()
	return string(out)
}

// Down removes the project's containers and network, and the generated
// files.
func (c *Cluster) Down(ctx context.Context) error {
	// A paused container cannot be stopped: thaw them all first.
	for i := 1; i <= Nodes; i++ {
		_ = c.Unpause(ctx, i)
	}
	_, err := c.compose(ctx, "down", "-v", "-t", "1")
	if rerr := os.RemoveAll(c.Dir); err == nil {
		err = rerr
	}
	return err
}
