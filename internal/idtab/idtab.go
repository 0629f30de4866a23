// Package idtab owns Table, the hash table from object IDs to values that
// the replica store and the locators' point indexes look IDs up in on
// every received update and every moved object: open addressing with
// linear probing over one flat array of (ID, value) slots, so that a probe
// usually reads a single cache line where a Go map's group walk reads two
// or more. Written here: the standard map is the general-purpose
// alternative and no library offers this layout.
//
// Its caller must never store the zero value of V: a zero value marks an
// empty slot (a nil pointer, a 0 index; store positions plus one). A
// Table is not safe for concurrent use.
package idtab

import "github.com/overworld/overworld/world"

// Table maps object IDs to values of V. The zero Table is empty and ready
// to use.
type Table[V comparable] struct {
	slots []slot[V]
	n     int
	shift uint // 64 - log2(len(slots))
}

type slot[V comparable] struct {
	id world.ObjectID
	v  V // the zero V: empty
}

func (t *Table[V]) home(id world.ObjectID) int {
	return int((uint64(id) * 0x9E3779B97F4A7C15) >> t.shift)
}

// Get returns the value of id, or the zero V.
func (t *Table[V]) Get(id world.ObjectID) V {
	var zero V
	if len(t.slots) == 0 {
		return zero
	}
	mask := len(t.slots) - 1
	for i := t.home(id); ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.v == zero {
			return zero
		}
		if s.id == id {
			return s.v
		}
	}
}

// Put sets the value of id; v must not be the zero V.
func (t *Table[V]) Put(id world.ObjectID, v V) {
	var zero V
	if v == zero {
		panic("idtab: Put of the zero value")
	}
	if 2*(t.n+1) > len(t.slots) {
		t.grow()
	}
	mask := len(t.slots) - 1
	for i := t.home(id); ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.v == zero {
			*s = slot[V]{id, v}
			t.n++
			return
		}
		if s.id == id {
			s.v = v
			return
		}
	}
}

func (t *Table[V]) grow() {
	var zero V
	old := t.slots
	size := max(16, 2*len(old))
	t.slots = make([]slot[V], size)
	t.shift = 64
	for s := size; s > 1; s >>= 1 {
		t.shift--
	}
	t.n = 0
	for _, s := range old {
		if s.v != zero {
			t.Put(s.id, s.v)
		}
	}
}

// Delete removes id, shifting back the slots after it so that every probe
// sequence stays unbroken.
func (t *Table[V]) Delete(id world.ObjectID) {
	var zero V
	if len(t.slots) == 0 {
		return
	}
	mask := len(t.slots) - 1
	i := t.home(id)
	for ; ; i = (i + 1) & mask {
		if t.slots[i].v == zero {
			return
		}
		if t.slots[i].id == id {
			break
		}
	}
	for j := i; ; {
		j = (j + 1) & mask
		s := t.slots[j]
		if s.v == zero {
			break
		}
		// Move s into the hole at i unless its home lies cyclically in
		// (i, j]: then it is reachable from its home without passing i.
		k := t.home(s.id)
		if (j > i && (k <= i || k > j)) || (j < i && k <= i && k > j) {
			t.slots[i] = s
			i = j
		}
	}
	t.slots[i] = slot[V]{}
	t.n--
}

// Len returns the number of IDs held.
func (t *Table[V]) Len() int { return t.n }
