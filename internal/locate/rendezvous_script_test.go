package locate

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/overworld/overworld/internal/scripttest"
	"github.com/overworld/overworld/wire"
	"github.com/overworld/overworld/world"
)

// TestStoreScripts runs the scripts in testdata/store on rendezvous
// stores. Each script is commands, each followed by "----" and the output
// it must print (package internal/scripttest describes the format). Two
// stores, A and B, share the key map of the last "keys" command; a command
// goes to A unless "@B" precedes it.
//
//	keys x|hilbert ORDER CAP|dht REGIONS  (over a 1000 × 1000 map; resets both stores)
//	pub T ID NODE X,Y TTL                 (ID as origin.seq)
//	sub T NODE SEQ TTL [X0,Y0,X1,Y1 ...]
//	unsub T NODE SEQ | unpub T ID | expire T
//	handoff T LO HI                       (A exports and drops the arc, B imports it; keys as x-coordinates)
//	state | stats
//
// To add a scenario, write a new file in testdata/store with the commands,
// each followed by a "----" line, and run
//
//	go test ./internal/locate -run TestStoreScripts/NAME -rewrite
//
// to fill in the output; read it before committing. The same flag
// rewrites the expectations of every script after an intended change:
// check the diff. The stores draw no random numbers, so a script prints
// the same on every run.
func TestStoreScripts(t *testing.T) {
	scripttest.Run(t, "testdata/store", func(*scripttest.Script) scripttest.Handler {
		return new(storeScript).exec
	})
}

// storeScript is the interpreter of one script.
type storeScript struct {
	keys KeyMap
	a, b *Store
}

func fmtMatches(ms []Match, err error) string {
	var out []string
	if err != nil {
		out = append(out, "error: "+err.Error())
	}
	for _, m := range ms {
		out = append(out, fmt.Sprintf("match to %d: %v of node %d at %g,%g until %v", m.To, m.Pub.ID, m.Pub.Node, m.Pub.Loc[0], m.Pub.Loc[1], m.Pub.Until))
	}
	if len(out) == 0 {
		out = append(out, "no matches")
	}
	return strings.Join(out, "\n")
}

func fmtErr(err error) string {
	if err != nil {
		return "error: " + err.Error()
	}
	return "ok"
}

// point returns argument i, a comma-separated coordinate list, with want
// coordinates.
func point(cmd *scripttest.Cmd, i, want int) []float64 {
	v := cmd.Floats(i)
	if len(v) != want {
		cmd.Fatalf("%q has %d coordinates, want %d", cmd.Arg(i), len(v), want)
	}
	return v
}

func (r *storeScript) exec(cmd *scripttest.Cmd) string {
	s := r.a
	if cmd.Name == "@B" {
		s, cmd = r.b, cmd.Shift()
	}
	if cmd.Name != "keys" && r.a == nil {
		cmd.Fatalf("no keys command yet")
	}
	switch cmd.Name {
	case "keys":
		cmd.Want(1, 3)
		ext := extentBox(1000, 1000)
		var err error
		switch cmd.Arg(0) {
		case "x":
			r.keys, err = NewLinearMap(ext)
		case "hilbert":
			cmd.Want(3, 3)
			r.keys, err = NewHilbertMap(ext, cmd.Int(1), cmd.Int(2))
		case "dht":
			cmd.Want(2, 2)
			r.keys, err = NewRegionMap(ext, cmd.Int(1))
		default:
			cmd.Fatalf("unknown key map %q (want x, hilbert or dht)", cmd.Arg(0))
		}
		if err != nil {
			return fmtErr(err)
		}
		cfg := StoreConfig{Dims: 2, Keys: r.keys, MaxTTL: 10 * time.Second, MaxBoxes: 4}
		if r.a, err = NewStore(cfg); err != nil {
			cmd.Fatalf("%v", err)
		}
		if r.b, err = NewStore(cfg); err != nil {
			cmd.Fatalf("%v", err)
		}
		return "ok"
	case "pub":
		cmd.Want(5, 5)
		at, loc := cmd.Dur(0), point(cmd, 3, 2)
		return fmtMatches(s.Publish(at, Pub{ID: cmd.ObjectID(1), Node: wire.NodeID(cmd.Int(2)), Loc: world.Point{loc[0], loc[1]}, At: at, TTL: cmd.Dur(4)}, nil))
	case "sub":
		cmd.Want(4, -1)
		var boxes []world.Box
		for i := 4; i < len(cmd.Args); i++ {
			v := point(cmd, i, 4)
			boxes = append(boxes, world.Box{Min: world.Point{v[0], v[1]}, Max: world.Point{v[2], v[3]}})
		}
		return fmtMatches(s.Subscribe(cmd.Dur(0), wire.NodeID(cmd.Int(1)), uint64(cmd.Int(2)), boxes, cmd.Dur(3), nil))
	case "unsub":
		cmd.Want(3, 3)
		return fmtErr(s.Unsubscribe(cmd.Dur(0), wire.NodeID(cmd.Int(1)), uint64(cmd.Int(2))))
	case "unpub":
		cmd.Want(2, 2)
		return fmtErr(s.Unpublish(cmd.Dur(0), cmd.ObjectID(1)))
	case "expire":
		cmd.Want(1, 1)
		return fmtErr(s.Expire(cmd.Dur(0)))
	case "handoff":
		cmd.Want(3, 3)
		lo := r.keys.PointKey(world.Point{cmd.Float(1)})
		hi := r.keys.PointKey(world.Point{cmd.Float(2)})
		var h Handoff
		r.a.Export(lo, hi, &h)
		r.a.Drop(lo, hi)
		return fmt.Sprintf("handed off %d publications, %d subscriptions\n%s", len(h.Pubs), len(h.Subs), fmtErr(r.b.Import(cmd.Dur(0), &h)))
	case "state":
		cmd.Want(0, 0)
		var out []string
		for _, p := range s.Publications(nil) {
			out = append(out, fmt.Sprintf("pub %v of node %d at %g,%g until %v", p.ID, p.Node, p.Loc[0], p.Loc[1], p.Until))
		}
		for _, sub := range s.Subscriptions(nil) {
			var bs []string
			for _, b := range sub.Boxes {
				bs = append(bs, fmt.Sprintf("%g,%g,%g,%g", b.Min[0], b.Min[1], b.Max[0], b.Max[1]))
			}
			out = append(out, fmt.Sprintf("sub %d/%d %s until %v (%d key ranges)", sub.Node, sub.Seq, strings.Join(bs, " "), sub.Until, len(sub.Ranges)))
		}
		if len(out) == 0 {
			return "empty"
		}
		return strings.Join(out, "\n")
	case "stats":
		cmd.Want(0, 0)
		st := s.Stats()
		return fmt.Sprintf("published %d subscribed %d refreshed %d withdrawn %d matches %d expired %d+%d rejected %d exported %d imported %d dropped %d",
			st.Published, st.Subscribed, st.Refreshed, st.Withdrawn, st.Matches, st.ExpiredPubs, st.ExpiredSubs, st.Rejected, st.Exported, st.Imported, st.Dropped)
	}
	cmd.Fatalf("unknown command")
	return ""
}
