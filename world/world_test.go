package world

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

type testObj struct{ st *State }

func (o *testObj) State() *State          { return o.st }
func (o *testObj) Interest(d []Box) []Box { return d }
func (o *testObj) Think(Context)          {}

func newTestObj(st *State) Object { return &testObj{st} }

var testSchema = MustSchema("test.avatar", XYZ, []Field{
	{Name: "x", Type: Float}, {Name: "y", Type: Float}, {Name: "z", Type: Float, Quantum: 0.5},
	{Name: "health", Type: Int}, {Name: "alive", Type: Bool}, {Name: "target", Type: Ref},
	{Name: "yaw", Type: Float, Quantum: 1.0 / 256},
}, newTestObj)

func randomState(rng *rand.Rand, s *Schema) *State {
	st := s.NewState(MakeObjectID(rng.Uint32(), rng.Uint32()|1))
	for i := range s.NumFields() {
		switch s.FieldAt(i).Type {
		case Float:
			st.SetFloat(i, (rng.Float64()-0.5)*math.Pow(10, float64(rng.IntN(8))))
		case Int:
			if rng.IntN(4) == 0 {
				st.SetInt(i, int64(rng.Uint64()))
			} else {
				st.SetInt(i, rng.Int64N(200)-100)
			}
		case Bool:
			st.SetBool(i, rng.IntN(2) == 0)
		case Ref:
			st.SetRef(i, ObjectID(rng.Uint64()))
		}
	}
	return st
}

// mutate changes a random subset of fields.
func mutate(rng *rand.Rand, st *State) *State {
	c := st.Clone()
	other := randomState(rng, st.Schema())
	for i := range c.v {
		if rng.IntN(3) == 0 {
			c.v[i] = other.v[i]
		}
	}
	return c
}

func TestDeltaRoundTrip(t *testing.T) {
	for seed := uint64(1); seed <= 2000; seed++ {
		rng := rand.New(rand.NewPCG(seed, 7))
		base := randomState(rng, testSchema)
		cur := mutate(rng, base)
		var b []byte
		if seed%5 == 0 {
			b = AppendDelta(nil, nil, cur)
			got := testSchema.NewState(cur.ID())
			got.SetInt(3, 99) // must be reset by a full state
			n, err := ApplyDelta(got, nil, b)
			if err != nil || n != len(b) || !got.Equal(cur) {
				t.Fatalf("seed %d: full state: n=%d/%d err=%v equal=%v", seed, n, len(b), err, got.Equal(cur))
			}
			continue
		}
		b = AppendDelta([]byte{0xAA}, base, cur)[1:]
		got := base.Clone()
		n, err := ApplyDelta(got, got, b)
		if err != nil || n != len(b) || !got.Equal(cur) {
			t.Fatalf("seed %d: delta: n=%d/%d err=%v equal=%v", seed, n, len(b), err, got.Equal(cur))
		}
		if Changed(base, cur) != (len(b) > 1) {
			t.Fatalf("seed %d: Changed disagrees with the delta length %d", seed, len(b))
		}
	}
}

func TestWriteAddsNumericAndSetsOthers(t *testing.T) {
	primary := testSchema.NewState(MakeObjectID(1, 1))
	primary.SetInt(3, 100)
	primary.SetFloat(0, 10)
	// Two replicas each deal 10 damage and retarget.
	var writes [][]byte
	for k, target := range []ObjectID{7, 9} {
		rep := primary.Clone()
		before := rep.Clone()
		rep.SetInt(3, rep.Int(3)-10)
		rep.SetRef(5, target)
		rep.SetFloat(0, rep.Float(0)+float64(k+1))
		writes = append(writes, AppendWrite(nil, before, rep))
	}
	for _, w := range writes {
		if n, err := ApplyWrite(primary, w); err != nil || n != len(w) {
			t.Fatalf("ApplyWrite: n=%d err=%v", n, err)
		}
	}
	if primary.Int(3) != 80 || primary.Ref(5) != 9 || primary.Float(0) != 13 {
		t.Fatalf("after two writes: health %d target %v x %v, want 80, 9, 13", primary.Int(3), primary.Ref(5), primary.Float(0))
	}
}

func TestDecodeErrorsLeaveStateUnchanged(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	st := randomState(rng, testSchema)
	orig := st.Clone()
	for _, tc := range []struct {
		name string
		p    []byte
		want string
	}{
		{"empty", nil, "change mask"},
		{"mask beyond fields", []byte{0x80, 0x01}, "beyond"},
		{"truncated field", []byte{0x01}, "truncated"},
		{"truncated long field", []byte{0x03, 0x02, 0x80}, "truncated"},
		{"bool out of range", []byte{1 << 4, 8}, "bool"},
	} {
		if _, err := ApplyDelta(st, st, tc.p); !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: ApplyDelta err = %v, want ErrCorrupt mentioning %q", tc.name, err, tc.want)
		}
		if _, err := ApplyWrite(st, tc.p); err == nil {
			t.Errorf("%s: ApplyWrite accepted it", tc.name)
		}
		if !st.Equal(orig) {
			t.Fatalf("%s: state changed by a failed decode", tc.name)
		}
	}
}

