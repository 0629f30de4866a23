package replica

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/overworld/overworld/wire"
	"github.com/overworld/overworld/world"
)

// Authority: where an object's primary is, and how it moves and survives.
//
// Every object has an epoch (0 when created), raised by one at every
// migration and every failover. A node accepts writes for an object only
// as its primary, and two nodes never hold the primary of one object at
// one epoch: a migration hands the object over (the old node stops
// before the new one starts), and a failover promotes the one backup of
// the epoch. A node that learns of a higher epoch than its own primary's
// steps down (a primary cut off by a partition, back).
//
//   - Migration (Migrate): the old primary sends the state, the writers'
//     progress and the holders to the new node (wire.TypeMigrate, resent
//     until acknowledged), keeps the state as the new primary's first
//     backup, tells the holders and the home of the ID where the object
//     went (wire.TypeWhere), and forwards writes and points registrations
//     to the new primary while holders and writers still use it (the
//     forwarding reference: a RegistrationTTL after its last use).
//   - The name service: the home of an ID (the node named by its origin,
//     see home) binds it to its current primary; primaries of objects
//     created elsewhere re-bind every BindPeriod. A write to an object a
//     node holds no replica of goes to its last known primary, else to
//     its home, and is forwarded from there.
//   - Writes by ID, exactly once (writes.go): every write carries its
//     writer's incarnation and sequence numbers; the primary applies each
//     once, in order, and acknowledges it once the backup holds it; the
//     writer resends it until then.
//   - Backups and failover (Config.Failover; health.go): each primary has
//     a backup on another node (BackupPolicy), sent every frame the state
//     changes (wire.TypeBackup). When the backup and a witness find the
//     primary's node dead, the backup promotes itself at epoch+1, tells
//     the holders and the home, and picks a backup of its own.

// ForkGap is how far a promoted primary's versions jump past the
// backup's: the old primary (dead, or cut off by a partition) cannot have
// made that many versions the backup did not see unless it ran cut off
// for ForkGap frames (29 hours at 10 Hz), so the two lineages never share
// a version number and a holder of the old one takes the new one's first
// state as a full state.
const ForkGap = 1 << 20

// MaxNode is the largest node ID a store accepts: an epoch names the node
// that began it in 15 bits (nextEpoch).
const MaxNode = 1<<15 - 1

// nextEpoch returns the epoch after e of an object whose next primary is
// node n, by a migration or, if promoted, a failover: the counter in the
// high 16 bits rises by one, bit 15 says which, and the low 15 bits name
// n. Two nodes never make the same epoch of an object, nor one node by a
// migration and a failover, so two primaries of one epoch cannot exist
// even when a partition lets two lineages grow apart (the higher epoch
// wins when they meet). Node IDs are at most MaxNode for this to hold
// (Config.Validate checks Self).
func nextEpoch(e uint32, n wire.NodeID, promoted bool) uint32 {
	p := uint32(0)
	if promoted {
		p = 1 << 15
	}
	return (e>>16+1)<<16 | p | uint32(n)&0x7fff
}

// epochNames reports whether epoch e names node n as its primary: every
// epoch after 0 does, in its low 15 bits (nextEpoch); an object's first
// primary, at epoch 0, is the node that created or was handed it.
func epochNames(e uint32, n wire.NodeID) bool {
	return e == 0 || wire.NodeID(e&0x7fff) == n
}

// home returns the node whose name service binds id: the node named by
// the low 16 bits of its origin (node.Config.Incarnation).
func home(id world.ObjectID) wire.NodeID {
	o := id.Origin()
	if o>>16 != 0 {
		return wire.NodeID(o & 0xffff)
	}
	return wire.NodeID(o)
}

// Home returns the node whose name service binds id: the node that
// created it.
func Home(id world.ObjectID) wire.NodeID { return home(id) }

// EventKind names an authority event (Config.OnEvent).
type EventKind uint8

// Authority events.
const (
	EvMigrated       EventKind = iota + 1 // this node handed ID (version Version) to Node at Epoch
	EvInstalled                           // this node took ID over from Node at Epoch (migration)
	EvPromoted                            // this node promoted its backup of ID (version Version) at Epoch; Node is the dead primary's node
	EvSteppedDown                         // this node's primary of ID stepped down for Node's Epoch
	EvWriteApplied                        // the primary applied write Seq of Writer (Inc) to ID at Epoch, in version Version
	EvWriteAcked                          // the writer learnt that its writes to ID up to Seq are applied and safe
	EvWriteAbandoned                      // the writer gave write Seq to ID up (WriteGiveUp) or the object is gone (Node: 1)
	EvDead                                // this node declared Node dead
	EvBackup                              // this node chose Node as the backup of ID at Epoch
	EvMigrateAborted                      // a migration of ID to Node was given up: the old backup did not release it in time
)

var eventNames = [...]string{"", "migrated", "installed", "promoted", "stepped-down", "write-applied",
	"write-acked", "write-abandoned", "dead", "backup", "migrate-aborted"}

// String returns the event's name.
func (k EventKind) String() string {
	if int(k) < len(eventNames) && k != 0 {
		return eventNames[k]
	}
	return fmt.Sprintf("event(%d)", uint8(k))
}

// Event is one authority event, reported to Config.OnEvent as it happens.
type Event struct {
	Kind    EventKind
	At      time.Duration
	Self    wire.NodeID
	ID      world.ObjectID
	Epoch   uint32
	Node    wire.NodeID
	Version uint64
	// Base is, for EvPromoted, the version of the backup's state the new
	// primary starts from: what the old primary did after it is lost.
	Base uint64
	// Prev is, for EvPromoted and EvMigrated, the epoch the new one
	// follows.
	Prev   uint32
	Writer wire.NodeID
	Inc    uint16
	Seq    uint32
}

func (s *Store) emit(ev Event) {
	if s.cfg.OnEvent != nil {
		ev.Self = s.cfg.Self
		s.cfg.OnEvent(ev)
	}
}

// auth is a primary's authority state (nil until it is needed).
type auth struct {
	writers []writerRec // by (node, inc)
	acks    []pendingAck
	dirty   bool // a write was applied since the last commit: commit even if the state is unchanged

	backup    wire.NodeID
	hasBackup bool
	bkAcked   uint64 // the version the backup holds, with the writers' progress
	bkSent    uint64 // the version last sent to the backup
	bkSentAt  time.Duration
	bkHolders []wire.NodeID // the holders last sent to the backup
	bkFull    bool          // send the holders with the next backup
	lastBind  time.Duration
	// installedFrom is the node this primary was migrated from (a Migrate
	// from it at this epoch is a retransmission).
	installedFrom wire.NodeID
}

