package locate

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

var updateScripts = flag.Bool("update", false, "rewrite the expected output of testdata/store/*.txt")

// TestStoreScripts runs the scenario scripts in testdata/store: each block
// is a command, a "----" line and the output it must print (regenerate
// with go test ./internal/locate -run StoreScripts -update). Two stores,
// A and B, share the key map of the first "keys" command; "@B" sends a
// command to B.
//
//	keys x|hilbert ORDER CAP|dht REGIONS  (over a 1000 × 1000 map; resets both stores)
//	pub T ID NODE X,Y TTL                 (ID as origin.seq)
//	sub T NODE SEQ TTL [X0,Y0,X1,Y1 ...]
//	unsub T NODE SEQ | unpub T ID | expire T
//	handoff T LO HI                       (A exports and drops the arc, B imports it; keys as x-coordinates)
//	state | stats
func TestStoreScripts(t *testing.T) {
	files, err := filepath.Glob("testdata/store/*.txt")
	if err != nil || len(files) == 0 {
		t.Fatalf("no scripts: %v", err)
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			raw, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			var out strings.Builder
			r := &scriptRun{t: t}
			sc := bufio.NewScanner(strings.NewReader(string(raw)))
			var cmd string
			var want []string
			inOut := false
			flush := func() {
				if cmd == "" {
					return
				}
				got := r.run(cmd)
				if !*updateScripts && strings.Join(got, "\n") != strings.Join(want, "\n") {
					t.Errorf("%s: %s\n got:\n%s\nwant:\n%s", file, cmd, strings.Join(got, "\n"), strings.Join(want, "\n"))
				}
				fmt.Fprintf(&out, "%s\n----\n", cmd)
				for _, l := range got {
					fmt.Fprintln(&out, l)
				}
				fmt.Fprintln(&out)
				cmd, want, inOut = "", nil, false
			}
			for sc.Scan() {
				line := sc.Text()
				switch {
				case inOut && line == "":
					flush()
				case inOut:
					want = append(want, line)
				case line == "----":
					inOut = true
				case line == "" || strings.HasPrefix(line, "#"):
					if cmd == "" {
						fmt.Fprintln(&out, line)
					}
				default:
					cmd = line
				}
			}
			flush()
			if *updateScripts {
				if err := os.WriteFile(file, []byte(strings.TrimRight(out.String(), "\n")+"\n"), 0o644); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

type scriptRun struct {
	t    *testing.T
	keys KeyMap
	a, b *Store
}

func (r *scriptRun) fail(format string, args ...any) []string {
	r.t.Helper()
	r.t.Fatalf(format, args...)
	return nil
}

func parseDur(s string) time.Duration {
	d, err := time.ParseDuration(s)
	if err != nil {
		panic(fmt.Sprintf("duration %q: %v", s, err))
	}
	return d
}

func parseFloats(s string) []float64 {
	var fs []float64
	for _, f := range strings.Split(s, ",") {
		v, err := strconv.ParseFloat(f, 64)
		if err != nil {
			panic(fmt.Sprintf("number %q: %v", f, err))
		}
		fs = append(fs, v)
	}
	return fs
}

func parseID(s string) world.ObjectID {
	o, q, _ := strings.Cut(s, ".")
	a, _ := strconv.ParseUint(o, 10, 32)
	b, _ := strconv.ParseUint(q, 10, 32)
	return world.MakeObjectID(uint32(a), uint32(b))
}

func atoi(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		panic(fmt.Sprintf("integer %q: %v", s, err))
	}
	return n
}

func fmtMatches(ms []Match, err error) []string {
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
	return out
}

func fmtErr(err error) []string {
	if err != nil {
		return []string{"error: " + err.Error()}
	}
	return []string{"ok"}
}

func (r *scriptRun) run(cmd string) []string {
	f := strings.Fields(cmd)
	s := r.a
	if len(f) > 0 && f[0] == "@B" {
		s, f = r.b, f[1:]
	}
	if f[0] != "keys" && r.a == nil {
		return r.fail("%q before keys", cmd)
	}
	switch f[0] {
	case "keys":
		ext := extentBox(1000, 1000)
		var err error
		switch f[1] {
		case "x":
			r.keys, err = NewLinearMap(ext)
		case "hilbert":
			r.keys, err = NewHilbertMap(ext, atoi(f[2]), atoi(f[3]))
		case "dht":
			r.keys, err = NewRegionMap(ext, atoi(f[2]))
		}
		if err != nil {
			return fmtErr(err)
		}
		cfg := StoreConfig{Dims: 2, Keys: r.keys, MaxTTL: 10 * time.Second, MaxBoxes: 4}
		r.a, _ = NewStore(cfg)
		r.b, _ = NewStore(cfg)
		return []string{"ok"}
	case "pub":
		loc := parseFloats(f[4])
		return fmtMatches(s.Publish(parseDur(f[1]), Pub{ID: parseID(f[2]), Node: wire.NodeID(atoi(f[3])), Loc: world.Point{loc[0], loc[1]}, At: parseDur(f[1]), TTL: parseDur(f[5])}, nil))
	case "sub":
		var boxes []world.Box
		for _, b := range f[5:] {
			v := parseFloats(b)
			boxes = append(boxes, world.Box{Min: world.Point{v[0], v[1]}, Max: world.Point{v[2], v[3]}})
		}
		return fmtMatches(s.Subscribe(parseDur(f[1]), wire.NodeID(atoi(f[2])), uint64(atoi(f[3])), boxes, parseDur(f[4]), nil))
	case "unsub":
		return fmtErr(s.Unsubscribe(parseDur(f[1]), wire.NodeID(atoi(f[2])), uint64(atoi(f[3]))))
	case "unpub":
		return fmtErr(s.Unpublish(parseDur(f[1]), parseID(f[2])))
	case "expire":
		return fmtErr(s.Expire(parseDur(f[1])))
	case "handoff":
		lo := r.keys.PointKey(world.Point{parseFloats(f[2])[0]})
		hi := r.keys.PointKey(world.Point{parseFloats(f[3])[0]})
		var h Handoff
		r.a.Export(lo, hi, &h)
		r.a.Drop(lo, hi)
		out := []string{fmt.Sprintf("handed off %d publications, %d subscriptions", len(h.Pubs), len(h.Subs))}
		return append(out, fmtErr(r.b.Import(parseDur(f[1]), &h))...)
	case "state":
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
			out = append(out, "empty")
		}
		return out
	case "stats":
		st := s.Stats()
		return []string{fmt.Sprintf("published %d subscribed %d refreshed %d withdrawn %d matches %d expired %d+%d rejected %d exported %d imported %d dropped %d",
			st.Published, st.Subscribed, st.Refreshed, st.Withdrawn, st.Matches, st.ExpiredPubs, st.ExpiredSubs, st.Rejected, st.Exported, st.Imported, st.Dropped)}
	}
	return r.fail("unknown command %q", cmd)
}
