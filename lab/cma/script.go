package cma

import (
	"fmt"
	"math/rand/v2"

	"github.com/overworld/overworld/lab"
)

// event is one step of a scenario: client (an index into the scenario's
// client pool) joins or leaves.
type event struct {
	join   bool
	client int
}

// joinScript is §4.1: clients 0..n-1 join in order.
func joinScript(n int) []event {
	s := make([]event, n)
	for i := range s {
		s[i] = event{join: true, client: i}
	}
	return s
}

// leaveScript is §4.2: after joinScript(n), every client leaves in the order
// it joined (first in, first out).
func leaveScript(n int) []event {
	s := make([]event, n)
	for i := range s {
		s[i] = event{client: i}
	}
	return s
}

// dynamicScript is §4.3. Populate phase: repeat "the next two clients of the
// pool join, then a uniformly random connected client leaves" until populate
// clients are connected (3·populate events, 2·populate joins). Churn phase:
// churn joins (the next clients of the pool) and churn leaves (uniformly
// random connected clients) in a uniformly random order. An order whose
// prefix would leave fewer than zero clients or more than capacity is drawn
// again (the chance is about e^(−2·slack²/2·churn), below 1e-8 for the
// paper's sizes). The pool needs 2·populate + churn clients.
func dynamicScript(populate, churn, capacity int, rng *rand.Rand) ([]event, error) {
	switch {
	case populate < 1 || churn < 0:
		return nil, fmt.Errorf("%w: dynamic scenario: populate to %d, churn %d: need populate ≥ 1, churn ≥ 0", lab.ErrConfig, populate, churn)
	case capacity < populate+1:
		return nil, fmt.Errorf("%w: dynamic scenario: capacity %d cannot hold the %d+1 clients of the last populate step", lab.ErrConfig, capacity, populate)
	}
	s := make([]event, 0, 3*populate+2*churn)
	var present []int
	next := 0
	leaveRandom := func() {
		i := rng.IntN(len(present))
		s = append(s, event{client: present[i]})
		present[i] = present[len(present)-1]
		present = present[:len(present)-1]
	}
	for len(present) < populate {
		for range 2 {
			s = append(s, event{join: true, client: next})
			present = append(present, next)
			next++
		}
		leaveRandom()
	}
	order := make([]bool, 2*churn) // true: join
	for attempt := 0; ; attempt++ {
		if attempt == maxOrderDraws {
			return nil, fmt.Errorf("%w: dynamic scenario: no random order of %d joins and %d leaves from %d clients stayed within 0..%d clients in %d draws; raise the capacity",
				lab.ErrConfig, churn, churn, populate, capacity, maxOrderDraws)
		}
		for i := range order {
			order[i] = i < churn
		}
		rng.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		n, ok := len(present), true
		for _, j := range order {
			if j {
				n++
			} else {
				n--
			}
			if n < 0 || n > capacity {
				ok = false
				break
			}
		}
		if ok {
			break
		}
	}
	for _, j := range order {
		if j {
			s = append(s, event{join: true, client: next})
			present = append(present, next)
			next++
		} else {
			leaveRandom()
		}
	}
	return s, nil
}

// maxOrderDraws bounds the redraws of the churn order (see dynamicScript).
const maxOrderDraws = 1000

// clientsNeeded returns how many distinct clients a script uses.
func clientsNeeded(s []event) int {
	n := 0
	for _, e := range s {
		if e.join {
			n = max(n, e.client+1)
		}
	}
	return n
}
