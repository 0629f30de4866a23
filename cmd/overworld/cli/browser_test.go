//go:build unix

package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/input"
	"github.com/chromedp/chromedp"

	"github.com/overworld/overworld/arena"
	"github.com/overworld/overworld/live"
	"github.com/overworld/overworld/live/localcluster"
)

// cliBrowser starts a headless Chromium at path for the test; eval
// evaluates a JavaScript expression in its page into v.
func cliBrowser(t *testing.T, path string) (ctx context.Context, eval func(expr string, v any)) {
	t.Helper()
	opts := append(chromedp.DefaultExecAllocatorOptions[:], chromedp.ExecPath(path), chromedp.NoSandbox,
		chromedp.WindowSize(1024, 768), chromedp.Flag("disable-gpu", true))
	actx, cancel := chromedp.NewExecAllocator(context.Background(), opts...)
	t.Cleanup(cancel)
	ctx, cancel2 := chromedp.NewContext(actx)
	t.Cleanup(cancel2)
	eval = func(expr string, v any) {
		t.Helper()
		cctx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		raw, err := chromedp.Run(cctx, chromedp.Evaluate[json.RawMessage](expr, chromedp.EvalAwaitPromise))
		if err == nil && v != nil {
			err = json.Unmarshal(raw, v)
		}
		if err != nil {
			t.Fatalf("%s: %v", expr, err)
		}
	}
	return ctx, eval
}

// keepArtifact writes a browser test's file to $OVERWORLD_ARTIFACTS.
func keepArtifact(t *testing.T, name string, data []byte) {
	t.Helper()
	dir := os.Getenv("OVERWORLD_ARTIFACTS")
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "overworld-browser-artifacts")
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
		t.Fatal(err)
	}
	t.Logf("kept %s", filepath.Join(dir, name))
}

// worldOfNode reads a node's /debug/world.
func worldOfNode(admin string) (*live.WorldSnapshot, error) {
	resp, err := http.Get("http://" + admin + "/debug/world")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s/debug/world: %s", admin, resp.Status)
	}
	var s live.WorldSnapshot
	return &s, json.NewDecoder(resp.Body).Decode(&s)
}

