package discovery_test

import (
	"fmt"

	"github.com/overworld/overworld/discovery"
	"github.com/overworld/overworld/wire"
	"github.com/overworld/overworld/world"
)

// Each node of a four-node cluster builds its discovery from the same
// Config but for Self; under colyseus every node comes back a member of
// the ring, owning an even share of the key space.
func Example() {
	arch, err := discovery.ParseArch("colyseus")
	if err != nil {
		panic(err)
	}
	members := []wire.NodeID{1, 2, 3, 4}
	space := discovery.Space{Dims: 2, Bounds: world.Box{Max: world.Point{400, 100}}, Interest: 20, Speed: 10, Players: 32}
	for _, id := range members {
		d, err := discovery.New(discovery.Config{Arch: arch, Self: id, Members: members, Space: space, Seed: 1})
		if err != nil {
			panic(err)
		}
		fmt.Printf("node %d: %T\n", id, d) // hand d to node.Config.Discovery
	}
	fmt.Println("key mapping:", discovery.AutoKeyMap(space.Bounds))
	fmt.Println("directory margin:", space.Margin()[0], "m, jump:", space.Jump(), "m")
	// Output:
	// node 1: *locate.Mercury
	// node 2: *locate.Mercury
	// node 3: *locate.Mercury
	// node 4: *locate.Mercury
	// key mapping: rangedht-x
	// directory margin: 10 m, jump: 15 m
}
