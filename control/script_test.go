package control

import (
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/overworld/overworld/internal/scripttest"
	"github.com/overworld/overworld/wire"
)

// TestScenarios runs testdata/scenarios/*.txt. Commands:
//
//	node ID cap=N                 declare a node (before start)
//	start [grid=CxR] [policy=none|churn:N|periodic:D] [cost=X] [home=ID]
//	join P MS,MS,… [at=X,Y]       join with an RTT to every node, in order
//	leave P | measure P NODE MS | locate P X Y
//	down NODE | up NODE | tick    (each event is 1 s after the last)
//	rebuild                       drop the plane, rebuild it from the nodes' reports
//	show                          players by node, region cores, total delay
func TestScenarios(t *testing.T) {
	scripttest.Run(t, "testdata/scenarios", func(s *scripttest.Script) scripttest.Handler {
		var cfg Config
		var p *Plane
		now := time.Duration(0)
		out := func(ds []Decision, err error) string {
			if err != nil {
				return err.Error()
			}
			if len(ds) == 0 {
				return "no decision"
			}
			lines := make([]string, len(ds))
			for i, d := range ds {
				lines[i] = d.String()
			}
			return strings.Join(lines, "\n")
		}
		node := func(c *scripttest.Cmd, i int) wire.NodeID { return wire.NodeID(c.Int(i)) }
		return func(c *scripttest.Cmd) string {
			if c.Name != "node" && c.Name != "start" && p == nil {
				c.Fatalf("start the plane first")
			}
			now += time.Second
			switch c.Name {
			case "node":
				c.Want(2, 2)
				n, _ := strconv.Atoi(strings.TrimPrefix(c.Arg(1), "cap="))
				cfg.Nodes = append(cfg.Nodes, Node{ID: node(c, 0), Capacity: n})
				return ""
			case "start":
				opts := c.Options(0, "grid", "policy", "cost", "home")
				if g, ok := opts["grid"]; ok {
					var cols, rows int
					if _, err := fmt.Sscanf(g, "%dx%d", &cols, &rows); err != nil {
						c.Fatalf("grid %q: want CxR", g)
					}
					cfg.Grid = Grid{Width: 100, Height: 100, Cols: cols, Rows: rows}
				}
				if v, ok := opts["policy"]; ok {
					name, arg, _ := strings.Cut(v, ":")
					switch name {
					case "churn":
						cfg.Policy = Churn{Events: c.ParseInt(arg)}
					case "periodic":
						cfg.Policy = Periodic{Every: c.ParseDur(arg)}
					case "none":
					default:
						c.Fatalf("unknown policy %q", name)
					}
				}
				if v, ok := opts["cost"]; ok {
					cfg.MigrationCost = c.ParseFloat(v)
				}
				if v, ok := opts["home"]; ok {
					cfg.RegionHome = wire.NodeID(c.ParseInt(v))
				}
				var err error
				p, err = New(cfg)
				return scripttest.Result(err)
			case "join":
				c.Want(2, 3)
				ms := c.Floats(1)
				var ss []Sample
				for j, v := range ms {
					if j < len(cfg.Nodes) {
						ss = append(ss, Sample{Node: cfg.Nodes[j].ID, RTT: time.Duration(v * float64(time.Millisecond))})
					}
				}
				ds, err := p.Join(now, c.Arg(0), ss)
				if err == nil {
					if at, ok := c.Options(2, "at")["at"]; ok {
						xy := c.ParseFloats(at)
						err = p.Locate(now, c.Arg(0), xy[0], xy[1])
					}
				}
				return out(ds, err)
			case "leave":
				c.Want(1, 1)
				return out(p.Leave(now, c.Arg(0)))
			case "measure":
				c.Want(3, 3)
				return out(p.Measure(now, c.Arg(0), node(c, 1), time.Duration(c.Float(2)*float64(time.Millisecond))))
			case "locate":
				c.Want(3, 3)
				return scripttest.Result(p.Locate(now, c.Arg(0), c.Float(1), c.Float(2)))
			case "down":
				c.Want(1, 1)
				return out(p.NodeDown(now, node(c, 0)))
			case "up":
				c.Want(1, 1)
				return out(p.NodeUp(now, node(c, 0)))
			case "tick":
				c.Want(0, 0)
				return out(p.Tick(now))
			case "rebuild":
				c.Want(0, 0)
				reps := p.Snapshot()
				fresh, err := New(cfg)
				if err != nil {
					return err.Error()
				}
				ds, err := fresh.Rebuild(now, reps)
				if err == nil {
					p = fresh
				}
				return out(ds, err)
			case "show":
				c.Want(0, 0)
				var b strings.Builder
				at := p.Assignment()
				for _, n := range cfg.Nodes {
					state := "up"
					if !p.Up(n.ID) {
						state = "down"
					}
					var ids []string
					for _, id := range p.Players() {
						if at[id] == n.ID {
							ids = append(ids, id)
						}
					}
					fmt.Fprintf(&b, "node %d (%s, %d/%d): %s\n", n.ID, state, p.Load(n.ID), n.Capacity, strings.Join(ids, " "))
				}
				for r := range p.Regions() {
					core, _ := p.Core(r)
					fmt.Fprintf(&b, "region %d on %d: %s\n", r, core, strings.Join(p.RegionPlayers(r), " "))
				}
				fmt.Fprintf(&b, "total delay %.1f ms", p.TotalDelay())
				return b.String()
			}
			c.Fatalf("unknown command")
			return ""
		}
	})
}
