package node

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/overworld/overworld/internal/scripttest"
	"github.com/overworld/overworld/wire"
	"github.com/overworld/overworld/world"
)

// TestScenarios runs the scripts in testdata/scenarios on the test
// cluster (harness_test.go), with its invariants checked after every
// event. Each script is commands, each followed by "----" and the output
// it must print (package internal/scripttest describes the format):
//
//	cluster nodes=N arch=directory|broadcast|client-server [latency=30ms] [margin=M] [rendezvous=ID] [seed=1]
//	        [failover=on] [delays=known|unknown]
//	spawn NODE walker|missile field=value ...   create a primary (prints its ID)
//	run DURATION [trace=on]                     advance virtual time (prints the new time)
//	objects                                     every node's primaries and replicas
//	write NODE ID field+=delta | field=value ... node.Write (a tentative write on a replica)
//	delete NODE ID
//	trace on|off                                print every delivered packet during run
//	stats                                       bytes and packets sent per node and class
//	garbage NODE                                deliver malformed packets to NODE
//	prefer NODE X0,Y0,X1,Y1 B1,B2,…             node.PreferBackup: preferred backups in a box
//	crash NODE | partition A,B C,D | heal        stop a node; cut the cluster in sides; end the cut
//	stall NODE DURATION                          the node runs nothing for DURATION (starved of CPU)
//	epochs                                      every node's primaries, epochs, backups and dead peers
//
// To add a scenario, write a new file in testdata/scenarios with the
// commands, each followed by a "----" line, and run
//
//	go test ./node -run TestScenarios/NAME -rewrite
//
// to fill in the output; read it before committing. The same flag
// rewrites the expectations of every script after an intended change:
// check the diff. The cluster's random source is seeded (seed=, default
// 1), so a script prints the same on every run; a failure reports the
// seed.
func TestScenarios(t *testing.T) {
	scripttest.Run(t, "testdata/scenarios", func(s *scripttest.Script) scripttest.Handler {
		sc := &scenario{s: s, g: newGame(100)}
		return sc.exec
	})
}

// scenario is the interpreter of one script.
type scenario struct {
	s     *scripttest.Script
	g     *game
	c     *cluster
	trace bool
	out   strings.Builder
}

