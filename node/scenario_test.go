package node

import (
	"bufio"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/overworld/overworld/wire"
	"github.com/overworld/overworld/world"
)

var update = flag.Bool("update", false, "rewrite the golden scenario outputs in testdata")

// TestScenarios runs the scripts testdata/*.txt and compares their output
// with testdata/*.golden (regenerate with go test ./node -run Scenarios
// -update). Commands, one per line (# starts a comment):
//
//	cluster nodes=N arch=directory|broadcast|client-server [latency=30ms] [margin=M] [rendezvous=ID]
//	spawn NODE walker|missile field=value ...   create a primary (prints its ID)
//	run DURATION                                 advance virtual time
//	objects                                      every node's primaries and replicas
//	write NODE ID field+=delta | field=value ... node.Write (a tentative write on a replica)
//	delete NODE ID
//	trace on|off                                 print every delivered packet
//	stats                                        bytes and packets sent per node and class
//	garbage NODE                                 deliver malformed packets to NODE
func TestScenarios(t *testing.T) {
	files, err := filepath.Glob("testdata/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scenarios: %v", err)
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".txt"), func(t *testing.T) {
			got := runScript(t, f)
			golden := strings.TrimSuffix(f, ".txt") + ".golden"
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
				return
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("output differs from %s (run with -update to accept):\n%s", golden, firstDiff(got, string(want)))
			}
		})
	}
}

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

func runScript(t *testing.T, path string) string {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out strings.Builder
	g := newGame(100)
	var c *cluster
	sc := bufio.NewScanner(f)
	line := 0
	for sc.Scan() {
		line++
		text := strings.TrimSpace(sc.Text())
		if text == "" || strings.HasPrefix(text, "#") {
			out.WriteString(sc.Text() + "\n")
			continue
		}
		fail := func(format string, args ...any) {
			t.Fatalf("%s:%d: %s: %s", path, line, text, fmt.Sprintf(format, args...))
		}
		args := strings.Fields(text)
		if c != nil {
			fmt.Fprintf(&out, "> %s   [t=%s]\n", text, fmtDur(c.now))
		} else {
			fmt.Fprintf(&out, "> %s\n", text)
		}
		kv := map[string]string{}
		for _, a := range args[1:] {
			if k, v, ok := strings.Cut(a, "="); ok {
				kv[k] = v
			}
		}
		if args[0] != "cluster" && c == nil {
			fail("no cluster yet")
		}
		switch args[0] {
		case "cluster":
			o := clusterOpts{arch: kv["arch"], latency: 30 * time.Millisecond, seed: 1}
			o.nodes, _ = strconv.Atoi(kv["nodes"])
			if v, ok := kv["latency"]; ok {
				if o.latency, err = time.ParseDuration(v); err != nil {
					fail("%v", err)
				}
			}
			if v, ok := kv["margin"]; ok {
				o.margin, _ = strconv.ParseFloat(v, 64)
			}
			if v, ok := kv["rendezvous"]; ok {
				r, _ := strconv.Atoi(v)
				o.rendezvous = wire.NodeID(r)
			}
			c = newCluster(t, g, o)
			c.check = true
		case "spawn":
			n := c.node(parseNode(fail, args[1]))
			s := map[string]*world.Schema{"walker": g.walker, "missile": g.missile}[args[2]]
			if s == nil {
				fail("unknown kind")
			}
			obj, err := n.Spawn(c.now, s, func(st *world.State) { setFields(fail, st, args[3:]) })
			if err != nil {
				fail("%v", err)
			}
			c.buf = n.Drain(c.buf[:0])
			c.send(c.buf)
			c.record()
			fmt.Fprintf(&out, "created %v on node %d\n", obj.State().ID(), n.ID())
		case "run":
			d, err := time.ParseDuration(args[1])
			if err != nil {
				fail("%v", err)
			}
			c.trace = nil
			if kv["trace"] == "on" || traceOn {
				c.trace = &out
			}
			c.run(c.now + d)
		case "trace":
			traceOn = args[1] == "on"
		case "objects":
			c.dump(&out)
		case "stats":
			c.stats(&out)
		case "write":
			n := c.node(parseNode(fail, args[1]))
			id := parseID(fail, args[2])
			err := n.Write(id, func(st *world.State) { setFields(fail, st, args[3:]) })
			fmt.Fprintf(&out, "write: %v\n", errString(err))
			c.buf = n.Drain(c.buf[:0])
			c.send(c.buf)
		case "delete":
			n := c.node(parseNode(fail, args[1]))
			err := n.Delete(c.now, parseID(fail, args[2]))
			fmt.Fprintf(&out, "delete: %v\n", errString(err))
			c.buf = n.Drain(c.buf[:0])
			c.send(c.buf)
			c.record()
		case "garbage":
			n := c.node(parseNode(fail, args[1]))
			before := dumpNode(n)
			m0 := n.Stats().Malformed
			ps := garbagePackets(n.ID())
			for _, p := range ps {
				n.Step(c.now, p)
			}
			fmt.Fprintf(&out, "malformed packets rejected: %d of %d; state unchanged: %v\n",
				n.Stats().Malformed-m0, len(ps), dumpNode(n) == before)
		default:
			fail("unknown command")
		}
	}
	traceOn = false
	return out.String()
}

var traceOn bool

func errString(err error) string {
	if err == nil {
		return "ok"
	}
	return err.Error()
}

func dumpNode(n *Node) string {
	var b strings.Builder
	for _, in := range n.Objects(nil) {
		fmt.Fprintf(&b, "%v %v %d %v %s\n", in.ID, in.Primary, in.Version, in.Produced, fmtState(in.State))
	}
	return b.String()
}

func parseNode(fail func(string, ...any), s string) wire.NodeID {
	v, err := strconv.Atoi(s)
	if err != nil || v < 1 {
		fail("bad node %q", s)
	}
	return wire.NodeID(v)
}

func parseID(fail func(string, ...any), s string) world.ObjectID {
	o, q, ok := strings.Cut(s, ".")
	a, err1 := strconv.ParseUint(o, 10, 32)
	b, err2 := strconv.ParseUint(q, 10, 32)
	if !ok || err1 != nil || err2 != nil {
		fail("bad object ID %q", s)
	}
	return world.MakeObjectID(uint32(a), uint32(b))
}

// setFields applies field=value and field+=delta assignments.
func setFields(fail func(string, ...any), st *world.State, assigns []string) {
	for _, a := range assigns {
		k, v, ok := strings.Cut(a, "=")
		if !ok {
			fail("bad assignment %q", a)
		}
		add := strings.HasSuffix(k, "+")
		k = strings.TrimSuffix(k, "+")
		i := st.Schema().Field(k)
		if i < 0 {
			fail("no field %q", k)
		}
		switch st.Schema().FieldAt(i).Type {
		case world.Ref:
			st.SetRef(i, parseID(fail, v))
		default:
			x, err := strconv.ParseFloat(v, 64)
			if err != nil {
				fail("bad value %q", v)
			}
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
