package placefile

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/overworld/overworld/place/spd"
)

// readSeed reads a seed input, failing the target when it is missing.
func readSeed(f *testing.F, path string) []byte {
	f.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		f.Fatal(err)
	}
	return data
}

// FuzzAssign feeds arbitrary bytes to the scenario decoder: it must never
// panic, and on success the output must be consistent with the input.
func FuzzAssign(f *testing.F) {
	f.Add(readSeed(f, "testdata/assign-fig1.json"))
	f.Add([]byte(`{"mirrors":[{"id":"G","capacity":1}],"events":[{"op":"join","player":"a","delays":{"G":1}},{"op":"leave","player":"a"}]}`))
	f.Add([]byte(`{"mirrors":[{"id":"G","capacity":1}],"events":[{"op":"leave","player":"a"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		out, err := Assign(data, 0, nil)
		if err != nil {
			return
		}
		if len(out.Final.Assignment) != out.Final.Players {
			t.Fatalf("assignment of %d players, stats of %d", len(out.Final.Assignment), out.Final.Players)
		}
	})
}

// FuzzSelect feeds arbitrary bytes to the session decoder: it must never
// panic, and a decoded session must give a solution within its bound.
func FuzzSelect(f *testing.F) {
	f.Add(readSeed(f, "testdata/select-fig1.json"))
	f.Add([]byte(`{"servers":["A"],"players":[{"name":"p","latency":{"A":1}}]}`))
	f.Add([]byte(`{"servers":["A","B"],"links":[{"a":"A","b":"B","ms":1e308}],"players":[{"name":"p","latency":{"A":1,"B":0}}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		in, err := DecodeSession(data)
		if err != nil || in.NumServers() > 12 || in.NumPlayers() > 12 {
			return
		}
		for _, algo := range []string{"spdcs-h", "zizo", "matching", "exact"} {
			out, err := Select(in, SelectOptions{Model: "cs", Algo: algo, Factor: 1.2, FactorSet: true, Fair: true})
			if err != nil {
				continue
			}
			if out.Delay > out.Bound+spd.Tolerance || len(out.Assignment) != in.NumPlayers() {
				t.Fatalf("%s: delay %v bound %v", algo, out.Delay, out.Bound)
			}
		}
	})
}

// FuzzBalance feeds arbitrary bytes to the decoder: never a panic, and on
// success players are conserved and every overflowed instance with two or
// more players has a distinct server and replica among them.
func FuzzBalance(f *testing.F) {
	f.Add(readSeed(f, "testdata/balance-small.json"))
	f.Add([]byte(`{"max_load":10,"servers":[{"id":"a","main":9},{"id":"b"}],"instances":[{"id":"x","size":5,"server":"a"}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		for _, m := range []string{"balance", "pack"} {
			out, err := Balance(data, m, 0, true, 100)
			if err != nil {
				return
			}
			before, after := 0, 0
			for k, v := range out.Before {
				before += v
				after += out.After[k]
			}
			if before-after != out.Overflowed {
				t.Fatalf("%d before, %d after, %d overflowed", before, after, out.Overflowed)
			}
			for _, o := range out.Overflow {
				if o.Server != nil && o.Replica != nil && *o.Server == *o.Replica {
					t.Fatalf("server and replica are both %q", *o.Server)
				}
			}
			if _, err := json.Marshal(out); err != nil {
				t.Fatal(err)
			}
		}
	})
}
