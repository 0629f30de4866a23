package cma

import (
	"fmt"
	"slices"
	"time"

	"github.com/overworld/overworld/place/cma"
)

// meter reports progress in about 200 steps.
type meter struct {
	done, total, next int
	fn                func(done, total int)
}

func (m *meter) add(n int) {
	m.done += n
	if m.fn != nil && m.done >= m.next {
		m.fn(m.done, m.total)
		m.next = m.done + max(1, m.total/200)
	}
}

func (m *meter) finish() {
	if m.fn != nil {
		m.fn(m.done, m.total)
	}
}

// sim drives one Assigner through scripts and keeps its own view of the
// assignment, built only from the Decisions returned, so every event also
// checks that the Decision is complete.
type sim struct {
	a       *cma.Assigner
	mirrors []cma.Mirror
	in      *instance
	rows    [][]float64 // client → delays to the system's mirrors
	at      []int       // client → mirror index, −1 when not connected
	byID    map[string]int
	mirror  map[string]int
	mt      *meter
}

func newSim(in *instance, mirrors []cma.Mirror, method cma.Method, mt *meter) (*sim, error) {
	a, err := cma.New(mirrors, method)
	if err != nil {
		return nil, fmt.Errorf("lab/cma: %w", err)
	}
	s := &sim{a: a, mirrors: mirrors, in: in, rows: make([][]float64, len(in.clients)), at: make([]int, len(in.clients)),
		byID: make(map[string]int, len(in.clients)), mirror: make(map[string]int, len(mirrors)), mt: mt}
	for i, id := range in.clients {
		s.rows[i] = in.delay[i][:len(mirrors)]
		s.at[i] = -1
		s.byID[id] = i
	}
	for j, m := range mirrors {
		s.mirror[m.ID] = j
	}
	return s, nil
}

// run plays script, adding to t's moves and elapsed time; with record it
// appends the mean and max delay after every event and sets t.Final. Each
// event's duration is appended to durs when it is not nil.
func (s *sim) run(script []event, t *Trace, record bool, durs *[]time.Duration) error {
	if record {
		t.Mean = slices.Grow(t.Mean, len(script))
		t.Max = slices.Grow(t.Max, len(script))
	}
	for i, ev := range script {
		id := s.in.clients[ev.client]
		var d cma.Decision
		var err error
		t0 := time.Now()
		if ev.join {
			d, err = s.a.Join(id, s.rows[ev.client])
		} else {
			d, err = s.a.Leave(id)
		}
		dt := time.Since(t0)
		if err != nil {
			return fmt.Errorf("lab/cma: %v, event %d: %w", s.a.Method(), i, err)
		}
		t.Elapsed += dt
		if durs != nil {
			*durs = append(*durs, dt)
		}
		if err := s.apply(ev, d); err != nil {
			return fmt.Errorf("lab/cma: %v, event %d: %w", s.a.Method(), i, err)
		}
		t.Moves += len(d.Moves)
		if record {
			mean, mx := s.delays()
			t.Mean = append(t.Mean, mean)
			t.Max = append(t.Max, mx)
			if t.FirstFull == 0 && s.anyFull() {
				t.FirstFull = len(t.Mean)
			}
		}
		s.mt.add(1)
	}
	if record {
		t.Final = s.final()
		got, want := 0.0, s.a.TotalDelay()
		for _, d := range t.Final {
			got += d
		}
		if abs(got-want) > 1e-9*max(1, want) {
			return fmt.Errorf("lab/cma: %v: the decisions add up to a total delay of %v ms, the assigner reports %v", s.a.Method(), got, want)
		}
	}
	return nil
}

// apply updates the view with a decision.
func (s *sim) apply(ev event, d cma.Decision) error {
	j, ok := s.mirror[d.Mirror]
	if !ok {
		return fmt.Errorf("decision names unknown mirror %q", d.Mirror)
	}
	if ev.join {
		s.at[ev.client] = j
	} else {
		if s.at[ev.client] != j {
			return fmt.Errorf("leave of %s reports mirror %s", s.in.clients[ev.client], d.Mirror)
		}
		s.at[ev.client] = -1
	}
	for _, mv := range d.Moves {
		c, ok := s.byID[mv.Player]
		if !ok || s.at[c] < 0 {
			return fmt.Errorf("move of unknown player %q", mv.Player)
		}
		to, ok := s.mirror[mv.To]
		if !ok {
			return fmt.Errorf("move to unknown mirror %q", mv.To)
		}
		s.at[c] = to
	}
	return nil
}

// anyFull reports whether some mirror is full.
func (s *sim) anyFull() bool {
	for j, m := range s.mirrors {
		if s.a.Load(j) >= m.Capacity {
			return true
		}
	}
	return false
}

// delays returns the mean and max delay of the connected clients.
func (s *sim) delays() (mean, mx float64) {
	total, n := 0.0, 0
	for c, j := range s.at {
		if j >= 0 {
			d := s.rows[c][j]
			total += d
			mx = max(mx, d)
			n++
		}
	}
	if n == 0 {
		return 0, 0
	}
	return total / float64(n), mx
}

// final returns the connected clients' delays, ascending.
func (s *sim) final() []float64 {
	var ds []float64
	for c, j := range s.at {
		if j >= 0 {
			ds = append(ds, s.rows[c][j])
		}
	}
	slices.Sort(ds)
	return ds
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}
