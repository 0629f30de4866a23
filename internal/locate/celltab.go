package locate

// cellTab maps grid cells to lists of T: open addressing with linear
// probing over one flat array of (cell, list) slots of 32 bytes, two to a
// cache line, so that a probe usually reads one line where a Go map's
// group walk reads two or more (the spatial indexes probe a cell for every
// moved point, every placed box and every point query). A slot whose list
// is nil is empty: the indexes never store a nil list (a list they keep is
// appended to, or is a former list cut to length 0). Deletion shifts the
// following slots of the run back, so there are no tombstones and the
// table holds exactly the cells it was given. The zero cellTab is empty
// and ready to use.
type cellTab[T any] struct {
	slots []cellSlot[T]
	n     int
	shift uint // 64 - log2(len(slots))
}

type cellSlot[T any] struct {
	key cellKey
	l   []T // nil: empty slot
}

func (t *cellTab[T]) home(k cellKey) int {
	h := (uint64(uint32(k.x))<<32 | uint64(uint32(k.y))) * 0x9E3779B97F4A7C15
	return int(h >> t.shift)
}

// len returns the number of cells held.
func (t *cellTab[T]) len() int { return t.n }

// find returns the slot of k, or -1.
func (t *cellTab[T]) find(k cellKey) int {
	if t.n == 0 {
		return -1
	}
	mask := len(t.slots) - 1
	for i := t.home(k); ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.l == nil {
			return -1
		}
		if s.key == k {
			return i
		}
	}
}

// get returns the list of k, or nil.
func (t *cellTab[T]) get(k cellKey) []T {
	if t.n == 0 {
		return nil
	}
	mask := len(t.slots) - 1
	for i := t.home(k); ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.l == nil || s.key == k {
			return s.l
		}
	}
}

// ref returns the slot of k, adding k with a nil list when it is not held:
// the caller must then store a non-nil list in it before the table is used
// again. The slot stays valid until the next ref.
func (t *cellTab[T]) ref(k cellKey) *cellSlot[T] {
	if 2*(t.n+1) > len(t.slots) {
		t.grow()
	}
	mask := len(t.slots) - 1
	for i := t.home(k); ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.l == nil {
			s.key = k
			t.n++
			return s
		}
		if s.key == k {
			return s
		}
	}
}

func (t *cellTab[T]) grow() {
	old := t.slots
	size := max(16, 2*len(old))
	t.slots = make([]cellSlot[T], size)
	t.shift = 64
	for s := size; s > 1; s >>= 1 {
		t.shift--
	}
	mask := size - 1
	for j := range old {
		o := &old[j]
		if o.l == nil {
			continue
		}
		i := t.home(o.key)
		for t.slots[i].l != nil {
			i = (i + 1) & mask
		}
		t.slots[i] = *o
	}
}

// delAt empties slot i (held), shifting back the slots after it in its run
// that would otherwise no longer be found.
func (t *cellTab[T]) delAt(i int) {
	mask := len(t.slots) - 1
	t.n--
	for {
		t.slots[i] = cellSlot[T]{}
		j := i
		for {
			j = (j + 1) & mask
			s := &t.slots[j]
			if s.l == nil {
				return
			}
			// s may fill the hole at i unless its home lies cyclically in
			// (i, j]: then it is already as close to home as it can be.
			h := t.home(s.key)
			if (i <= j && (h <= i || h > j)) || (i > j && h <= i && h > j) {
				t.slots[i] = *s
				i = j
				break
			}
		}
	}
}

// clear removes every cell, keeping the slot array.
func (t *cellTab[T]) clear() {
	clear(t.slots)
	t.n = 0
}
