package replica

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/overworld/overworld/internal/idtab"
	"github.com/overworld/overworld/wire"
	"github.com/overworld/overworld/world"
)

// Errors returned by Store methods.
var (
	ErrExists     = errors.New("replica: object already in the store")
	ErrDeleted    = errors.New("replica: object was deleted")
	ErrUnknown    = errors.New("replica: no such object in the store")
	ErrNotPrimary = errors.New("replica: object is not a primary here")
	ErrMigrating  = errors.New("replica: object is migrating")
)

// versioned is one slot of an object's state ring.
type versioned struct {
	v  uint64
	st *world.State
}

// ring keeps the last len(slots) versions of an object: on a primary its
// history (delta bases, Config.HistoryLen). A replica keeps only the newest
// version it received, in the game's State itself; its ring has one slot,
// allocated on the replica's first tentative write (Store.Write), which
// holds the newest version while a write has changed the game's State
// (entry.written), as the base of the primary's next delta.
//
// A replica needs no older version: a primary takes each delta against the
// version it last sent the holder (or the one the holder named in a resync
// request, its newest), so a delta whose base is not the replica's newest
// follows one the replica missed and cannot be applied from any version
// it has; only a reordering of two of a primary's packets behind a resync
// request could use one, and costs another request instead. Keeping the
// game's State alone, instead of eight versions, a copy and a spare, makes
// a replica about a fifth of the memory it was, which at 10,000 players is
// most of the store's, and an update reads and writes one State: Check
// validates the delta against it (world.CheckDelta) and Apply decodes it
// into it, where a ring's update read its base, wrote a spare and copied
// it into the game's State.
type ring struct {
	slots []versioned
	head  int32 // index of the newest
	n     int32 // valid slots
}

func newRing(s *world.Schema, id world.ObjectID, sts []*world.State) ring {
	n := len(sts)
	r := ring{slots: make([]versioned, n)}
	s.NewStates(id, sts)
	for i := range r.slots {
		r.slots[i].st = sts[i]
	}
	r.head = int32(n - 1)
	return r
}

// next returns the slot the next version goes to (the oldest).
func (r *ring) next() *versioned { return &r.slots[(int(r.head)+1)%len(r.slots)] }

// advance makes next() the newest.
func (r *ring) advance() {
	r.head = int32((int(r.head) + 1) % len(r.slots))
	r.n = min(r.n+1, int32(len(r.slots)))
}

func (r *ring) newest() *versioned {
	if r.n == 0 {
		return nil
	}
	return &r.slots[r.head]
}

// replicaHistory is the length of a replica's ring when it is made (see
// ring).
const replicaHistory = 0

// base returns the state of version v of replica e to take a delta from,
// or nil if e does not have it: its newest version (the game's State, or
// the copy of it a tentative write left), as a replica keeps no other.
func (e *entry) base(v uint64) *world.State {
	switch {
	case v == 0 || v != e.version:
		return nil
	case e.written:
		return e.hist.slots[0].st
	}
	return e.st
}

// synced returns replica e's newest version exactly as its primary
// committed it (nil before the first).
func (e *entry) synced() *world.State {
	switch {
	case e.version == 0:
		return nil
	case e.written:
		return e.hist.slots[0].st
	}
	return e.st
}

func (r *ring) find(v uint64) *world.State {
	// From the newest back, without a division per slot.
	j := int(r.head)
	for range r.n {
		if s := &r.slots[j]; s.v == v {
			return s.st
		}
		if j--; j < 0 {
			j = len(r.slots) - 1
		}
	}
	return nil
}

type holder struct {
	node wire.NodeID
	// acked is the version the primary believes the holder has (0: none):
	// the last one sent to it, or the one its acknowledgement named (a
	// holder acknowledges only to ask for a resync). Deltas are taken
	// against it.
	acked     uint64
	regUntil  time.Duration // registration expiry
	pushUntil time.Duration // Keep / attachment expiry
	sentAt    time.Duration // when anything was last sent
	fresh     bool          // never sent anything yet
	confirm   bool          // the last send changed the replica: confirm it RetransmitAfter later
	dormant   bool          // the holder's replica is out of its view (TypeDormant)
	quiet     bool          // the holder said TypeDormant itself: its registration lapses without a TypeDrop (Config.DormantTTL)
}

func (h *holder) alive(now time.Duration) bool { return h.regUntil > now || h.pushUntil > now }

