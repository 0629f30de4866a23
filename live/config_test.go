package live

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/overworld/overworld/discovery"
	"github.com/overworld/overworld/geo"
	"github.com/overworld/overworld/wire"
)

// TestDefaultConfigTOML: the documented default configuration parses to
// DefaultDaemonConfig, and documents every field (each key appears in it
// under a comment).
func TestDefaultConfigTOML(t *testing.T) {
	got, err := ParseDaemonConfig([]byte(DefaultConfigTOML), "")
	if err != nil {
		t.Fatal(err)
	}
	if want := DefaultDaemonConfig(); !reflect.DeepEqual(got, want) {
		t.Errorf("DefaultConfigTOML parses to\n%+v\nwant DefaultDaemonConfig\n%+v", got, want)
	}
	lines := strings.Split(DefaultConfigTOML, "\n")
	// documented reports whether key is set (or shown commented out) in
	// the default file with a comment in the lines above it.
	documented := func(key string) bool {
		for i, l := range lines {
			l = strings.TrimPrefix(l, "# ")
			if !strings.HasPrefix(l, key+" = ") && l != "["+key+"]" && l != "[["+key+"]]" {
				continue
			}
			for k := i - 1; k >= 0 && lines[k] != ""; k-- {
				if strings.HasPrefix(lines[k], "# ") && !strings.Contains(lines[k], " = ") {
					return true
				}
			}
		}
		return false
	}
	var walk func(typ reflect.Type)
	walk = func(typ reflect.Type) {
		for f := range typ.Fields() {
			key := f.Tag.Get("toml")
			if !documented(key) {
				t.Errorf("field %s (%q) is not documented in DefaultConfigTOML", f.Name, key)
			}
			switch {
			case f.Type.Kind() == reflect.Struct && f.Type != reflect.TypeFor[Duration]():
				walk(f.Type)
			case f.Type.Kind() == reflect.Slice && f.Type.Elem().Kind() == reflect.Struct:
				walk(f.Type.Elem())
			}
		}
	}
	walk(reflect.TypeFor[DaemonConfig]())
}

// TestConfigRoundTrip: Encode's output parses back to the same config.
func TestConfigRoundTrip(t *testing.T) {
	c := DefaultDaemonConfig()
	c.ID, c.City, c.EmulateLatency, c.Epoch = 3, "Tokyo", true, time.Unix(1e9, 5).UTC().Format(time.RFC3339Nano)
	c.DataDir, c.TLS = "/d", TLSConfig{CACert: "/ca.crt", NodeCert: "/n.pem"}
	c.Discovery.Rendezvous = 4
	c.ShutdownGrace = Duration{1500 * time.Millisecond}
	c.Peers = []PeerConfig{{ID: 4, Addr: "127.0.0.1:9", City: "London"}, {ID: 1, Addr: "[::1]:8", City: "Tokyo"}}
	b, err := c.Encode()
	if err != nil {
		t.Fatal(err)
	}
	got, err := ParseDaemonConfig(b, "/elsewhere")
	if err != nil {
		t.Fatalf("%v\n%s", err, b)
	}
	if !reflect.DeepEqual(got, c) {
		t.Errorf("round trip:\n%+v\nwant\n%+v", got, c)
	}
	if m := got.Cities(); m[3] != "Tokyo" || m[4] != "London" || len(got.Members()) != 3 || got.PeerMap()[1] != "[::1]:8" {
		t.Errorf("cities %v, members %v, peers %v", m, got.Members(), got.PeerMap())
	}
}

// TestLatency: the emulated one-way delay is half the simulator's RTT,
// symmetric as the data allows, and the same-site delay within a city.
func TestLatency(t *testing.T) {
	cities := map[wire.NodeID]string{1: "New York", 2: "Frankfurt", 3: "Tokyo", 4: "Tokyo"}
	d1, err := Latency(1, cities)
	if err != nil {
		t.Fatal(err)
	}
	d3, _ := Latency(3, cities)
	if a, b := d1(2), d1(3); a < 20*time.Millisecond || a > 80*time.Millisecond || b < 60*time.Millisecond || b > 150*time.Millisecond {
		t.Errorf("New York → Frankfurt %v, → Tokyo %v: want about 40 ms and 90 ms", a, b)
	}
	if d3(4) != 500*time.Microsecond {
		t.Errorf("Tokyo → Tokyo %v, want the same-site 0.5 ms", d3(4))
	}
	if _, err := Latency(9, cities); err == nil {
		t.Error("a node with no city was accepted")
	}
	if _, err := Latency(1, map[wire.NodeID]string{1: "Atlantis"}); err == nil {
		t.Error("an unknown city was accepted")
	}
}

