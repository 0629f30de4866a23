package sim

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/overworld/overworld/geo"
	"github.com/overworld/overworld/internal/scripttest"
	"github.com/overworld/overworld/wire"
)

// TestScenarios runs the scripts in testdata/scenarios on the simulator
// with synthetic cores (testCore). Each script is commands, each followed
// by "----" and the output it must print (package internal/scripttest
// describes the format):
//
//	config key=value ...        seed, period, samesite, header, jitter, loss, dup (before the first node)
//	sites NAME ...              declare sites (before rtt lines)
//	rtt A B MS                  RTT between A and B, both directions
//	rtt1 A B MS                 RTT measured from A to B only
//	node ID SITE [echo] [chatty=N]   add a node (echo: answer every packet with a maintenance
//	                            packet of the same size; chatty=N: each tick send N 20-byte
//	                            updates to every other node); the first one builds the
//	                            simulator and prints the site table
//	send AT FROM TO CLASS BYTES at AT, node FROM emits one packet (then Flush)
//	crash AT ID / remove AT ID
//	restart AT ID [echo]        a crashed node comes back with a fresh core
//	partition AT HEAL A,B|C,D   (HEAL "never" or a time)
//	view AT NODE IDS HELD       a Recorder report: IDS like 1,2,3 (or -), HELD like 101 (or -)
//	run UNTIL                   run, printing deliveries, drops and what the events
//	                            scheduled above print (ticks are counted, not printed)
//	quiet / verbose             stop / resume printing deliveries and drops
//	summary                     print totals, per-node traffic and the view measures
//
// To add a scenario, write a new file in testdata/scenarios with the
// commands, each followed by a "----" line, and run
//
//	go test ./sim -run TestScenarios/NAME -rewrite
//
// to fill in the output; read it before committing. The same flag
// rewrites the expectations of every script after an intended change:
// check the diff. The simulator's random source (jitter, loss,
// duplication) is seeded (config seed=, default DefaultConfig's), so a
// script prints the same on every run; a failure reports the seed.
func TestScenarios(t *testing.T) {
	scripttest.Run(t, "testdata/scenarios", func(s *scripttest.Script) scripttest.Handler {
		sc := &script{script: s, cfg: DefaultConfig(), rtt: map[[2]string]float64{}, cores: map[wire.NodeID]*testCore{}}
		s.SetSeed(sc.cfg.Seed)
		return sc.exec
	})
}

// script is the interpreter of one script.
type script struct {
	script *scripttest.Script
	out    strings.Builder
	cfg    Config
	names  []string
	rtt    map[[2]string]float64
	s      *Sim
	cores  map[wire.NodeID]*testCore
	quiet  bool
}

// sim returns the simulator, building it from the sites, RTTs and
// configuration given so far on first use.
func (sc *script) sim(cmd *scripttest.Cmd) *Sim {
	if sc.s != nil {
		return sc.s
	}
	n := len(sc.names)
	rows := make([][]float64, n)
	for i := range rows {
		rows[i] = make([]float64, n)
		for j := range rows[i] {
			rows[i][j] = math.NaN()
			if v, ok := sc.rtt[[2]string{sc.names[i], sc.names[j]}]; ok {
				rows[i][j] = v
			}
		}
	}
	sites, err := geo.NewSites(sc.names, rows)
	if err != nil {
		cmd.Fatalf("%v", err)
	}
	f := sites.Fill()
	fmt.Fprintf(&sc.out, "sites: %d, %d pairs measured, %d filled from the reverse direction, %d by detour\n", sites.Len(), f.Measured, f.Reverse, f.Detour)
	if n > 1 {
		for i := 0; i < n; i++ {
			for j := 0; j < n; j++ {
				if i != j {
					fmt.Fprintf(&sc.out, "  %s→%s %v", sites.Name(i), sites.Name(j), sites.OneWay(i, j))
				}
			}
		}
		fmt.Fprintln(&sc.out)
	}
	s, err := New(sc.cfg, sites)
	if err != nil {
		cmd.Fatalf("%v", err)
	}
	s.SetObserver(func(e Event) {
		if sc.quiet || e.Kind == EventTick || e.Kind == EventFunc {
			return
		}
		if e.Kind == EventHeal {
			fmt.Fprintf(&sc.out, "%v heal\n", e.At)
			return
		}
		fmt.Fprintf(&sc.out, "%v %s %d→%d %s %dB\n", e.At, e.Kind, e.From, e.Node, e.Class, e.Bytes)
	})
	sc.s = s
	return s
}

