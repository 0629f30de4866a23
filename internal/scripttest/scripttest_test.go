package scripttest

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/overworld/overworld/world"
)

// TestRun runs testdata/scripts with an interpreter whose commands print
// what the argument parsers return (go test ./internal/scripttest
// -rewrite rewrites the expected output).
func TestRun(t *testing.T) {
	Run(t, "testdata/scripts", func(s *Script) Handler {
		if _, ok := s.Seed(); ok {
			t.Error("a new script has a seed")
		}
		s.SetSeed(42)
		if seed, ok := s.Seed(); !ok || seed != 42 {
			t.Errorf("Seed() = %d, %v after SetSeed(42)", seed, ok)
		}
		calls := 0
		return func(c *Cmd) string {
			calls++
			switch c.Name {
			case "args":
				return fmt.Sprintf("%d: %s %q", calls, c.Name, c.Args)
			case "parse":
				c.Want(5, 5)
				return fmt.Sprintf("dur %v float %g int %d floats %v object %v", c.Dur(0), c.Float(1), c.Int(2), c.Floats(3), c.ObjectID(4))
			case "options":
				o := c.Options(1, "a", "b", "c")
				var parts []string
				for _, k := range []string{"a", "b", "c"} {
					if v, ok := o[k]; ok {
						parts = append(parts, k+"="+v)
					}
				}
				return c.Arg(0) + " " + strings.Join(parts, " ")
			case "shift":
				s := c.Shift()
				return fmt.Sprintf("%s %q", s.Name, s.Args)
			case "result":
				return Result(nil) + "\n" + Result(errors.New("bad"))
			}
			c.Fatalf("unknown command")
			return ""
		}
	})
}

func TestParseObjectID(t *testing.T) {
	for _, id := range []world.ObjectID{world.MakeObjectID(0, 0), world.MakeObjectID(2, 1), world.MakeObjectID(1<<32-1, 1<<32-1)} {
		got, err := ParseObjectID(id.String())
		if err != nil || got != id {
			t.Errorf("ParseObjectID(%q) = %v, %v", id.String(), got, err)
		}
	}
	for _, s := range []string{"", "2", "2.", ".1", "2.1.1", "-1.1", "4294967296.1", "a.b"} {
		if _, err := ParseObjectID(s); err == nil {
			t.Errorf("ParseObjectID(%q) succeeded", s)
		}
	}
}
