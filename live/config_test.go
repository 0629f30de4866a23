package live

import (
	"reflect"
	"strings"
	"testing"
	"time"

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