type entry struct {
	// The fields are grouped by use.
	//
	// The lookups (Known, Wanted, the frame's walks) and every received
	// update.
	id        world.ObjectID
	version   uint64      // newest version (0: a handed-off object not yet confirmed)
	from      wire.NodeID // replica side: the primary's node
	kind      world.Kind
	primary   bool
	ackDue    bool // replica side: an update could not be applied; ask for a resync
	handoff   bool // client: handed off, no state from the server yet
	requested bool // replica side: this node asked for it (else pushed or attached)
	dormant   bool // replica side: the primary was told it is out of view (TypeDormant)
	// silent: replica side, requested, and nothing heard from its
	// primary for Config.SuspectAfter (as of the last Flush): the
	// locator's news of the object is passed to Want again (see lookUp).
	silent  bool
	written bool // replica side: a tentative write changed st since the newest version (see ring)
	// asked is 1 + the version (its low 32 bits) a replica last asked a
	// resync from, at askedAt (0: never; see update).
	asked uint32
	// loc is the location of st when the store last changed it (changed):
	// a replica's state changes only through the store, so flushReplica
	// reads it here, in the entry, instead of from the state.
	loc world.Point

	// A received update and the frame's walk of the replicas.
	obj          world.Object
	st           *world.State  // obj.State(): what the game reads and writes
	lastHeard    time.Duration // replica side
	lastNeeded   time.Duration
	lastRegister time.Duration
	produced     time.Duration // primary time at which the newest version was current
	askedAt      time.Duration
	lookAt       time.Duration // replica side: the last lookUp sent

	// The primary's version ring and holders.
	hist    ring
	holders []holder // sorted by node
	// controller is the node whose player controls it.
	controller wire.NodeID
	// epoch is the object's epoch as this node knows it (authority.go);
	// auth, a primary's authority state (nil until needed).
	epoch uint32
	auth  *auth

	// The holders' nodes and the client-server handoff. hnodes is
	// holders' nodes, in the same order: every acknowledgement received
	// searches them, and they fit in a cache line or two where the
	// holders span many.
	hnodes      []wire.NodeID
	lastHandoff time.Duration
	nextHandoff time.Duration
}

func (e *entry) holder(node wire.NodeID, create bool) *holder {
	// Binary search for the first holder with node >= node (inlined: this
	// runs for every acknowledgement received).
	i, j := 0, len(e.hnodes)
	for i < j {
		m := int(uint(i+j) >> 1)
		if e.hnodes[m] < node {
			i = m + 1
		} else {
			j = m
		}
	}
	if i < len(e.hnodes) && e.hnodes[i] == node {
		return &e.holders[i]
	}
	if !create {
		return nil
	}
	e.holders = slices.Insert(e.holders, i, holder{node: node, fresh: true})
	e.hnodes = slices.Insert(e.hnodes, i, node)
	return &e.holders[i]
}

// deleteHolder removes the holder node, if any.
func (e *entry) deleteHolder(node wire.NodeID) {
	if i, ok := slices.BinarySearch(e.hnodes, node); ok {
		e.holders = slices.Delete(e.holders, i, i+1)
		e.hnodes = slices.Delete(e.hnodes, i, i+1)
	}
}

type request struct {
	from     wire.NodeID
	until    time.Duration
	lastSent time.Duration
	sent     bool
}

// Stats counts what a Store did; all fields only grow.
type Stats struct {
	UpdatesSent    int64 // update entries sent (deltas, full states and keepalives)
	FullSent       int64 // of which full states
	KeepalivesSent int64 // of which keepalives (nothing changed)
	UpdateFrames   int64 // updates frames sent
	UpdateBytes    int64 // bytes of updates frames (type, length and body)
	AcksSent       int64
	WritesSent     int64
	Applied        int64 // updates applied to replicas
	Stale          int64 // updates ignored: old version, unknown base, or no replica
	WritesApplied  int64 // tentative writes applied to primaries
	Ignored        int64 // well-formed messages about objects this node cannot act on
	// NotPrimary counts messages refused because their sender is not the
	// object's primary as this node knows it: a full state of an object
	// this node asked another node for or knows at another node, news of
	// a primary its epoch does not name, a migration whose epoch names
	// another node. (Updates and deletions from a node other than a
	// replica's source are counted as Stale and Ignored.)
	NotPrimary int64
	Timeouts   int64 // replicas deleted because their primary fell silent
	LookUps    int64 // silent replicas' primaries looked up at the node the locator names
	Dropped    int64 // replicas dropped (unneeded here, or dropped by the primary)
	// Reclaimed counts full states of replicas dropped within the drop
	// guard, not asked for again, taken because their objects were back
	// in the view (and registered again at once).
	Reclaimed int64

	// Authority (authority.go, writes.go, health.go).
	Migrations        int64 // primaries handed to another node
	MigrationsAborted int64 // migrations given up (the old backup did not release the object in time)
	Installs          int64 // primaries taken over by migration
	Promotions        int64 // backups promoted after their primary's node died
	Claims            int64 // takeovers held back for a migration fence's former backup (claim.go)
	StepDowns         int64 // primaries that stepped down for a higher epoch
	WritesMade        int64 // writes this node made to objects it does not hold the primary of
	WritesResent      int64 // of the writes sent, resent (not acknowledged in time)
	WritesDuplicate   int64 // writes received that were applied already (acknowledged again)
	WritesOutOfOrder  int64 // writes received before an earlier one of the same writer (left for the resend)
	WritesForwarded   int64 // writes forwarded toward the primary
	WritesAbandoned   int64 // writes given up (WriteGiveUp, or the object is gone)
	BackupsSent       int64 // backup states sent
	Deaths            int64 // nodes declared dead
}