type writerRec struct {
	wire.WriterSeq
	ver uint64 // the version that contains write Seq
}

type pendingAck struct {
	node wire.NodeID
	inc  uint16
	seq  uint32
	ver  uint64
}

// loc is a forwarding reference (an object that left this node) or a
// home binding (an object created here, now elsewhere).
type loc struct {
	node  wire.NodeID
	epoch uint32
	until time.Duration
}

// bcopy is what a backup keeps of an object: the state of one version
// and the writers' progress as of it.
type bcopy struct {
	primary    wire.NodeID
	epoch      uint32
	version    uint64
	kind       world.Kind
	st         *world.State
	controller wire.NodeID
	writers    []wire.WriterSeq
	holders    []wire.NodeID
	heard      time.Duration // the last backup state from the primary
	ackAt      time.Duration // the last acknowledgement sent
	// mig is the migration this node sent and that is not acknowledged
	// yet (the copy is the new primary's first backup). It goes again
	// every frame until acknowledged: writes to the object wait while it
	// travels, so a lost copy must not cost a round trip more, and a
	// migration is a few hundred bytes, and rare.
	mig *wire.Migration
	// fence is, while a migration of the object to this node waits for
	// its former backup's release, that node (0: none): this copy takes
	// the object over only with its grant (claim.go).
	fence wire.NodeID
	// granted: the fence's former backup gave its copy up for this one;
	// askAt: when it was last asked (claim.go).
	granted bool
	askAt   time.Duration
	// claimFor, when not 0, is the dead primary's node: the fenced copy
	// waits for its former backup's grant to take the object over.
	claimFor wire.NodeID
	// refused: this node refused a fence's claim with a newer copy, and
	// must take the object over.
	refused bool
}

type whereMsg struct {
	to wire.NodeID
	l  wire.Location
}

type epochMsg struct {
	to  wire.NodeID
	typ wire.Type
	e   wire.Epoch
}

type backupAckMsg struct {
	to wire.NodeID
	a  wire.BackupAck
}

// relMark: until until, backup states from node from of an epoch below
// epoch, or of epoch up to version, are stale (a copy given up).
type relMark struct {
	from    wire.NodeID
	epoch   uint32
	version uint64
	until   time.Duration
}

// forever is a release's expiry that only its confirmation or its
// target's death ends.
const forever = time.Duration(1<<63 - 1)

type release struct {
	fence  bool // a migration's: writes wait for it
	to     wire.NodeID
	epoch  uint32
	until  time.Duration
	sentAt time.Duration
}

// authState is the store's authority state.
type authState struct {
	where    map[world.ObjectID]loc
	bk       map[world.ObjectID]*bcopy
	outw     map[world.ObjectID]*wstream
	rels     map[world.ObjectID]release
	tombEp   map[world.ObjectID]uint32 // the epoch each tombstoned object was deleted at
	fences   map[world.ObjectID]fence
	relIn    map[world.ObjectID]relMark
	wseq     uint32 // the last write sequence number given out
	early    []earlyWrite
	fwd      []fwdWrite
	whereq   []whereMsg
	epochq   []epochMsg
	baq      []backupAckMsg
	claimq   []claimMsg
	cls      wire.Claims
	wackq    []wackMsg
	health   health
	mig      wire.Migrate
	bkm      wire.Backup
	wh       wire.Where
	eps      wire.Epochs
	bas      wire.BackupAcks
	was      wire.WriteAcks
	pendMig  []migMsg
	sentTo   []wire.NodeID // nodes sent something this flush (a heartbeat to them can wait)
	backupq  []backupMsg
	now      time.Duration
	started  bool
	startAt  time.Duration
	scratchH []wire.NodeID
}

func (s *Store) initAuth() {
	s.au.where = map[world.ObjectID]loc{}
	s.au.bk = map[world.ObjectID]*bcopy{}
	s.au.outw = map[world.ObjectID]*wstream{}
	s.au.rels = map[world.ObjectID]release{}
	s.au.tombEp = map[world.ObjectID]uint32{}
	s.au.fences = map[world.ObjectID]fence{}
	s.au.relIn = map[world.ObjectID]relMark{}
	s.au.health.init()
}

// Epoch returns the epoch of local object id (primary or replica) and
// whether it is held here.
func (s *Store) Epoch(id world.ObjectID) (uint32, bool) {
	e := s.objs.Get(id)
	if e == nil {
		return 0, false
	}
	return e.epoch, true
}

// BackupOf returns the backup node of local primary id, if it has one.
func (s *Store) BackupOf(id world.ObjectID) (wire.NodeID, bool) {
	e := s.objs.Get(id)
	if e == nil || !e.primary || e.auth == nil || !e.auth.hasBackup {
		return 0, false
	}
	return e.auth.backup, true
}

// BackedUp appends the IDs of the objects this node keeps a backup of,
// in increasing order.
func (s *Store) BackedUp(dst []world.ObjectID) []world.ObjectID {
	start := len(dst)
	for id := range s.au.bk {
		dst = append(dst, id)
	}
	slices.Sort(dst[start:])
	return dst
}

func (e *entry) authority() *auth {
	if e.auth == nil {
		e.auth = &auth{bkFull: true}
	}
	return e.auth
}

// Migrate hands local primary id, and the primaries attached to it
// (world.Attacher), to node to: see the package's authority notes. The
// object stops thinking here at once; to thinks it from its next frame
// after the migration arrives. It returns the IDs migrated.
func (s *Store) Migrate(now time.Duration, id world.ObjectID, to wire.NodeID) ([]world.ObjectID, error) {
	e := s.objs.Get(id)
	switch {
	case e == nil:
		return nil, fmt.Errorf("%w: %v", ErrUnknown, id)
	case !e.primary:
		return nil, fmt.Errorf("%w: %v", ErrNotPrimary, id)
	case to == s.cfg.Self:
		return nil, fmt.Errorf("replica: %v: migration to this node itself", id)
	case s.au.health.isDead(to):
		return nil, fmt.Errorf("replica: %v: migration to node %d, which is declared dead", id, to)
	}
	if f, ok := s.au.fences[id]; ok {
		return nil, fmt.Errorf("%w: %v is already on its way to node %d", ErrMigrating, id, f.to)
	}
	ids := []world.ObjectID{id}
	if !s.cfg.NoAttach {
		for _, p := range s.prims {
			if a, ok := p.obj.(world.Attacher); ok && p.id != id && a.AttachTo() == id {
				ids = append(ids, p.id)
			}
		}
	}
	for _, x := range ids {
		e := s.objs.Get(x)
		if a := e.auth; s.cfg.Failover && a != nil && a.hasBackup && a.backup != to {
			// Fence first: the old backup must give its copy up before
			// the object leaves, or it could take the object over from
			// under the new primary. Meanwhile the target is the backup
			// (should this node die, the target takes the object over),
			// and the object stays here, accepting writes, until the old
			// backup confirms (released). The release goes once the
			// target holds a copy (flushBackups): until then the old
			// backup's is the only one.
			old := a.backup
			a.backup, a.bkAcked, a.bkSent, a.bkFull = to, 0, 0, true
			s.emit(Event{Kind: EvBackup, At: now, ID: x, Epoch: e.epoch, Node: to})
			s.au.fences[x] = fence{to: to, until: now + fenceTTL}
			// Until the old backup confirms, it could still take the
			// object over: no write is acknowledged (flushWriteAcks), and
			// the release is resent until it is confirmed or the old
			// backup is found dead (by a majority: then it cannot).
			s.au.rels[x] = release{to: old, epoch: e.epoch, until: forever, sentAt: now - s.cfg.WriteRetry, fence: true}
			continue
		}
		s.migrateOne(now, e, to)
	}
	return ids, nil
}

