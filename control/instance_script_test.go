package control

import (
	"fmt"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/overworld/overworld/internal/scripttest"
	"github.com/overworld/overworld/place/balance"
	"github.com/overworld/overworld/wire"
)

// TestInstanceScenarios runs testdata/instances/*.txt. Commands:
//
//	server ID cap=N                       declare a server (before start)
//	start [crit=LL|PD|score] [margin=X]   build the Instances
//	open I P[@HOST][:x=X][:up=U] ...      open instance I; players at x (RTT |xi−xj| ms), uptime U h
//	leave I P | close I | down N | up N   (each event is 1 s after the last)
//	show                                  servers' loads, every instance's placement
func TestInstanceScenarios(t *testing.T) {
	scripttest.Run(t, "testdata/instances", func(s *scripttest.Script) scripttest.Handler {
		var cfg InstanceConfig
		var x *Instances
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
		return func(c *scripttest.Cmd) string {
			if c.Name != "server" && c.Name != "start" && x == nil {
				c.Fatalf("start first")
			}
			now += time.Second
			switch c.Name {
			case "server":
				c.Want(2, 2)
				o := c.Options(1, "cap")
				cfg.Nodes = append(cfg.Nodes, Node{ID: wire.NodeID(c.Int(0)), Capacity: c.ParseInt(o["cap"])})
				return ""
			case "start":
				o := c.Options(0, "crit", "margin")
				if v, ok := o["crit"]; ok {
					crit, err := balance.ParseCriterion(v)
					if err != nil {
						c.Fatalf("%v", err)
					}
					cfg.Criterion = crit
				}
				if v, ok := o["margin"]; ok {
					cfg.Margin = c.ParseFloat(v)
				}
				var err error
				x, err = NewInstances(cfg)
				return scripttest.Result(err)
			case "open":
				c.Want(2, -1)
				a := Instance{ID: c.Arg(0)}
				var xs []float64
				for _, f := range c.Args[1:] {
					parts := strings.Split(f, ":")
					name, host, _ := strings.Cut(parts[0], "@")
					p := InstancePlayer{ID: name}
					if host != "" {
						p.Host = wire.NodeID(c.ParseInt(host))
					}
					px := 0.0
					for _, kv := range parts[1:] {
						k, v, _ := strings.Cut(kv, "=")
						switch k {
						case "x":
							px = c.ParseFloat(v)
						case "up":
							u := c.ParseFloat(v)
							p.Uptime = balance.Uptime{Min: u, Max: u + 1}
						default:
							c.Fatalf("player %q: unknown %q", f, k)
						}
					}
					xs = append(xs, px)
					a.Players = append(a.Players, p)
				}
				n := len(xs)
				a.RTT = make([]float64, n*n)
				for i := range n {
					for j := range n {
						a.RTT[i*n+j] = math.Abs(xs[i] - xs[j])
					}
				}
				return out(x.Open(now, a))
			case "leave":
				c.Want(2, 2)
				return out(x.Leave(now, c.Arg(0), c.Arg(1)))
			case "close":
				c.Want(1, 1)
				return scripttest.Result(x.Close(now, c.Arg(0)))
			case "down":
				c.Want(1, 1)
				return out(x.NodeDown(now, wire.NodeID(c.Int(0))))
			case "up":
				c.Want(1, 1)
				return scripttest.Result(x.NodeUp(now, wire.NodeID(c.Int(0))))
			case "show":
				c.Want(0, 0)
				var b strings.Builder
				for _, n := range cfg.Nodes {
					fmt.Fprintf(&b, "server %d: %d/%d\n", n.ID, x.Load(n.ID), n.Capacity)
				}
				for _, id := range x.InstanceIDs() {
					w, _ := x.Where(id)
					if w.Hosted {
						fmt.Fprintf(&b, "%s (%d players): hosted by %s@%d, replica %s@%d, next %d\n", id, w.Players, w.Player, w.Node, w.ReplicaPlayer, w.Replica, x.Successor(id))
					} else {
						fmt.Fprintf(&b, "%s (%d players): server %d\n", id, w.Players, w.Node)
					}
				}
				return strings.TrimSuffix(b.String(), "\n")
			}
			c.Fatalf("unknown command")
			return ""
		}
	})
}