// Store is a node's local object store and replica manager.
type Store struct {
	// What every received packet reads and writes comes first: the
	// packet stamps, the table, what Check decoded for Apply, the counters
	// and the member record.
	stamp    uint32 // packets begun (BeginPacket)
	updStamp uint32
	ackStamp uint32
	applied  bool                // Apply ran since BeginPacket
	track    bool                // record insertions, removals and changes in member
	objs     idtab.Table[*entry] // ID -> entry
	// What Check decoded of the packet's latest updates frame (body
	// updBody, in upd) and the entries of its updates, for Apply.
	updBody []byte
	updEnts []*entry
	upd     wire.Updates
	scratch []*world.State // per kind, for validation
	member  []Change       // since Members
	answer  []idMsg        // registrations of new holders, answered by Answer
	stats   Stats
	// The packet's latest acks frame Check decoded (body ackBody, in ack).
	ackBody []byte
	ack     wire.Acks

	cfg  Config
	dims int
	ents []*entry // the values of objs, sorted by ID (dense, for walks)
	// prims is the primaries of ents, sorted by ID: a frame walks them
	// several times (think order, commit, flush), and they are a few of
	// the node's objects (its players', among everyone's replicas).
	prims []*entry
	// entIDs and primIDs are the IDs of ents and prims, in the same order:
	// inserting and removing an entry searches them, touching a few cache
	// lines where a search through the entries touches an entry per step.
	entIDs  []world.ObjectID
	primIDs []world.ObjectID
	tomb    expiring // deleted objects, and when (see Config.TombstoneTTL)
	// dropped: replicas this node dropped, and when (see dropGuard).
	dropped expiring
	// The view of the last flush (boxes, or vf when not nil), for a full
	// state of a replica dropped within dropGuard (update).
	viewBoxes []world.Box
	viewVF    View
	// want: replicas asked for and not here yet (values, not pointers:
	// a request is a few words, and objects are asked for all the time).
	want map[world.ObjectID]request
	// unsent counts the requests added (or pointed at another node) since
	// the last flushRequests: Request has something to send.
	unsent int

	// queued outputs
	idq []idMsg
	au  authState

	// scratch, reused every call
	sends    []send
	sendsBy  []send   // sortSendsByTo's
	sendKeys []uint64 // sortSendsByTo's
	acks     []ackMsg
	wantIDs  []world.ObjectID
	dbuf     []byte
	dcache   []byte         // the deltas of a Flush's sends (send.off, send.end)
	ring     []*world.State // for newRing
	free     [][]*entry     // per kind and role (freeIndex): removed entries, for new ones (recycle)
	// noRecycle makes every entry allocate its ring: the reference the
	// recycling is tested against.
	noRecycle bool
	reused    int // entries reused (for tests)
	// handedOff: Handoff was called; until then no entry is handed off,
	// and the flush does not walk the entries for handoffs to send.
	handedOff bool
	wr        wire.Writes
	idl       wire.IDs
	ho        wire.Handoffs
	// SetFar's test of a holder and period.
	far      func(to wire.NodeID, obj world.Object) bool
	farEvery time.Duration
}

type idMsg struct {
	to  wire.NodeID
	typ wire.Type
	id  world.ObjectID
}

type send struct {
	to   wire.NodeID
	e    *entry
	base uint64 // 0: full state
	// The delta, in Store.dcache[off:end] (in a Flush, every holder of an
	// object with the same base shares one).
	off, end int32
}

type ackMsg struct {
	to wire.NodeID
	a  wire.Ack
}

// NewStore returns an empty store.
func NewStore(cfg Config) (*Store, error) {
	cfg, err := cfg.Validate()
	if err != nil {
		return nil, err
	}
	s := &Store{cfg: cfg, dims: cfg.Registry.Space().Dims(),
		tomb:    newExpiring(),
		dropped: newExpiring(),
		want:    map[world.ObjectID]request{},
		scratch: make([]*world.State, cfg.Registry.Len()+1)}
	s.initAuth()
	return s, nil
}

// Config returns the store's validated configuration.
func (s *Store) Config() Config { return s.cfg }

// Stats returns the counters.
func (s *Store) Stats() Stats { return s.stats }

// TrackMembers makes the store record, for Members, the IDs of the objects
// it adds and removes (primaries and replicas, for any reason) and of those
// whose state it changes (a received update, a tentative write applied to
// a primary, Write).
func (s *Store) TrackMembers() { s.track = true }

// A Change is one object added or changed (Obj set, Loc its location
// then), or removed (Obj nil).
type Change struct {
	ID      world.ObjectID
	Obj     world.Object
	Loc     world.Point
	Primary bool // Obj is a primary here (fixed for as long as it is held)
}