// fenceTTL is how long a migration waits for the old backup's release
// before it is given up.
const fenceTTL = 2 * time.Second

type fence struct {
	to    wire.NodeID
	until time.Duration
}

// released ends the fence of a migration waiting for its backup's release.
func (s *Store) released(now time.Duration, id world.ObjectID) {
	f, ok := s.au.fences[id]
	if !ok {
		return
	}
	delete(s.au.fences, id)
	e := s.objs.Get(id)
	if e == nil || !e.primary || e.auth == nil || !e.auth.hasBackup || e.auth.backup != f.to || s.au.health.isDead(f.to) {
		s.stats.MigrationsAborted++
		s.emit(Event{Kind: EvMigrateAborted, At: now, ID: id, Node: f.to})
		return
	}
	if e.auth != nil {
		e.auth.hasBackup = false
	}
	s.migrateOne(now, e, f.to)
}

// MigrateBox migrates every local primary whose location lies in box
// (and what is attached to them) to node to, and returns their IDs.
func (s *Store) MigrateBox(now time.Duration, box world.Box, to wire.NodeID) ([]world.ObjectID, error) {
	if to == s.cfg.Self {
		return nil, fmt.Errorf("replica: migration to this node itself")
	}
	if s.au.health.isDead(to) {
		return nil, fmt.Errorf("replica: migration to node %d, which is declared dead", to)
	}
	var in []world.ObjectID
	for _, p := range s.prims {
		if box.Contains(p.st.Location(), s.dims) {
			in = append(in, p.id)
		}
	}
	var out []world.ObjectID
	for _, id := range in {
		if e := s.objs.Get(id); e == nil || !e.primary {
			continue // moved with its anchor already
		}
		got, err := s.Migrate(now, id, to)
		if err != nil {
			return out, err
		}
		out = append(out, got...)
	}
	return out, nil
}

func (s *Store) migrateOne(now time.Duration, e *entry, to wire.NodeID) {
	s.commit(e, now, false)
	a := e.authority()
	prev, epoch := e.epoch, nextEpoch(e.epoch, to, false)
	m := &wire.Migration{ID: e.id, Kind: e.kind, Epoch: epoch, Version: e.version, Controller: e.controller}
	m.Data = world.AppendDelta(nil, nil, e.st)
	for _, w := range a.writers {
		m.Writers = append(m.Writers, w.WriterSeq)
	}
	for _, h := range e.holders {
		if h.alive(now) && h.node != to {
			m.Holders = append(m.Holders, wire.HolderAt{Node: h.node, Version: h.acked})
		}
	}
	// The old backup must not take over this object any more.
	if a.hasBackup && a.backup != to {
		s.au.rels[e.id] = release{to: a.backup, epoch: e.epoch, until: now + 3*time.Second}
	}
	// This node keeps the state as the new primary's first backup, and a
	// replica for its own players.
	b := &bcopy{primary: to, epoch: epoch, version: e.version, kind: e.kind, controller: e.controller,
		st: e.st.Schema().NewState(e.id), heard: now, mig: m}
	s.au.pendMig = append(s.au.pendMig, migMsg{to: to, m: *m})
	s.au.health.watch(to, now)
	b.st.CopyFrom(e.st)
	b.writers = m.Writers
	for _, h := range m.Holders {
		b.holders = append(b.holders, h.Node)
	}
	s.au.bk[e.id] = b
	// The forwarding reference: it lives while holders and writers still
	// use it (forwarded), a registration period at least.
	s.au.where[e.id] = loc{node: to, epoch: epoch, until: now + s.cfg.RegistrationTTL}
	for _, h := range m.Holders {
		s.au.whereq = append(s.au.whereq, whereMsg{to: h.Node, l: wire.Location{ID: e.id, Epoch: epoch, Node: to}})
	}
	if hm := home(e.id); hm != s.cfg.Self && hm != to {
		s.au.whereq = append(s.au.whereq, whereMsg{to: hm, l: wire.Location{ID: e.id, Epoch: epoch, Node: to}})
	}
	st := e.st.Schema().NewState(e.id)
	st.CopyFrom(e.st)
	version, kind := e.version, e.kind
	s.remove(e.id)
	s.installReplica(now, st, kind, version, to, epoch)
	s.stats.Migrations++
	s.emit(Event{Kind: EvMigrated, At: now, ID: m.ID, Epoch: epoch, Node: to, Version: version, Prev: prev})
}

// installReplica adds a replica of state st (version v) whose primary is
// on node from at epoch.
func (s *Store) installReplica(now time.Duration, st *world.State, k world.Kind, v uint64, from wire.NodeID, epoch uint32) {
	sc := s.cfg.Registry.Schema(k)
	obj := sc.NewObject(st)
	e, err := s.newEntry(obj, st, false)
	if err != nil {
		return
	}
	e.from, e.epoch, e.lastHeard, e.lastNeeded, e.lastRegister = from, epoch, now, now, now
	e.requested = true
	e.version, e.produced = v, now
	s.insert(e)
}

