package live

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// The loopback attacks of TestFlood and TestIdleSiege at the size of the
// docs' figures (OVERWORLD_FLOOD, OVERWORLD_SIEGE) run their attackers in
// a child process (this test binary again, running TestAttackerProcess)
// at the lowest CPU priority, so that the attackers' own work (their
// handshakes, their packet loops) stands for machines elsewhere and does
// not take the node's CPU: what the figures measure is the node's defence.
// OVERWORLD_ATTACK_INPROC=1 runs them in the test process instead, where
// they compete with the node for the same cores, as the short runs of
// `go test ./...` always do (a low-priority process would starve beside
// the other packages' tests).

// attackSpec is what the attackers' process does, passed to it as JSON in
// the OVERWORLD_ATTACK environment variable.
type attackSpec struct {
	Seconds float64 `json:"seconds"` // at most this long (the process also stops when its stdin closes)
	// Floods: UDP packets a second to each of UDP, and garbage TCP
	// connections a second to TCP.
	UDP     []string `json:"udp,omitempty"`
	UDPRate int      `json:"udp_rate,omitempty"`
	TCP     string   `json:"tcp,omitempty"`
	TCPRate int      `json:"tcp_rate,omitempty"`
	// A siege: idle connections held at a WebSocket and a QUIC player
	// endpoint, PerEndpoint at each, PerSource from each source address.
	SiegeWS     string `json:"siege_ws,omitempty"`
	SiegeQUIC   string `json:"siege_quic,omitempty"`
	PerEndpoint int    `json:"per_endpoint,omitempty"`
	PerSource   int    `json:"per_source,omitempty"`
}

// attackResult is what the attackers sent: packets and connections of the
// floods, connections the siege opened at each endpoint.
type attackResult struct {
	Sent       int64   `json:"sent"`
	OpenedWS   int64   `json:"opened_ws"`   // idle WebSocket connections the siege opened
	OpenedQUIC int64   `json:"opened_quic"` // idle QUIC connections (handshakes completed) the siege opened
	Seconds    float64 `json:"seconds"`     // how long the attack ran
}

// run runs the attacks of s until ctx ends or s.Seconds pass.
func (s attackSpec) run(ctx context.Context) attackResult {
	ctx, cancel := context.WithTimeout(ctx, time.Duration(s.Seconds*float64(time.Second)))
	defer cancel()
	var wg sync.WaitGroup
	var sent, ws, qc atomic.Int64
	start := time.Now()
	for _, a := range s.UDP {
		wg.Go(func() { sent.Add(flood(ctx, a, s.UDPRate)) })
	}
	if s.TCP != "" {
		wg.Go(func() { sent.Add(tcpGarbage(ctx, s.TCP, s.TCPRate)) })
	}
	if s.SiegeWS != "" || s.SiegeQUIC != "" {
		wg.Go(func() { siegeAttack(ctx, s.SiegeWS, s.SiegeQUIC, s.PerEndpoint, s.PerSource, &ws, &qc) })
	}
	wg.Wait()
	return attackResult{Sent: sent.Load(), OpenedWS: ws.Load(), OpenedQUIC: qc.Load(), Seconds: time.Since(start).Seconds()}
}

// attackers is a running attack: a child process, or goroutines of this
// one.
type attackers struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	out    *bufio.Reader
	cancel context.CancelFunc
	done   chan attackResult
}

// startAttackers starts the attacks of s: in a child process of low
// priority when apart is set, else (or with OVERWORLD_ATTACK_INPROC set)
// in goroutines of this process.
func startAttackers(t *testing.T, s attackSpec, apart bool) *attackers {
	t.Helper()
	if !apart || os.Getenv("OVERWORLD_ATTACK_INPROC") != "" {
		ctx, cancel := context.WithCancel(context.Background())
		a := &attackers{cancel: cancel, done: make(chan attackResult, 1)}
		go func() { a.done <- s.run(ctx) }()
		return a
	}
	js, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestAttackerProcess$", "-test.v")
	cmd.Env = append(os.Environ(), "OVERWORLD_ATTACK="+string(js))
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lowPriority(cmd.Process.Pid)
	a := &attackers{cmd: cmd, stdin: stdin, out: bufio.NewReader(stdout), done: make(chan attackResult, 1)}
	go func() {
		var res attackResult
		for {
			line, err := a.out.ReadBytes('\n')
			if v, ok := cutResult(line); ok {
				_ = json.Unmarshal(v, &res)
			}
			if err != nil {
				break
			}
		}
		_ = cmd.Wait()
		a.done <- res
	}()
	t.Cleanup(func() { a.stop() })
	return a
}

// stop ends the attack and returns what it sent.
func (a *attackers) stop() attackResult {
	if a.cancel != nil {
		a.cancel()
	}
	if a.stdin != nil {
		a.stdin.Close()
	}
	res, ok := <-a.done
	if ok {
		close(a.done)
	}
	return res
}

const resultPrefix = "ATTACK-RESULT "

func cutResult(line []byte) ([]byte, bool) {
	if len(line) < len(resultPrefix) || string(line[:len(resultPrefix)]) != resultPrefix {
		return nil, false
	}
	return line[len(resultPrefix):], true
}

// TestAttackerProcess is the attackers' process of TestFlood and
// TestIdleSiege; run by itself it skips.
func TestAttackerProcess(t *testing.T) {
	v := os.Getenv("OVERWORLD_ATTACK")
	if v == "" {
		t.Skip("the attackers' child process of TestFlood and TestIdleSiege (OVERWORLD_ATTACK not set)")
	}
	var s attackSpec
	if err := json.Unmarshal([]byte(v), &s); err != nil {
		t.Fatalf("OVERWORLD_ATTACK: %v", err)
	}
	if s.Seconds <= 0 || s.Seconds > 3600 {
		t.Fatalf("OVERWORLD_ATTACK: seconds %v (want 0 < s ≤ 3600)", s.Seconds)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go func() { // the parent closes stdin to stop the attack, or dies
		_, _ = io.Copy(io.Discard, os.Stdin)
		cancel()
	}()
	res := s.run(ctx)
	js, _ := json.Marshal(res)
	fmt.Printf("%s%s\n", resultPrefix, js)
}
