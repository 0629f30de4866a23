package discovery

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/overworld/overworld/internal/locate"
	"github.com/overworld/overworld/wire"
	"github.com/overworld/overworld/world"
)

// testSpace is the model game's world at 16 players on a rect map: 3
// dimensions, a 6:1 map, interest half-width 20 m, run speed 10 m/s.
var testSpace = Space{Dims: 3, Bounds: world.Box{Max: world.Point{600, 100}}, Interest: 20, Speed: 10, Players: 16}

func TestParseArch(t *testing.T) {
	for _, a := range Archs() {
		got, err := ParseArch(" " + strings.ToUpper(string(a)) + " ")
		if err != nil || got != a {
			t.Errorf("ParseArch(%q) = %q, %v", a, got, err)
		}
	}
	if _, err := ParseArch("mesh"); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), `"mesh"`) {
		t.Errorf("ParseArch(mesh): %v, want an ErrConfig naming it", err)
	}
	for a, want := range map[Arch]bool{Directory: true, ClientServer: true, Broadcast: false, Colyseus: false} {
		if a.HasInfra() != want {
			t.Errorf("%s: HasInfra %v", a, !want)
		}
	}
}

// TestNewPresets: every architecture comes back as its locate type with
// the presets: the directory's margin, jump, idle period, reckoning and
// batching; the colyseus ring's long links, bootstrapped at its even
// share of the key space.
func TestNewPresets(t *testing.T) {
	members := []wire.NodeID{1, 2, 3, 4}
	base := Config{Self: 2, Members: members, Infra: 5, Space: testSpace, Seed: 7}

	c := base
	c.Arch = Directory
	d, err := New(c)
	if err != nil {
		t.Fatal(err)
	}
	dc := d.(*locate.Directory).Config()
	if dc.Rendezvous != 5 || dc.Margin != (world.Point{10, 10, 0}) || dc.Jump != 15 || dc.IdleEvery != IdleEvery ||
		!dc.Reckon || !dc.BatchMatches || dc.PublishPeriod != PublishPeriod {
		t.Errorf("directory config %+v", dc)
	}
	if !slices.Equal(dc.Standby, []wire.NodeID{1, 2}) {
		t.Errorf("directory standbys %v, want the two members of lowest ID, [1 2]", dc.Standby)
	}
	for _, sb := range [][]wire.NodeID{{4, 3}, {}} {
		c.Standby = sb
		if d, err = New(c); err != nil {
			t.Fatal(err)
		}
		if got := d.(*locate.Directory).Config().Standby; !slices.Equal(got, sb) {
			t.Errorf("directory standbys %v given, %v used", sb, got)
		}
	}
	c.Standby = nil

	c.Arch = Broadcast
	if d, err = New(c); err != nil {
		t.Fatal(err)
	}
	if _, ok := d.(*locate.Broadcast); !ok {
		t.Errorf("broadcast: %T", d)
	}

	c.Arch = ClientServer
	if d, err = New(c); err != nil {
		t.Fatal(err)
	}
	if cs, ok := d.(*locate.ClientServer); !ok || cs.Server() != 5 {
		t.Errorf("client-server: %T", d)
	}

	for _, paper := range []bool{false, true} {
		c = base
		c.Arch, c.PaperRouting, c.Start = Colyseus, paper, 3*time.Second
		d, err := New(c)
		if err != nil {
			t.Fatal(err)
		}
		m := d.(*locate.Mercury)
		r := m.Ring()
		want := RingMembers(members)[1].Key
		if !r.Member() || r.Key() != want {
			t.Errorf("paper routing %v: ring member %v at key %#x, want a member at %#x", paper, r.Member(), r.Key(), want)
		}
		links := RingLinks
		if paper {
			links = PaperRingLinks
		}
		if got := r.Config().Links; got != links {
			t.Errorf("paper routing %v: %d long links, want %d", paper, got, links)
		}
		mc := m.Config()
		if mc.PublishPeriod != PublishPeriod || mc.IdleEvery != IdleEvery || mc.Jump != 15 || mc.Predict.PredTime != DefaultPredTime || !mc.Sweep {
			t.Errorf("colyseus config: period %v, idle %v, jump %v, pred %v, sweep %v", mc.PublishPeriod, mc.IdleEvery, mc.Jump, mc.Predict.PredTime, mc.Sweep)
		}
	}
	c = base
	c.Arch, c.PredTime = Colyseus, -1
	if d, err := New(c); err != nil || d.(*locate.Mercury).Config().Predict.PredTime != 0 {
		t.Errorf("negative PredTime: %v, want no prediction", err)
	}
}