// migrateIn installs a migrated primary (check only validates it).
func (s *Store) migrateIn(now time.Duration, from wire.NodeID, m *wire.Migration, apply bool) error {
	sc := s.cfg.Registry.Schema(m.Kind)
	if sc == nil {
		return fmt.Errorf("%w: migration of %v has unknown kind %d", wire.ErrMalformed, m.ID, m.Kind)
	}
	if !apply {
		_, err := s.decodeFull(m.ID, m.Kind, m.Data, nil)
		return err
	}
	if !epochNames(m.Epoch, s.cfg.Self) {
		// A migration's epoch names its target: this one is for another
		// node (forged, or corrupt).
		s.stats.NotPrimary++
		return nil
	}
	ack := func() {
		s.au.epochq = append(s.au.epochq, epochMsg{to: from, typ: wire.TypeMigrateAck, e: wire.Epoch{ID: m.ID, Epoch: m.Epoch}})
	}
	e := s.objs.Get(m.ID)
	if e != nil && e.primary && e.epoch >= m.Epoch {
		if e.epoch == m.Epoch && e.auth != nil && e.auth.installedFrom == from {
			ack() // a retransmission
			return nil
		}
		// Another lineage's migration (the sender was cut off while this
		// node took the object over): refuse it, naming this epoch.
		s.au.epochq = append(s.au.epochq, epochMsg{to: from, typ: wire.TypeMigrateAck, e: wire.Epoch{ID: m.ID, Epoch: e.epoch}})
		return nil
	}
	if e != nil && e.primary {
		// This node holds a primary of an older epoch (it was cut off, and
		// its object taken over): the newer one replaces it.
		s.stats.StepDowns++
		s.emit(Event{Kind: EvSteppedDown, At: now, ID: m.ID, Epoch: m.Epoch, Node: from})
	}
	if s.tomb.has(m.ID) {
		if m.Epoch <= s.au.tombEp[m.ID] {
			ack() // a late copy of a migration of an object deleted since
			s.stats.Ignored++
			return nil
		}
		// Deleted here at an older epoch (a stale primary's deletion, which
		// a failover undid): the object lives on.
		s.tomb.del(m.ID)
		delete(s.au.tombEp, m.ID)
	}
	if e != nil && e.epoch > m.Epoch {
		// This node knows a newer primary: tell the sender.
		s.au.whereq = append(s.au.whereq, whereMsg{to: from, l: wire.Location{ID: m.ID, Epoch: e.epoch, Node: e.from}})
		return nil
	}
	if b := s.au.bk[m.ID]; b != nil && b.epoch > m.Epoch {
		s.au.whereq = append(s.au.whereq, whereMsg{to: from, l: wire.Location{ID: m.ID, Epoch: b.epoch, Node: b.primary}})
		return nil
	}
	st := sc.NewState(m.ID)
	if _, err := s.decodeFull(m.ID, m.Kind, m.Data, st); err != nil {
		return err
	}
	if e != nil {
		s.remove(m.ID)
	}
	delete(s.au.bk, m.ID)
	delete(s.au.where, m.ID)
	ne := s.installPrimary(now, sc.NewObject(st), m.Version, m.Epoch, m.Controller, m.Writers)
	if ne == nil {
		return nil
	}
	for _, h := range m.Holders {
		if h.Node == s.cfg.Self {
			continue
		}
		// The holders take a full state first (see whereIn: a holder that
		// repoints takes the new primary's first state whole).
		hh := ne.holder(h.Node, true)
		hh.acked, hh.fresh, hh.regUntil, hh.sentAt = 0, true, now+s.cfg.RegistrationTTL, now
		s.au.whereq = append(s.au.whereq, whereMsg{to: h.Node, l: wire.Location{ID: m.ID, Epoch: m.Epoch, Node: s.cfg.Self}})
	}
	// The old primary keeps a replica of version m.Version, and (with
	// failover) the state as this primary's first backup.
	hh := ne.holder(from, true)
	hh.acked, hh.fresh, hh.regUntil, hh.sentAt = m.Version, false, now+s.cfg.RegistrationTTL, now
	a := ne.authority()
	if s.cfg.Failover {
		a.backup, a.hasBackup, a.bkAcked, a.bkSent, a.bkSentAt = from, true, m.Version, m.Version, now
	}
	a.installedFrom = from
	if hm := home(m.ID); hm != s.cfg.Self {
		s.au.whereq = append(s.au.whereq, whereMsg{to: hm, l: wire.Location{ID: m.ID, Epoch: m.Epoch, Node: s.cfg.Self}})
		a.lastBind = now
	}
	ack()
	s.stats.Installs++
	s.emit(Event{Kind: EvInstalled, At: now, ID: m.ID, Epoch: m.Epoch, Node: from, Version: m.Version})
	s.replayEarly(now, m.ID)
	return nil
}

// installPrimary adds obj as a primary at version v (its State holds
// it) and epoch, with the writers' progress.
func (s *Store) installPrimary(now time.Duration, obj world.Object, v uint64, epoch uint32, controller wire.NodeID, writers []wire.WriterSeq) *entry {
	e, err := s.newEntry(obj, obj.State(), true)
	if err != nil {
		return nil
	}
	e.primary, e.controller, e.epoch = true, controller, epoch
	if controller == 0 && s.cfg.Self != 0 {
		e.controller = s.cfg.Self
	}
	e.version = v - 1
	s.commit(e, now, true) // version v
	a := e.authority()
	for _, w := range writers {
		a.writers = append(a.writers, writerRec{WriterSeq: w, ver: v})
	}
	slices.SortFunc(a.writers, cmpWriter)
	s.insert(e)
	return e
}

func cmpWriter(a, b writerRec) int {
	if c := cmp.Compare(a.Node, b.Node); c != 0 {
		return c
	}
	return cmp.Compare(a.Inc, b.Inc)
}

// migrateAcked ends the retransmission of a migration.
func (s *Store) migrateAcked(now time.Duration, from wire.NodeID, ep wire.Epoch) {
	b := s.au.bk[ep.ID]
	if b == nil || b.mig == nil || b.primary != from {
		s.stats.Ignored++
		return
	}
	if b.epoch == ep.Epoch {
		b.mig = nil
		return
	}
	// Refused: the target holds the object at another epoch (it took it
	// over while this node was cut off). This node's copy is of a
	// superseded lineage; its replica takes the target's first state whole.
	delete(s.au.bk, ep.ID)
	if e := s.objs.Get(ep.ID); e != nil && !e.primary {
		e.from, e.epoch, e.version, e.written, e.ackDue, e.lastRegister = from, ep.Epoch, 0, false, true, 0
	}
	s.stats.MigrationsAborted++
	s.emit(Event{Kind: EvMigrateAborted, At: now, ID: ep.ID, Node: from, Epoch: ep.Epoch})
}

