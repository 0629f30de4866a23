package world

import (
	"fmt"
	"runtime"
	"testing"
	"unsafe"
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

// TestStateBlockSize checks that a State of at most 16 fields has its
// values right after it, in an allocation no larger than the size class of
// the State and its values (stateBlock): 160 bytes for 14 fields, not 176.
func TestStateBlockSize(t *testing.T) {
	for nf := 1; nf <= 16; nf++ {
		s := intSchema(nf)
		block := make([]*State, 4)
		s.NewStates(1, block)
		for k, st := range append(block, s.NewState(1)) {
			if got, want := uintptr(unsafe.Pointer(&st.v[0])), uintptr(unsafe.Pointer(st))+unsafe.Sizeof(State{}); got != want {
				t.Fatalf("%d fields, state %d: values at %#x, want %#x (right after the State)", nf, k, got, want)
			}
		}
		if k := len(block) - 1; uintptr(unsafe.Pointer(block[k]))-uintptr(unsafe.Pointer(block[0])) != uintptr(k)*(unsafe.Sizeof(State{})+uintptr(nf)*8) {
			t.Fatalf("%d fields: NewStates' States are not packed", nf)
		}
		const n = 1000
		keep := make([]*State, n)
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		for i := range keep {
			keep[i] = s.NewState(1)
		}
		runtime.ReadMemStats(&after)
		per := (after.TotalAlloc - before.TotalAlloc) / n
		if limit := (uint64(unsafe.Sizeof(State{})) + 8*uint64(nf) + 15) &^ 15; per > limit {
			t.Errorf("%d fields: %d bytes per NewState, want at most %d", nf, per, limit)
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
