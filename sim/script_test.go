package sim

import (
	"bytes"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/overworld/overworld/wire"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// TestScenarios runs the scripts in testdata/scenarios/*.txt and compares
// their output with the .golden file beside each (go test ./sim -run
// TestScenarios -update rewrites them). The script language:
//
//	config key=value ...        seed, period, samesite, header, jitter, loss, dup (before the first node)
//	sites NAME ...              declare sites (before rtt lines)
//	rtt A B MS                  RTT between A and B, both directions
//	rtt1 A B MS                 RTT measured from A to B only
//	node ID SITE [echo] [chatty=N]   add a node (echo: answer every packet with a maintenance
//	                            packet of the same size; chatty=N: each tick send N 20-byte
//	                            updates to every other node)
//	send AT FROM TO CLASS BYTES at AT, node FROM emits one packet (then Flush)
//	crash AT ID / remove AT ID
//	partition AT HEAL A,B|C,D   (HEAL "never" or a time)
//	view AT NODE IDS HELD       a Recorder report: IDS like 1,2,3 (or -), HELD like 101 (or -)
//	run UNTIL                   run, printing deliveries and drops (ticks are counted, not printed)
//	quiet / verbose             stop / resume printing events
//	summary                     print totals, per-node traffic and the view measures
func TestScenarios(t *testing.T) {
	files, err := filepath.Glob("testdata/scenarios/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scenarios: %v", err)
	}
	for _, f := range files {
		name := strings.TrimSuffix(filepath.Base(f), ".txt")
		t.Run(name, func(t *testing.T) {
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			got := runScript(t, string(src))
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
				t.Errorf("output differs from %s (run with -update to accept):\n--- got\n%s\n--- want\n%s", golden, got, want)
			}
		})
	}
}

type script struct {
	t       *testing.T
	out     bytes.Buffer
	cfg     Config
	names   []string
	rtt     map[[2]string]float64
	s       *Sim
	cores   map[wire.NodeID]*testCore
	quiet   bool
	lineNo  int
	pending []func() // commands to run once the simulator exists
}

func runScript(t *testing.T, src string) string {
	sc := &script{t: t, cfg: DefaultConfig(), rtt: map[[2]string]float64{}, cores: map[wire.NodeID]*testCore{}}
	for i, line := range strings.Split(src, "\n") {
		sc.lineNo = i + 1
		if k := strings.Index(line, "#"); k >= 0 {
			line = line[:k]
		}
		f := strings.Fields(line)
		if len(f) == 0 {
			continue
		}
		fmt.Fprintf(&sc.out, "> %s\n", strings.Join(f, " "))
		sc.exec(f)
	}
	return sc.out.String()
}

func (sc *script) fail(format string, args ...any) {
	sc.t.Fatalf("line %d: "+format, append([]any{sc.lineNo}, args...)...)
}

func (sc *script) dur(s string) time.Duration {
	d, err := time.ParseDuration(s)
	if err != nil {
		sc.fail("%v", err)
	}
	return d
}

func (sc *script) num(s string) float64 {
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		sc.fail("%v", err)
	}
	return v
}

func (sc *script) id(s string) wire.NodeID { return wire.NodeID(sc.num(s)) }