// TestBrowserResume plays in Chromium on a local cluster of three node
// processes (with failover, as overworld cluster runs them), entering
// through the lobby's one URL; kill -9 the node the page plays on: the
// page takes its avatar back where the avatar's backup took over (a
// Rejoin to the dead node's peers, with a token the lobby issues for the
// same player), without joining afresh, and the new node moves that
// avatar on key presses. A screenshot is kept (play-after-resume.png).
func TestBrowserResume(t *testing.T) {
	t.Parallel() // waits on its own processes and ports most of its time
	if testing.Short() {
		t.Skip("starts 4 node processes and a browser for about 20 s")
	}
	path := browserPath()
	if path == "" {
		t.Skip("no Chromium or Chrome installed (apt-get install chromium): the browser tests need one")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	c, err := localcluster.Start(localcluster.Config{Command: []string{exe, "node"}, Env: []string{cliMainEnv + "=1"}, Dir: t.TempDir(),
		Cities: []string{"New York", "Frankfurt", "Tokyo"}, Arch: "directory", RendezvousCity: "London", Map: "sqr",
		PlayersPerNode: 2, Seed: 1, FrameRate: 20, LogLevel: "warn", Players: true})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop(10 * time.Second)
	if err := c.WaitReady(30 * time.Second); err != nil {
		t.Fatal(err)
	}
	w, h := arena.Size(arena.Sqr, 6)
	lb, err := startLobby("127.0.0.1:0", c, w, h, "")
	if err != nil {
		t.Fatal(err)
	}
	defer lb.Close()
	// The lobby issues a token for a named player only with the key it
	// gave that player's page.
	ws0 := url.QueryEscape(c.PlayerWSAddrs()[0])
	for q, want := range map[string]int{"": 200, "&player=browser1&key=" + lb.key("browser1"): 200,
		"&player=browser1&key=" + lb.key("browser2"): 403, "&player=browser1": 403, "&key=x": 403} {
		resp, err := http.Post(lb.URL()+"token?ws="+ws0+q, "", nil)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("POST /token?ws=…%s: %s, want %d", q, resp.Status, want)
		}
	}
	ctx, eval := cliBrowser(t, path)
	if err := chromedp.Do(ctx, chromedp.Navigate(lb.URL())); err != nil {
		t.Fatal(err)
	}
	waitPage := func(cond string, d time.Duration) {
		t.Helper()
		for deadline := time.Now().Add(d); ; time.Sleep(100 * time.Millisecond) {
			var ok bool
			eval("!!("+cond+")", &ok)
			if ok {
				return
			}
			if time.Now().After(deadline) {
				var e, ev string
				eval(`window.overworldPlay ? overworldPlay.error : ""`, &e)
				eval(`document.getElementById("events")?.textContent ?? ""`, &ev)
				t.Fatalf("after %v the page still does not satisfy %s (error %q, events %q)", d, cond, e, ev)
			}
		}
	}
	waitPage("window.overworldPlay && overworldPlay.joined && overworldPlay.avatar() !== null", 20*time.Second)
	var avatar, wsURL string
	eval("overworldPlay.avatar().id", &avatar)
	eval("overworldPlay.client.url", &wsURL)
	u, err := url.Parse(wsURL)
	if err != nil {
		t.Fatal(err)
	}
	from := slices.Index(c.PlayerWSAddrs(), u.Host)
	if from < 0 {
		t.Fatalf("the page plays on %s, not a node of the cluster (%v)", wsURL, c.PlayerWSAddrs())
	}
	var id uint64
	fmt.Sscan(avatar, &id)
	// Wait until the avatar's primary names its backup.
	var backup uint32
	for deadline := time.Now().Add(20 * time.Second); backup == 0; time.Sleep(200 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("node %d names no backup of avatar %d in 20 s", from+1, id)
		}
		s, err := worldOfNode(c.AdminAddr(from))
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range s.Objects {
			if o.ID == id && o.Primary {
				backup = o.Backup
			}
		}
	}
	to := int(backup) - 1
	killed := time.Now()
	if err := c.Signal(from, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitPage("overworldPlay.client.stats.resumes === 1 && overworldPlay.avatar() !== null", 40*time.Second)
	took := time.Since(killed)
	var now string
	var reconnects int
	eval("overworldPlay.avatar().id", &now)
	eval("overworldPlay.client.url", &wsURL)
	eval("overworldPlay.client.stats.reconnects", &reconnects)
	if now != avatar || reconnects != 0 || wsURL != "ws://"+c.PlayerWSAddrs()[to]+"/" {
		t.Fatalf("after node %d died the page plays avatar %s (before: %s) on %s after %d fresh joins; want the same avatar on node %d (%s), no fresh join",
			from+1, now, avatar, wsURL, reconnects, to+1, c.PlayerWSAddrs()[to])
	}
	pos := func() (x, y float64, ok bool) {
		s, err := worldOfNode(c.AdminAddr(to))
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range s.Objects {
			if o.ID == id && o.Primary {
				return o.Loc[0], o.Loc[1], true
			}
		}
		return 0, 0, false
	}
	x0, y0, ok := pos()
	if !ok {
		t.Fatalf("node %d does not hold avatar %d's primary", to+1, id)
	}
	moved := 0.0
	for _, k := range []struct {
		code string
		vk   int64
	}{{"ArrowRight", 39}, {"ArrowUp", 38}, {"ArrowLeft", 37}, {"ArrowDown", 40}} {
		for _, typ := range []input.DispatchKeyEventType{input.DispatchKeyEventTypeKeyDown, input.DispatchKeyEventTypeKeyUp} {
			if _, err := chromedp.Run(ctx, chromedp.Action[cdp.Empty](func(ctx context.Context, tg *chromedp.Target) (cdp.Empty, error) {
				return cdp.Call(ctx, tg, input.DispatchKeyEvent, input.DispatchKeyEventParams{Type: typ, Key: k.code, Code: k.code, WindowsVirtualKeyCode: k.vk})
			})); err != nil {
				t.Fatal(err)
			}
			if typ == input.DispatchKeyEventTypeKeyDown {
				time.Sleep(time.Second)
			}
		}
		time.Sleep(300 * time.Millisecond)
		x1, y1, _ := pos()
		if moved = max(moved, abs(x1-x0)+abs(y1-y0)); moved > 2 {
			break
		}
	}
	if moved <= 2 {
		t.Fatalf("after the resume node %d moved the avatar at most %.2f m on key presses", to+1, moved)
	}
	t.Logf("node %d killed: the page took avatar %s back on node %d %v later, which moved it %.1f m", from+1, avatar, to+1, took.Round(time.Millisecond), moved)
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	keepArtifact(t, "play-after-resume.png", png)
}

func abs(x float64) float64 { return max(x, -x) }