// TestSchemaTypeMasks checks the field-type masks the decoders use.
func TestSchemaTypeMasks(t *testing.T) {
	for i := range testSchema.NumFields() {
		ty := testSchema.FieldAt(i).Type
		if got := testSchema.numeric>>i&1 != 0; got != numeric(ty) {
			t.Errorf("field %d (%v): numeric %v", i, ty, got)
		}
		if got := testSchema.bools>>i&1 != 0; got != (ty == Bool) {
			t.Errorf("field %d (%v): bool %v", i, ty, got)
		}
	}
}

func FuzzApplyDelta(f *testing.F) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 8 {
		a := randomState(rng, testSchema)
		f.Add(AppendDelta(nil, a, mutate(rng, a)))
		f.Add(AppendWrite(nil, a, mutate(rng, a)))
	}
	f.Fuzz(func(t *testing.T, p []byte) {
		st := testSchema.NewState(1)
		before := st.Clone()
		// CheckDelta answers what ApplyDelta does, from a base and from none.
		for _, base := range []*State{before, nil} {
			cn, cerr := CheckDelta(testSchema, base, p)
			an, aerr := ApplyDelta(testSchema.NewState(1), base, p)
			if cn != an || (cerr == nil) != (aerr == nil) || cerr != nil && cerr.Error() != aerr.Error() {
				t.Fatalf("CheckDelta: %d, %v; ApplyDelta: %d, %v", cn, cerr, an, aerr)
			}
		}
		if n, err := ApplyDelta(st, st, p); err != nil {
			if !st.Equal(before) {
				t.Fatal("failed ApplyDelta changed the state")
			}
		} else {
			if n > len(p) {
				t.Fatalf("read %d of %d bytes", n, len(p))
			}
			// Re-encoding the result reproduces an equivalent delta.
			again := testSchema.NewState(1)
			if _, err := ApplyDelta(again, before, AppendDelta(nil, before, st)); err != nil || !again.Equal(st) {
				t.Fatalf("re-encoded delta does not round-trip: %v", err)
			}
		}
		st2 := testSchema.NewState(1)
		if _, err := ApplyWrite(st2, p); err != nil && !st2.Equal(before) {
			t.Fatal("failed ApplyWrite changed the state")
		}
	})
}

func TestQuantisation(t *testing.T) {
	st := testSchema.NewState(1)
	st.SetFloat(0, 1.0/128+1e-9) // rounds to 1/64
	if st.Float(0) != 1.0/64 {
		t.Errorf("x = %v, want 1/64", st.Float(0))
	}
	st.SetFloat(2, 1.3) // quantum 0.5
	if st.Float(2) != 1.5 {
		t.Errorf("z = %v, want 1.5", st.Float(2))
	}
	st.SetFloat(0, math.NaN())
	if st.Float(0) != 0 {
		t.Errorf("NaN stored as %v, want 0", st.Float(0))
	}
	st.SetFloat(0, math.Inf(1))
	if st.Int(0) != math.MaxInt64 {
		t.Errorf("+Inf stored as %d, want MaxInt64", st.Int(0))
	}
	st.SetInt(4, 5)
	if st.Int(4) != 1 || !st.Bool(4) {
		t.Errorf("SetInt(5) on a bool stored %d", st.Int(4))
	}
	st.SetLocation(Point{1, 2, 3})
	if st.Location() != (Point{1, 2, 3}) {
		t.Errorf("location %v", st.Location())
	}
}

func TestSchemaValidation(t *testing.T) {
	for _, tc := range []struct {
		name   string
		fields []Field
		want   string
	}{
		{"no fields", nil, "fields"},
		{"dup", []Field{{Name: "x", Type: Float}, {Name: "x", Type: Int}}, "twice"},
		{"missing attr", []Field{{Name: "x", Type: Float}, {Name: "y", Type: Float}}, `attribute "z"`},
		{"attr type", []Field{{Name: "x", Type: Float}, {Name: "y", Type: Float}, {Name: "z", Type: Bool}}, "bool"},
		{"quantum", []Field{{Name: "x", Type: Float, Quantum: -1}, {Name: "y", Type: Float}, {Name: "z", Type: Float}}, "quantum"},
		{"int quantum", []Field{{Name: "x", Type: Float}, {Name: "y", Type: Float}, {Name: "z", Type: Int, Quantum: 2}}, "quantum"},
		{"type", []Field{{Name: "x", Type: 9}}, "unknown type"},
	} {
		_, err := NewSchema("s", XYZ, tc.fields, newTestObj)
		if !errors.Is(err, ErrBadSchema) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want ErrBadSchema mentioning %q", tc.name, err, tc.want)
		}
	}
	if _, err := NewSchema("s", XYZ, []Field{{Name: "x"}}, nil); err == nil {
		t.Error("nil constructor accepted")
	}
	r, err := NewRegistry(XYZ, testSchema)
	if err != nil {
		t.Fatal(err)
	}
	if k, ok := r.Kind(testSchema); !ok || k != 1 || r.Schema(k) != testSchema || r.Schema(2) != nil || r.Schema(0) != nil {
		t.Errorf("registry lookups wrong: %v %v", k, ok)
	}
	if _, err := NewRegistry(XYZ, testSchema, testSchema); err == nil {
		t.Error("duplicate schema accepted")
	}
	if _, err := NewRegistry(MustSpace("x"), testSchema); err == nil {
		t.Error("schema over another space accepted")
	}
}

