package world

import (
	"math"
	"slices"
)

// State holds the replicated fields of one object as quantised integers.
// Reading a field back gives the quantised value, so a primary and its
// replicas see exactly the same numbers. The runtime owns States: a game reads
// and writes them through the typed accessors during Think.
//
// Accessors take a field index (Schema.Field / MustField). Reading a field as
// another numeric type converts (Float of an Int field is its value); an index
// out of range panics like a slice index, as it is a programming error.
type State struct {
	schema *Schema
	id     ObjectID
	v      []int64
}

// Schema returns the state's schema.
func (s *State) Schema() *Schema { return s.schema }

// ID returns the object's ID.
func (s *State) ID() ObjectID { return s.id }

// Float returns field i as a real number.
func (s *State) Float(i int) float64 {
	return float64(s.v[i]) * s.schema.quanta[i]
}

// SetFloat stores x in field i, rounded to the field's quantum. NaN is stored
// as 0; values beyond the representable range are clamped to it.
func (s *State) SetFloat(i int, x float64) {
	s.v[i] = s.quantise(i, x)
}

func (s *State) quantise(i int, x float64) int64 {
	q := math.Round(x / s.schema.quanta[i])
	switch {
	case math.IsNaN(q):
		return 0
	case q >= math.MaxInt64:
		return math.MaxInt64
	case q <= math.MinInt64:
		return math.MinInt64
	}
	if s.schema.fields[i].Type == Bool {
		if q != 0 {
			return 1
		}
		return 0
	}
	return int64(q)
}

// Int returns field i as an integer (a Float field's quantised count).
func (s *State) Int(i int) int64 { return s.v[i] }

// SetInt stores x in field i (a Float field gets x quanta; a Bool field gets
// x != 0).
func (s *State) SetInt(i int, x int64) {
	if s.schema.fields[i].Type == Bool && x != 0 {
		x = 1
	}
	s.v[i] = x
}

// Bool returns field i as a boolean (any non-zero value is true).
func (s *State) Bool(i int) bool { return s.v[i] != 0 }

// SetBool stores b in field i.
func (s *State) SetBool(i int, b bool) {
	s.v[i] = 0
	if b {
		s.v[i] = 1
	}
}

// Ref returns field i as an object reference (0: none).
func (s *State) Ref(i int) ObjectID { return ObjectID(s.v[i]) }

// SetRef stores id in field i.
func (s *State) SetRef(i int, id ObjectID) { s.v[i] = int64(id) }

// Location returns the object's naming attributes as a Point of its Space.
func (s *State) Location() Point {
	// The runtime asks for every object's location every frame: the loop
	// runs over the space's dimensions only, with the fields' indexes and
	// quanta kept together in the schema (small enough to be inlined).
	sc, v := s.schema, s.v
	var p Point
	for d := range min(sc.ndims, MaxDims) {
		p[d] = float64(v[sc.loc[d]]) * sc.locQ[d]
	}
	return p
}

// SetLocation stores p's coordinates in the naming-attribute fields.
func (s *State) SetLocation(p Point) {
	for d, i := range s.schema.loc {
		if i >= 0 {
			s.SetFloat(i, p[d])
		}
	}
}

// Equal reports whether s and o are states of the same object and schema
// with identical field values.
func (s *State) Equal(o *State) bool {
	return s.schema == o.schema && s.id == o.id && slices.Equal(s.v, o.v)
}

// CopyFrom makes s a copy of o (same schema and object); it does not
// allocate when s already has o's schema.
func (s *State) CopyFrom(o *State) {
	s.schema, s.id = o.schema, o.id
	if cap(s.v) < len(o.v) {
		s.v = make([]int64, len(o.v))
	}
	s.v = s.v[:len(o.v)]
	copy(s.v, o.v)
}

// Clone returns a copy of s.
func (s *State) Clone() *State {
	c := &State{}
	c.CopyFrom(s)
	return c
}

// Reset zeroes every field, keeping the schema and ID.
func (s *State) Reset() { clear(s.v) }

// ResetAs zeroes every field and makes s a state of object id (same
// schema): a zero state as Schema.NewState(id) makes, for a runtime that
// reuses the States of objects that are gone.
func (s *State) ResetAs(id ObjectID) {
	s.id = id
	clear(s.v)
}