// TestClusterOneURL checks the way in for a new player: "overworld
// cluster --nodes 4" (as a process group, as a shell runs it) prints one
// URL once every node is ready; Chromium opening it plays: it joins a
// node with the token the lobby issued, and the avatar runs on key
// presses. Then a Ctrl-C ends the command with status 0. A screenshot is
// kept (play-cluster.png).
func TestClusterOneURL(t *testing.T) {
	t.Parallel() // waits on its own processes and ports most of its time
	if testing.Short() {
		t.Skip("runs a cluster of 4 nodes, its control plane and a browser for about 30 s")
	}
	path := browserPath()
	if path == "" {
		t.Skip("no Chromium or Chrome installed (apt-get install chromium): the browser tests need one")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "cluster", "--nodes", "4", "--duration", "2m")
	cmd.Env = append(os.Environ(), cliMainEnv+"=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	var stdout strings.Builder
	cmd.Stdout = &stdout
	errPipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	defer syscall.Kill(-pid, syscall.SIGKILL) // on failure only: the group is gone by then otherwise
	var stderr strings.Builder
	urls := make(chan string, 1)
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		sc := bufio.NewScanner(errPipe)
		for sc.Scan() {
			stderr.WriteString(sc.Text() + "\n")
			if rest, ok := strings.CutPrefix(sc.Text(), "play in a browser: "); ok {
				u, _, _ := strings.Cut(rest, " ")
				urls <- u
			}
		}
	}()
	var page string
	select {
	case page = <-urls:
	case <-time.After(90 * time.Second):
		t.Fatalf("no URL printed in 90 s:\n%s", stderr.String())
	}
	ready := time.Since(start)
	ctx, eval := cliBrowser(t, path)
	if err := chromedp.Do(ctx, chromedp.Navigate(page)); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		var ok bool
		eval("!!(window.overworldPlay && overworldPlay.joined && overworldPlay.avatar() !== null)", &ok)
		if ok {
			break
		}
		if time.Now().After(deadline) {
			var e string
			eval(`window.overworldPlay ? overworldPlay.error : "no game page"`, &e)
			t.Fatalf("the page opened at %s did not join in 20 s: %q", page, e)
		}
		time.Sleep(100 * time.Millisecond)
	}
	joined := time.Since(start)
	type pos struct{ X, Y float64 }
	var p0, p1 pos
	eval("overworldPlay.avatar()", &p0)
	moved := 0.0
	for _, k := range []struct {
		code string
		vk   int64
	}{{"ArrowRight", 39}, {"ArrowUp", 38}, {"ArrowLeft", 37}, {"ArrowDown", 40}} {
		for _, typ := range []input.DispatchKeyEventType{input.DispatchKeyEventTypeKeyDown, input.DispatchKeyEventTypeKeyUp} {
			if _, err := chromedp.Run(ctx, chromedp.Action[cdp.Empty](func(ctx context.Context, tg *chromedp.Target) (cdp.Empty, error) {
				return cdp.Call(ctx, tg, input.DispatchKeyEvent, input.DispatchKeyEventParams{Type: typ, Key: k.code, Code: k.code, WindowsVirtualKeyCode: k.vk})
			})); err != nil {
				t.Fatal(err)
			}
			if typ == input.DispatchKeyEventTypeKeyDown {
				time.Sleep(time.Second)
			}
		}
		time.Sleep(300 * time.Millisecond)
		eval("overworldPlay.avatar()", &p1)
		if moved = max(moved, abs(p1.X-p0.X)+abs(p1.Y-p0.Y)); moved > 2 {
			break
		}
	}
	if moved <= 2 {
		t.Fatalf("the avatar moved at most %.2f m on key presses", moved)
	}
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil {
		t.Fatal(err)
	}
	keepArtifact(t, "play-cluster.png", png)
	t.Logf("overworld cluster --nodes 4: the URL %s printed after %v; the page played %v after the start; the avatar ran %.1f m", page, ready.Round(time.Millisecond), joined.Round(time.Millisecond), moved)
	if err := syscall.Kill(-pid, syscall.SIGINT); err != nil { // the terminal's Ctrl-C
		t.Fatal(err)
	}
	waited := make(chan error, 1)
	go func() { <-readDone; waited <- cmd.Wait() }()
	select {
	case err := <-waited:
		if err != nil {
			t.Fatalf("after Ctrl-C: %v\nstderr:\n%s", err, stderr.String())
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("still running 60 s after Ctrl-C\nstderr:\n%s", stderr.String())
	}
}