// TestConfigNetEmulation: the emulate_* fields parse into Net and are
// checked: a probability outside [0, 1) or a negative jitter is refused,
// naming the field group.
func TestConfigNetEmulation(t *testing.T) {
	c, err := ParseDaemonConfig([]byte("emulate_loss = 0.01\nemulate_jitter = \"10ms\"\nemulate_duplicate = 0.001\n"), "")
	if err != nil {
		t.Fatal(err)
	}
	if c.Net() != geo.WAN() {
		t.Errorf("net %+v, want the wan profile %+v", c.Net(), geo.WAN())
	}
	for _, bad := range []string{"emulate_loss = 1.0\n", "emulate_jitter = \"-1ms\"\n", "emulate_duplicate = -0.5\n", "emulate_reorder = 2.0\n"} {
		if _, err := ParseDaemonConfig([]byte(bad), ""); err == nil || !strings.Contains(err.Error(), "emulate_") {
			t.Errorf("%q: %v, want an error naming emulate_*", bad, err)
		}
	}
}

// TestConfigPrefetch: discovery.prefetch defaults by architecture (as the
// simulator's commands do), an explicit 0 turns it off, and a negative,
// NaN or huge value is refused naming the key.
func TestConfigPrefetch(t *testing.T) {
	for _, c := range []struct {
		toml string
		want float64
	}{
		{"[discovery]\narch = \"colyseus\"\n", discovery.ColyseusPrefetch},
		{"[discovery]\narch = \"colyseus\"\nprefetch = 0.0\n", 0},
		{"[discovery]\narch = \"broadcast\"\n", 0},
		{"[discovery]\narch = \"broadcast\"\nprefetch = 7.5\n", 7.5},
		{"", 0},
	} {
		cfg, err := ParseDaemonConfig([]byte(c.toml), "")
		if err != nil {
			t.Fatalf("%q: %v", c.toml, err)
		}
		if got := cfg.Discovery.PrefetchM(); got != c.want {
			t.Errorf("%q: prefetch %v, want %v", c.toml, got, c.want)
		}
	}
	for _, bad := range []string{"[discovery]\nprefetch = -1.0\n", "[discovery]\nprefetch = nan\n", "[discovery]\nprefetch = 2e6\n"} {
		if _, err := ParseDaemonConfig([]byte(bad), ""); err == nil || !strings.Contains(err.Error(), "discovery.prefetch") {
			t.Errorf("%q: %v, want an error naming discovery.prefetch", bad, err)
		}
	}
}

// TestConfigFetching: discovery.push_mutual and discovery.fetch_ahead
// default by architecture as prefetch does (on and
// discovery.ColyseusFetchAhead under colyseus, off elsewhere), the file
// overrides each alone, and a fetch-ahead out of 0 to 1 s is refused
// naming the key.
func TestConfigFetching(t *testing.T) {
	col := discovery.DefaultFetching(discovery.Colyseus)
	for _, c := range []struct {
		toml string
		want discovery.Fetching
	}{
		{"[discovery]\narch = \"colyseus\"\n", col},
		{"[discovery]\narch = \"colyseus\"\npush_mutual = false\n", discovery.Fetching{Prefetch: col.Prefetch, FetchAhead: col.FetchAhead}},
		{"[discovery]\narch = \"colyseus\"\nfetch_ahead = \"0s\"\n", discovery.Fetching{Prefetch: col.Prefetch, PushMutual: true}},
		{"[discovery]\narch = \"broadcast\"\n", discovery.Fetching{}},
		{"[discovery]\narch = \"broadcast\"\npush_mutual = true\nfetch_ahead = \"250ms\"\n", discovery.Fetching{PushMutual: true, FetchAhead: 250 * time.Millisecond}},
	} {
		cfg, err := ParseDaemonConfig([]byte(c.toml), "")
		if err != nil {
			t.Fatalf("%q: %v", c.toml, err)
		}
		if got := cfg.Discovery.Fetching(); got != c.want {
			t.Errorf("%q: fetching %+v, want %+v", c.toml, got, c.want)
		}
	}
	if col.Prefetch != discovery.ColyseusPrefetch || !col.PushMutual || col.FetchAhead != discovery.ColyseusFetchAhead {
		t.Errorf("colyseus fetching %+v", col)
	}
	for _, bad := range []string{"[discovery]\nfetch_ahead = \"-1s\"\n", "[discovery]\nfetch_ahead = \"2s\"\n"} {
		if _, err := ParseDaemonConfig([]byte(bad), ""); err == nil || !strings.Contains(err.Error(), "discovery.fetch_ahead") {
			t.Errorf("%q: %v, want an error naming discovery.fetch_ahead", bad, err)
		}
	}
}