func TestBox(t *testing.T) {
	b := BoxAround(Point{10, 10, 0}, Point{5, 5, math.Inf(1)})
	if !b.Contains(Point{15, 5, 1e9}, 3) || b.Contains(Point{15.1, 5, 0}, 3) {
		t.Error("Contains wrong")
	}
	o := BoxAround(Point{20, 10, 0}, Point{5, 1, 1})
	if !b.Intersects(o, 3) || b.Intersects(BoxAround(Point{21, 10, 0}, Point{5, 1, 1}), 3) {
		t.Error("Intersects wrong")
	}
	u := b.Union(o)
	if !u.Covers(b, 3) || !u.Covers(o, 3) || b.Covers(u, 3) {
		t.Error("Union/Covers wrong")
	}
	if v := BoxAround(Point{}, Point{1, 2}).Volume(2); v != 8 {
		t.Errorf("volume %v, want 8", v)
	}
	if !(Box{Min: Point{1}, Max: Point{0}}).Empty(1) {
		t.Error("inverted box not empty")
	}
	if err := (Box{Min: Point{math.NaN()}}).Validate(1); !errors.Is(err, ErrBadBox) {
		t.Errorf("NaN box: %v", err)
	}
	if got := XYZ.Format(BoxAround(Point{10, 40, 0}, Point{5, 10, 1})); got != "5 <= x <= 15 && 30 <= y <= 50 && -1 <= z <= 1" {
		t.Errorf("Format = %q", got)
	}
	if _, err := NewSpace("x", "x"); err == nil {
		t.Error("duplicate attribute accepted")
	}
	if _, err := NewSpace("a", "b", "c", "d", "e"); err == nil {
		t.Error("five attributes accepted")
	}
}

func BenchmarkAppendDelta(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	base := randomState(rng, testSchema)
	cur := base.Clone()
	cur.SetFloat(0, cur.Float(0)+0.7)
	cur.SetFloat(1, cur.Float(1)-0.3)
	cur.SetFloat(6, cur.Float(6)+0.1)
	buf := make([]byte, 0, 256)
	b.ReportAllocs()
	for b.Loop() {
		buf = AppendDelta(buf[:0], base, cur)
	}
	b.ReportMetric(float64(len(buf)), "bytes/delta")
}

func BenchmarkApplyDelta(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	base := randomState(rng, testSchema)
	cur := mutate(rng, base)
	p := AppendDelta(nil, base, cur)
	dst := base.Clone()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := ApplyDelta(dst, base, p); err != nil {
			b.Fatal(err)
		}
	}
}

// TestLocationMatchesFields checks Location, which reads the naming fields
// straight for three dimensions, against the field-by-field reference, for
// spaces of one to four attributes whose fields lie anywhere in the schema
// (Float of any quantum, and Int), over random states.
func TestLocationMatchesFields(t *testing.T) {
	names := []string{"a", "b", "c", "d"}
	for seed := uint64(1); seed <= 200; seed++ {
		rng := rand.New(rand.NewPCG(seed, 17))
		dims := 1 + rng.IntN(MaxDims)
		space := MustSpace(names[:dims]...)
		nf := dims + rng.IntN(8)
		fields := make([]Field, nf)
		for i := range fields {
			fields[i] = Field{Name: fmt.Sprintf("f%d", i), Type: Int}
			if rng.IntN(2) == 0 {
				fields[i] = Field{Name: fmt.Sprintf("f%d", i), Type: Float, Quantum: []float64{0, 1.0 / 16, 0.5, 3}[rng.IntN(4)]}
			}
		}
		for d, i := range rng.Perm(nf)[:dims] {
			fields[i].Name = names[d]
		}
		s := MustSchema("s", space, fields, newTestObj)
		for range 20 {
			st := randomState(rng, s)
			var want Point
			for d := range dims {
				want[d] = st.Float(s.Field(names[d]))
			}
			if got := st.Location(); got != want {
				t.Fatalf("seed %d: %d dims, fields %v: Location %v, want %v", seed, dims, fields, got, want)
			}
		}
	}
}