// promote makes this node the primary of the object backed up in b, its
// primary's node being dead.
func (s *Store) promote(now time.Duration, id world.ObjectID, b *bcopy, dead wire.NodeID) {
	delete(s.au.bk, id)
	sc := s.cfg.Registry.Schema(b.kind)
	v := b.version
	if e := s.objs.Get(id); e != nil {
		if e.primary {
			return
		}
		v = max(v, e.version)
		s.remove(id)
	}
	if s.tomb.has(id) {
		return
	}
	epoch := nextEpoch(b.epoch, s.cfg.Self, true)
	controller := b.controller
	if controller == dead {
		controller = s.cfg.Self
	}
	// The promoted primary's versions start ForkGap past what this node
	// knows: the dead primary may have made versions the backup never
	// saw, which holders may hold; a delta of this lineage must never
	// apply to a state of that one, nor a full state look stale.
	e := s.installPrimary(now, sc.NewObject(b.st), v+ForkGap, epoch, controller, b.writers)
	if e == nil {
		return
	}
	for _, h := range b.holders {
		if h == s.cfg.Self || h == dead {
			continue
		}
		hh := e.holder(h, true)
		hh.fresh, hh.regUntil, hh.sentAt = true, now+s.cfg.RegistrationTTL, now
		s.au.whereq = append(s.au.whereq, whereMsg{to: h, l: wire.Location{ID: id, Epoch: epoch, Node: s.cfg.Self}})
	}
	if hm := home(id); hm != s.cfg.Self && hm != dead {
		s.au.whereq = append(s.au.whereq, whereMsg{to: hm, l: wire.Location{ID: id, Epoch: epoch, Node: s.cfg.Self}})
		e.authority().lastBind = now
	}
	if hm := home(id); hm == s.cfg.Self {
		delete(s.au.where, id)
	}
	s.stats.Promotions++
	s.emit(Event{Kind: EvPromoted, At: now, ID: id, Epoch: epoch, Node: dead, Version: v + ForkGap, Base: b.version, Prev: b.epoch})
	s.replayEarly(now, id)
}

// stepDown turns local primary e into nothing (its replica is fetched
// again from the new primary): a higher epoch's primary is on node to.
func (s *Store) stepDown(now time.Duration, e *entry, to wire.NodeID, epoch uint32) {
	id := e.id
	for _, h := range e.holders {
		if h.node != to {
			s.au.whereq = append(s.au.whereq, whereMsg{to: h.node, l: wire.Location{ID: id, Epoch: epoch, Node: to}})
		}
	}
	if e.auth != nil && e.auth.hasBackup && e.auth.backup != to {
		s.au.rels[id] = release{to: e.auth.backup, epoch: e.epoch, until: now + 3*time.Second}
	}
	st := e.st.Schema().NewState(id)
	st.CopyFrom(e.st)
	kind := e.kind
	s.remove(id)
	s.au.where[id] = loc{node: to, epoch: epoch, until: now + s.cfg.ForwardTTL}
	// Keep what this node had as a replica of version 0: the new
	// primary's first update is a full state.
	s.installReplica(now, st, kind, 0, to, epoch)
	if r := s.objs.Get(id); r != nil {
		r.ackDue = true
	}
	s.stats.StepDowns++
	s.emit(Event{Kind: EvSteppedDown, At: now, ID: id, Epoch: epoch, Node: to})
}

// whereIn handles one location received from node from.
func (s *Store) whereIn(now time.Duration, from wire.NodeID, l wire.Location) {
	id := l.ID
	if l.Gone {
		s.goneIn(now, from, l)
		return
	}
	if !epochNames(l.Epoch, l.Node) {
		// Every epoch after 0 names its primary: news of a primary the
		// epoch does not name is forged (or corrupt), and would point
		// replicas and writes at a node that is not the primary.
		s.stats.NotPrimary++
		return
	}
	if home(id) == s.cfg.Self && l.Node != s.cfg.Self {
		if r, ok := s.au.where[id]; !ok || l.Epoch >= r.epoch {
			s.au.where[id] = loc{node: l.Node, epoch: l.Epoch, until: now + 3*s.cfg.BindPeriod}
		} else if l.Epoch < r.epoch && from == l.Node && r.node != from {
			// Two lineages (two backups took the object over at once): the
			// home names the newer one to the older, which steps down now
			// instead of when their holders meet.
			s.au.whereq = append(s.au.whereq, whereMsg{to: from, l: wire.Location{ID: id, Epoch: r.epoch, Node: r.node}})
		}
	}
	e := s.objs.Get(id)
	switch {
	case e != nil && e.primary:
		if l.Epoch > e.epoch && l.Node != s.cfg.Self {
			s.stepDown(now, e, l.Node, l.Epoch)
		} else if l.Epoch < e.epoch || l.Node != s.cfg.Self {
			// Stale news: correct the sender.
			s.au.whereq = append(s.au.whereq, whereMsg{to: from, l: wire.Location{ID: id, Epoch: e.epoch, Node: s.cfg.Self}})
		}
	case e != nil:
		if l.Epoch > e.epoch || l.Epoch == e.epoch && e.version == 0 {
			if e.from != l.Node || l.Epoch != e.epoch && e.version != 0 {
				// Register with the new primary at the next flush, and take
				// its first state whole: its versions may be of another
				// lineage than the one this replica followed (a failover
				// forks them), and a delta must never apply across two.
				// So may a new epoch of the same node: a node that handed
				// the object to a peer that had meanwhile taken it over in
				// a failover (the two sides of a healed partition) holds
				// its own lineage's state under that peer's name.
				e.from, e.lastRegister = l.Node, 0
				e.version, e.written, e.ackDue = 0, false, true
			}
			e.epoch, e.lastHeard = l.Epoch, now
		} else if l.Epoch < e.epoch && from == l.Node && from != e.from {
			s.au.whereq = append(s.au.whereq, whereMsg{to: from, l: wire.Location{ID: id, Epoch: e.epoch, Node: e.from}})
		}
	}
	if w := s.au.outw[id]; w != nil && l.Epoch >= w.epoch && l.Node != s.cfg.Self {
		if w.to != l.Node {
			w.to, w.sentAt = l.Node, 0
		}
		w.epoch, w.known = l.Epoch, true
	}
	if r, ok := s.au.where[id]; ok && l.Epoch > r.epoch && home(id) != s.cfg.Self {
		s.au.where[id] = loc{node: l.Node, epoch: l.Epoch, until: r.until}
	}
	if b := s.au.bk[id]; b != nil && l.Epoch > b.epoch {
		delete(s.au.bk, id) // a copy of an older epoch must never take over
	}
	if r, ok := s.want[id]; ok && r.from != l.Node && l.Node != s.cfg.Self {
		r.from, r.sent = l.Node, false
		s.want[id] = r
	}
}

