//go:build unix

package cli

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestClusterCtrlC runs "overworld cluster" as a shell runs a job, in a
// process group of its own, and presses Ctrl-C as a terminal does: SIGINT
// to the whole foreground group. The node processes, in groups of their
// own, must not see it; the command must stop them in order (each drains
// and exits with status 0), print the figures of the time run and exit 0.
// Takes about 15 s.
func TestClusterCtrlC(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a cluster of 3 processes for about 15 s")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	keep := t.TempDir()
	cmd := exec.Command(exe, "cluster", "--nodes", "2", "--players-per-node", "2", "--bot-mode", "node",
		"--duration", "2m", "--keep", keep)
	cmd.Env = append(os.Environ(), cliMainEnv+"=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	errPipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	defer syscall.Kill(-pid, syscall.SIGKILL) // on failure only: the group is gone by then otherwise

	// Read stderr until the nodes are started, then let them run a few
	// seconds (ready after a second or two) before the Ctrl-C.
	var stderr strings.Builder
	started := make(chan struct{})
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		sc := bufio.NewScanner(errPipe)
		once := false
		for sc.Scan() {
			stderr.WriteString(sc.Text() + "\n")
			if !once && strings.HasPrefix(sc.Text(), "started 3 node processes") {
				once = true
				close(started)
			}
		}
	}()
	select {
	case <-started:
	case <-time.After(60 * time.Second):
		t.Fatalf("the cluster did not start in 60 s")
	}
	time.Sleep(5 * time.Second)
	if err := syscall.Kill(-pid, syscall.SIGINT); err != nil { // the terminal's Ctrl-C
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { <-readDone; waited <- cmd.Wait() }()
	var werr error
	select {
	case werr = <-waited:
	case <-time.After(60 * time.Second):
		t.Fatalf("still running 60 s after Ctrl-C\nstderr:\n%s", stderr.String())
	}
	errs, out := stderr.String(), stdout.String()
	if werr != nil {
		t.Fatalf("%v\nstdout:\n%s\nstderr:\n%s", werr, out, errs)
	}
	for _, want := range []string{
		"interrupted at ",
		"stopped the nodes with SIGTERM: exit status 0 (node 1, 2, 3)",
	} {
		if !strings.Contains(errs, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errs)
		}
	}
	for _, bad := range []string{"connection refused", "ended at", "overworld:"} {
		if strings.Contains(errs, bad) {
			t.Errorf("stderr has %q:\n%s", bad, errs)
		}
	}
	for _, want := range []string{"live cluster: 2 node processes", "per-node bandwidth, kB/s in + out", "CPU per player"} {
		if !strings.Contains(out, want) {
			t.Errorf("stdout lacks %q:\n%s", want, out)
		}
	}
	// In order: every node was told to shut down, drained, and stopped.
	for id := 1; id <= 3; id++ {
		log, err := os.ReadFile(filepath.Join(keep, fmt.Sprintf("node%d.log", id)))
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{"shutting down: the node stops taking players and drains", "drain report", "msg=stopped"} {
			if !bytes.Contains(log, []byte(want)) {
				t.Errorf("node %d's log lacks %q", id, want)
			}
		}
	}
}