func (sc *scenario) exec(cmd *scripttest.Cmd) string {
	sc.out.Reset()
	if cmd.Name != "cluster" && sc.c == nil {
		cmd.Fatalf("no cluster yet")
	}
	c := sc.c
	switch cmd.Name {
	case "cluster":
		kv := cmd.Options(0, "nodes", "arch", "latency", "margin", "rendezvous", "seed", "failover", "delays")
		o := clusterOpts{arch: kv["arch"], latency: 30 * time.Millisecond, seed: 1}
		if kv["nodes"] == "" || kv["arch"] == "" {
			cmd.Fatalf("nodes= and arch= are required")
		}
		if o.nodes = cmd.ParseInt(kv["nodes"]); o.nodes < 1 {
			cmd.Fatalf("nodes=%d: want at least 1", o.nodes)
		}
		if v, ok := kv["latency"]; ok {
			o.latency = cmd.ParseDur(v)
		}
		if v, ok := kv["margin"]; ok {
			o.margin = cmd.ParseFloat(v)
		}
		if v, ok := kv["rendezvous"]; ok {
			o.rendezvous = wire.NodeID(cmd.ParseInt(v))
		}
		if v, ok := kv["seed"]; ok {
			seed, err := strconv.ParseUint(v, 10, 64)
			if err != nil {
				cmd.Fatalf("seed: %v", err)
			}
			o.seed = seed
		}
		if v, ok := kv["failover"]; ok {
			o.failover = v == "on"
		}
		if v, ok := kv["delays"]; ok {
			// delays=unknown: the failure detector has no delay
			// estimates (a live daemon's).
			if v != "unknown" && v != "known" {
				cmd.Fatalf("delays=%s: want known or unknown", v)
			}
			o.blind = v == "unknown"
		}
		sc.s.SetSeed(o.seed)
		sc.c = newCluster(sc.s.T, sc.g, o)
		sc.c.check = true
	case "spawn":
		cmd.Want(2, -1)
		n := sc.node(cmd, 0)
		s := map[string]*world.Schema{"walker": sc.g.walker, "missile": sc.g.missile}[cmd.Arg(1)]
		if s == nil {
			cmd.Fatalf("unknown kind %q (want walker or missile)", cmd.Arg(1))
		}
		obj, err := n.Spawn(c.now, s, func(st *world.State) { setFields(cmd, st, cmd.Args[2:]) })
		if err != nil {
			cmd.Fatalf("%v", err)
		}
		c.buf = n.Drain(c.buf[:0])
		c.send(c.buf)
		c.record()
		fmt.Fprintf(&sc.out, "created %v on node %d\n", obj.State().ID(), n.ID())
	case "run":
		cmd.Want(1, 2)
		d := cmd.Dur(0)
		c.trace = nil
		if sc.trace || cmd.Options(1, "trace")["trace"] == "on" {
			c.trace = &sc.out
		}
		c.run(c.now + d)
		fmt.Fprintf(&sc.out, "now %s\n", fmtDur(c.now))
	case "trace":
		cmd.Want(1, 1)
		switch cmd.Arg(0) {
		case "on", "off":
			sc.trace = cmd.Arg(0) == "on"
		default:
			cmd.Fatalf("want on or off")
		}
	case "objects":
		cmd.Want(0, 0)
		c.dump(&sc.out)
	case "stats":
		cmd.Want(0, 0)
		c.stats(&sc.out)
	case "write":
		cmd.Want(3, -1)
		n := sc.node(cmd, 0)
		err := n.Write(cmd.ObjectID(1), func(st *world.State) { setFields(cmd, st, cmd.Args[2:]) })
		fmt.Fprintf(&sc.out, "write: %v\n", scripttest.Result(err))
		c.buf = n.Drain(c.buf[:0])
		c.send(c.buf)
	case "delete":
		cmd.Want(2, 2)
		n := sc.node(cmd, 0)
		err := c.del(n, cmd.ObjectID(1))
		fmt.Fprintf(&sc.out, "delete: %v\n", scripttest.Result(err))
		c.buf = n.Drain(c.buf[:0])
		c.send(c.buf)
		c.record()
	case "migrate":
		cmd.Want(3, 3)
		n := sc.node(cmd, 0)
		ids, err := n.Migrate(c.now, cmd.ObjectID(1), wire.NodeID(cmd.Int(2)))
		fmt.Fprintf(&sc.out, "migrate: %v %v\n", ids, scripttest.Result(err))
		c.buf = n.Drain(c.buf[:0])
		c.send(c.buf)
		c.record()
	case "writeto":
		cmd.Want(4, -1)
		n := sc.node(cmd, 0)
		s := map[string]*world.Schema{"walker": sc.g.walker, "missile": sc.g.missile}[cmd.Arg(2)]
		err := n.WriteTo(cmd.ObjectID(1), s, func(st *world.State) { setFields(cmd, st, cmd.Args[3:]) })
		fmt.Fprintf(&sc.out, "writeto: %v\n", scripttest.Result(err))
		c.buf = n.Drain(c.buf[:0])
		c.send(c.buf)
	case "prefer":
		// prefer NODE X0,Y0,X1,Y1 B1,B2,…: node.PreferBackup on NODE.
		cmd.Want(3, 3)
		n := sc.node(cmd, 0)
		var box world.Box
		if _, err := fmt.Sscanf(cmd.Arg(1), "%g,%g,%g,%g", &box.Min[0], &box.Min[1], &box.Max[0], &box.Max[1]); err != nil {
			cmd.Fatalf("box %q: want X0,Y0,X1,Y1", cmd.Arg(1))
		}
		var order []wire.NodeID
		for _, f := range strings.Split(cmd.Arg(2), ",") {
			v, err := strconv.Atoi(f)
			if err != nil {
				cmd.Fatalf("bad node %q", f)
			}
			order = append(order, wire.NodeID(v))
		}
		fmt.Fprintf(&sc.out, "prefer: %v\n", scripttest.Result(n.PreferBackup(box, order)))
	case "crash":
		cmd.Want(1, 1)
		n := sc.node(cmd, 0)
		c.crash(n.ID())
		fmt.Fprintf(&sc.out, "node %d crashed\n", n.ID())
	case "stall":
		// stall NODE DURATION: the node runs no frame and reads no packet
		// for DURATION (a process starved of CPU); what is sent to it
		// waits, in order, and arrives when it runs again.
		cmd.Want(2, 2)
		n := sc.node(cmd, 0)
		d := cmd.ParseDur(cmd.Arg(1))
		c.stalled[n.ID()] = c.now + d
		fmt.Fprintf(&sc.out, "node %d stalled until %v\n", n.ID(), fmtDur(c.now+d))
	case "partition":
		// partition 1,2 3,4: two sides; nodes not listed reach everyone.
		cmd.Want(2, -1)
		clear(c.side)
		for k := range cmd.Args {
			for _, f := range strings.Split(cmd.Arg(k), ",") {
				v, err := strconv.Atoi(f)
				if err != nil || v < 1 || v > len(c.nodes) {
					cmd.Fatalf("bad node %q", f)
				}
				c.side[wire.NodeID(v)] = k + 1
			}
		}
	case "heal":
		cmd.Want(0, 0)
		c.heal()
	case "epochs":
		cmd.Want(0, 0)
		for _, n := range c.up() {
			fmt.Fprintf(&sc.out, "node %d:", n.ID())
			for _, in := range n.Primaries(nil) {
				ep, _ := n.Epoch(in.ID)
				fmt.Fprintf(&sc.out, " %v@e%s", in.ID, fmtEpoch(ep))
				if b, ok := n.BackupOf(in.ID); ok {
					fmt.Fprintf(&sc.out, "(backup %d)", b)
				}
			}
			if d := n.Dead(nil); len(d) > 0 {
				fmt.Fprintf(&sc.out, "; dead %v", d)
			}
			fmt.Fprintln(&sc.out)
		}
	case "garbage":
		cmd.Want(1, 1)
		n := sc.node(cmd, 0)
		before := dumpNode(n)
		m0 := n.Stats().Malformed
		ps := garbagePackets(n.ID())
		for _, p := range ps {
			n.Step(c.now, p)
		}
		fmt.Fprintf(&sc.out, "malformed packets rejected: %d of %d; state unchanged: %v\n",
			n.Stats().Malformed-m0, len(ps), dumpNode(n) == before)
	default:
		cmd.Fatalf("unknown command")
	}
	return sc.out.String()
}