// goneIn handles news that object l.ID was deleted at epoch l.Epoch; news
// of what a newer epoch holds alive is ignored.
func (s *Store) goneIn(now time.Duration, from wire.NodeID, l wire.Location) {
	id := l.ID
	if e := s.objs.Get(id); e != nil && e.epoch > l.Epoch {
		return
	}
	if b := s.au.bk[id]; b != nil && b.epoch > l.Epoch {
		return
	}
	if w := s.au.outw[id]; w != nil && w.epoch > l.Epoch {
		return
	}
	if w := s.au.outw[id]; w != nil {
		for _, p := range w.pend {
			s.stats.WritesAbandoned++
			s.emit(Event{Kind: EvWriteAbandoned, At: now, ID: id, Seq: p.seq, Node: 1})
		}
		delete(s.au.outw, id)
	}
	if b := s.au.bk[id]; b != nil && b.primary == from {
		delete(s.au.bk, id)
	}
	if r, ok := s.au.where[id]; ok && (r.node == from || home(id) == s.cfg.Self) {
		delete(s.au.where, id)
	}
	if e := s.objs.Get(id); e != nil && !e.primary && e.from == from {
		s.remove(id)
		s.tomb.set(id, now)
		s.au.tombEp[id] = e.epoch
	} else if e != nil && e.primary && e.epoch < l.Epoch {
		// A newer epoch's primary deleted it while this one was cut off:
		// it goes too, with its replicas.
		s.stats.StepDowns++
		s.emit(Event{Kind: EvSteppedDown, At: now, ID: id, Epoch: l.Epoch, Node: from})
		_ = s.Delete(now, id)
	}
}

// whereOf returns where this node believes the primary of id is, other
// than here: a replica's source, a forwarding reference, a binding.
func (s *Store) whereOf(id world.ObjectID) (wire.Location, bool) {
	if e := s.objs.Get(id); e != nil && !e.primary && (e.version > 0 || e.epoch > 0) {
		return wire.Location{ID: id, Epoch: e.epoch, Node: e.from}, true
	}
	if r, ok := s.au.where[id]; ok {
		return wire.Location{ID: id, Epoch: r.epoch, Node: r.node}, true
	}
	if b := s.au.bk[id]; b != nil {
		return wire.Location{ID: id, Epoch: b.epoch, Node: b.primary}, true
	}
	return wire.Location{}, false
}

// forwarded notes that the forwarding reference of id (an object that
// left this node) was used at now: a holder or writer has not repointed
// yet, so the reference lives at least a registration period longer (a
// holder repoints at its next registration at the latest). Unused, it
// expires a RegistrationTTL after its last use.
func (s *Store) forwarded(now time.Duration, id world.ObjectID) {
	if r, ok := s.au.where[id]; ok && home(id) != s.cfg.Self {
		r.until = max(r.until, now+s.cfg.RegistrationTTL)
		s.au.where[id] = r
	}
}

// backupIn handles one backup state from node from (check only
// validates it).
func (s *Store) backupIn(now time.Duration, from wire.NodeID, m *wire.BackupState, apply bool) error {
	b := s.au.bk[m.ID]
	if !apply {
		if m.Base == 0 {
			_, err := s.decodeFull(m.ID, m.Kind, m.Data, nil)
			return err
		}
		if b != nil && b.version == m.Base && b.epoch == m.Epoch {
			n, err := world.CheckDelta(b.st.Schema(), b.st, m.Data)
			if err != nil {
				return fmt.Errorf("%v: %w", m.ID, err)
			}
			if n != len(m.Data) {
				return fmt.Errorf("%w: %v: %d bytes after the backup delta", world.ErrCorrupt, m.ID, len(m.Data)-n)
			}
		}
		return nil
	}
	if b != nil && b.primary == from && b.epoch == m.Epoch {
		// The primary still backs the object up here (the copy is not one
		// it replaced; see failover), whatever becomes of this state.
		b.heard = now
	}
	ackV := func(v uint64) {
		s.au.baq = append(s.au.baq, backupAckMsg{to: from, a: wire.BackupAck{ID: m.ID, Epoch: m.Epoch, Version: v}})
	}
	resync := func(v uint64) {
		s.au.baq = append(s.au.baq, backupAckMsg{to: from, a: wire.BackupAck{ID: m.ID, Epoch: m.Epoch, Version: v, Resync: true}})
	}
	if e := s.objs.Get(m.ID); e != nil && e.primary {
		// This node is the primary: of a newer epoch (tell the sender),
		// or the sender is confused.
		s.au.whereq = append(s.au.whereq, whereMsg{to: from, l: wire.Location{ID: m.ID, Epoch: e.epoch, Node: s.cfg.Self}})
		return nil
	}
	if s.tomb.has(m.ID) {
		if m.Epoch <= s.au.tombEp[m.ID] {
			s.au.whereq = append(s.au.whereq, whereMsg{to: from, l: wire.Location{ID: m.ID, Epoch: s.au.tombEp[m.ID], Gone: true}})
			return nil
		}
		// Deleted here at an older epoch, by a primary since replaced.
		s.tomb.del(m.ID)
		delete(s.au.tombEp, m.ID)
	}
	if b != nil && m.Epoch < b.epoch {
		s.au.whereq = append(s.au.whereq, whereMsg{to: from, l: wire.Location{ID: m.ID, Epoch: b.epoch, Node: b.primary}})
		return nil
	}
	if r, ok := s.au.relIn[m.ID]; ok && r.from == from && (m.Epoch < r.epoch || m.Epoch == r.epoch && m.Version <= r.version) && now < r.until {
		s.stats.Ignored++ // released
		return nil
	}
	if b == nil || m.Epoch > b.epoch || b.primary != from {
		if m.Base != 0 {
			resync(0) // send a full state
			return nil
		}
		sc := s.cfg.Registry.Schema(m.Kind)
		b = &bcopy{primary: from, epoch: m.Epoch, kind: m.Kind, st: sc.NewState(m.ID)}
		s.au.bk[m.ID] = b
	}
	if m.Base != 0 && m.Base != b.version {
		resync(b.version)
		return nil
	}
	if m.Base == 0 && m.Kind != b.kind {
		return fmt.Errorf("%w: backup of %v is kind %d, held as kind %d", wire.ErrMalformed, m.ID, m.Kind, b.kind)
	}
	var base *world.State
	if m.Base != 0 {
		base = b.st
	}
	urgent := m.Base == 0 // a first copy, or a resync
	if m.Version > b.version || m.Base == 0 {
		if _, err := world.ApplyDelta(b.st, base, m.Data); err != nil {
			return fmt.Errorf("%v: %w", m.ID, err)
		}
		b.version = m.Version
		// A write was applied: its writer waits for this acknowledgement.
		urgent = urgent || !slices.Equal(b.writers, m.Writers)
		b.writers = append(b.writers[:0], m.Writers...)
		b.controller = m.Controller
	}
	if m.HasHolders {
		b.holders = append(b.holders[:0], m.Holders...)
	}
	if b.fence != m.Fence {
		b.fence, b.granted, b.askAt = m.Fence, false, 0
	}
	s.askFence(now, m.ID, b)
	b.heard = now
	s.au.health.watch(from, now)
	// The primary takes what it sent as received (it sends deltas from
	// it), so acknowledgements need only keep it informed: at once when a
	// writer waits, else every backupAckEvery.
	if urgent || now-b.ackAt >= backupAckEvery {
		b.ackAt = now
		ackV(b.version)
	}
	return nil
}

