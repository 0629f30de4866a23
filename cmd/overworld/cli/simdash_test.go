//go:build unix

package cli

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/overworld/overworld/lab/harness"
	"github.com/overworld/overworld/live"
	"github.com/overworld/overworld/live/web"
	"github.com/overworld/overworld/sim"
	"github.com/overworld/overworld/wire"
)

// TestSimMetrics: a simulated node's counters in the names and format of
// a live node's /metrics.
func TestSimMetrics(t *testing.T) {
	var in, out [wire.NumClasses]sim.Counts
	in[wire.ClassUpdate] = sim.Counts{Msgs: 3, Bytes: 300}
	out[wire.ClassDiscovery] = sim.Counts{Msgs: 2, Bytes: 64}
	var b bytes.Buffer
	simMetrics(&b, in, out, harness.FrameTime{Frames: 4, Total: 2 * time.Millisecond}, 1, 5, 8)
	for _, want := range []string{`overworld_bytes_total{class="update",dir="in"} 300`, `overworld_bytes_total{class="discovery",dir="out"} 64`,
		`overworld_messages_total{class="update",dir="in"} 3`, "overworld_frame_seconds_sum 0.002\n", "overworld_frame_seconds_count 4\n",
		`overworld_authority_events_total{kind="promoted"} 1`, `overworld_authority_events_total{kind="migrated"} 5`, "overworld_players 8\n"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("metrics lack %q:\n%s", want, b.String())
		}
	}
}

// TestDemoDashboardBadInput: the dashboard's flags are checked before
// anything runs.
func TestDemoDashboardBadInput(t *testing.T) {
	for _, args := range [][]string{
		{"demo", "--pace", "2"},
		{"demo", "--dashboard", "nowhere"},
		{"demo", "--dashboard", "127.0.0.1:0", "--pace", "-1"},
		{"demo", "--dashboard", "127.0.0.1:0", "--pace", "NaN"},
	} {
		code, out, errs := runCLI(t, "", args...)
		if code != 2 || out != "" || errs == "" {
			t.Errorf("%v: exit %d, stdout %q, stderr %q; want 2 and a message", args, code, out, errs)
		}
	}
}

// TestDemoDashboard runs "overworld demo --dashboard" as a process: the
// dashboard describes the run's nodes (the player nodes and the
// rendezvous) at their cities on the game's clock; each node's metrics
// and world advance with game time, paced; in Chromium (when one is
// installed) the page shows every node and non-empty series and a
// screenshot is kept (dashboard-sim.png); after the run a Ctrl-C ends
// the command with status 0, and its table is the same as a run's
// without the dashboard (which only observes).
func TestDemoDashboard(t *testing.T) {
	t.Parallel() // waits on its own processes and ports most of its time
	if testing.Short() {
		t.Skip("runs a paced simulation for about 10 s")
	}
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	args := []string{"demo", "--nodes", "3", "--players-per-node", "4", "--duration", "40s", "--seed", "4", "--quiet"}
	cmd := exec.Command(exe, append(args, "--dashboard", "127.0.0.1:0", "--pace", "4")...)
	cmd.Env = append(os.Environ(), cliMainEnv+"=1")
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	errPipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill() // on failure only
	urls := make(chan string, 2)
	var stderr strings.Builder
	readDone := make(chan struct{})
	go func() {
		defer close(readDone)
		sc := bufio.NewScanner(errPipe)
		for sc.Scan() {
			stderr.WriteString(sc.Text() + "\n")
			if _, u, ok := strings.Cut(sc.Text(), "the run's dashboard: "); ok {
				urls <- u
			}
			if strings.HasPrefix(sc.Text(), "the run is over") {
				urls <- "over"
			}
		}
	}()
	var page string
	select {
	case page = <-urls:
	case <-time.After(30 * time.Second):
		t.Fatalf("no dashboard URL printed: %s", stderr.String())
	}
	base := strings.TrimSuffix(page, "/dashboard")
	getJSON := func(path string, v any) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(100 * time.Millisecond) {
			resp, err := http.Get(base + path)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusServiceUnavailable && time.Now().Before(deadline) {
				continue // the run is starting
			}
			if resp.StatusCode != 200 {
				t.Fatalf("GET %s: %s %s", path, resp.Status, b)
			}
			if s, ok := v.(*string); ok {
				*s = string(b)
			} else if err := json.Unmarshal(b, v); err != nil {
				t.Fatalf("GET %s: %v", path, err)
			}
			return
		}
	}
	var info web.DashboardInfo
	getJSON("/dashboard/info.json", &info)
	if info.Clock != web.ClockGame || len(info.Nodes) != 4 || info.Nodes[0].City != "New York" || info.Nodes[3].City == "" || info.World.W <= 0 {
		t.Fatalf("info.json: %+v", info)
	}
	var w0, w1 live.WorldSnapshot
	var metrics string
	getJSON("/node/1/debug/world", &w0)
	time.Sleep(time.Second)
	getJSON("/node/1/debug/world", &w1)
	getJSON("/node/1/metrics", &metrics)
	if w0.Node != 1 || len(w1.Objects) == 0 || w1.NowNs <= w0.NowNs || w1.NowNs-w0.NowNs > int64(8*time.Second) {
		t.Errorf("node 1's world: %d objects, game time %v then %v a second later (paced 4×)", len(w1.Objects), time.Duration(w0.NowNs), time.Duration(w1.NowNs))
	}
	for _, want := range []string{`overworld_bytes_total{class="update",dir="out"}`, "overworld_frame_seconds_count", "overworld_players "} {
		if !strings.Contains(metrics, want) {
			t.Errorf("node 1's metrics lack %q:\n%s", want, metrics)
		}
	}
	if path := browserPath(); path == "" {
		t.Log("no Chromium or Chrome installed (apt-get install chromium): the page is not loaded")
	} else {
		loadSimDashboard(t, path, page)
	}
	select {
	case u := <-urls:
		if u != "over" {
			t.Fatalf("printed %q", u)
		}
	case <-time.After(60 * time.Second):
		t.Fatalf("the run did not end: %s", stderr.String())
	}
	if err := cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	<-readDone
	if err := cmd.Wait(); err != nil {
		t.Fatalf("after Ctrl-C: %v\n%s", err, stderr.String())
	}
	code, plain, errs := runCLI(t, "", args...)
	if code != 0 {
		t.Fatalf("the run without a dashboard: exit %d: %s", code, errs)
	}
	if a, b := dropWall(stdout.String()), dropWall(plain); a != b {
		t.Errorf("the table with the dashboard differs from the one without:\n%s\nwithout:\n%s", a, b)
	}
}

