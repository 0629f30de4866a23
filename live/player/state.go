package player

import (
	"cmp"
	"encoding/binary"
	"errors"
	"fmt"
	"slices"

	"github.com/overworld/overworld/world"
)

// Seen is one object a player sees this frame: its ID, kind and current
// state (the node's, read-only).
type Seen struct {
	ID    world.ObjectID
	Kind  world.Kind
	State *world.State
}

// snapshot is what one State message told a player: the objects and their
// states after that frame, sorted by ID.
type snapshot struct {
	frame uint64
	ents  []Seen    // States owned by the snapshot (on the node: by refs)
	refs  []*shared // the node's encoder: ents[i].State is &refs[i].st
}

// shared is a snapshot state of an encoder: immutable once recorded, and
// shared by the consecutive snapshots in which the object did not change,
// so that the history costs a state per change rather than per object and
// frame. n counts the snapshots holding it.
type shared struct {
	st world.State
	n  int32
}

// Encoder delta-encodes one player's State messages. It keeps the
// snapshots of its last History frames so that each frame is encoded
// against the newest one the client acknowledged (or from scratch when
// that is older). The zero value is not usable: see NewEncoder. It is not
// safe for concurrent use.
type Encoder struct {
	last  uint64 // newest frame encoded
	hist  []snapshot
	free  []*shared
	cbuf  []byte
	ubuf  []byte
	rbuf  []byte
	empty snapshot
}

// NewEncoder returns an encoder keeping history snapshots (at least 2).
func NewEncoder(history int) *Encoder {
	return &Encoder{hist: make([]snapshot, max(history, 2))}
}

// base returns the snapshot of frame acked if it is still held and is not
// the slot frame will overwrite.
func (e *Encoder) base(frame, acked uint64) *snapshot {
	h := uint64(len(e.hist))
	if acked == 0 || acked >= frame || frame-acked >= h {
		return &e.empty
	}
	s := &e.hist[acked%h]
	if s.frame != acked {
		return &e.empty
	}
	return s
}

// record appends an object to snapshot slot with a new copy of its state.
func (e *Encoder) record(slot *snapshot, c Seen) {
	var sh *shared
	if n := len(e.free); n > 0 {
		sh, e.free = e.free[n-1], e.free[:n-1]
	} else {
		sh = &shared{}
	}
	sh.st.CopyFrom(c.State)
	sh.n = 1
	slot.ents = append(slot.ents, Seen{c.ID, c.Kind, &sh.st})
	slot.refs = append(slot.refs, sh)
}

// keep appends an unchanged object to slot, sharing the base's state.
func (e *Encoder) keep(slot *snapshot, o Seen, sh *shared) {
	sh.n++
	slot.ents = append(slot.ents, o)
	slot.refs = append(slot.refs, sh)
}

// release empties slot, recycling the states no other snapshot holds.
func (e *Encoder) release(slot *snapshot) {
	for _, sh := range slot.refs {
		if sh.n--; sh.n == 0 {
			e.free = append(e.free, sh)
		}
	}
	clear(slot.refs)
	slot.ents, slot.refs = slot.ents[:0], slot.refs[:0]
}

// ErrEncode reports arguments Encode cannot encode.
var ErrEncode = errors.New("player: cannot encode state")