func TestNewErrors(t *testing.T) {
	ok := Config{Arch: Colyseus, Self: 1, Members: []wire.NodeID{1, 2}, Infra: 3, Space: testSpace}
	for _, tc := range []struct {
		name string
		mod  func(*Config)
		want string
	}{
		{"arch", func(c *Config) { c.Arch = "mesh" }, "mesh"},
		{"self", func(c *Config) { c.Self = 0 }, "Self"},
		{"infra", func(c *Config) { c.Arch, c.Infra = Directory, 0 }, "Infra"},
		{"speed", func(c *Config) { c.Arch, c.Space.Speed = Directory, math.NaN() }, "Speed"},
		{"members", func(c *Config) { c.Arch, c.Members = Broadcast, nil }, "Members"},
		{"twice", func(c *Config) { c.Arch, c.Members = Broadcast, []wire.NodeID{1, 2, 2} }, "twice"},
		{"not a member", func(c *Config) { c.Self = 9 }, "not one of"},
		{"dims", func(c *Config) { c.Space.Dims = 1 }, "Dims"},
		{"key map", func(c *Config) { c.KeyMap = "zorder" }, "zorder"},
		{"standby is infra", func(c *Config) { c.Arch, c.Standby = Directory, []wire.NodeID{1, 3} }, "twice"},
		{"standby 0", func(c *Config) { c.Arch, c.Standby = Directory, []wire.NodeID{0} }, "node 0"},
	} {
		c := ok
		tc.mod(&c)
		if _, err := New(c); !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an ErrConfig naming %q", tc.name, err, tc.want)
		}
	}
	if _, err := New(ok); err != nil {
		t.Fatal(err)
	}
}

// TestDefaultStandby: the members of lowest ID but the infrastructure
// node, at most Standbys of them, whatever the members' order.
func TestDefaultStandby(t *testing.T) {
	for _, c := range []struct {
		infra   wire.NodeID
		members []wire.NodeID
		want    []wire.NodeID
	}{
		{9, []wire.NodeID{4, 2, 7, 3}, []wire.NodeID{2, 3}},
		{2, []wire.NodeID{4, 2, 7, 3, 3}, []wire.NodeID{3, 4}},
		{1, []wire.NodeID{1, 5}, []wire.NodeID{5}},
		{1, []wire.NodeID{1}, nil},
		{1, nil, nil},
	} {
		if got := DefaultStandby(c.infra, c.members); !slices.Equal(got, c.want) {
			t.Errorf("DefaultStandby(%d, %v) = %v, want %v", c.infra, c.members, got, c.want)
		}
	}
}

// TestRingMembers: the members in ID order, evenly over the key space, the
// last at its top.
func TestRingMembers(t *testing.T) {
	got := RingMembers([]wire.NodeID{7, 2, 5})
	step := ^uint64(0) / 3
	want := []wire.RingPeer{{ID: 2, Key: step}, {ID: 5, Key: 2 * step}, {ID: 7, Key: ^uint64(0)}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("RingMembers: %v, want %v", got, want)
	}
	if len(RingMembers(nil)) != 0 {
		t.Error("RingMembers(nil) is not empty")
	}
}

// TestAutoKeyMap: the x key on maps at least twice as long as wide, the
// Hilbert curve elsewhere, wherever the map starts.
func TestAutoKeyMap(t *testing.T) {
	for _, c := range []struct {
		b    world.Box
		want string
	}{
		{world.Box{Max: world.Point{600, 100}}, KeyMapLinear},
		{world.Box{Max: world.Point{200, 100}}, KeyMapLinear},
		{world.Box{Max: world.Point{199, 100}}, KeyMapHilbert},
		{world.Box{Max: world.Point{100, 100}}, KeyMapHilbert},
		{world.Box{Min: world.Point{-100, 0}, Max: world.Point{100, 100}}, KeyMapLinear},
	} {
		if got := AutoKeyMap(c.b); got != c.want {
			t.Errorf("%v: %s, want %s", c.b, got, c.want)
		}
	}
}