// Members appends the objects added, removed or changed since the last
// call (in the order it happened; an ID may repeat) and forgets them. It
// records nothing unless TrackMembers was called. Changes made through an
// object's State directly, outside the store, are not seen.
//
// Given an empty dst with room (dst[:0] of the previous result, say), it
// returns the store's own record instead of copying it, and keeps dst's
// array for the next records: the caller must not use dst's array after
// the call (clearing it first spares the collector stale references).
func (s *Store) Members(dst []Change) []Change {
	if len(dst) == 0 && cap(dst) > 0 {
		// Every frame of a node: no copy of the record, and no clearing
		// of it (two passes over memory long out of cache at 10,000
		// players).
		out := s.member
		s.member = dst
		return out
	}
	dst = append(dst, s.member...)
	clear(s.member)
	s.member = s.member[:0]
	return dst
}

// changed records that the store changed e's state (its location is read
// now, while the state is in cache).
func (s *Store) changed(e *entry) {
	e.loc = e.st.Location()
	if s.track {
		s.member = append(s.member, Change{ID: e.id, Obj: e.obj, Loc: e.loc, Primary: e.primary})
	}
}

func (s *Store) insert(e *entry) {
	s.changed(e)
	s.objs.Put(e.id, e)
	s.ents, s.entIDs = insertSorted(s.ents, s.entIDs, e)
	if e.primary {
		s.prims, s.primIDs = insertSorted(s.prims, s.primIDs, e)
	}
}

// insertSorted inserts e into ents, sorted by ID, and its ID at the same
// index of ids, the IDs of ents.
func insertSorted(ents []*entry, ids []world.ObjectID, e *entry) ([]*entry, []world.ObjectID) {
	i, _ := slices.BinarySearch(ids, e.id)
	return slices.Insert(ents, i, e), slices.Insert(ids, i, e.id)
}

// deleteSorted removes the entry of id, if any, from ents, sorted by ID,
// and its ID from ids, the IDs of ents.
func deleteSorted(ents []*entry, ids []world.ObjectID, id world.ObjectID) ([]*entry, []world.ObjectID) {
	if i, ok := slices.BinarySearch(ids, id); ok {
		return slices.Delete(ents, i, i+1), slices.Delete(ids, i, i+1)
	}
	return ents, ids
}

func (s *Store) remove(id world.ObjectID) {
	if s.track {
		s.member = append(s.member, Change{ID: id})
	}
	e := s.objs.Get(id)
	s.objs.Delete(id)
	s.ents, s.entIDs = deleteSorted(s.ents, s.entIDs, id)
	if e != nil && e.primary {
		s.prims, s.primIDs = deleteSorted(s.prims, s.primIDs, id)
	}
	if e != nil {
		s.recycle(e)
	}
}

// recycle keeps removed entry e for the next new entry of its kind:
// replicas come and go all the time, and reusing their entries, version
// rings and holder lists spares the allocator and the
// collector (the States are the bulk of an entry). Nothing outside the
// store holds them: Info's Synced is valid only until the store changes,
// and the store keeps no pointer to a removed entry past the call that
// removed it. The entry drops its object and State (the game's, not the
// store's) at once.
func (s *Store) recycle(e *entry) {
	if s.noRecycle || len(e.hist.slots) != s.historyLen(e.primary) {
		return
	}
	i := freeIndex(e.kind, e.primary)
	if i >= len(s.free) {
		s.free = append(s.free, make([][]*entry, i+1-len(s.free))...)
	}
	e.obj, e.st = nil, nil
	s.free[i] = append(s.free[i], e)
}

// freeIndex is the index in Store.free of the removed entries of kind k
// that were primaries (or replicas): their rings differ in length.
func freeIndex(k world.Kind, primary bool) int {
	if primary {
		return 2 * int(k)
	}
	return 2*int(k) + 1
}

// historyLen is the length of a primary's (or a replica's) version ring.
func (s *Store) historyLen(primary bool) int {
	if primary {
		return s.cfg.HistoryLen
	}
	return replicaHistory
}

// reuse returns a recycled entry of kind k made new for object st (whose
// game object is obj), or nil if there is none. Its ring is emptied but
// its States keep the removed object's ID and values (clearing them would
// write every line of them): a slot's State is written whole, ID included,
// before the slot holds a version (CopyFrom). Its holder lists keep their
// arrays, emptied.
func (s *Store) reuse(k world.Kind, primary bool, obj world.Object, st *world.State) *entry {
	i := freeIndex(k, primary)
	if i >= len(s.free) || len(s.free[i]) == 0 {
		return nil
	}
	fl := s.free[i]
	e := fl[len(fl)-1]
	fl[len(fl)-1] = nil
	s.free[i] = fl[:len(fl)-1]
	hist, holders, hnodes := e.hist, e.holders[:0], e.hnodes[:0]
	for i := range hist.slots {
		hist.slots[i].v = 0
	}
	hist.head, hist.n = int32(len(hist.slots)-1), 0
	*e = entry{id: st.ID(), kind: k, obj: obj, st: st, hist: hist, holders: holders, hnodes: hnodes}
	s.reused++
	return e
}

