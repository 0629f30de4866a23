package locate

import "github.com/overworld/overworld/world"

// idTable maps object IDs to int32 positions: an open-addressing hash
// table with linear probing over one flat array of slots (as the replica
// store's). Points looks an ID up for every publication stored and every
// object a node moves each frame; a probe here usually reads one cache
// line, where a Go map's group walk reads two or more. A slot holds the
// position plus one, so a zero slot is empty.
type idTable struct {
	slots []idSlot
	n     int
	shift uint // 64 - log2(len(slots))
}

type idSlot struct {
	id  world.ObjectID
	pos int32 // position + 1; 0: empty
}

func (t *idTable) home(id world.ObjectID) int {
	return int((uint64(id) * 0x9E3779B97F4A7C15) >> t.shift)
}

// get returns the position of id.
func (t *idTable) get(id world.ObjectID) (int32, bool) {
	if len(t.slots) == 0 {
		return 0, false
	}
	mask := len(t.slots) - 1
	for i := t.home(id); ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.pos == 0 {
			return 0, false
		}
		if s.id == id {
			return s.pos - 1, true
		}
	}
}

// put sets the position of id (0 or more).
func (t *idTable) put(id world.ObjectID, pos int32) {
	if 2*(t.n+1) > len(t.slots) {
		t.grow()
	}
	mask := len(t.slots) - 1
	for i := t.home(id); ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.pos == 0 {
			*s = idSlot{id, pos + 1}
			t.n++
			return
		}
		if s.id == id {
			s.pos = pos + 1
			return
		}
	}
}

func (t *idTable) grow() {
	old := t.slots
	size := max(16, 2*len(old))
	t.slots = make([]idSlot, size)
	t.shift = 64
	for s := size; s > 1; s >>= 1 {
		t.shift--
	}
	t.n = 0
	for _, s := range old {
		if s.pos != 0 {
			t.put(s.id, s.pos-1)
		}
	}
}

// del removes id, shifting back the slots after it so that every probe
// sequence stays unbroken.
func (t *idTable) del(id world.ObjectID) {
	if len(t.slots) == 0 {
		return
	}
	mask := len(t.slots) - 1
	i := t.home(id)
	for ; ; i = (i + 1) & mask {
		if t.slots[i].pos == 0 {
			return
		}
		if t.slots[i].id == id {
			break
		}
	}
	for j := i; ; {
		j = (j + 1) & mask
		s := t.slots[j]
		if s.pos == 0 {
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
	t.slots[i] = idSlot{}
	t.n--
}