// Encode appends to dst the State message of frame (frames grow by at least
// one per call) for the objects cur (sorted by ID, no duplicates), encoded
// against frame acked (0: none) if the encoder still holds it, and records
// cur as frame's snapshot. inputSeq is the newest input of the player
// applied before this frame's state was taken. It returns dst and the base
// frame used (0: from scratch). Arguments that break these rules are
// refused (ErrEncode) with dst and the encoder unchanged.
func (e *Encoder) Encode(dst []byte, frame, acked, inputSeq uint64, cur []Seen) ([]byte, uint64, error) {
	if frame <= e.last {
		return dst, 0, fmt.Errorf("%w: frame %d after frame %d", ErrEncode, frame, e.last)
	}
	for i, c := range cur {
		if c.ID == 0 || c.State == nil || c.Kind == 0 || (i > 0 && c.ID <= cur[i-1].ID) {
			return dst, 0, fmt.Errorf("%w: object %d (ID %v, kind %d) is zero, nil or out of ID order", ErrEncode, i, c.ID, c.Kind)
		}
	}
	e.last = frame
	b := e.base(frame, acked)
	h := uint64(len(e.hist))
	slot := &e.hist[frame%h]
	e.release(slot) // the oldest snapshot; b is a newer one
	slot.frame = frame
	e.cbuf, e.ubuf, e.rbuf = e.cbuf[:0], e.ubuf[:0], e.rbuf[:0]
	var nc, nu, nr int
	var lc, lu, lr world.ObjectID
	i, j := 0, 0
	for i < len(b.ents) || j < len(cur) {
		switch {
		case j == len(cur) || (i < len(b.ents) && b.ents[i].ID < cur[j].ID): // removed
			e.rbuf = binary.AppendUvarint(e.rbuf, uint64(b.ents[i].ID-lr))
			lr = b.ents[i].ID
			nr++
			i++
		case i == len(b.ents) || cur[j].ID < b.ents[i].ID: // created
			c := cur[j]
			e.cbuf = binary.AppendUvarint(e.cbuf, uint64(c.ID-lc))
			e.cbuf = binary.AppendUvarint(e.cbuf, uint64(c.Kind))
			e.cbuf = world.AppendDelta(e.cbuf, nil, c.State)
			lc = c.ID
			nc++
			e.record(slot, c)
			j++
		default: // in both
			c, o := cur[j], b.ents[i]
			changed := true
			if c.Kind != o.Kind { // the ID was reused for another kind: remove and create
				e.rbuf = binary.AppendUvarint(e.rbuf, uint64(o.ID-lr))
				lr = o.ID
				nr++
				e.cbuf = binary.AppendUvarint(e.cbuf, uint64(c.ID-lc))
				e.cbuf = binary.AppendUvarint(e.cbuf, uint64(c.Kind))
				e.cbuf = world.AppendDelta(e.cbuf, nil, c.State)
				lc = c.ID
				nc++
			} else if world.Changed(o.State, c.State) {
				e.ubuf = binary.AppendUvarint(e.ubuf, uint64(c.ID-lu))
				e.ubuf = world.AppendDelta(e.ubuf, o.State, c.State)
				lu = c.ID
				nu++
			} else {
				changed = false
			}
			if changed {
				e.record(slot, c)
			} else {
				e.keep(slot, o, b.refs[i])
			}
			i++
			j++
		}
	}
	baseFrame := b.frame
	dst = header(dst, MsgState)
	dst = binary.AppendUvarint(dst, frame)
	dst = binary.AppendUvarint(dst, baseFrame)
	dst = binary.AppendUvarint(dst, inputSeq)
	dst = binary.AppendUvarint(dst, uint64(nc))
	dst = append(dst, e.cbuf...)
	dst = binary.AppendUvarint(dst, uint64(nu))
	dst = append(dst, e.ubuf...)
	dst = binary.AppendUvarint(dst, uint64(nr))
	dst = append(dst, e.rbuf...)
	return dst, baseFrame, nil
}

// View is a client's reconstruction of what its player sees, from State
// messages: the objects of the newest frame applied, and the snapshots of
// recent frames that later messages may be encoded against. It is not safe
// for concurrent use.
type View struct {
	// scratch of Apply
	ups     []upd
	removed []bool

	changes  int // of the newest State applied
	nchanges int // of the State being applied

	reg   *world.Registry
	hist  []snapshot // ring by frame
	cur   *snapshot  // newest applied
	seq   uint64     // inputSeq of the newest applied frame
	free  []*world.State
	next  []Seen
	empty snapshot
}

// NewView returns an empty view over reg (a Welcome's registry) keeping
// history snapshots; history should match the node's Config.History.
func NewView(reg *world.Registry, history int) *View {
	v := &View{reg: reg, hist: make([]snapshot, max(history, 2))}
	v.cur = &v.empty
	return v
}