// newEntry returns a new entry for obj (whose State is st), with the ring
// of a primary (or of a replica); the caller sets primary.
func (s *Store) newEntry(obj world.Object, st *world.State, primary bool) (*entry, error) {
	if obj == nil || st == nil || obj.State() != st {
		return nil, fmt.Errorf("replica: object of %v does not return its State", st.ID())
	}
	k, ok := s.cfg.Registry.Kind(st.Schema())
	if !ok {
		return nil, fmt.Errorf("%w (%q)", world.ErrUnregistered, st.Schema().Name())
	}
	if e := s.reuse(k, primary, obj, st); e != nil {
		return e, nil
	}
	e := &entry{id: st.ID(), kind: k, obj: obj, st: st}
	e.hist = newRing(st.Schema(), st.ID(), s.ringScratch(s.historyLen(primary)))
	return e, nil
}

// AddPrimary adds obj (whose State carries its ID) as a primary of this
// node, controlled by the node controller (the node itself, or the client
// that handed it off). Its current state becomes version 1.
func (s *Store) AddPrimary(now time.Duration, obj world.Object, controller wire.NodeID) error {
	st := obj.State()
	if st == nil || st.ID() == 0 {
		return fmt.Errorf("replica: primary has no state or the zero ID")
	}
	if s.objs.Get(st.ID()) != nil {
		return fmt.Errorf("%w: %v", ErrExists, st.ID())
	}
	if s.tomb.has(st.ID()) {
		return fmt.Errorf("%w: %v", ErrDeleted, st.ID())
	}
	e, err := s.newEntry(obj, st, true)
	if err != nil {
		return err
	}
	e.primary, e.controller = true, controller
	s.commit(e, now, true)
	s.insert(e)
	return nil
}

// Handoff records obj, created on this client node, as handed off to the
// server: the store keeps it as a replica of version 0 (readable at once)
// and sends its state to server until the server's first update arrives.
// Like AddPrimary, it refuses the ID of an object deleted here recently.
func (s *Store) Handoff(now time.Duration, obj world.Object, server wire.NodeID) error {
	st := obj.State()
	if st == nil || st.ID() == 0 {
		return fmt.Errorf("replica: handed-off object has no state or the zero ID")
	}
	if s.objs.Get(st.ID()) != nil {
		return fmt.Errorf("%w: %v", ErrExists, st.ID())
	}
	if s.tomb.has(st.ID()) {
		return fmt.Errorf("%w: %v", ErrDeleted, st.ID())
	}
	e, err := s.newEntry(obj, st, false)
	if err != nil {
		return err
	}
	e.from, e.handoff, e.lastHeard, e.lastNeeded = server, true, now, now
	s.handedOff = true
	s.insert(e)
	return nil
}

// Delete removes the local primary id and tells every holder.
func (s *Store) Delete(now time.Duration, id world.ObjectID) error {
	e := s.objs.Get(id)
	ok := e != nil
	if !ok {
		return fmt.Errorf("%w: %v", ErrUnknown, id)
	}
	if !e.primary {
		return fmt.Errorf("%w: %v", ErrNotPrimary, id)
	}
	for _, h := range e.holders {
		s.idq = append(s.idq, idMsg{to: h.node, typ: wire.TypeDelete, id: id})
	}
	if a := e.auth; a != nil && a.hasBackup {
		s.au.rels[id] = release{to: a.backup, epoch: e.epoch, until: now + 3*time.Second}
	}
	if hm := home(id); hm != s.cfg.Self && e.epoch > 0 {
		s.au.whereq = append(s.au.whereq, whereMsg{to: hm, l: wire.Location{ID: id, Epoch: e.epoch, Gone: true}})
	}
	delete(s.au.where, id)
	s.remove(id)
	s.tomb.set(id, now)
	s.au.tombEp[id] = e.epoch
	return nil
}

// Deleted reports whether object id is known here to be deleted (as a
// primary here, or by news from its primary) within the tombstone time
// to live (TombstoneTTL).
func (s *Store) Deleted(id world.ObjectID) bool {
	_, ok := s.au.tombEp[id]
	return ok
}

// Lookup returns the local object id.
func (s *Store) Lookup(id world.ObjectID) (obj world.Object, primary, ok bool) {
	e := s.objs.Get(id)
	if e == nil {
		return nil, false, false
	}
	return e.obj, e.primary, true
}

// Len returns the number of local objects (primaries and replicas).
func (s *Store) Len() int { return len(s.ents) }

// Range calls fn for every local object in increasing ID order until fn
// returns false. fn must not add or remove objects.
func (s *Store) Range(fn func(obj world.Object, primary bool) bool) {
	for _, e := range s.ents {
		if !fn(e.obj, e.primary) {
			return
		}
	}
}

