package discovery

import (
	"errors"
	"slices"
	"testing"

	"github.com/overworld/overworld/wire"
	"github.com/overworld/overworld/world"
)

// TestRunTimeMembers: a broadcast node's members change with SetMembers
// (a list naming a node twice is refused and changes nothing), the other
// architectures ignore it; a colyseus node built with Joins is in no ring
// until it joins, one without it is a member from New; JoinRing and
// LeaveRing refuse the architectures without a ring and a node in the
// wrong state.
func TestRunTimeMembers(t *testing.T) {
	b, err := New(Config{Arch: Broadcast, Self: 2, Members: []wire.NodeID{1, 2, 3}})
	if err != nil {
		t.Fatal(err)
	}
	if got := Members(b, nil); !slices.Equal(got, []wire.NodeID{1, 3}) {
		t.Fatalf("members %v, want [1 3]", got)
	}
	if err := SetMembers(b, []wire.NodeID{4, 2, 1, 4}); !errors.Is(err, ErrConfig) {
		t.Fatalf("a list naming node 4 twice: %v", err)
	}
	if err := SetMembers(b, []wire.NodeID{4, 2, 1}); err != nil {
		t.Fatal(err)
	}
	if got := Members(b, nil); !slices.Equal(got, []wire.NodeID{1, 4}) {
		t.Fatalf("members %v, want [1 4]", got)
	}
	if _, _, ok := RingState(b); ok {
		t.Fatal("broadcast has a ring")
	}
	if JoinRing(b, 0, 1) == nil || LeaveRing(b, 0) == nil {
		t.Fatal("broadcast joined or left a ring")
	}
	d, err := New(Config{Arch: Directory, Self: 2, Infra: 1, Members: []wire.NodeID{1, 2}})
	if err != nil {
		t.Fatal(err)
	}
	if err := SetMembers(d, []wire.NodeID{1, 2, 3}); err != nil || len(Members(d, nil)) != 0 {
		t.Fatalf("directory: %v, %v", err, Members(d, nil))
	}

	space := Space{Dims: 2, Bounds: world.Box{Max: world.Point{400, 100}}, Interest: 20, Speed: 10, Players: 8}
	if _, err := New(Config{Arch: Colyseus, Self: 5, Members: []wire.NodeID{1, 2}, Space: space}); !errors.Is(err, ErrConfig) {
		t.Fatalf("a colyseus node outside its Members: %v", err)
	}
	c, err := New(Config{Arch: Colyseus, Self: 5, Space: space, Joins: true})
	if err != nil {
		t.Fatal(err)
	}
	if m, j, ok := RingState(c); !ok || m || j {
		t.Fatalf("a joiner: member %v, joining %v, ring %v", m, j, ok)
	}
	if LeaveRing(c, 0) == nil || JoinRing(c, 0, 5) == nil {
		t.Fatal("a joiner left, or joined through itself")
	}
	if err := JoinRing(c, 0, 1); err != nil {
		t.Fatal(err)
	}
	if m, j, _ := RingState(c); m || !j {
		t.Fatalf("after JoinRing: member %v, joining %v", m, j)
	}
	m, err := New(Config{Arch: Colyseus, Self: 2, Members: []wire.NodeID{1, 2}, Space: space})
	if err != nil {
		t.Fatal(err)
	}
	if mem, _, _ := RingState(m); !mem {
		t.Fatal("a bootstrapped node is not a member")
	}
	if JoinRing(m, 0, 1) == nil {
		t.Fatal("a member joined again")
	}
	if err := LeaveRing(m, 0); err != nil {
		t.Fatal(err)
	}
	if mem, _, _ := RingState(m); mem {
		t.Fatal("a node that left is still a member")
	}
}
