package placefile

import (
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/overworld/overworld/place/spd"
)

// TestDecodeStrict: unknown fields, trailing data, syntax and type errors
// are rejected with an error naming the problem and where it is.
func TestDecodeStrict(t *testing.T) {
	var v struct {
		A int `json:"a"`
	}
	if err := DecodeStrict([]byte(`{"a":1}`), &v); err != nil || v.A != 1 {
		t.Fatalf("got %v, %v", v, err)
	}
	for _, c := range []struct{ in, want string }{
		{``, "empty input"},
		{`{"a":1`, "truncated JSON"},
		{`{"a":1} {}`, "unexpected data after the JSON value"},
		{`{"b":1}`, `unknown field "b"`},
		{`{"a":"x"}`, "field a: got a JSON string, want an integer"},
		{"{\n\"a\":}", "invalid JSON at line 2, column 5"},
	} {
		if err := DecodeStrict([]byte(c.in), &v); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want one naming %q", c.in, err, c.want)
		}
	}
}

// TestExamples runs the three example files of the commands once each and
// checks what the papers' figures give: Fig. 1 of the assignment paper
// places all its players, and Fig. 1 of the selection paper has Γ = 98 ms.
func TestExamples(t *testing.T) {
	data, err := os.ReadFile("testdata/assign-fig1.json")
	if err != nil {
		t.Fatal(err)
	}
	events := 0
	a, err := Assign(data, 0, func(done, total int) { events = total })
	if err != nil || events == 0 || len(a.Events) != events || a.Final.Players != len(a.Final.Assignment) {
		t.Fatalf("assign: %+v, %v (progress total %d)", a, err, events)
	}
	if data, err = os.ReadFile("testdata/select-fig1.json"); err != nil {
		t.Fatal(err)
	}
	in, err := DecodeSession(data)
	if err != nil {
		t.Fatal(err)
	}
	o := SelectOptions{Model: "cs", Factor: 1, FactorSet: true}
	if err := o.Check(); err != nil || o.Algo != "spdcs-h" {
		t.Fatalf("check: %v, algo %q", err, o.Algo)
	}
	s, err := Select(in, o)
	if err != nil || s.Gamma != 98 || s.Delay > s.Bound+spd.Tolerance {
		t.Fatalf("select: %+v, %v; want Γ = 98 and the delay within the bound", s, err)
	}
	o = SelectOptions{Model: "cs", Algo: "spdcs-h", Bound: 90, BoundSet: true}
	var ie *spd.InfeasibleError
	if _, err := Select(in, o); !errors.As(err, &ie) {
		t.Errorf("bound 90 below Γ: error %v, want an *spd.InfeasibleError", err)
	}
	if _, err := Select(in, SelectOptions{Model: "cs", Algo: "nope", Factor: 1, FactorSet: true}); !errors.Is(err, spd.ErrInput) {
		t.Errorf("unknown algorithm: error %v, want one wrapping spd.ErrInput", err)
	}
	if data, err = os.ReadFile("testdata/balance-small.json"); err != nil {
		t.Fatal(err)
	}
	b, err := Balance(data, "pack", 0, true, 100)
	if err != nil || b.Optimal == nil || b.LowerBound == nil {
		t.Fatalf("balance: %+v, %v; want pack's bound and optimality", b, err)
	}
}
