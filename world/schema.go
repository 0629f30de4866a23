package world

import (
	"errors"
	"fmt"
	"math"
	"strings"
)

// FieldType is the type of a replicated field.
type FieldType uint8

// Field types. Every value is stored as an int64: Float as round(v/Quantum),
// Int as is, Bool as 0 or 1, Ref as an ObjectID's bits.
const (
	Float FieldType = iota + 1 // a real number quantised to Field.Quantum
	Int                        // a signed integer
	Bool                       // false or true
	Ref                        // an ObjectID (0: none)
)

var fieldTypeNames = map[FieldType]string{Float: "float", Int: "int", Bool: "bool", Ref: "ref"}

// String returns the type's name.
func (t FieldType) String() string {
	if n, ok := fieldTypeNames[t]; ok {
		return n
	}
	return fmt.Sprintf("FieldType(%d)", uint8(t))
}

// DefaultQuantum is the resolution of a Float field whose Quantum is zero:
// 1/64 of a unit (Quake quantises positions to 1/8 of a unit; a map unit here
// is a metre-sized cell).
const DefaultQuantum = 1.0 / 64

// MaxFields is the largest number of fields a Schema may have (the change
// mask of a delta is one 64-bit word).
const MaxFields = 64

// Field declares one replicated field of a Schema.
type Field struct {
	Name    string
	Type    FieldType
	Quantum float64 // Float only: the resolution; 0 means DefaultQuantum
}

// ObjectID names an object uniquely in a cluster without coordination: the
// high 32 bits are the creating node, the low 32 bits a sequence number that
// node never reuses. The zero ObjectID means "no object".
type ObjectID uint64

// MakeObjectID returns the ID of the seq-th object created by node origin.
// seq starts at 1 so that no object has the zero ID.
func MakeObjectID(origin, seq uint32) ObjectID { return ObjectID(origin)<<32 | ObjectID(seq) }

// Origin returns the node that created the object.
func (id ObjectID) Origin() uint32 { return uint32(id >> 32) }

// Seq returns the object's sequence number on its origin node.
func (id ObjectID) Seq() uint32 { return uint32(id) }

// String formats the ID as origin.seq.
func (id ObjectID) String() string { return fmt.Sprintf("%d.%d", id.Origin(), id.Seq()) }

// Schema declares one kind of object: its replicated fields, which of them
// are the naming attributes of the world's Space, and how to build an Object
// around a State (for primaries created by a game and for replicas created by
// the runtime). A Schema is immutable once built and safe to share.
type Schema struct {
	name   string
	space  Space
	fields []Field
	quanta []float64 // per field: Quantum for Float fields, 1 otherwise
	loc    [MaxDims]int
	// The location's fields, for Location: ndims of them, with their
	// quanta.
	ndims  int
	locQ   [MaxDims]float64
	newObj func(*State) Object
	// Fields by type, as bit masks over field indexes (the decoders test a
	// change mask against them).
	numeric, bools uint64
}

// Errors returned by NewSchema.
var (
	ErrBadSchema = errors.New("world: bad schema")
)

// NewSchema returns a Schema named name (unique within a Registry) over space.
// Every attribute of space must be the name of a Float or Int field; newObj
// builds the object that owns a State (it must not be nil).
func NewSchema(name string, space Space, fields []Field, newObj func(*State) Object) (*Schema, error) {
	bad := func(format string, args ...any) (*Schema, error) {
		return nil, fmt.Errorf("%w %q: %s", ErrBadSchema, name, fmt.Sprintf(format, args...))
	}
	if name == "" || strings.ContainsAny(name, " \t\n") {
		return bad("invalid name")
	}
	if space.Dims() == 0 {
		return bad("no space")
	}
	if newObj == nil {
		return bad("no constructor")
	}
	if len(fields) == 0 || len(fields) > MaxFields {
		return bad("has %d fields, want 1 to %d", len(fields), MaxFields)
	}
	s := &Schema{name: name, space: space, fields: append([]Field(nil), fields...),
		quanta: make([]float64, len(fields)), newObj: newObj}
	for i, f := range s.fields {
		if f.Name == "" || strings.ContainsAny(f.Name, " \t\n") {
			return bad("field %d has an invalid name %q", i, f.Name)
		}
		for _, g := range s.fields[:i] {
			if g.Name == f.Name {
				return bad("field %q declared twice", f.Name)
			}
		}
		s.quanta[i] = 1
		if numeric(f.Type) {
			s.numeric |= 1 << i
		}
		if f.Type == Bool {
			s.bools |= 1 << i
		}
		switch f.Type {
		case Float:
			q := f.Quantum
			if q == 0 {
				q = DefaultQuantum
			}
			if !(q > 0) || math.IsInf(q, 0) {
				return bad("field %q has quantum %v, want a positive finite number", f.Name, f.Quantum)
			}
			s.fields[i].Quantum, s.quanta[i] = q, q
		case Int, Bool, Ref:
			if f.Quantum != 0 {
				return bad("field %q of type %v has a quantum", f.Name, f.Type)
			}
		default:
			return bad("field %q has unknown type %v", f.Name, f.Type)
		}
	}
	for d := range s.loc {
		s.loc[d] = -1
	}
	for d, attr := range space.names {
		i := s.Field(attr)
		if i < 0 {
			return bad("has no field for attribute %q of its space", attr)
		}
		if t := s.fields[i].Type; t != Float && t != Int {
			return bad("attribute field %q is %v, want float or int", attr, t)
		}
		s.loc[d] = i
		s.locQ[d] = s.quanta[i]
	}
	s.ndims = len(space.names)
	return s, nil
}

