package estimate

import (
	"strings"
	"testing"
)

func TestReadTruth(t *testing.T) {
	tr, err := ReadTruth(strings.NewReader("# a line of 3\n0, 10 ,20\n\n10 0 nan\n20 - 0\n"))
	if err != nil {
		t.Fatal(err)
	}
	if tr.Len() != 3 || len(tr.Missing()) != 2 {
		t.Fatalf("%d endpoints, %d missing; want 3 and 2", tr.Len(), len(tr.Missing()))
	}
	if v, ok := tr.RTT(0, 2); !ok || v != 20 {
		t.Errorf("RTT(0,2) = %v, %v; want 20", v, ok)
	}
	for _, c := range []struct{ in, want string }{
		{"", "no rows"},
		{"0 x\n1 0\n", `line 1, column 2: "x" is not a number`},
		{"0 1\n1 0 2\n", "line 2: 3 entries, the first row has 2"},
		{"0 1 2\n1 0 2\n", "2 rows of 3 entries: not square"},
		{"0 2e9\n1 0\n", "line 1, column 2: 2e9 ms: want an RTT of at most"},
	} {
		if _, err := ReadTruth(strings.NewReader(c.in)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: error %v, want one naming %q", c.in, err, c.want)
		}
	}
}
