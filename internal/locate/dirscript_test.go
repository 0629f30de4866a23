package locate

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/overworld/overworld/internal/scripttest"
	"github.com/overworld/overworld/wire"
	"github.com/overworld/overworld/world"
)

// TestDirectoryScripts runs the scripts in testdata/directory on a cluster
// of directory locators (dirNet: frames of 50 ms, every packet one frame
// on the way). Commands:
//
//	cluster N rdv=R [standby=A,B] [failback=DUR] [idle=DUR]  (nodes 1 to N)
//	obj NODE X,Y                    (a new primary of NODE, not moving)
//	view NODE X0,Y0,X1,Y1           (NODE's view)
//	run DUR                         (prints what changed, frame by frame)
//	kill NODE | restart NODE        (a crash; a new run of the node)
//	dead NODE [by=A,B] | alive NODE [by=A,B]  (failure detectors' verdicts; by default every other node's)
//	forget                          (every node drops its findings)
//	state
//
// run prints, at the frame it happens, every change of a node's
// rendezvous, targets or watch list (after the node's first frame), and
// every finding of an object its
// node held no live finding of ("learns"). To add a scenario, write a new
// file in testdata/directory and run
//
//	go test ./internal/locate -run TestDirectoryScripts/NAME -rewrite
//
// then read the output before committing it. The cluster draws no random
// numbers.
func TestDirectoryScripts(t *testing.T) {
	scripttest.Run(t, "testdata/directory", func(s *scripttest.Script) scripttest.Handler {
		return (&dirScript{t: s.T}).exec
	})
}

// dirScript is the interpreter of one script.
type dirScript struct {
	t    *testing.T
	c    *dirNet
	seen []string // each node's last printed rendezvous, targets and watch
	log  []string
}

func (s *dirScript) exec(cmd *scripttest.Cmd) string {
	if cmd.Name != "cluster" && s.c == nil {
		cmd.Fatalf("no cluster command yet")
	}
	node := func(i int) wire.NodeID {
		id := cmd.Int(i)
		if id < 1 || id > len(s.c.dirs) {
			cmd.Fatalf("node %d: want 1 to %d", id, len(s.c.dirs))
		}
		return wire.NodeID(id)
	}
	ids := func(v string) []wire.NodeID {
		var out []wire.NodeID
		for _, f := range strings.Split(v, ",") {
			out = append(out, wire.NodeID(cmd.ParseInt(f)))
		}
		return out
	}
	switch cmd.Name {
	case "cluster":
		cmd.Want(2, 5)
		opts := cmd.Options(1, "rdv", "standby", "failback", "idle")
		cfg := DefaultDirectoryConfig(wire.NodeID(cmd.ParseInt(opts["rdv"])))
		if v, ok := opts["standby"]; ok {
			cfg.Standby = ids(v)
		}
		if v, ok := opts["failback"]; ok {
			cfg.FailBack = cmd.ParseDur(v)
		}
		if v, ok := opts["idle"]; ok {
			cfg.IdleEvery = cmd.ParseDur(v)
		}
		if _, err := NewDirectory(1, cfg); err != nil {
			return "error: " + err.Error()
		}
		s.c = newDirNet(s.t, cmd.Int(0), cfg)
		s.c.learn = func(id, from wire.NodeID, f Found) {
			src := "itself"
			if from != 0 {
				src = fmt.Sprint(from)
			}
			s.log = append(s.log, fmt.Sprintf("at %v node %d learns %v (of node %d) from %s", s.c.now, id, f.ID, f.Node, src))
		}
		s.seen = make([]string, len(s.c.dirs)) // "": not printed at a node's first frame
		return "ok"
	case "obj":
		cmd.Want(2, 2)
		n := node(0)
		v := point(cmd, 1, 2)
		id := world.MakeObjectID(uint32(n), uint32(len(s.c.prims[n-1])+1))
		s.c.prims[n-1] = append(s.c.prims[n-1], Primary{ID: id, Loc: world.Point{v[0], v[1]}, New: true})
		return fmt.Sprint(id)
	case "view":
		cmd.Want(2, 2)
		n := node(0)
		v := point(cmd, 1, 4)
		s.c.views[n-1] = []world.Box{{Min: world.Point{v[0], v[1]}, Max: world.Point{v[2], v[3]}}}
		return "ok"
	case "run":
		cmd.Want(1, 1)
		end := s.c.now + cmd.Dur(0)
		s.log = s.log[:0]
		for s.c.now < end {
			s.c.step()
			for i, d := range s.c.dirs {
				if s.c.down[i] {
					continue
				}
				if r := s.role(d, &s.c.outs[i]); r != s.seen[i] {
					if s.seen[i] != "" {
						s.log = append(s.log, fmt.Sprintf("at %v node %d: %s", s.c.now, i+1, r))
					}
					s.seen[i] = r
				}
			}
		}
		if len(s.log) == 0 {
			return "nothing new"
		}
		return strings.Join(s.log, "\n")
	case "kill":
		cmd.Want(1, 1)
		s.c.kill(node(0))
		return "ok"
	case "restart":
		cmd.Want(1, 1)
		n := node(0)
		s.c.restart(n)
		s.c.dead[n-1] = nil
		s.seen[n-1] = ""
		return "ok"
	case "dead", "alive":
		cmd.Want(1, 2)
		n := node(0)
		by := []wire.NodeID{}
		if v, ok := cmd.Options(1, "by")["by"]; ok {
			by = ids(v)
		} else {
			for i := range s.c.dirs {
				if id := wire.NodeID(i + 1); id != n {
					by = append(by, id)
				}
			}
		}
		for _, b := range by {
			s.c.setDead(b, n, cmd.Name == "dead")
		}
		return "ok"
	case "forget":
		cmd.Want(0, 0)
		s.c.forget()
		return "ok"
	case "state":
		cmd.Want(0, 0)
		var out []string
		for i, d := range s.c.dirs {
			if s.c.down[i] {
				out = append(out, fmt.Sprintf("node %d: down", i+1))
				continue
			}
			line := fmt.Sprintf("node %d: %s", i+1, s.role(d, &s.c.outs[i]))
			if p, sub := d.Stored(); p+sub > 0 {
				line += fmt.Sprintf("; stores %d publications, %d subscriptions", p, sub)
			}
			var known []string
			for id := range s.c.found[i] {
				if s.c.knows(wire.NodeID(i+1), id) {
					known = append(known, fmt.Sprint(id))
				}
			}
			if len(known) > 0 {
				slices.Sort(known)
				line += "; knows " + strings.Join(known, " ")
			}
			out = append(out, line)
		}
		return strings.Join(out, "\n")
	}
	cmd.Fatalf("unknown command")
	return ""
}

// role describes where node d's locator sends and what it watches.
func (s *dirScript) role(d *Directory, out *Out) string {
	return fmt.Sprintf("rendezvous %d, sends to %v, watches %v", d.Rendezvous(), d.Targets(), out.Watch)
}
