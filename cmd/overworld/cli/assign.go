package cli

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"
	"strings"

	"github.com/spf13/cobra"

	"github.com/overworld/overworld/place/cma"
)

// scenario is the input of `overworld assign`.
type scenario struct {
	Mirrors []scenarioMirror `json:"mirrors"`
	Events  []scenarioEvent  `json:"events"`
}

type scenarioMirror struct {
	ID       *string `json:"id"`
	Capacity *int    `json:"capacity"`
}

type scenarioEvent struct {
	Op     string             `json:"op"`
	Player string             `json:"player"`
	Delays map[string]float64 `json:"delays,omitempty"`
}

type assignOutput struct {
	Method string         `json:"method"`
	Events []assignEvent  `json:"events"`
	Final  assignSnapshot `json:"final"`
}

type assignEvent struct {
	Op     string       `json:"op"`
	Player string       `json:"player"`
	Mirror string       `json:"mirror"`
	Moves  []assignMove `json:"moves"`
}

type assignMove struct {
	Player string `json:"player"`
	From   string `json:"from"`
	To     string `json:"to"`
}

type assignSnapshot struct {
	Assignment map[string]string `json:"assignment"`
	Players    int               `json:"players"`
	TotalDelay float64           `json:"total_delay"`
	MeanDelay  float64           `json:"mean_delay"`
	MaxDelay   float64           `json:"max_delay"`
	P95Delay   float64           `json:"p95_delay"`
	Moves      int               `json:"moves"`
}

func newAssignCmd(e *env) *cobra.Command {
	var method string
	var indent bool
	cmd := &cobra.Command{
		Use:   "assign [FILE]",
		Short: "Assign players to mirrors as they join and leave (JSON in, JSON out)",
		Long: `Assign reads a scenario — mirrors with capacities, then join and leave events — from
FILE (or standard input when FILE is absent or "-") and writes, as JSON, the mirror each
joining player gets, every player moved on each event, and the final assignment with its
total, mean, p95 and max delay (ms).

Input:
  {"mirrors":[{"id":"G","capacity":2},...],
   "events":[{"op":"join","player":"a","delays":{"G":4,"H":5,"I":10}},
             {"op":"leave","player":"a"},...]}

Every join gives a delay (finite, >= 0) to every mirror. Methods (join/leave):
  sa          J-SA/L-SA, exact, incremental (default)
  greedy      J-greedy/L-greedy
  ignore      J-greedy/L-ignore (leaves move nobody)
  optimal     re-solve the whole assignment from scratch after every event
  sa-rebuild  J-SA/L-SA as the paper specifies (arrays rebuilt per event)

A malformed scenario, or one that cannot be played (a duplicate join, an unknown
player leaving, a join when every mirror is full), is rejected with an error naming
the event index and field; nothing is written to standard output and the exit
status is 2.`,
		Example: `  echo '{"mirrors":[{"id":"G","capacity":1},{"id":"H","capacity":1}],
        "events":[{"op":"join","player":"a","delays":{"G":1,"H":5}},
                  {"op":"join","player":"b","delays":{"G":2,"H":9}}]}' | overworld assign`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			m, err := cma.ParseMethod(method)
			if err != nil {
				return badInputf("--method: %v", err)
			}
			data, name, err := readInput(e, "assign", args)
			if err != nil {
				return err
			}
			t := newTicker(e.stderr, false, "assign", -1, "events")
			out, err := runAssign(data, m, t)
			t.done()
			if err != nil {
				return badInputf("%s: %v", name, err)
			}
			enc := json.NewEncoder(e.stdout)
			if indent {
				enc.SetIndent("", "  ")
			}
			return enc.Encode(out)
		},
	}
	cmd.Flags().StringVar(&method, "method", "sa", "join/leave algorithms: sa, greedy, ignore, optimal or sa-rebuild")
	cmd.Flags().BoolVar(&indent, "indent", false, "indent the JSON output")
	return cmd
}

// runAssign validates and plays a scenario. It returns an error naming the
// event index and field of the first problem.
//
// Its progress (events played of all) goes to t, which may be nil.
func runAssign(data []byte, method cma.Method, t *ticker) (*assignOutput, error) {
	var raw struct {
		Mirrors json.RawMessage   `json:"mirrors"`
		Events  []json.RawMessage `json:"events"`
	}
	if err := strictDecode(data, &raw); err != nil {
		return nil, fmt.Errorf("scenario: %v", err)
	}
	if raw.Mirrors == nil {
		return nil, errors.New(`scenario: missing field "mirrors"`)
	}
	if raw.Events == nil {
		return nil, errors.New(`scenario: missing field "events"`)
	}
	var ms []scenarioMirror
	if err := strictDecode(raw.Mirrors, &ms); err != nil {
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
	out := &assignOutput{Method: method.String(), Events: make([]assignEvent, 0, len(raw.Events))}
	var sum float64 // of every delay given: bounds every total the output reports
	for i, r := range raw.Events {
		t.set(int64(i), int64(len(raw.Events)))
		var ev scenarioEvent
		if err := strictDecode(r, &ev); err != nil {
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
			if sum > maxDelaySum {
				return nil, fmt.Errorf("event %d (join %q): field delays: too large: the delays given so far add up to more than %.3g ms, and their totals would overflow", i, ev.Player, maxDelaySum)
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
		moves := make([]assignMove, len(dec.Moves))
		for k, mv := range dec.Moves {
			moves[k] = assignMove{Player: mv.Player, From: mv.From, To: mv.To}
		}
		out.Final.Moves += len(moves)
		out.Events = append(out.Events, assignEvent{Op: ev.Op, Player: ev.Player, Mirror: dec.Mirror, Moves: moves})
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

// maxDelaySum bounds the sum of every delay of an input (ms): the totals,
// means and search costs computed from them then stay finite, with room to
// spare, far beyond any real latency.
const maxDelaySum = 1e300

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

// strictDecode decodes JSON rejecting unknown fields and trailing data, and
// reports syntax and type errors with their position.
func strictDecode(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return describeJSONError(data, err)
	}
	if dec.More() {
		return errors.New("unexpected data after the JSON value")
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("unexpected data after the JSON value")
	}
	return nil
}

func describeJSONError(data []byte, err error) error {
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	switch {
	case errors.As(err, &se):
		line, col := position(data, se.Offset-1) // Offset counts the bad byte
		return fmt.Errorf("invalid JSON at line %d, column %d: %v", line, col, se)
	case errors.As(err, &te):
		if te.Field == "" {
			return fmt.Errorf("got a JSON %s, want %s", te.Value, jsonKind(te.Type))
		}
		return fmt.Errorf("field %s: got a JSON %s, want %s", te.Field, te.Value, jsonKind(te.Type))
	case errors.Is(err, io.EOF):
		return errors.New("empty input")
	case errors.Is(err, io.ErrUnexpectedEOF):
		return errors.New("truncated JSON")
	}
	msg := err.Error()
	msg = strings.TrimPrefix(msg, "json: ")
	return errors.New(msg)
}

// jsonKind names, in JSON's words, the kind of value that decodes into t.
func jsonKind(t reflect.Type) string {
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil {
		return "a value"
	}
	switch t.Kind() {
	case reflect.Struct, reflect.Map:
		return "an object"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "an integer"
	case reflect.Float32, reflect.Float64:
		return "a number"
	}
	return "a value"
}

func position(data []byte, off int64) (line, col int) {
	line, col = 1, 1
	for i := int64(0); i < off && i < int64(len(data)); i++ {
		if data[i] == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return line, col
}