// RangeReplicas calls fn for every replica in increasing ID order, with
// the node of its primary as this store knows it (Source), until fn
// returns false. fn must not add or remove objects.
func (s *Store) RangeReplicas(fn func(obj world.Object, from wire.NodeID) bool) {
	for _, e := range s.ents {
		if !e.primary && !fn(e.obj, e.from) {
			return
		}
	}
}

// IDs appends the IDs of local objects (primaries only if primaries) in
// increasing order.
func (s *Store) IDs(dst []world.ObjectID, primaries bool) []world.ObjectID {
	if primaries {
		return append(dst, s.primIDs...)
	}
	return append(dst, s.entIDs...)
}

// Controller returns the controlling node of local primary id.
func (s *Store) Controller(id world.ObjectID) (wire.NodeID, bool) {
	e := s.objs.Get(id)
	ok := e != nil
	if !ok || !e.primary {
		return 0, false
	}
	return e.controller, true
}

// Source returns the node holding the primary of replica id.
func (s *Store) Source(id world.ObjectID) (wire.NodeID, bool) {
	e := s.objs.Get(id)
	if e == nil || e.primary {
		return 0, false
	}
	return e.from, true
}

// Write applies fn to local object id. On a replica the change is applied
// at once and queued as a tentative write to the primary's node.
func (s *Store) Write(id world.ObjectID, fn func(*world.State)) error {
	e := s.objs.Get(id)
	ok := e != nil
	if !ok {
		return fmt.Errorf("%w: %v", ErrUnknown, id)
	}
	if e.primary {
		fn(e.st)
		s.changed(e)
		return nil
	}
	if !e.written && e.version > 0 {
		// Keep the newest version as the base of the primary's next delta.
		if len(e.hist.slots) == 0 {
			e.hist = newRing(e.st.Schema(), e.id, s.ringScratch(1))
		}
		e.hist.slots[0].st.CopyFrom(e.st)
		e.written = true
	}
	before := s.scratchFor(e.kind)
	before.CopyFrom(e.st)
	fn(e.st)
	s.changed(e)
	if !world.Changed(before, e.st) {
		return nil
	}
	s.dbuf = world.AppendWrite(s.dbuf[:0], before, e.st)
	s.queueWrite(id, s.dbuf, e.from, e.version > 0)
	return nil
}

// ringScratch returns a scratch slice of n state pointers.
func (s *Store) ringScratch(n int) []*world.State {
	if cap(s.ring) < n {
		s.ring = make([]*world.State, n)
	}
	return s.ring[:n]
}

func (s *Store) scratchFor(k world.Kind) *world.State {
	if s.scratch[k] == nil {
		s.scratch[k] = s.cfg.Registry.Schema(k).NewState(0)
	}
	return s.scratch[k]
}

// commit gives e a new version if its state changed since the newest one
// (always, when force).
func (s *Store) commit(e *entry, now time.Duration, force bool) {
	if nw := e.hist.newest(); !force && nw != nil && (e.auth == nil || !e.auth.dirty) && !world.Changed(nw.st, e.st) {
		return
	}
	if e.auth != nil {
		e.auth.dirty = false
	}
	e.version++
	slot := e.hist.next()
	slot.v = e.version
	slot.st.CopyFrom(e.st)
	e.hist.advance()
	e.produced = now
}

// Commit ends the think phase of a frame: every primary whose state changed
// gets a new version, produced at now.
func (s *Store) Commit(now time.Duration) {
	for _, e := range s.prims {
		s.commit(e, now, false)
	}
}

// Keep makes node to a holder of local primary id until now+PushTTL
// (broadcast, client-server). It reports whether id is a local primary.
func (s *Store) Keep(now time.Duration, id world.ObjectID, to wire.NodeID) bool {
	e := s.objs.Get(id)
	ok := e != nil
	if !ok || !e.primary || to == s.cfg.Self {
		return false
	}
	h := e.holder(to, true)
	h.pushUntil = max(h.pushUntil, now+s.cfg.PushTTL)
	return true
}

// Want records that this node wants a replica of id, whose primary is on
// node from, until until (the discovery information's expiry). A replica
// already held is marked as requested (so it is registered and dropped when
// unneeded); otherwise a registration is sent at the next Flush and retried
// every RequestRetry until the replica arrives or until passes (a full
// state arriving within RequestRetry of the last registration still makes
// a requested replica).
func (s *Store) Want(now time.Duration, id world.ObjectID, from wire.NodeID, until time.Duration) {
	if from == s.cfg.Self {
		return
	}
	if e := s.objs.Get(id); e != nil {
		if !e.primary && !e.requested {
			e.requested, e.lastNeeded = true, now
		}
		if e.silent && from != e.from && now-e.lookAt >= s.cfg.RequestRetry {
			s.lookUp(now, e, from)
		}
		return
	}
	if s.tomb.has(id) {
		return
	}
	if r, ok := s.want[id]; ok {
		r.until = max(r.until, until)
		if r.from != from {
			r.from, r.sent = from, false
			s.unsent++
		}
		s.want[id] = r
		return
	}
	s.want[id] = request{from: from, until: until}
	s.unsent++
}