// upd is a decoded update: the index of its object in the base, and its
// delta.
type upd struct {
	at int
	p  []byte
}

// Frame returns the newest frame applied (0: none).
func (v *View) Frame() uint64 { return v.cur.frame }

// InputSeq returns the newest input the node had applied when it sent the
// newest frame applied.
func (v *View) InputSeq() uint64 { return v.seq }

// Changes returns the number of objects the newest State applied created
// or updated (its creations and deltas).
func (v *View) Changes() int { return v.changes }

// Len returns the number of objects in view.
func (v *View) Len() int { return len(v.cur.ents) }

// Objects returns the objects in view, sorted by ID; the slice and states
// are valid until the next Apply and must not be modified.
func (v *View) Objects() []Seen { return v.cur.ents }

// Lookup returns the state of object id, if in view.
func (v *View) Lookup(id world.ObjectID) (*world.State, bool) {
	i, ok := slices.BinarySearchFunc(v.cur.ents, id, func(s Seen, id world.ObjectID) int {
		return cmp.Compare(s.ID, id)
	})
	if !ok {
		return nil, false
	}
	return v.cur.ents[i].State, true
}

// copyState returns a (recycled) copy of s.
func (v *View) copyState(s *world.State) *world.State {
	var st *world.State
	if n := len(v.free); n > 0 {
		st, v.free = v.free[n-1], v.free[:n-1]
	} else {
		st = &world.State{}
	}
	st.CopyFrom(s)
	return st
}

// Apply decodes the body of a State message and, if it is newer than the
// newest frame applied and its base is held, makes it the current frame.
// It returns whether the frame was applied (false with a nil error: an old
// or undecodable-for-now frame, ignored). A malformed body changes nothing.
func (v *View) Apply(body []byte) (bool, error) {
	r := reader{t: MsgState, p: body}
	frame := r.uvarint("frame")
	baseF := r.uvarint("base")
	seq := r.uvarint("input seq")
	if r.err != nil {
		return false, r.err
	}
	if frame == 0 || baseF >= frame {
		return false, malformed(MsgState, "frame %d on base %d", frame, baseF)
	}
	if frame <= v.cur.frame {
		return false, nil
	}
	base := &v.empty
	if baseF != 0 {
		h := uint64(len(v.hist))
		b := &v.hist[baseF%h]
		if b.frame != baseF || frame-baseF >= h {
			return false, nil // a base we no longer hold: wait for a later frame
		}
		base = b
	}
	// Decode into v.next, built from base; commit only if all is well.
	for _, s := range v.next {
		v.free = append(v.free, s.State)
	}
	v.next = v.next[:0]
	err := v.build(&r, base)
	if err == nil {
		err = r.done()
	}
	if err != nil {
		for _, s := range v.next {
			v.free = append(v.free, s.State)
		}
		v.next = v.next[:0]
		return false, err
	}
	h := uint64(len(v.hist))
	slot := &v.hist[frame%h]
	for _, s := range slot.ents {
		v.free = append(v.free, s.State)
	}
	slot.ents, v.next = v.next, slot.ents[:0]
	slot.frame = frame
	v.cur, v.seq, v.changes = slot, seq, v.nchanges
	return true, nil
}

