package placefile

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"

	"github.com/overworld/overworld/place/cma"
)

// scenarioMirror is one mirror of a scenario.
type scenarioMirror struct {
	ID       *string `json:"id"`
	Capacity *int    `json:"capacity"`
}

// scenarioEvent is one join or leave of a scenario.
type scenarioEvent struct {
	Op     string             `json:"op"`
	Player string             `json:"player"`
	Delays map[string]float64 `json:"delays,omitempty"`
}

// AssignOutput is the result of playing a scenario: the method, every
// event with its mirror and the players it moved, and the final assignment.
type AssignOutput struct {
	Method string         `json:"method"`
	Events []AssignEvent  `json:"events"`
	Final  AssignSnapshot `json:"final"`
}

// AssignEvent is one event played: the mirror a joining player got (empty
// on a leave) and every player moved.
type AssignEvent struct {
	Op     string       `json:"op"`
	Player string       `json:"player"`
	Mirror string       `json:"mirror"`
	Moves  []AssignMove `json:"moves"`
}

// AssignMove is one player moved from a mirror to another.
type AssignMove struct {
	Player string `json:"player"`
	From   string `json:"from"`
	To     string `json:"to"`
}

// AssignSnapshot is the final assignment and its delays (ms).
type AssignSnapshot struct {
	Assignment map[string]string `json:"assignment"`
	Players    int               `json:"players"`
	TotalDelay float64           `json:"total_delay"`
	MeanDelay  float64           `json:"mean_delay"`
	MaxDelay   float64           `json:"max_delay"`
	P95Delay   float64           `json:"p95_delay"`
	Moves      int               `json:"moves"`
}

// Assign validates and plays a scenario: mirrors with capacities, then join
// and leave events (the input of overworld assign). It returns an error
// naming the event index and field of the first problem.
//
// Before each event it calls progress, when not nil, with the events
// played and their total.
func Assign(data []byte, method cma.Method, progress func(done, total int)) (*AssignOutput, error) {
	var raw struct {
		Mirrors json.RawMessage   `json:"mirrors"`
		Events  []json.RawMessage `json:"events"`
	}
	if err := DecodeStrict(data, &raw); err != nil {
		return nil, fmt.Errorf("scenario: %v", err)
	}
	if raw.Mirrors == nil {
		return nil, errors.New(`scenario: missing field "mirrors"`)
	}
	if raw.Events == nil {
		return nil, errors.New(`scenario: missing field "events"`)
	}
	var ms []scenarioMirror
	if err := DecodeStrict(raw.Mirrors, &ms); err != nil {
		return nil, fmt.Errorf("mirrors: %v", err)
	}
	mirrors := make([]cma.Mirror, len(ms))
	for i, m := range ms {
		if m.ID == nil || *m.ID == "" {
			return nil, fmt.Errorf("mirror %d: field id: missing or empty", i)
		}
		if m.Capacity == nil {
			return nil, fmt.Errorf("mirror %d (%q): field capacity: missing", i, *m.ID)
		}
		if *m.Capacity < 1 {
			return nil, fmt.Errorf("mirror %d (%q): field capacity: %d, want at least 1", i, *m.ID, *m.Capacity)
		}
		mirrors[i] = cma.Mirror{ID: *m.ID, Capacity: *m.Capacity}
	}
	a, err := cma.New(mirrors, method)
	if err != nil {
		return nil, fmt.Errorf("mirrors: %v", err)
	}
	out := &AssignOutput{Method: method.String(), Events: make([]AssignEvent, 0, len(raw.Events))}
	var sum float64 // of every delay given: bounds every total the output reports
	for i, r := range raw.Events {
		if progress != nil {
			progress(i, len(raw.Events))
		}
		var ev scenarioEvent
		if err := DecodeStrict(r, &ev); err != nil {
			return nil, fmt.Errorf("event %d: %v", i, err)
		}
		if ev.Player == "" {
			return nil, fmt.Errorf("event %d: field player: missing or empty", i)
		}
		var dec cma.Decision
		switch ev.Op {
		case "join":
			if ev.Delays == nil {
				return nil, fmt.Errorf("event %d (join %q): field delays: missing", i, ev.Player)
			}
			for _, d := range ev.Delays {
				if d > 0 && !math.IsInf(d, 0) {
					sum += d
				}
			}
			if sum > MaxDelaySum {
				return nil, fmt.Errorf("event %d (join %q): field delays: too large: the delays given so far add up to more than %.3g ms, and their totals would overflow", i, ev.Player, MaxDelaySum)
			}
			dec, err = a.JoinMap(ev.Player, ev.Delays)
			if err != nil {
				return nil, fmt.Errorf("event %d (join %q): field %s: %v", i, ev.Player, joinField(err), err)
			}
		case "leave":
			if ev.Delays != nil {
				return nil, fmt.Errorf("event %d (leave %q): field delays: not allowed on a leave", i, ev.Player)
			}
			dec, err = a.Leave(ev.Player)
			if err != nil {
				return nil, fmt.Errorf("event %d (leave %q): field player: %v", i, ev.Player, err)
			}
		case "":
			return nil, fmt.Errorf("event %d: field op: missing (want join or leave)", i)
		default:
			return nil, fmt.Errorf("event %d: field op: %q, want join or leave", i, ev.Op)
		}
		moves := make([]AssignMove, len(dec.Moves))
		for k, mv := range dec.Moves {
			moves[k] = AssignMove{Player: mv.Player, From: mv.From, To: mv.To}
		}
		out.Final.Moves += len(moves)
		out.Events = append(out.Events, AssignEvent{Op: ev.Op, Player: ev.Player, Mirror: dec.Mirror, Moves: moves})
	}
	st := a.Stats(math.Inf(1))
	out.Final.Assignment = a.Assignment()
	out.Final.Players = st.Players
	out.Final.TotalDelay = st.Total
	out.Final.MeanDelay = st.Mean
	out.Final.MaxDelay = st.Max
	out.Final.P95Delay = st.P95
	return out, nil
}

// MaxDelaySum bounds the sum of every delay of an input (ms): the totals,
// means and search costs computed from them then stay finite, with room to
// spare, far beyond any real latency.
const MaxDelaySum = 1e300

// joinField names the input field a join error is about.
func joinField(err error) string {
	var de *cma.DelayError
	switch {
	case errors.As(err, &de):
		return "delays." + de.Mirror
	case errors.Is(err, cma.ErrDuplicatePlayer), errors.Is(err, cma.ErrBadPlayer), errors.Is(err, cma.ErrNoCapacity):
		return "player"
	default:
		return "delays"
	}
}