// lookUp asks node to, the node the locator names for silent replica e,
// where the object is: it tells to what this node knows (a location of
// e's epoch and source) and registers there. A primary of a newer epoch
// on to answers with its location, at once, and with its full state:
// the replica follows it (whereIn) and takes the state. This is how a
// holder finds a primary promoted by a backup that never heard of the
// holder (it registered within a backup state's trip of the crash), and
// a primary moved while its location to the holder was lost. Anything
// else on to changes nothing here: a stale location is corrected, a
// registration to a node that is not the primary is dropped or pointed
// on.
func (s *Store) lookUp(now time.Duration, e *entry, to wire.NodeID) {
	e.lookAt = now
	s.au.whereq = append(s.au.whereq, whereMsg{to: to, l: wire.Location{ID: e.id, Epoch: e.epoch, Node: e.from}})
	s.idq = append(s.idq, idMsg{to: to, typ: wire.TypeRegister, id: e.id})
	s.stats.LookUps++
}

// Wanted reports whether Want would change nothing for id: it is a local
// primary or a replica this node asked for whose primary is not silent
// (see lookUp). The node skips its view test for such discoveries.
func (s *Store) Wanted(id world.ObjectID) bool {
	e := s.objs.Get(id)
	return e != nil && (e.primary || e.requested && !e.silent)
}

// Holders appends to dst the nodes registered at now for a replica of
// local primary id (they asked for it and keep asking), in node order;
// nothing for a replica or an unknown object. Nodes the primary only
// pushes to (Keep, attachment) are not listed: they never asked, and a
// locator must still introduce the object to them. Nor are dormant
// holders: their replica is out of their view, soon dropped without a word
// (Config.DormantTTL), and a locator that skipped them would leave them
// without news of the object until its next publication after the
// registration lapsed (a bot that respawns into such a holder's view).
func (s *Store) Holders(now time.Duration, id world.ObjectID, dst []wire.NodeID) []wire.NodeID {
	e := s.objs.Get(id)
	if e == nil || !e.primary {
		return dst
	}
	for i := range e.holders {
		if h := &e.holders[i]; h.regUntil > now && !h.dormant {
			dst = append(dst, h.node)
		}
	}
	return dst
}

// Known is Wanted with, for a replica held here, its location: usually
// newer than any publication it was discovered by. The node refreshes its
// discovery candidates with it, so that a replica dropped out of view is
// not fetched again on an older location (unless the replica was not
// asked for and is older than the publication: see Produced). from is a
// replica's primary's node.
func (s *Store) Known(id world.ObjectID) (loc world.Point, from wire.NodeID, replica, wanted bool) {
	e := s.objs.Get(id)
	if e == nil {
		return loc, 0, false, false
	}
	return e.loc, e.from, !e.primary, e.primary || e.requested && !e.silent
}

// Produced returns the primary's time of the state this node holds of id
// (Info.Produced), and whether it holds id.
func (s *Store) Produced(id world.ObjectID) (time.Duration, bool) {
	e := s.objs.Get(id)
	if e == nil {
		return 0, false
	}
	return e.produced, true
}

// A KnownWalk answers Known for IDs asked in increasing order by walking
// the store's sorted ID array alongside them, instead of a table probe per
// ID: the node's discovery candidates are sorted by ID too, and a probe for
// each (most of them a cache miss at 10,000 players) costs more than
// reading the IDs in order. It is valid while no object is added to or
// removed from the store (Want may be called meanwhile). An ID not above
// the previous one is looked up in the table.
type KnownWalk struct {
	s    *Store
	i    int            // entIDs[:i] are below the last ID asked
	last world.ObjectID // the last ID asked (0: none yet)
}

// WalkKnown returns a KnownWalk from the lowest ID.
func (s *Store) WalkKnown() KnownWalk { return KnownWalk{s: s} }

// Known is Store.Known.
func (w *KnownWalk) Known(id world.ObjectID) (loc world.Point, from wire.NodeID, replica, wanted bool) {
	if id <= w.last {
		return w.s.Known(id)
	}
	w.last = id
	ids := w.s.entIDs
	i := w.i
	// Gallop, then search the last step: the walk skips runs of the
	// store's IDs without reading each.
	if i < len(ids) && ids[i] < id {
		lo, step := i, 1
		hi := i + step
		for hi < len(ids) && ids[hi] < id {
			lo = hi
			step <<= 1
			hi = lo + step
		}
		hi = min(hi, len(ids))
		// ids[lo] < id; ids[hi] >= id or hi == len(ids).
		lo++
		for lo < hi {
			m := int(uint(lo+hi) >> 1)
			if ids[m] < id {
				lo = m + 1
			} else {
				hi = m
			}
		}
		i = lo
	}
	w.i = i
	if i < len(ids) && ids[i] == id {
		e := w.s.ents[i]
		return e.loc, e.from, !e.primary, e.primary || e.requested && !e.silent
	}
	return loc, 0, false, false
}

