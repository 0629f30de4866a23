package arena

import (
	"math"
	"testing"

	"github.com/overworld/overworld/world"
)

// TestSteerPlayer follows one player avatar through its inputs: it takes
// the input's velocity, fires once per FireEvery, launches its rocket from
// its position in the aimed direction, and neither moves nor fires while
// dead.
func TestSteerPlayer(t *testing.T) {
	g, err := New(Federated(1, Sqr))
	if err != nil {
		t.Fatal(err)
	}
	st := g.Bot.NewState(world.ObjectID(1<<32 | 7))
	g.PlacePlayer(st, 3)
	wp := g.Map.Waypoints[3]
	if st.Int(BotGoal) != PlayerGoal || math.Abs(st.Float(BotX)-wp.X) > 1.0/16 || math.Abs(st.Float(BotY)-wp.Y) > 1.0/16 || st.Int(BotHealth) != MaxHealth {
		t.Fatalf("placed avatar: goal %d at (%v, %v), health %d; want a player at waypoint 3 (%v, %v), full health",
			st.Int(BotGoal), st.Float(BotX), st.Float(BotY), st.Int(BotHealth), wp.X, wp.Y)
	}
	const now = 50
	if r := g.SteerPlayer(st, Input{VX: 2, VY: -1}, now); r != nil || st.Float(BotVX) != 2 || st.Float(BotVY) != -1 {
		t.Fatalf("walk: velocity (%v, %v), rocket %v", st.Float(BotVX), st.Float(BotVY), r != nil)
	}
	rocket := g.SteerPlayer(st, Input{Fire: true, Aim: math.Pi / 2}, now)
	if rocket == nil {
		t.Fatal("a loaded launcher did not fire")
	}
	m := g.Missile.NewState(world.ObjectID(1<<32 | 8))
	rocket(m)
	if m.Float(MissileX) != st.Float(BotX) || m.Float(MissileY) != st.Float(BotY) || math.Abs(m.Float(MissileVX)) > 1e-9 ||
		math.Abs(m.Float(MissileVY)-MissileSpeed) > velQuantum || m.Ref(MissileOwner) != st.ID() ||
		m.Int(MissileExpires) != now+framesOf(MissileLife) {
		t.Fatalf("rocket at (%v, %v) with velocity (%v, %v), owner %v, expiring at %d", m.Float(MissileX), m.Float(MissileY),
			m.Float(MissileVX), m.Float(MissileVY), m.Ref(MissileOwner), m.Int(MissileExpires))
	}
	reload := framesOf(FireEvery)
	if g.SteerPlayer(st, Input{Fire: true}, now+reload-1) != nil {
		t.Error("fired again before the launcher reloaded")
	}
	if g.SteerPlayer(st, Input{Fire: true}, now+reload) == nil {
		t.Error("did not fire once the launcher reloaded")
	}
	st.SetInt(BotMode, ModeDead)
	if g.SteerPlayer(st, Input{VX: 1, Fire: true}, now+10*reload) != nil || st.Float(BotVX) != 0 {
		t.Errorf("a dead avatar fired or took velocity %v", st.Float(BotVX))
	}
}

func FuzzDecodeInput(f *testing.F) {
	f.Add(AppendInput(nil, Input{VX: 3, VY: -4, Fire: true, Aim: 1}))
	f.Add([]byte{2, 0, 0, 0, 0, 0, 0})
	f.Fuzz(func(t *testing.T, b []byte) {
		in, err := DecodeInput(b)
		if err != nil {
			return
		}
		if math.Hypot(in.VX, in.VY) > RunSpeed+1e-9 {
			t.Fatalf("speed %v over RunSpeed", math.Hypot(in.VX, in.VY))
		}
		again, err := DecodeInput(AppendInput(nil, in))
		if err != nil || again.Fire != in.Fire || math.Abs(again.VX-in.VX) > velQuantum || math.Abs(again.VY-in.VY) > velQuantum {
			t.Fatalf("%+v re-decodes as %+v (%v)", in, again, err)
		}
	})
}