// at schedules fn at the time in argument 0 of cmd.
func (sc *script) at(cmd *scripttest.Cmd, fn func()) {
	if err := sc.sim(cmd).Schedule(cmd.Dur(0), func(time.Duration) { fn() }); err != nil {
		cmd.Fatalf("%v", err)
	}
}

func nodeID(cmd *scripttest.Cmd, s string) wire.NodeID {
	v, err := strconv.ParseUint(s, 10, 32)
	if err != nil {
		cmd.Fatalf("bad node ID %q", s)
	}
	return wire.NodeID(v)
}

func (sc *script) exec(cmd *scripttest.Cmd) string {
	sc.out.Reset()
	switch cmd.Name {
	case "config":
		if sc.s != nil {
			cmd.Fatalf("config after the first node")
		}
		for k, v := range cmd.Options(0, "seed", "period", "samesite", "header", "jitter", "loss", "dup") {
			switch k {
			case "seed":
				seed, err := strconv.ParseUint(v, 10, 64)
				if err != nil {
					cmd.Fatalf("seed: %v", err)
				}
				sc.cfg.Seed = seed
				sc.script.SetSeed(seed)
			case "period":
				sc.cfg.FramePeriod = cmd.ParseDur(v)
			case "samesite":
				sc.cfg.SameSite = cmd.ParseDur(v)
			case "header":
				sc.cfg.HeaderBytes = cmd.ParseInt(v)
			case "jitter":
				sc.cfg.Jitter = cmd.ParseDur(v)
			case "loss":
				sc.cfg.Loss = cmd.ParseFloat(v)
			case "dup":
				sc.cfg.Duplicate = cmd.ParseFloat(v)
			}
		}
	case "sites":
		cmd.Want(1, -1)
		if sc.s != nil {
			cmd.Fatalf("sites after the first node")
		}
		sc.names = append(sc.names, cmd.Args...)
	case "rtt", "rtt1":
		cmd.Want(3, 3)
		if sc.s != nil {
			cmd.Fatalf("%s after the first node", cmd.Name)
		}
		a, b, v := cmd.Arg(0), cmd.Arg(1), cmd.Float(2)
		sc.rtt[[2]string{a, b}] = v
		if cmd.Name == "rtt" {
			sc.rtt[[2]string{b, a}] = v
		}
	case "node":
		cmd.Want(2, 4)
		id := nodeID(cmd, cmd.Arg(0))
		c := sc.core(cmd, id, cmd.Args[2:])
		if err := sc.sim(cmd).AddNode(id, cmd.Arg(1), c); err != nil {
			cmd.Fatalf("%v", err)
		}
		sc.cores[id] = c
	case "restart":
		cmd.Want(2, 3)
		id := nodeID(cmd, cmd.Arg(1))
		c := sc.core(cmd, id, cmd.Args[2:])
		sc.at(cmd, func() {
			err := sc.s.Restart(id, c)
			if err == nil {
				sc.cores[id] = c
			}
			fmt.Fprintf(&sc.out, "%v restart %d: %v\n", sc.s.Now(), id, scripttest.Result(err))
		})
	case "send":
		cmd.Want(5, 5)
		from, to := nodeID(cmd, cmd.Arg(1)), nodeID(cmd, cmd.Arg(2))
		if sc.cores[from] == nil {
			cmd.Fatalf("no node %d", from)
		}
		cls, err := wire.ParseClass(cmd.Arg(3))
		if err != nil {
			cmd.Fatalf("%v", err)
		}
		size := cmd.Int(4)
		sc.at(cmd, func() {
			sc.cores[from].send(to, cls, size) // the incarnation up at the time
			if err := sc.s.Flush(from); err != nil {
				fmt.Fprintf(&sc.out, "%v send: %v\n", sc.s.Now(), err)
			}
		})
	case "crash", "remove":
		cmd.Want(2, 2)
		id := nodeID(cmd, cmd.Arg(1))
		name := cmd.Name
		sc.at(cmd, func() {
			stop := sc.s.Crash
			if name == "remove" {
				stop = sc.s.Remove
			}
			fmt.Fprintf(&sc.out, "%v %s %d: %v\n", sc.s.Now(), name, id, scripttest.Result(stop(id)))
		})
	case "partition":
		cmd.Want(3, 3)
		healArg, sidesArg := cmd.Arg(1), cmd.Arg(2)
		heal := time.Duration(0)
		if healArg != "never" {
			heal = cmd.ParseDur(healArg)
		}
		var sides [][]wire.NodeID
		for _, side := range strings.Split(sidesArg, "|") {
			var ids []wire.NodeID
			for _, x := range strings.Split(side, ",") {
				ids = append(ids, nodeID(cmd, x))
			}
			sides = append(sides, ids)
		}
		sc.at(cmd, func() {
			_, err := sc.s.Partition(heal, sides...)
			fmt.Fprintf(&sc.out, "%v partition %s until %s: %v\n", sc.s.Now(), sidesArg, healArg, scripttest.Result(err))
		})
	case "view":
		cmd.Want(4, 4)
		node := nodeID(cmd, cmd.Arg(1))
		var ids []uint64
		var held []bool
		if cmd.Arg(2) != "-" {
			for _, x := range strings.Split(cmd.Arg(2), ",") {
				v, err := strconv.ParseUint(x, 10, 64)
				if err != nil {
					cmd.Fatalf("bad object %q", x)
				}
				ids = append(ids, v)
			}
		}
		if cmd.Arg(3) != "-" {
			for _, ch := range cmd.Arg(3) {
				if ch != '0' && ch != '1' {
					cmd.Fatalf("HELD is a string of 0 and 1, not %q", cmd.Arg(3))
				}
				held = append(held, ch == '1')
			}
		}
		sc.at(cmd, func() {
			if err := sc.s.Recorder().View(node, sc.s.Now(), ids, held); err != nil {
				fmt.Fprintf(&sc.out, "%v view: %v\n", sc.s.Now(), err)
			}
		})
	case "run":
		cmd.Want(1, 1)
		if err := sc.sim(cmd).Run(cmd.Dur(0)); err != nil {
			cmd.Fatalf("%v", err)
		}
	case "quiet", "verbose":
		cmd.Want(0, 0)
		sc.quiet = cmd.Name == "quiet"
	case "summary":
		cmd.Want(0, 0)
		sc.summary(cmd)
	default:
		cmd.Fatalf("unknown command")
	}
	return sc.out.String()
}

