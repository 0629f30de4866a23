package cma_test

import (
	"errors"
	"fmt"

	"github.com/overworld/overworld/place/cma"
)

// The worked example of the paper's Fig. 1 and Fig. 3: three mirrors of
// capacity 2, players joining with their delays (ms) to G, H and I, and the
// moves the exact method makes to keep the total delay least.
func Example() {
	a, err := cma.New([]cma.Mirror{{ID: "G", Capacity: 2}, {ID: "H", Capacity: 2}, {ID: "I", Capacity: 2}}, cma.SA)
	if err != nil {
		panic(err)
	}
	delays := map[string][]float64{
		"a": {4, 5, 10}, "b": {4, 5, 10}, "c": {1, 8, 10},
		"d": {1, 8, 10}, "e": {2, 4, 10}, "f": {2, 4, 10},
	}
	for _, p := range []string{"a", "b", "c", "d", "e"} {
		if _, err := a.Join(p, delays[p]); err != nil {
			panic(err)
		}
	}
	st := a.Stats(5)
	fmt.Printf("5 players: total %v ms, mean %v, max %v, %d within 5 ms\n", st.Total, st.Mean, st.Max, st.Within)

	// f joins: H is best for it, so b makes room by moving from H to I.
	dec, err := a.Join("f", delays["f"])
	if err != nil {
		panic(err)
	}
	fmt.Println("f joins", dec.Mirror, "moves", dec.Moves)

	// c leaves G: a chain of moves fills the vacancy.
	dec, _ = a.Leave("c")
	fmt.Println("c leaves", dec.Mirror, "moves", dec.Moves, "total", a.TotalDelay())

	// g, as close to G as c was, takes the last seat through a chain the
	// other way round; h then finds every mirror full, and nothing changes.
	dec, _ = a.Join("g", []float64{1, 8, 10})
	fmt.Println("g joins", dec.Mirror, "moves", dec.Moves)
	_, err = a.Join("h", []float64{3, 3, 3})
	fmt.Println("h joins a full system:", errors.Is(err, cma.ErrNoCapacity), a.Len(), "players")
	// Output:
	// 5 players: total 21 ms, mean 4.2, max 10, 4 within 5 ms
	// f joins H moves [{b H I}]
	// c leaves G moves [{e H G} {a I H}] total 22
	// g joins G moves [{a H I} {e G H}]
	// h joins a full system: true 6 players
}
