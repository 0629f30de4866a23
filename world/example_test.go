package world_test

import (
	"fmt"

	"github.com/overworld/overworld/world"
)

// avatar is a game object: it walks east and is interested in the
// 20 × 20 square around itself.
type avatar struct{ st *world.State }

func (a *avatar) State() *world.State { return a.st }

func (a *avatar) Interest(dst []world.Box) []world.Box {
	half := world.Point{10, 10, 1}
	return append(dst, world.BoxAround(a.st.Location(), half))
}

func (a *avatar) Think(ctx world.Context) {
	a.st.SetFloat(fx, a.st.Float(fx)+0.5)
}

// The avatar's schema: a position (the naming attributes of world.XYZ),
// a health counter and a flag. Field indices are resolved once.
var (
	avatarSchema = world.MustSchema("example.avatar", world.XYZ, []world.Field{
		{Name: "x", Type: world.Float, Quantum: 1.0 / 16},
		{Name: "y", Type: world.Float, Quantum: 1.0 / 16},
		{Name: "z", Type: world.Float},
		{Name: "health", Type: world.Int},
		{Name: "it", Type: world.Bool},
	}, func(st *world.State) world.Object { return &avatar{st: st} })
	fx      = avatarSchema.MustField("x")
	fy      = avatarSchema.MustField("y")
	fhealth = avatarSchema.MustField("health")
	fit     = avatarSchema.MustField("it")
)

// A schema, one object created and updated on its primary, and the
// field-wise deltas that keep a replica equal to it. The runtime does all of
// this; a game only declares the schema and writes Think.
func Example() {
	reg, err := world.NewRegistry(world.XYZ, avatarSchema)
	if err != nil {
		panic(err)
	}
	kind, _ := reg.Kind(avatarSchema)
	fmt.Println("kind", kind, avatarSchema.Name(), "with", avatarSchema.NumFields(), "fields")

	// The primary: the runtime makes the State (node 3's first object)
	// and the game initialises it.
	primary := avatarSchema.NewState(world.MakeObjectID(3, 1))
	primary.SetLocation(world.Point{12.3, 40})
	primary.SetInt(fhealth, 100)
	at := primary.Location()
	fmt.Println("object", primary.ID(), "at", at[:2], "(x quantised to 1/16)")

	// The first message to a replica is a delta from the zero state.
	full := world.AppendDelta(nil, nil, primary)
	replica := avatarSchema.NewState(primary.ID())
	if _, err := world.ApplyDelta(replica, nil, full); err != nil {
		panic(err)
	}
	fmt.Println("full state:", len(full), "bytes; replica equal:", replica.Equal(primary))

	// One frame later the avatar has stepped east and is "it": the update
	// carries the two changed fields only.
	base := primary.Clone()
	primary.SetFloat(fx, primary.Float(fx)+0.5) // what avatar.Think does
	primary.SetBool(fit, true)
	delta := world.AppendDelta(nil, base, primary)
	if _, err := world.ApplyDelta(replica, replica, delta); err != nil {
		panic(err)
	}
	fmt.Println("delta:", len(delta), "bytes; replica equal:", replica.Equal(primary))
	fmt.Println("replica at x =", replica.Float(fx), "y =", replica.Float(fy), "it:", replica.Bool(fit))
	obj := avatarSchema.NewObject(primary) // how the runtime builds the game's object
	fmt.Println("interest:", world.XYZ.Format(obj.Interest(nil)[0]))
	// Output:
	// kind 1 example.avatar with 5 fields
	// object 3.1 at [12.3125 40] (x quantised to 1/16)
	// full state: 7 bytes; replica equal: true
	// delta: 3 bytes; replica equal: true
	// replica at x = 12.8125 y = 40 it: true
	// interest: 2.8125 <= x <= 22.8125 && 30 <= y <= 50 && -1 <= z <= 1
}

// Two nodes hit the same avatar in one frame, each through its replica: the
// tentative writes carry differences, so both hits count at the primary.
func Example_tentativeWrites() {
	primary := avatarSchema.NewState(world.MakeObjectID(1, 7))
	primary.SetInt(fhealth, 100)

	var writes [][]byte
	for _, damage := range []int64{30, 25} {
		replica := primary.Clone() // the shooter's node holds a replica
		before := replica.Clone()
		replica.SetInt(fhealth, replica.Int(fhealth)-damage)
		writes = append(writes, world.AppendWrite(nil, before, replica))
	}
	for _, w := range writes {
		if _, err := world.ApplyWrite(primary, w); err != nil {
			panic(err)
		}
	}
	fmt.Println("health after both hits:", primary.Int(fhealth))
	// Output:
	// health after both hits: 45
}