// node returns the node named by argument i.
func (sc *scenario) node(cmd *scripttest.Cmd, i int) *Node {
	v := cmd.Int(i)
	if v < 1 || v > len(sc.c.nodes) {
		cmd.Fatalf("no node %d (the cluster has nodes 1 to %d)", v, len(sc.c.nodes))
	}
	return sc.c.node(wire.NodeID(v))
}

// firstDiff names the first line where got and want differ.
func firstDiff(got, want string) string {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := range max(len(g), len(w)) {
		var a, b string
		if i < len(g) {
			a = g[i]
		}
		if i < len(w) {
			b = w[i]
		}
		if a != b {
			return fmt.Sprintf("line %d:\n got: %s\nwant: %s", i+1, a, b)
		}
	}
	return ""
}

func dumpNode(n *Node) string {
	var b strings.Builder
	for _, in := range n.Objects(nil) {
		fmt.Fprintf(&b, "%v %v %d %v %s\n", in.ID, in.Primary, in.Version, in.Produced, fmtState(in.State))
	}
	return b.String()
}

// setFields applies field=value and field+=delta assignments.
func setFields(cmd *scripttest.Cmd, st *world.State, assigns []string) {
	for _, a := range assigns {
		k, v, ok := strings.Cut(a, "=")
		if !ok {
			cmd.Fatalf("bad assignment %q (want field=value or field+=delta)", a)
		}
		add := strings.HasSuffix(k, "+")
		k = strings.TrimSuffix(k, "+")
		i := st.Schema().Field(k)
		if i < 0 {
			cmd.Fatalf("%s has no field %q", st.Schema().Name(), k)
		}
		switch st.Schema().FieldAt(i).Type {
		case world.Ref:
			st.SetRef(i, cmd.ParseObjectID(v))
		default:
			x := cmd.ParseFloat(v)
			if add {
				x += st.Float(i)
			}
			st.SetFloat(i, x)
		}
	}
}

// garbagePackets returns packets that must all be rejected: bad headers,
// truncated and overlong frames, unknown kinds, corrupt deltas and writes.
func garbagePackets(to wire.NodeID) []wire.Packet {
	var ps []wire.Packet
	add := func(p []byte) { ps = append(ps, wire.Packet{From: 2, To: to, Class: wire.ClassUpdate, Payload: p}) }
	add(nil)
	add([]byte{wire.Version + 1, 1, 0})
	add([]byte{wire.Version, 42, 0})
	add([]byte{wire.Version, byte(wire.TypeAcks), 9, 1})
	// A valid ack followed by a full state of an unknown kind: the ack must
	// not be applied either.
	b := wire.AppendHeader(nil)
	b = wire.AppendAcks(b, &wire.Acks{Entries: []wire.Ack{{ID: world.MakeObjectID(uint32(to), 1), Version: 1}}})
	add(wire.AppendUpdates(b, &wire.Updates{Entries: []wire.Update{{ID: world.MakeObjectID(2, 77), Kind: 9, Version: 1, Data: []byte{0}}}}))
	// A full state whose change mask names fields the schema lacks.
	add(wire.AppendUpdates(wire.AppendHeader(nil), &wire.Updates{Entries: []wire.Update{{ID: world.MakeObjectID(2, 78), Kind: 1, Version: 1,
		Data: []byte{0xff, 0xff, 0x03}}}}))
	// A tentative write to a local primary with trailing bytes.
	add(wire.AppendWrites(wire.AppendHeader(nil), &wire.Writes{Entries: []wire.Write{{ID: world.MakeObjectID(uint32(to), 1), Data: []byte{1, 2, 3, 4}}}}))
	return ps
}
