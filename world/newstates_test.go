package world

import (
	"fmt"
	"testing"
)

// TestNewStatesIndependent builds States of schemas of 1 to 20 fields one
// by one and in blocks, and checks that each has its schema, ID and zero
// fields, and that writing every field of one changes no other.
func TestNewStatesIndependent(t *testing.T) {
	for nf := 1; nf <= 20; nf++ {
		s := intSchema(nf)
		id := MakeObjectID(3, uint32(nf))
		block := make([]*State, 5)
		s.NewStates(id, block)
		all := append([]*State{s.NewState(id), s.NewState(id)}, block...)
		for k, st := range all {
			if st.Schema() != s || st.ID() != id || len(st.v) != nf || cap(st.v) != nf {
				t.Fatalf("%d fields, state %d: schema %v, id %v, %d values (cap %d)", nf, k, st.Schema() == s, st.ID(), len(st.v), cap(st.v))
			}
		}
		for k, st := range all {
			for i := range nf {
				st.SetInt(i, int64(1000*k+i+1))
			}
			c := st.Clone()
			c.CopyFrom(st) // same schema: no reallocation
			for j, o := range all {
				for i := range nf {
					want := int64(0)
					if j <= k {
						want = int64(1000*j + i + 1)
					}
					if got := o.Int(i); got != want {
						t.Fatalf("%d fields: after writing state %d, state %d field %d = %d, want %d", nf, k, j, i, got, want)
					}
				}
			}
		}
	}
}

// TestResetAs: a reused State is exactly a new zero State of its new object.
func TestResetAs(t *testing.T) {
	st := testSchema.NewState(MakeObjectID(1, 1))
	for i := range st.v {
		st.SetInt(i, int64(i+1))
	}
	id := MakeObjectID(2, 7)
	st.ResetAs(id)
	if want := testSchema.NewState(id); !st.Equal(want) || st.ID() != id {
		t.Fatalf("after ResetAs: %v %v, want %v %v", st.ID(), st.v, want.ID(), want.v)
	}
}

// TestNewStatesAllocs: NewStates makes any number of States with two
// allocations (the States, their values), NewState one State with two.
func TestNewStatesAllocs(t *testing.T) {
	for _, nf := range []int{1, 7, 14, 16, 17, 40} {
		s := intSchema(nf)
		dst := make([]*State, 8)
		if got := testing.AllocsPerRun(100, func() { s.NewStates(1, dst) }); got != 2 {
			t.Errorf("%d fields: NewStates of %d made %v allocations, want 2", nf, len(dst), got)
		}
		var st *State
		if got := testing.AllocsPerRun(100, func() { st = s.NewState(1) }); got != 2 || len(st.v) != nf {
			t.Errorf("%d fields: NewState made %v allocations and %d values, want 2 and %d", nf, got, len(st.v), nf)
		}
	}
}

// intSchema returns a schema of nf Int fields in a one-dimensional space
// (the first field is x).
func intSchema(nf int) *Schema {
	fields := make([]Field, nf)
	for i := range fields {
		fields[i] = Field{Name: fmt.Sprintf("f%d", i), Type: Int}
	}
	fields[0].Name = "x"
	return MustSchema(fmt.Sprintf("s%d", nf), MustSpace("x"), fields, func(*State) Object { return nil })
}