// A PrimaryWalk looks up local primaries asked in increasing ID order,
// stepping through the store's sorted primaries instead of probing the
// table for each: the node's frame walks its primaries that way, by IDs
// taken from IDs. Objects may be added and removed between calls (a think
// function may create or delete objects): an ID not where the walk
// expects it is searched for among the primaries' IDs.
type PrimaryWalk struct {
	s *Store
	i int // where the next ID is expected in primIDs
}

// WalkPrimaries returns a PrimaryWalk from the lowest ID.
func (s *Store) WalkPrimaries() PrimaryWalk { return PrimaryWalk{s: s} }

// Primary returns local primary id and its controller (what Lookup and
// Controller return for it); ok is false if id is not a local primary.
func (w *PrimaryWalk) Primary(id world.ObjectID) (obj world.Object, controller wire.NodeID, ok bool) {
	ids := w.s.primIDs
	i := w.i
	if i >= len(ids) || ids[i] != id {
		var found bool
		if i, found = slices.BinarySearch(ids, id); !found {
			w.i = i
			return nil, 0, false
		}
	}
	w.i = i + 1
	e := w.s.prims[i]
	return e.obj, e.controller, true
}

// Info describes one local object for observers (the simulator's metrics,
// tests). Its States belong to the store: read them before the next call
// that changes the store, and never modify them.
type Info struct {
	ID      world.ObjectID
	Kind    world.Kind
	Primary bool
	// Version is the newest version: committed, on a primary; received, on
	// a replica (0: a handed-off object the server has not confirmed yet).
	Version uint64
	// Produced is the primary's time at which Version was its current
	// state (on a replica: the newest such time heard); staleness is the
	// observer's now minus Produced, or rather minus the time the primary
	// moved past Version.
	Produced time.Duration
	// From is the node holding the primary (this node, for a primary).
	From wire.NodeID
	// Controller is the node whose player controls a primary.
	Controller wire.NodeID
	// State is what the game reads: on a replica it includes tentative
	// writes not yet confirmed by the primary.
	State *world.State
	// Synced is the state of Version exactly as the primary committed it
	// (nil when Version is 0).
	Synced *world.State
	// Holders is the number of nodes a primary updates; Requested whether
	// this node asked for a replica (else it was pushed or attached).
	Holders   int
	Requested bool
}

// Objects appends a description of every local object, in ID order.
func (s *Store) Objects(dst []Info) []Info {
	for _, e := range s.ents {
		dst = append(dst, s.info(e))
	}
	return dst
}

// Brief is the part of Info an observer reads of every object every frame
// (the lab's frame snapshots), cheaper to gather than Info.
type Brief struct {
	ID       world.ObjectID
	Kind     world.Kind
	Version  uint64
	Produced time.Duration
	Primary  bool
	// State is what the game reads (Info.State); read it before the next
	// call that changes the store, and never modify it.
	State *world.State
}

// Briefs appends a Brief of every local object, in ID order.
func (s *Store) Briefs(dst []Brief) []Brief {
	for _, e := range s.ents {
		dst = append(dst, Brief{ID: e.id, Kind: e.kind, Version: e.version, Produced: e.produced, Primary: e.primary, State: e.st})
	}
	return dst
}

// Primaries appends a description of every local primary, in ID order
// (Objects without the replicas: cheaper for observers that only need the
// primaries).
func (s *Store) Primaries(dst []Info) []Info {
	for _, e := range s.prims {
		dst = append(dst, s.info(e))
	}
	return dst
}

// Object describes local object id.
func (s *Store) Object(id world.ObjectID) (Info, bool) {
	e := s.objs.Get(id)
	ok := e != nil
	if !ok {
		return Info{}, false
	}
	return s.info(e), true
}

func (s *Store) info(e *entry) Info {
	in := Info{ID: e.id, Kind: e.kind, Primary: e.primary, Version: e.version, Produced: e.produced,
		From: e.from, Controller: e.controller, State: e.st, Holders: len(e.holders), Requested: e.requested}
	if e.primary {
		in.From = s.cfg.Self
	}
	if !e.primary {
		in.Synced = e.synced()
	} else if nw := e.hist.newest(); nw != nil {
		in.Synced = nw.st
	}
	return in
}

// Pending returns the number of replicas requested but not yet received.
func (s *Store) Pending() int { return len(s.want) }

// wants reports whether a replica of id is asked for (Want) and not here
// yet.
func (s *Store) wants(id world.ObjectID) bool {
	_, ok := s.want[id]
	return ok
}

// SetFar makes the primaries send a holder an update at most once every
// every while far(holder, object) reports the object far from what the
// holder needs (the node decides; see node.Config.FarMargin). A fresh
// holder still gets its full state at once, and keepalives and resyncs
// go as before. nil far sends every frame's change (the default). every
// should stay below HistoryLen frames, or far holders get full states.
func (s *Store) SetFar(far func(to wire.NodeID, obj world.Object) bool, every time.Duration) {
	s.far, s.farEvery = far, every
}