// backupAckEvery: a backup acknowledges a primary's backup states at
// least this often (and at once for a write or a resync).
const backupAckEvery = 500 * time.Millisecond

// backupAcked records a backup's acknowledgement.
func (s *Store) backupAcked(now time.Duration, from wire.NodeID, a wire.BackupAck) {
	if r, ok := s.au.rels[a.ID]; ok && r.to == from && a.Version == 0 && !a.Resync && a.Epoch == r.epoch {
		delete(s.au.rels, a.ID) // a release confirmed
		s.released(now, a.ID)
		return
	}
	e := s.objs.Get(a.ID)
	if e == nil || !e.primary || e.auth == nil || !e.auth.hasBackup || e.auth.backup != from || a.Epoch != e.epoch {
		if r, ok := s.au.rels[a.ID]; ok && r.to == from && a.Version == 0 {
			delete(s.au.rels, a.ID) // a release confirmed
			s.released(now, a.ID)
			return
		}
		s.stats.Ignored++
		return
	}
	au := e.auth
	if a.Version > e.version {
		s.stats.Ignored++
		return
	}
	if a.Resync {
		// The backup holds a.Version and no later: send from there.
		au.bkSent, au.bkAcked = a.Version, a.Version
		if a.Version == 0 {
			au.bkFull = true
		}
		return
	}
	au.bkAcked = max(au.bkAcked, a.Version)
}

// releaseIn drops a backup copy its primary no longer wants.
func (s *Store) releaseIn(now time.Duration, from wire.NodeID, ep wire.Epoch) {
	if e := s.objs.Get(ep.ID); e != nil && e.primary && e.epoch > ep.Epoch {
		// This node took the object over: the sender is a superseded
		// primary (cut off meanwhile) and must not hand it on.
		s.au.whereq = append(s.au.whereq, whereMsg{to: from, l: wire.Location{ID: ep.ID, Epoch: e.epoch, Node: s.cfg.Self}})
		return
	}
	if b := s.au.bk[ep.ID]; b != nil && b.primary == from && b.epoch <= ep.Epoch && b.mig == nil {
		delete(s.au.bk, ep.ID)
	}
	// Backup states of that epoch still on their way must not make a
	// copy again.
	// (A second: longer than a trip; a primary whose migration was given
	// up sends its full state again after that.)
	s.au.relIn[ep.ID] = relMark{from: from, epoch: ep.Epoch, version: math.MaxUint64, until: now + time.Second}
	s.au.baq = append(s.au.baq, backupAckMsg{to: from, a: wire.BackupAck{ID: ep.ID, Epoch: ep.Epoch}})
}

// flushBackups sends each primary's backup what changed, chooses backups,
// re-binds at homes, and resends unacknowledged migrations and releases.
func (s *Store) flushBackups(now time.Duration) {
	for _, e := range s.prims {
		a := e.auth
		if s.cfg.Failover {
			if a == nil {
				a = e.authority()
			}
			s.flushBackup(now, e, a)
		}
		if a != nil && home(e.id) != s.cfg.Self && now-a.lastBind >= s.cfg.BindPeriod {
			a.lastBind = now
			s.au.whereq = append(s.au.whereq, whereMsg{to: home(e.id), l: wire.Location{ID: e.id, Epoch: e.epoch, Node: s.cfg.Self}})
		}
	}
	for _, id := range sortedIDs(s.au.bk) {
		b := s.au.bk[id]
		if s.cfg.Failover {
			s.au.health.watch(b.primary, now)
		}
		if b.mig != nil {
			s.au.health.watch(b.primary, now)
			s.au.pendMig = append(s.au.pendMig, migMsg{to: b.primary, m: *b.mig})
			continue
		}
		if b.claimFor != 0 {
			s.au.health.watch(b.fence, now)
			s.askFence(now, id, b)
			continue
		}
		s.askFence(now, id, b)
		if b.mig == nil && now-b.heard > 10*time.Second && !s.au.health.suspected(b.primary) {
			delete(s.au.bk, id) // a released copy whose release was lost
		}
	}
	for _, id := range sortedIDs(s.au.rels) {
		r := s.au.rels[id]
		if now > r.until {
			delete(s.au.rels, id)
			continue
		}
		if now-r.sentAt >= s.cfg.WriteRetry && !s.au.health.isDead(r.to) && s.fenceCopied(id) {
			r.sentAt = now
			s.au.rels[id] = r
			s.au.epochq = append(s.au.epochq, epochMsg{to: r.to, typ: wire.TypeRelease, e: wire.Epoch{ID: id, Epoch: r.epoch}})
		}
	}
	for id, r := range s.au.where {
		if now > r.until {
			delete(s.au.where, id)
		}
	}
	for id := range s.au.tombEp {
		if !s.tomb.has(id) {
			delete(s.au.tombEp, id)
		}
	}
	for id, r := range s.au.relIn {
		if now > r.until {
			delete(s.au.relIn, id)
		}
	}
	for _, id := range sortedIDs(s.au.fences) {
		if f := s.au.fences[id]; now > f.until {
			delete(s.au.fences, id)
			s.stats.MigrationsAborted++
			s.emit(Event{Kind: EvMigrateAborted, At: now, ID: id, Node: f.to})
			// The old backup stays the backup (it never gave its copy up),
			// and the target's provisional copy is released: one copy
			// that may take over, as before.
			e := s.objs.Get(id)
			r, ok := s.au.rels[id]
			if e != nil && e.primary && e.auth != nil && ok && r.fence {
				e.auth.backup, e.auth.hasBackup, e.auth.bkAcked, e.auth.bkSent, e.auth.bkFull = r.to, true, 0, 0, true
				s.au.rels[id] = release{to: f.to, epoch: e.epoch, until: now + 3*time.Second}
			}
		}
	}
}

// fenceCopied reports whether the target of the migration of id waiting
// for its old backup's release (if any) holds a copy: the release waits
// for it.
func (s *Store) fenceCopied(id world.ObjectID) bool {
	f, ok := s.au.fences[id]
	if !ok {
		return true
	}
	e := s.objs.Get(id)
	return e == nil || !e.primary || e.auth == nil || !e.auth.hasBackup || e.auth.backup != f.to || e.auth.bkAcked > 0
}

type migMsg struct {
	to wire.NodeID
	m  wire.Migration
}

