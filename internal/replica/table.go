package replica

import "github.com/overworld/overworld/world"

// table maps object IDs to entries: an open-addressing hash table with
// linear probing over one flat array of (ID, entry) slots. The store looks
// up an entry for every update, acknowledgement and write it receives; a
// probe here usually touches a single cache line, where a Go map's group
// walk touches two or more. A slot with a nil entry is empty.
type table struct {
	slots []tslot
	n     int
	shift uint // 64 - log2(len(slots))
}

type tslot struct {
	id world.ObjectID
	e  *entry
}

func (t *table) home(id world.ObjectID) int {
	return int((uint64(id) * 0x9E3779B97F4A7C15) >> t.shift)
}

// get returns the entry of id, or nil.
func (t *table) get(id world.ObjectID) *entry {
	if len(t.slots) == 0 {
		return nil
	}
	mask := len(t.slots) - 1
	for i := t.home(id); ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.e == nil {
			return nil
		}
		if s.id == id {
			return s.e
		}
	}
}

// put sets the entry of id (e must not be nil).
func (t *table) put(id world.ObjectID, e *entry) {
	if 2*(t.n+1) > len(t.slots) {
		t.grow()
	}
	mask := len(t.slots) - 1
	for i := t.home(id); ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.e == nil {
			*s = tslot{id, e}
			t.n++
			return
		}
		if s.id == id {
			s.e = e
			return
		}
	}
}

func (t *table) grow() {
	old := t.slots
	size := max(16, 2*len(old))
	t.slots = make([]tslot, size)
	t.shift = 64
	for s := size; s > 1; s >>= 1 {
		t.shift--
	}
	t.n = 0
	for _, s := range old {
		if s.e != nil {
			t.put(s.id, s.e)
		}
	}
}

// del removes id, shifting back the slots after it so that every probe
// sequence stays unbroken.
func (t *table) del(id world.ObjectID) {
	if len(t.slots) == 0 {
		return
	}
	mask := len(t.slots) - 1
	i := t.home(id)
	for ; ; i = (i + 1) & mask {
		if t.slots[i].e == nil {
			return
		}
		if t.slots[i].id == id {
			break
		}
	}
	for j := i; ; {
		j = (j + 1) & mask
		s := t.slots[j]
		if s.e == nil {
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
	t.slots[i] = tslot{}
	t.n--
}

// len returns the number of entries.
func (t *table) len() int { return t.n }