// dropWall leaves out of a demo's table its wall-clock lines.
func dropWall(table string) string {
	var keep []string
	for _, l := range strings.Split(table, "\n") {
		if !strings.HasPrefix(l, "simulation:") && !strings.HasPrefix(strings.TrimSpace(l), "on ") {
			keep = append(keep, l)
		}
	}
	return strings.Join(keep, "\n")
}

// browserPath finds a Chromium or Chrome executable ("" if none), as the
// browser tests of clients/ts do.
func browserPath() string {
	if p := os.Getenv("OVERWORLD_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable", "headless-shell"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// loadSimDashboard loads the run's dashboard in a headless Chromium,
// checks it lists every node and draws non-empty series, and keeps a
// screenshot in $OVERWORLD_ARTIFACTS (dashboard-sim.png).
func loadSimDashboard(t *testing.T, path, page string) {
	t.Helper()
	ctx, eval := cliBrowser(t, path)
	if err := chromedp.Do(ctx, chromedp.Navigate(page)); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(40 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		var ok bool
		eval(`!!(window.overworldDashboard && overworldDashboard.polls >= 6 && overworldDashboard.points() >= 5 && overworldDashboard.charts.discovery.series.size > 0)`, &ok)
		if ok {
			break
		}
		if time.Now().After(deadline) {
			var st string
			eval(`JSON.stringify(window.overworldDashboard ? {polls: overworldDashboard.polls, points: overworldDashboard.points(), errors: overworldDashboard.errors, series: Object.fromEntries(Object.entries(overworldDashboard.charts).map(([k, c]) => [k, [...c.series.values()].map(s => s.v.length)]))} : null)`, &st)
			t.Fatalf("after 40 s the dashboard has not drawn its series: %s", st)
		}
	}
	var listed []string
	eval(`Array.from(document.querySelectorAll("li.node"), e => e.textContent)`, &listed)
	if len(listed) != 4 || !strings.Contains(listed[0], "New York") || !strings.Contains(listed[0], "primaries") {
		t.Errorf("the dashboard lists %q, want the 3 player nodes and the rendezvous, polled", listed)
	}
	for _, chart := range []string{"bandwidth", "missing", "discovery", "frame", "players"} {
		var n int
		eval(`[...overworldDashboard.charts.`+chart+`.series.values()].reduce((n, s) => n + s.v.length, 0)`, &n)
		if n == 0 {
			t.Errorf("the dashboard's %s series is empty", chart)
		}
	}
	var errs []string
	eval("overworldDashboard.errors", &errs)
	if len(errs) > 0 {
		t.Errorf("the dashboard's polls failed: %q", errs)
	}
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	if err != nil || len(png) < 8 || string(png[1:4]) != "PNG" {
		t.Fatalf("screenshot: %v", err)
	}
	keepArtifact(t, "dashboard-sim.png", png)
}