// MustSchema is NewSchema for package-level declarations; it panics on error.
func MustSchema(name string, space Space, fields []Field, newObj func(*State) Object) *Schema {
	s, err := NewSchema(name, space, fields, newObj)
	if err != nil {
		panic(err)
	}
	return s
}

// Name returns the schema's name.
func (s *Schema) Name() string { return s.name }

// Space returns the space whose attributes the schema's location gives.
func (s *Schema) Space() Space { return s.space }

// NumFields returns the number of fields.
func (s *Schema) NumFields() int { return len(s.fields) }

// FieldAt returns field i's declaration (with its effective quantum).
func (s *Schema) FieldAt(i int) Field { return s.fields[i] }

// Field returns the index of the field called name, or -1.
func (s *Schema) Field(name string) int {
	for i, f := range s.fields {
		if f.Name == name {
			return i
		}
	}
	return -1
}

// MustField returns the index of the field called name and panics if there
// is none; use it to resolve field indices once, at package initialisation.
func (s *Schema) MustField(name string) int {
	i := s.Field(name)
	if i < 0 {
		panic(fmt.Sprintf("world: schema %q has no field %q", s.name, name))
	}
	return i
}

// NewState returns a zero State of this schema for the object id.
func (s *Schema) NewState(id ObjectID) *State {
	return &State{schema: s, id: id, v: make([]int64, len(s.fields))}
}

// NewStates fills dst with zero States of this schema for the object id,
// made with two allocations (one for the States, one for their values)
// instead of two per State: the runtime keeps rings of past states per
// object, and objects are created and replicated all the time. Each
// State's values have a capacity of exactly the schema's fields, so a
// State never writes into another's.
func (s *Schema) NewStates(id ObjectID, dst []*State) {
	nf := len(s.fields)
	vals := make([]int64, len(dst)*nf)
	sts := make([]State, len(dst))
	for i := range dst {
		sts[i] = State{schema: s, id: id, v: vals[i*nf : (i+1)*nf : (i+1)*nf]}
		dst[i] = &sts[i]
	}
}

// NewObject builds the game object that owns st (st's schema must be s).
func (s *Schema) NewObject(st *State) Object { return s.newObj(st) }

// Kind is a schema's number in a Registry, used on the wire.
type Kind uint16

// Registry numbers the schemas of one game so that nodes agree on kinds. All
// nodes of a cluster must build it with the same schemas in the same order.
type Registry struct {
	space   Space
	schemas []*Schema
	byName  map[string]Kind
}

// NewRegistry returns a registry of schemas over space; the i-th schema gets
// Kind i+1.
func NewRegistry(space Space, schemas ...*Schema) (*Registry, error) {
	if space.Dims() == 0 {
		return nil, errors.New("world: registry has no space")
	}
	if len(schemas) == 0 || len(schemas) >= math.MaxUint16 {
		return nil, fmt.Errorf("world: registry needs 1 to %d schemas, got %d", math.MaxUint16-1, len(schemas))
	}
	r := &Registry{space: space, byName: make(map[string]Kind, len(schemas))}
	for i, s := range schemas {
		if s == nil {
			return nil, fmt.Errorf("world: schema %d is nil", i)
		}
		if _, dup := r.byName[s.name]; dup {
			return nil, fmt.Errorf("world: schema %q registered twice", s.name)
		}
		if !sameSpace(s.space, space) {
			return nil, fmt.Errorf("world: schema %q is over space %v, registry over %v", s.name, s.space.names, space.names)
		}
		r.byName[s.name] = Kind(i + 1)
		r.schemas = append(r.schemas, s)
	}
	return r, nil
}

func sameSpace(a, b Space) bool {
	if len(a.names) != len(b.names) {
		return false
	}
	for i := range a.names {
		if a.names[i] != b.names[i] {
			return false
		}
	}
	return true
}

// Space returns the registry's space.
func (r *Registry) Space() Space { return r.space }

// Schema returns the schema of kind k, or nil if k is unknown.
func (r *Registry) Schema(k Kind) *Schema {
	if k == 0 || int(k) > len(r.schemas) {
		return nil
	}
	return r.schemas[k-1]
}

// Kind returns the kind of s, or 0 and false if s is not registered here.
func (r *Registry) Kind(s *Schema) (Kind, bool) {
	k, ok := r.byName[s.name]
	if !ok || r.schemas[k-1] != s {
		return 0, false
	}
	return k, true
}

// Len returns the number of schemas.
func (r *Registry) Len() int { return len(r.schemas) }