func (s *Store) flushBackup(now time.Duration, e *entry, a *auth) {
	if a.hasBackup && s.au.health.isDead(a.backup) {
		a.hasBackup = false
	}
	if !a.hasBackup {
		b, ok := s.chooseBackup(now, e)
		if !ok {
			return
		}
		a.backup, a.hasBackup, a.bkAcked, a.bkSent, a.bkFull = b, true, 0, 0, true
		if r, ok := s.au.rels[e.id]; ok && r.to == b {
			delete(s.au.rels, e.id) // backed up there again: the full state replaces the copy
		}
		s.emit(Event{Kind: EvBackup, At: now, ID: e.id, Epoch: e.epoch, Node: b})
	}
	s.au.health.watch(a.backup, now)
	holders := s.au.scratchH[:0]
	for i := range e.holders {
		if e.holders[i].alive(now) && e.holders[i].node != a.backup {
			holders = append(holders, e.holders[i].node)
		}
	}
	s.au.scratchH = holders
	changedH := a.bkFull || !slices.Equal(holders, a.bkHolders)
	due := e.version > a.bkSent || changedH ||
		a.bkAcked < a.bkSent && now-a.bkSentAt >= s.cfg.WriteRetry ||
		now-a.bkSentAt >= backupKeepalive
	if !due {
		return
	}
	m := wire.BackupState{ID: e.id, Epoch: e.epoch, Version: e.version, Controller: e.controller}
	if f, ok := s.au.fences[e.id]; ok && f.to == a.backup {
		if r, ok := s.au.rels[e.id]; ok && r.fence {
			m.Fence = r.to
		}
	}
	// A delta from the version last sent, taken as received (a backup
	// that missed it asks for a resync from what it has).
	var base *world.State
	if a.bkSent != 0 && !a.bkFull {
		if base = e.hist.find(a.bkSent); base != nil {
			m.Base = a.bkSent
		}
	}
	if m.Base == 0 {
		m.Kind = e.kind
	}
	cur := e.hist.newest()
	if cur == nil {
		return
	}
	s.dbuf = world.AppendDelta(s.dbuf[:0], base, cur.st)
	m.Data = s.dbuf
	for _, w := range a.writers {
		m.Writers = append(m.Writers, w.WriterSeq)
	}
	if changedH {
		m.HasHolders, m.Holders = true, holders
		a.bkHolders = append(a.bkHolders[:0], holders...)
	}
	a.bkSent, a.bkSentAt, a.bkFull = e.version, now, false
	// A writer waits for this state's acknowledgement, or the backup
	// needs a full one: it goes at once. Otherwise it may wait a frame
	// for another packet to the backup to ride in (this frame's updates
	// to it, or the next frame's backup state): every version still
	// reaches the backup, two to a packet when nothing else goes there.
	urgent := len(a.acks) > 0 || m.Base == 0
	s.au.backupq = append(s.au.backupq, backupMsg{to: a.backup, b: wire.AppendBackupEntry(nil, &m), urgent: urgent})
	s.stats.BackupsSent++
}

// backupKeepalive: a primary whose state does not change sends its backup
// its version this often, so that the backup can tell a copy it keeps
// for a live primary from one whose release was lost (releasedAfter).
const (
	backupKeepalive = 300 * time.Millisecond
	releasedAfter   = 1500 * time.Millisecond
)

type backupMsg struct {
	to     wire.NodeID
	b      []byte // one encoded entry
	urgent bool
}

// chooseBackup picks the backup of primary e with the configured policy.
func (s *Store) chooseBackup(now time.Duration, e *entry) (wire.NodeID, bool) {
	var holders []wire.NodeID
	for i := range e.holders {
		h := &e.holders[i]
		if h.alive(now) && h.node != s.cfg.Self && !s.au.health.isDead(h.node) {
			holders = append(holders, h.node)
		}
	}
	var peers []wire.NodeID
	if s.cfg.Peers != nil {
		for _, p := range s.cfg.Peers() {
			if p != s.cfg.Self && !s.au.health.isDead(p) {
				peers = append(peers, p)
			}
		}
	}
	pol := s.cfg.Backup
	if pol == nil {
		pol = LeastLatency
	}
	return pol(BackupChoice{Self: s.cfg.Self, Object: e.id, Holders: holders, Peers: peers, Delay: s.cfg.Delay,
		Uptime: s.au.health.uptime})
}

// BackupChoice is what a BackupPolicy chooses from.
type BackupChoice struct {
	Self    wire.NodeID
	Object  world.ObjectID
	Holders []wire.NodeID // nodes holding a replica of the object, in increasing order
	Peers   []wire.NodeID // the cluster's other live nodes (Config.Peers), if known
	// Delay estimates the one-way delay between two nodes (nil: unknown).
	Delay func(a, b wire.NodeID) time.Duration
	// Uptime returns how long a node has been up, as its heartbeats say
	// (false: not heard).
	Uptime func(n wire.NodeID) (time.Duration, bool)
}

// A BackupPolicy chooses the node that backs up a primary.
type BackupPolicy func(c BackupChoice) (wire.NodeID, bool)

// LeastLatency is the region-migration paper's LL criterion: among the
// holders, the one with the least mean delay to the others and to this
// node (so that, promoted, it is close to those who read the object); with
// no holder, the peer nearest this node; with no delays known, the
// lowest-numbered candidate.
func LeastLatency(c BackupChoice) (wire.NodeID, bool) {
	cands := c.Holders
	if len(cands) == 0 {
		cands = c.Peers
	}
	if len(cands) == 0 {
		return 0, false
	}
	if c.Delay == nil {
		return slices.Min(cands), true
	}
	best, bestCost := wire.NodeID(0), time.Duration(-1)
	for _, x := range cands {
		cost := c.Delay(x, c.Self)
		for _, y := range c.Holders {
			if y != x {
				cost += c.Delay(x, y)
			}
		}
		if bestCost < 0 || cost < bestCost || cost == bestCost && x < best {
			best, bestCost = x, cost
		}
	}
	return best, true
}

// LongestUp is the hybrid paper's uptime criterion (PD): among the
// holders (else the peers), the one whose heartbeats report the longest
// uptime; nodes not heard from count as just started.
func LongestUp(c BackupChoice) (wire.NodeID, bool) {
	cands := c.Holders
	if len(cands) == 0 {
		cands = c.Peers
	}
	if len(cands) == 0 {
		return 0, false
	}
	best, bestUp := cands[0], time.Duration(-1)
	for _, x := range cands {
		up := time.Duration(0)
		if c.Uptime != nil {
			up, _ = c.Uptime(x)
		}
		if up > bestUp {
			best, bestUp = x, up
		}
	}
	return best, true
}
