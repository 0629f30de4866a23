package live

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/overworld/overworld/live/pki"
	"github.com/overworld/overworld/node"
)

// testNodeConfig creates a cluster CA and node 1's certificate in dir and
// returns the CA and the default daemon configuration that uses them, with
// its data directory in dir and its node address on 127.0.0.1 (any port).
func testNodeConfig(t *testing.T, dir string) (DaemonConfig, *pki.CA) {
	t.Helper()
	ca, err := pki.InitCA(filepath.Join(dir, "ca"), "", time.Now(), time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	data, _ := ca.Issue(1, time.Now(), 30*time.Minute)
	if err := pki.WriteNodeFile(filepath.Join(dir, "node.pem"), data); err != nil {
		t.Fatal(err)
	}
	cfg := DefaultDaemonConfig()
	cfg.Listen = ListenConfig{Node: "127.0.0.1:0"}
	cfg.DataDir = filepath.Join(dir, "data")
	cfg.TLS = TLSConfig{CACert: filepath.Join(dir, "ca", pki.CACertFile), NodeCert: filepath.Join(dir, "node.pem")}
	return cfg, ca
}

// TestDaemon runs one daemon in-process with the test game: a frame hook
// (standing in for the player gateway) runs after every Tick and sets the
// players gauge; /healthz, /readyz, /metrics, /debug/world and
// /debug/authority answer; the node's first run is incarnation 1, kept in
// its data directory; and a cancelled context shuts it down, with a drain
// report saying its primary could not migrate (it has no peer) and is
// lost, written to last-run.json too.
func TestDaemon(t *testing.T) {
	cfg, _ := testNodeConfig(t, t.TempDir())
	cfg.Listen.Admin = "127.0.0.1:0"
	cfg.FrameRate = 50
	g := newTestGame()
	var logs strings.Builder
	lw := &syncWriter{w: &logs}
	d, err := NewDaemon(cfg, Game{Registry: g.registry, Spawn: func(now time.Duration, n *node.Node) error {
		_, err := n.Spawn(now, g.walker, nil)
		return err
	}}, NewLogger(cfg, lw))
	if err != nil {
		t.Fatal(err)
	}
	frames := 0
	d.AddHook(FrameHookFunc(func(now time.Duration, n *node.Node) {
		frames++
		d.Metrics().SetPlayers(3)
	}))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	base := "http://" + d.AdminAddr().String()
	get := func(path string) (int, string) {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		if code, _ := get("/readyz"); code == 200 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("not ready within 5 s")
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(1200 * time.Millisecond) // a metrics sample (once a second)
	if code, body := get("/healthz"); code != 200 || body != "ok\n" {
		t.Errorf("/healthz: %d %q", code, body)
	}
	_, metrics := get("/metrics")
	for _, want := range []string{"overworld_players 3", `overworld_objects{role="primary"} 1`, "overworld_frames_total ",
		`overworld_bytes_total{class="update",dir="in"} 0`, "overworld_frame_seconds_count", "overworld_handshake_refusals_total 0",
		"overworld_queue_drops_total 0", `overworld_malformed_total{stage="core"} 0`, "process_cpu_seconds_total",
		`overworld_authority_events_total{kind="promoted"} 0`, `overworld_authority_events_total{kind="migrate-aborted"} 0`} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	_, body := get("/debug/world")
	var snap WorldSnapshot
	if err := json.Unmarshal([]byte(body), &snap); err != nil || snap.Node != 1 || len(snap.Objects) != 1 || !snap.Objects[0].Primary || len(snap.View) != 1 ||
		snap.Objects[0].Kind != "walker" || snap.Objects[0].From != 1 || snap.Objects[0].Backup != 0 {
		t.Errorf("/debug/world: %v %+v", err, snap)
	}
	if o := snap.Objects[0]; o.ID>>48 != 1 {
		t.Errorf("object %v: origin %d, want incarnation 1 in its high bits", o.ID, o.ID>>32)
	}
	// A sampler asking after the last snapshot it got gets the next frame's,
	// even when several frames have run since: the node keeps its latest.
	var first, next WorldSnapshot
	_, body = get(fmt.Sprintf("/debug/world?after=%d", snap.NowNs))
	if err := json.Unmarshal([]byte(body), &first); err != nil || first.NowNs <= snap.NowNs {
		t.Fatalf("/debug/world?after=%d: %v, node time %d", snap.NowNs, err, first.NowNs)
	}
	time.Sleep(50 * time.Millisecond) // 2–3 frames at 50 Hz
	_, body = get(fmt.Sprintf("/debug/world?after=%d", first.NowNs))
	err1 := json.Unmarshal([]byte(body), &next)
	var plain WorldSnapshot
	_, body = get("/debug/world")
	if err := errors.Join(err1, json.Unmarshal([]byte(body), &plain)); err != nil || next.NowNs <= first.NowNs || next.NowNs >= plain.NowNs {
		t.Errorf("/debug/world?after=%d 50 ms later: %v, node time %d; the next frame's without after=: %d; want a kept frame between", first.NowNs, err, next.NowNs, plain.NowNs)
	}
	for _, bad := range []string{"x", "-1", "1e9", "99999999999999999999"} {
		if code, body := get("/debug/world?after=" + bad); code != http.StatusBadRequest || !strings.Contains(body, "after=") {
			t.Errorf("/debug/world?after=%s: %d %q, want 400 naming after", bad, code, body)
		}
	}
	_, body = get("/debug/authority")
	var al AuthorityLog
	if err := json.Unmarshal([]byte(body), &al); err != nil || al.Node != 1 || al.Incarnation != 1 || !al.Failover || al.Drain != nil {
		t.Errorf("/debug/authority: %v %s", err, body)
	}
	if inc, from := d.Incarnation(); inc != 1 || from != filepath.Join(cfg.DataDir, IncarnationFile) {
		t.Errorf("incarnation %d from %q", inc, from)
	}
	if b, err := os.ReadFile(filepath.Join(cfg.DataDir, IncarnationFile)); err != nil || string(b) != "1\n" {
		t.Errorf("incarnation file: %q, %v", b, err)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if frames < 25 {
		t.Errorf("hook ran %d times in about 1.3 s at 50 Hz", frames)
	}
	lw.mu.Lock()
	defer lw.mu.Unlock()
	for _, want := range []string{"drain report: primaries not migrated", "primaries=1 migrated=0 not_migrated=1", "lost=1",
		"not_migrated_by_kind=map[walker:1]", `reason="no live peer"`} {
		if !strings.Contains(logs.String(), want) {
			t.Errorf("the shutdown log does not say %q:\n%s", want, logs.String())
		}
	}
	b, err := os.ReadFile(filepath.Join(cfg.DataDir, "last-run.json"))
	if err != nil || !strings.Contains(string(b), `"primaries_lost": 1`) || !strings.Contains(string(b), `"primaries_migrated": 0`) ||
		!strings.Contains(string(b), `"incarnation": 1`) {
		t.Errorf("last-run.json: %v\n%s", err, b)
	}
}

// syncWriter serialises writes (the logger is used from several goroutines).
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// TestSnapHistory checks the kept snapshots: none until a sampler asks with
// after=, the oldest after the time asked for, at most the latest four, and
// none kept (and what was kept forgotten) once no sampler has asked for 2 s.
func TestSnapHistory(t *testing.T) {
	var h snapHistory
	t0 := time.Unix(1000, 0)
	if h.sampled(t0) {
		t.Fatal("kept snapshots before any request")
	}
	if b := h.after(0, t0); b != nil {
		t.Fatalf("after(0) on an empty history: %q", b)
	}
	for f := int64(1); f <= 6; f++ {
		if !h.sampled(t0.Add(time.Duration(f) * 100 * time.Millisecond)) {
			t.Fatalf("frame %d: not kept within 2 s of a request", f)
		}
		h.add(f*100, []byte{byte(f)})
	}
	for _, c := range []struct {
		after int64
		want  byte // 0: none
	}{{0, 3}, {250, 3}, {300, 4}, {450, 5}, {550, 6}, {600, 0}, {1 << 62, 0}} {
		b := h.after(c.after, t0.Add(700*time.Millisecond))
		if (c.want == 0) != (b == nil) || (b != nil && b[0] != c.want) {
			t.Errorf("after(%d) = %v, want frame %d (0: none; frames 3–6 kept)", c.after, b, c.want)
		}
	}
	if h.sampled(t0.Add(2701 * time.Millisecond)) {
		t.Error("still keeping 2 s after the last request")
	}
	if b := h.after(0, t0.Add(3*time.Second)); b != nil {
		t.Errorf("after(0) once idle: %v, want nothing kept", b)
	}
}