// build merges base with the creations, updates and removals of r into
// v.next.
func (v *View) build(r *reader, base *snapshot) error {
	v.nchanges = 0
	nc := r.uvarint("creations")
	if r.err != nil {
		return r.err
	}
	if nc > uint64(len(r.p)) {
		return malformed(MsgState, "%d creations in %d bytes", nc, len(r.p))
	}
	// Creations, in ID order, each decoded into a fresh state.
	var id world.ObjectID
	start := len(v.next)
	for k := uint64(0); k < nc; k++ {
		d := r.uvarint("creation id")
		kind := r.uvarint("kind")
		if r.err != nil {
			return r.err
		}
		if (k > 0 && d == 0) || d > uint64(^world.ObjectID(0)-id) || id+world.ObjectID(d) == 0 {
			return malformed(MsgState, "creation IDs not increasing")
		}
		id += world.ObjectID(d)
		s := v.reg.Schema(world.Kind(min(kind, 1<<16-1)))
		if s == nil || kind > 1<<16-1 {
			return malformed(MsgState, "object %v of unknown kind %d", id, kind)
		}
		st := s.NewState(id)
		v.next = append(v.next, Seen{id, world.Kind(kind), st})
		n, err := world.ApplyDelta(st, nil, r.p)
		if err != nil {
			return malformed(MsgState, "object %v: %v", id, err)
		}
		r.p = r.p[n:]
	}
	created := v.next[start:]
	// Updates: each of an object in base.
	nu := r.uvarint("updates")
	v.nchanges = int(nc + nu)
	if r.err != nil {
		return r.err
	}
	if nu > uint64(len(base.ents)) {
		return malformed(MsgState, "%d updates of a %d-object base", nu, len(base.ents))
	}
	// Merge base with the updates and removals into v.next.
	id = 0
	ups := v.ups[:0]
	defer func() { clear(ups); v.ups = ups[:0] }() // drop the references to the body
	for k := uint64(0); k < nu; k++ {
		d := r.uvarint("update id")
		if r.err != nil {
			return r.err
		}
		if (k > 0 && d == 0) || d > uint64(^world.ObjectID(0)-id) {
			return malformed(MsgState, "update IDs not increasing")
		}
		id += world.ObjectID(d)
		i, ok := slices.BinarySearchFunc(base.ents, id, func(s Seen, id world.ObjectID) int { return cmp.Compare(s.ID, id) })
		if !ok {
			return malformed(MsgState, "update of object %v not in base frame %d", id, base.frame)
		}
		// Decode now (to find its length) into a scratch state.
		st := v.copyState(base.ents[i].State)
		n, err := world.ApplyDelta(st, st, r.p)
		v.free = append(v.free, st)
		if err != nil {
			return malformed(MsgState, "object %v: %v", id, err)
		}
		ups = append(ups, upd{i, r.p})
		r.p = r.p[n:]
	}
	nr := r.uvarint("removals")
	if r.err != nil {
		return r.err
	}
	if nr > uint64(len(base.ents)) {
		return malformed(MsgState, "%d removals of a %d-object base", nr, len(base.ents))
	}
	removed := v.removed[:0]
	for range base.ents {
		removed = append(removed, false)
	}
	v.removed = removed
	id = 0
	for k := uint64(0); k < nr; k++ {
		d := r.uvarint("removal id")
		if r.err != nil {
			return r.err
		}
		if (k > 0 && d == 0) || d > uint64(^world.ObjectID(0)-id) {
			return malformed(MsgState, "removal IDs not increasing")
		}
		id += world.ObjectID(d)
		i, ok := slices.BinarySearchFunc(base.ents, id, func(s Seen, id world.ObjectID) int { return cmp.Compare(s.ID, id) })
		if !ok {
			return malformed(MsgState, "removal of object %v not in base frame %d", id, base.frame)
		}
		removed[i] = true
	}
	for _, u := range ups {
		if removed[u.at] {
			return malformed(MsgState, "object %v both updated and removed", base.ents[u.at].ID)
		}
	}
	// Keep base objects (updated or not) unless removed; a creation of an
	// object still in base is an error.
	u := 0
	for i, o := range base.ents {
		if removed[i] {
			continue
		}
		if _, dup := slices.BinarySearchFunc(created, o.ID, func(s Seen, id world.ObjectID) int { return cmp.Compare(s.ID, id) }); dup {
			return malformed(MsgState, "creation of object %v already in base frame %d", o.ID, base.frame)
		}
		st := v.copyState(o.State)
		if u < len(ups) && ups[u].at == i {
			_, _ = world.ApplyDelta(st, st, ups[u].p) // checked above
			u++
		}
		v.next = append(v.next, Seen{o.ID, o.Kind, st})
	}
	slices.SortFunc(v.next, func(a, b Seen) int { return cmp.Compare(a.ID, b.ID) })
	return nil
}
