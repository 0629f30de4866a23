package localcluster

import (
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"time"

	"github.com/overworld/overworld/live/plane"
)

// PlaneConfig describes a cluster's control plane process (package
// live/plane, "overworld control").
type PlaneConfig struct {
	// Command runs the plane: the engine starts Command[0] with the
	// arguments Command[1:], "--config", FILE (for the overworld binary:
	// {path, "control"}). Required.
	Command []string
	// Env is added to the process's environment.
	Env []string
	// Capacity is each player node's seats (at least 1).
	Capacity int
	// Poll is the plane's poll interval (0: its default, 1 s).
	Poll time.Duration
	// Later writes the configuration without starting the process: Start
	// does (a plane that comes up after the players joined).
	Later bool
	// Grid ("CxR"), Bounds and RegionPolicy are the plane's regions
	// (plane.File; "" Grid: none).
	Grid         string
	Bounds       []float64
	RegionPolicy string
	// InstanceSeats, if above 0, turns the plane's instance API on with
	// that many instance seats per node (plane.FileInstances).
	InstanceSeats int
}

// Plane is a cluster's running control plane process.
type Plane struct {
	cfg  PlaneConfig
	path string // its configuration file
	url  string
	cmd  *exec.Cmd
	done chan struct{}
	log  *os.File
	n    int // starts so far
}

// StartPlane writes the control plane's configuration for the cluster's
// player nodes (their cities, Capacity seats each, admin URLs and player
// endpoints) to plane.toml in the cluster's directory and starts the
// plane process on a free port. The cluster must have player endpoints
// (Config.Players).
func (c *Cluster) StartPlane(pc PlaneConfig) (*Plane, error) {
	switch {
	case len(pc.Command) == 0 || pc.Command[0] == "":
		return nil, fmt.Errorf("%w: plane: no command", ErrConfig)
	case len(c.playerAddrs) < 2:
		return nil, fmt.Errorf("%w: plane: %d player nodes, want at least 2 with player endpoints (Config.Players)", ErrConfig, len(c.playerAddrs))
	case pc.Capacity < 1:
		return nil, fmt.Errorf("%w: plane: capacity %d, want at least 1", ErrConfig, pc.Capacity)
	}
	addr, err := freeAddr("tcp")
	if err != nil {
		return nil, err
	}
	f := plane.File{Listen: addr, Seed: c.cfg.Seed, Grid: pc.Grid, Bounds: pc.Bounds, RegionPolicy: pc.RegionPolicy}
	if !c.cfg.EmulateLatency {
		// On one machine the nodes measure loopback RTTs, while the
		// players' pings are modelled on their cities: the table agrees
		// with the pings. Emulating latency, the nodes measure it.
		f.NodeRTT = "sites"
	}
	if pc.Poll > 0 {
		f.Poll = pc.Poll.String()
	}
	if pc.InstanceSeats > 0 {
		f.Instances = &plane.FileInstances{Seats: pc.InstanceSeats}
	}
	for i, a := range c.playerAddrs {
		fn := plane.FileNode{ID: uint32(c.ids[i]), Site: c.cities[i], Capacity: pc.Capacity,
			Admin: "http://" + c.admin[i], PlayerQUIC: a}
		if i < len(c.playerWS) {
			fn.PlayerWS = "ws://" + c.playerWS[i] + "/"
		}
		f.Nodes = append(f.Nodes, fn)
	}
	if _, err := f.Config(); err != nil {
		return nil, fmt.Errorf("%w: plane: %w", ErrConfig, err)
	}
	b, err := f.Encode()
	if err != nil {
		return nil, err
	}
	p := &Plane{cfg: pc, path: filepath.Join(c.cfg.Dir, "plane.toml"), url: "http://" + addr}
	if err := os.WriteFile(p.path, b, 0o644); err != nil {
		return nil, err
	}
	if pc.Later {
		return p, nil
	}
	if err := p.start(); err != nil {
		return nil, err
	}
	return p, nil
}

func (p *Plane) start() error {
	logf, err := os.OpenFile(filepath.Join(filepath.Dir(p.path), "plane.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	args := append(append([]string(nil), p.cfg.Command[1:]...), "--config", p.path)
	cmd := exec.Command(p.cfg.Command[0], args...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.Env = append(os.Environ(), p.cfg.Env...)
	cmd.SysProcAttr = procAttr()
	if err := cmd.Start(); err != nil {
		logf.Close()
		return err
	}
	done := make(chan struct{})
	go func() {
		cmd.Wait()
		close(done)
	}()
	p.cmd, p.done, p.log = cmd, done, logf
	p.n++
	return nil
}

// URL returns the plane's base URL ("http://127.0.0.1:PORT").
func (p *Plane) URL() string { return p.url }

// LogFile returns the path of the plane's log (every start appends).
func (p *Plane) LogFile() string { return filepath.Join(filepath.Dir(p.path), "plane.log") }

// WaitReady waits until the plane has rebuilt its state from the nodes
// (GET /readyz answers 200).
func (p *Plane) WaitReady(timeout time.Duration) error {
	if p.cmd == nil {
		return fmt.Errorf("localcluster: the plane was not started")
	}
	deadline := time.Now().Add(timeout)
	cl := &http.Client{Timeout: time.Second}
	for {
		select {
		case <-p.done:
			return fmt.Errorf("localcluster: the plane exited before it was ready (log %s)", p.LogFile())
		default:
		}
		resp, err := cl.Get(p.url + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("localcluster: the plane not ready within %v", timeout)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Kill kills the plane process (SIGKILL) and waits for it.
func (p *Plane) Kill() {
	if !p.running() {
		return
	}
	p.cmd.Process.Kill()
	<-p.done
	p.log.Close()
}

// Start starts the plane process: the first time (PlaneConfig.Later), or
// again with the same configuration and port after Kill or Stop.
func (p *Plane) Start() error {
	if p.cmd != nil {
		select {
		case <-p.done:
		default:
			return fmt.Errorf("localcluster: the plane is running")
		}
	}
	return p.start()
}

// running reports whether the process was started and has not exited.
func (p *Plane) running() bool {
	if p.cmd == nil {
		return false
	}
	select {
	case <-p.done:
		return false
	default:
		return true
	}
}

// Stop sends SIGTERM and waits up to timeout, then kills it; it reports
// whether it had to kill.
func (p *Plane) Stop(timeout time.Duration) (killed bool) {
	if !p.running() {
		return false
	}
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(timeout):
		p.cmd.Process.Kill()
		<-p.done
		killed = true
	}
	p.log.Close()
	return killed
}