// TestConfigGossipArchs: membership gossip runs under every architecture;
// a colyseus node with seeds and no static peers joins the running ring
// (JoinsRing), any other bootstraps it; a gossip configuration without
// its key or with a bad seed is still refused, naming the key.
func TestConfigGossipArchs(t *testing.T) {
	for _, c := range []struct {
		arch, extra string
		joins       bool
	}{
		{"directory", "", false},
		{"broadcast", "seeds = [\"10.0.0.1:7946\"]\n", false},
		{"colyseus", "seeds = [\"10.0.0.1:7946\"]\n", true},
		{"colyseus", "", false},
		{"colyseus", "seeds = [\"10.0.0.1:7946\"]\n[[peers]]\nid = 2\naddr = \"10.0.0.2:7100\"\n", false},
	} {
		toml := "[discovery]\narch = \"" + c.arch + "\"\n[membership]\ngossip = \"0.0.0.0:7946\"\nkey_file = \"gossip.key\"\n" + c.extra
		cfg, err := ParseDaemonConfig([]byte(toml), "")
		if err != nil {
			t.Fatalf("%q: %v", toml, err)
		}
		if cfg.JoinsRing() != c.joins {
			t.Errorf("%q: joins the ring %v, want %v", toml, cfg.JoinsRing(), c.joins)
		}
	}
	for bad, key := range map[string]string{
		"[discovery]\narch = \"colyseus\"\n[membership]\ngossip = \"0.0.0.0:7946\"\n":                                          "membership.key_file",
		"[discovery]\narch = \"broadcast\"\n[membership]\ngossip = \"0.0.0.0:7946\"\nkey_file = \"k\"\nseeds = [\"nohost\"]\n": "membership.seeds[0]",
	} {
		if _, err := ParseDaemonConfig([]byte(bad), ""); err == nil || !strings.Contains(err.Error(), key) {
			t.Errorf("%q: %v, want an error naming %s", bad, err, key)
		}
	}
}

// TestConfigFramePhase: frame_phase is read as a duration and needs an
// epoch and a value under one frame; unset, the frames are not aligned.
func TestConfigFramePhase(t *testing.T) {
	const epoch = "epoch = \"2026-01-02T03:04:05Z\"\n"
	c, err := ParseDaemonConfig([]byte(epoch+"frame_phase = \"37ms\"\n"), "")
	if err != nil {
		t.Fatal(err)
	}
	if c.FramePhase == nil || c.FramePhase.Duration != 37*time.Millisecond {
		t.Errorf("frame_phase %v, want 37ms", c.FramePhase)
	}
	if c, err := ParseDaemonConfig([]byte(epoch), ""); err != nil || c.FramePhase != nil {
		t.Errorf("no frame_phase: %v, %v; want unset", c.FramePhase, err)
	}
	for _, bad := range []string{"frame_phase = \"37ms\"\n", epoch + "frame_phase = \"100ms\"\n", epoch + "frame_phase = \"-1ms\"\n",
		epoch + "frame_rate = 20.0\nframe_phase = \"60ms\"\n", epoch + "frame_phase = \"soon\"\n"} {
		if _, err := ParseDaemonConfig([]byte(bad), ""); err == nil || !strings.Contains(err.Error(), "frame_phase") {
			t.Errorf("%q: %v, want an error naming frame_phase", bad, err)
		}
	}
}