func (sc *script) sim() *Sim {
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
	sites, err := NewSites(sc.names, rows)
	if err != nil {
		sc.fail("%v", err)
	}
	f := sites.Fill()
	fmt.Fprintf(&sc.out, "sites: %d, %d pairs measured, %d filled from the reverse direction, %d by detour\n", sites.Len(), f.Measured, f.Reverse, f.Detour)
	for i := 0; i < n; i++ {
		for j := 0; j < n; j++ {
			if i != j {
				fmt.Fprintf(&sc.out, "  %s→%s %v", sites.Name(i), sites.Name(j), sites.OneWay(i, j))
			}
		}
	}
	fmt.Fprintln(&sc.out)
	s, err := New(sc.cfg, sites)
	if err != nil {
		sc.fail("%v", err)
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

func (sc *script) at(at string, fn func()) {
	s := sc.sim()
	line := sc.lineNo
	if err := s.Schedule(sc.dur(at), func(time.Duration) {
		sc.lineNo = line
		fn()
	}); err != nil {
		sc.fail("%v", err)
	}
}

func (sc *script) exec(f []string) {
	switch cmd := f[0]; cmd {
	case "config":
		for _, kv := range f[1:] {
			k, v, _ := strings.Cut(kv, "=")
			switch k {
			case "seed":
				sc.cfg.Seed = uint64(sc.num(v))
			case "period":
				sc.cfg.FramePeriod = sc.dur(v)
			case "samesite":
				sc.cfg.SameSite = sc.dur(v)
			case "header":
				sc.cfg.HeaderBytes = int(sc.num(v))
			case "jitter":
				sc.cfg.Jitter = sc.dur(v)
			case "loss":
				sc.cfg.Loss = sc.num(v)
			case "dup":
				sc.cfg.Duplicate = sc.num(v)
			default:
				sc.fail("unknown config key %q", k)
			}
		}
	case "sites":
		sc.names = append(sc.names, f[1:]...)
	case "rtt", "rtt1":
		v := sc.num(f[3])
		sc.rtt[[2]string{f[1], f[2]}] = v
		if cmd == "rtt" {
			sc.rtt[[2]string{f[2], f[1]}] = v
		}
	case "node":
		id := sc.id(f[1])
		c := &testCore{id: id}
		for _, opt := range f[3:] {
			switch k, v, _ := strings.Cut(opt, "="); k {
			case "echo":
				c.echo = true
			case "chatty":
				n := int(sc.num(v))
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
				sc.fail("unknown node option %q", opt)
			}
		}
		if err := sc.sim().AddNode(id, f[2], c); err != nil {
			sc.fail("%v", err)
		}
		sc.cores[id] = c
	case "send":
		from, to := sc.id(f[2]), sc.id(f[3])
		cls, err := wire.ParseClass(f[4])
		if err != nil {
			sc.fail("%v", err)
		}
		size := int(sc.num(f[5]))
		sc.at(f[1], func() {
			sc.cores[from].send(to, cls, size)
			if err := sc.s.Flush(from); err != nil {
				fmt.Fprintf(&sc.out, "%v send: %v\n", sc.s.Now(), err)
			}
		})
	case "crash", "remove":
		id := sc.id(f[2])
		sc.at(f[1], func() {
			stop := sc.s.Crash
			if cmd == "remove" {
				stop = sc.s.Remove
			}
			err := stop(id)
			fmt.Fprintf(&sc.out, "%v %s %d: %v\n", sc.s.Now(), cmd, id, errText(err))
		})
	case "partition":
		heal := time.Duration(0)
		if f[2] != "never" {
			heal = sc.dur(f[2])
		}
		var sides [][]wire.NodeID
		for _, side := range strings.Split(f[3], "|") {
			var ids []wire.NodeID
			for _, x := range strings.Split(side, ",") {
				ids = append(ids, sc.id(x))
			}
			sides = append(sides, ids)
		}
		sc.at(f[1], func() {
			_, err := sc.s.Partition(heal, sides...)
			fmt.Fprintf(&sc.out, "%v partition %s until %s: %v\n", sc.s.Now(), f[3], f[2], errText(err))
		})
	case "view":
		node := sc.id(f[2])
		var ids []uint64
		var held []bool
		if f[3] != "-" {
			for _, x := range strings.Split(f[3], ",") {
				ids = append(ids, uint64(sc.num(x)))
			}
		}
		if f[4] != "-" {
			for _, ch := range f[4] {
				held = append(held, ch == '1')
			}
		}
		sc.at(f[1], func() {
			if err := sc.s.Recorder().View(node, sc.s.Now(), ids, held); err != nil {
				fmt.Fprintf(&sc.out, "%v view: %v\n", sc.s.Now(), err)
			}
		})
	case "run":
		if err := sc.sim().Run(sc.dur(f[1])); err != nil {
			sc.fail("%v", err)
		}
	case "quiet":
		sc.quiet = true
	case "verbose":
		sc.quiet = false
	case "summary":
		sc.summary()
	default:
		sc.fail("unknown command %q", cmd)
	}
}

func errText(err error) string {
	if err == nil {
		return "ok"
	}
	return err.Error()
}

func (sc *script) summary() {
	s := sc.sim()
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
		fmt.Fprintf(w, "  node %d @%s %s: up %.3gs, %d frames (%.3g Hz), in %d/%dB, out %d/%dB, mean %.4g B/s, p95 %.4g B/s\n",
			n.ID, n.Site, n.State, n.UpS, n.Frames, n.FrameRateHz, n.In.Msgs, n.In.Bytes, n.Out.Msgs, n.Out.Bytes, n.Mean.Total, n.P95.Total)
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