// core returns a synthetic core for node id with the given options (echo,
// chatty=N).
func (sc *script) core(cmd *scripttest.Cmd, id wire.NodeID, opts []string) *testCore {
	c := &testCore{id: id}
	for _, opt := range opts {
		switch k, v, _ := strings.Cut(opt, "="); k {
		case "echo":
			c.echo = true
		case "chatty":
			n := cmd.ParseInt(v)
			c.tick = func(c *testCore, now time.Duration) {
				for _, other := range sc.s.Nodes() {
					if other != c.id {
						for range n {
							c.send(other, wire.ClassUpdate, 20)
						}
					}
				}
			}
		default:
			cmd.Fatalf("unknown node option %q (want echo or chatty=N)", opt)
		}
	}
	return c
}

func (sc *script) summary(cmd *scripttest.Cmd) {
	s := sc.sim(cmd)
	sum := s.Summary()
	tr := sum.Traffic
	w := &sc.out
	fmt.Fprintf(w, "at %v: sent %d msgs %d B, duplicated %d, delivered %d msgs %d B, in flight %d, dropped", s.Now(),
		tr.Sent.Msgs, tr.Sent.Bytes, tr.Duplicated.Msgs, tr.Delivered.Msgs, tr.Delivered.Bytes, tr.InFlight.Msgs)
	for c := range NumDropCauses {
		fmt.Fprintf(w, " %s=%d", DropCause(c), tr.Dropped[DropCause(c).String()].Msgs)
	}
	fmt.Fprintln(w)
	for _, n := range sum.PerNode {
		restarts := ""
		if n.Restarts > 0 {
			restarts = fmt.Sprintf(" (restarted %d×)", n.Restarts)
		}
		fmt.Fprintf(w, "  node %d @%s %s%s: up %.3gs, %d frames (%.3g Hz), in %d/%dB, out %d/%dB, mean %.4g B/s, p95 %.4g B/s\n",
			n.ID, n.Site, n.State, restarts, n.UpS, n.Frames, n.FrameRateHz, n.In.Msgs, n.In.Bytes, n.Out.Msgs, n.Out.Bytes, n.Mean.Total, n.P95.Total)
	}
	v := sum.Views
	if v.Reports > 0 {
		fmt.Fprintf(w, "  views: %d reports, %d interesting;", v.Reports, v.Interesting)
		for _, m := range v.Missing {
			fmt.Fprintf(w, " missing@%gms %.4g (frame mean %.4g)", m.GraceMs, m.Fraction, m.FrameMean)
		}
		d := v.Discovery
		fmt.Fprintf(w, "\n  discovery: n=%d mean %.4g p50 %.4g p95 %.4g max %.4g ms; held on entry %d, abandoned %d, lost %d\n",
			d.Count, d.Mean, d.P50, d.P95, d.Max, v.HeldOnEntry, v.Abandoned, v.Lost)
	}
}
