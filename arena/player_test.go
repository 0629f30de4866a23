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

// TestBotRocketsLeaveTheirShooter checks the rockets bots fire in a game
// the way TestSteerPlayer checks a player's: each leaves its shooter's
// position (before the shooter's move that frame) at MissileSpeed, owned
// by the shooter, and expires MissileLife after the frame it was fired.
func TestBotRocketsLeaveTheirShooter(t *testing.T) {
	cfg := Federated(6, Rect)
	cfg.Seed = 3
	g := mustGame(t, cfg)
	l := mustRun(t, g, 3)
	type pos struct{ x, y float64 }
	before := map[world.ObjectID]pos{}
	seen := map[world.ObjectID]bool{}
	checked := 0
	for range 300 {
		clear(before)
		l.Range(func(obj world.Object, _ int) bool {
			if st := obj.State(); st.Schema() == g.Bot {
				before[st.ID()] = pos{st.Float(BotX), st.Float(BotY)}
			}
			return true
		})
		fired := l.Frame()
		l.Step()
		l.Range(func(obj world.Object, _ int) bool {
			m := obj.State()
			if m.Schema() != g.Missile || seen[m.ID()] {
				return true
			}
			seen[m.ID()] = true
			checked++
			shooter, ok := before[m.Ref(MissileOwner)]
			if !ok {
				t.Fatalf("frame %d: rocket %v owned by %v, not a bot", fired, m.ID(), m.Ref(MissileOwner))
			}
			if m.Float(MissileX) != shooter.x || m.Float(MissileY) != shooter.y {
				t.Fatalf("frame %d: rocket %v at (%v, %v), its shooter at (%v, %v)", fired, m.ID(),
					m.Float(MissileX), m.Float(MissileY), shooter.x, shooter.y)
			}
			if v := math.Hypot(m.Float(MissileVX), m.Float(MissileVY)); math.Abs(v-MissileSpeed) > velQuantum {
				t.Fatalf("frame %d: rocket %v flies at %v m/s, want %v", fired, m.ID(), v, MissileSpeed)
			}
			if m.Int(MissileExpires) != fired+framesOf(MissileLife) {
				t.Fatalf("frame %d: rocket %v expires at frame %d, want %d", fired, m.ID(), m.Int(MissileExpires), fired+framesOf(MissileLife))
			}
			return true
		})
	}
	if checked == 0 {
		t.Fatal("no bot fired in 300 frames")
	}
	t.Logf("%d rockets checked", checked)
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
