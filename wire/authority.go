package wire

import (
	"encoding/binary"
	"math"
	"time"

	"github.com/overworld/overworld/world"
)

// The messages of authority: migration of a primary between nodes, the
// name service, exactly-once writes, warm backups and failure detection
// (internal/replica). Every object has an epoch, raised by one at every
// migration and failover: of two nodes that claim an object's primary,
// the higher epoch wins, and a node accepts writes for an object only as
// its primary of the current epoch.

// WriterSeq is how far the writes of one writer to one object have been
// applied: every write of writer Node (incarnation Inc) with a sequence
// number up to Seq.
type WriterSeq struct {
	Node NodeID
	Inc  uint16
	Seq  uint32
}

// HolderAt is a holder of a replica and the version the primary last sent
// it.
type HolderAt struct {
	Node    NodeID
	Version uint64
}

// Migration hands the primary of object ID, of kind Kind, to the receiver
// at epoch Epoch: its state at version Version (a full state,
// world.AppendDelta from nil), its controller, how far each writer's
// writes were applied, and its replica holders with the versions they
// were sent.
type Migration struct {
	ID         world.ObjectID
	Kind       world.Kind
	Epoch      uint32
	Version    uint64
	Controller NodeID
	Data       []byte
	Writers    []WriterSeq
	Holders    []HolderAt
}

// Migrate is a batch of migrations from one node to another.
type Migrate struct{ Entries []Migration }

// AppendMigrate appends m as one frame.
func AppendMigrate(b []byte, m *Migrate) []byte {
	b, start := beginFrame(b, TypeMigrate)
	for i := range m.Entries {
		e := &m.Entries[i]
		b = appendID(b, e.ID)
		b = binary.AppendUvarint(b, uint64(e.Kind))
		b = binary.AppendUvarint(b, uint64(e.Epoch))
		b = binary.AppendUvarint(b, e.Version)
		b = binary.AppendUvarint(b, uint64(e.Controller))
		b = appendBytes(b, e.Data)
		b = appendWriters(b, e.Writers)
		b = binary.AppendUvarint(b, uint64(len(e.Holders)))
		for _, h := range e.Holders {
			b = binary.AppendUvarint(b, uint64(h.Node))
			b = binary.AppendUvarint(b, h.Version)
		}
	}
	return endFrame(b, start)
}

// Decode decodes a Migrate frame body into m.
func (m *Migrate) Decode(body []byte) error {
	r := reader{p: body}
	m.Entries = m.Entries[:0]
	for r.more() {
		e := Migration{ID: r.id()}
		e.Kind = r.kind()
		e.Epoch = r.u32("epoch")
		e.Version = r.uvarint("version")
		if r.err == nil && (e.Version == 0 || e.Epoch == 0) {
			return malformed("migration of %v at epoch %d, version %d (want both >= 1)", e.ID, e.Epoch, e.Version)
		}
		e.Controller = NodeID(r.u32("controller"))
		e.Data = r.bytes("migrated state")
		e.Writers = r.writers(nil)
		n := r.count("holder count")
		for range n {
			e.Holders = append(e.Holders, HolderAt{Node: NodeID(r.u32("holder")), Version: r.uvarint("holder version")})
		}
		if r.err != nil {
			return r.err
		}
		m.Entries = append(m.Entries, e)
	}
	return r.err
}

func appendWriters(b []byte, ws []WriterSeq) []byte {
	b = binary.AppendUvarint(b, uint64(len(ws)))
	for _, w := range ws {
		b = binary.AppendUvarint(b, uint64(w.Node))
		b = binary.AppendUvarint(b, uint64(w.Inc))
		b = binary.AppendUvarint(b, uint64(w.Seq))
	}
	return b
}

// writers decodes a writer table, appending to dst.
func (r *reader) writers(dst []WriterSeq) []WriterSeq {
	n := r.count("writer count")
	for range n {
		w := WriterSeq{Node: NodeID(r.u32("writer"))}
		inc := r.uvarint("writer incarnation")
		if r.err == nil && inc > math.MaxUint16 {
			r.err = malformed("writer incarnation %d exceeds 16 bits", inc)
			r.p = nil
		}
		w.Inc = uint16(inc)
		w.Seq = r.u32("writer sequence")
		if r.err != nil {
			return dst
		}
		dst = append(dst, w)
	}
	return dst
}

// kind reads an object kind (1 to 65535).
func (r *reader) kind() world.Kind {
	k := r.uvarint("kind")
	if r.err == nil && (k == 0 || k > math.MaxUint16) {
		r.err = malformed("kind %d", k)
		r.p = nil
	}
	return world.Kind(k)
}

// Epoch names an object at an epoch.
type Epoch struct {
	ID    world.ObjectID
	Epoch uint32
}

// Epochs is a list of objects at epochs: the body of MigrateAck and
// Release frames.
type Epochs struct{ Entries []Epoch }

// AppendEpochs appends m as one frame of type t (TypeMigrateAck or
// TypeRelease).
func AppendEpochs(b []byte, t Type, m *Epochs) []byte {
	b, start := beginFrame(b, t)
	for _, e := range m.Entries {
		b = appendID(b, e.ID)
		b = binary.AppendUvarint(b, uint64(e.Epoch))
	}
	return endFrame(b, start)
}

// Decode decodes an Epochs frame body into m.
func (m *Epochs) Decode(body []byte) error {
	r := reader{p: body}
	m.Entries = m.Entries[:0]
	for r.more() {
		e := Epoch{ID: r.id(), Epoch: r.u32("epoch")}
		if r.err != nil {
			return r.err
		}
		m.Entries = append(m.Entries, e)
	}
	return r.err
}

// Location says that the primary of object ID is on node Node as of epoch
// Epoch, or, if Gone, that the object was deleted at epoch Epoch (news a
// node that knows the object alive at a newer epoch ignores: the deleting
// primary had been replaced).
type Location struct {
	ID    world.ObjectID
	Epoch uint32
	Node  NodeID
	Gone  bool
}

// Where is a batch of locations: a new primary tells holders and the
// home of the ID (the name service's binding), a node an object left
// tells whoever still sends it messages about the object, and a home
// answers writes it cannot place.
type Where struct{ Entries []Location }

// AppendWhere appends m as one frame.
func AppendWhere(b []byte, m *Where) []byte {
	b, start := beginFrame(b, TypeWhere)
	for _, e := range m.Entries {
		b = appendID(b, e.ID)
		g := uint64(0)
		if e.Gone {
			g = 1
		}
		b = binary.AppendUvarint(b, uint64(e.Epoch)<<1|g)
		b = binary.AppendUvarint(b, uint64(e.Node))
	}
	return endFrame(b, start)
}

// Decode decodes a Where frame body into m.
func (m *Where) Decode(body []byte) error {
	r := reader{p: body}
	m.Entries = m.Entries[:0]
	for r.more() {
		e := Location{ID: r.id()}
		eg := r.uvarint("epoch")
		if r.err == nil && eg>>1 > math.MaxUint32 {
			return malformed("epoch %d exceeds 32 bits", eg>>1)
		}
		e.Epoch, e.Gone = uint32(eg>>1), eg&1 == 1
		e.Node = NodeID(r.u32("node"))
		if r.err != nil {
			return r.err
		}
		m.Entries = append(m.Entries, e)
	}
	return r.err
}

// BackupState is what a backup keeps of object ID so that it can take
// over: at epoch Epoch, version Version of its state (a delta against
// version Base the backup acknowledged, or a full state of kind Kind when
// Base is 0), the writers' progress as of that version, and, when
// HasHolders, the object's replica holders (sent when they change).
// Fence, when not 0, names the object's former backup while a migration
// waits for that node to give its copy up: should the primary die
// meanwhile, this backup takes the object over only once that node has
// granted it (Claim).
type BackupState struct {
	ID         world.ObjectID
	Kind       world.Kind // full states only
	Epoch      uint32
	Version    uint64
	Base       uint64
	Controller NodeID
	Data       []byte
	Writers    []WriterSeq
	HasHolders bool
	Holders    []NodeID
	Fence      NodeID
}

// Backup is a batch of backup states from a primary node to its backup.
type Backup struct{ Entries []BackupState }

// AppendBackup appends m as one frame.
func AppendBackup(b []byte, m *Backup) []byte {
	b, start := beginFrame(b, TypeBackup)
	for i := range m.Entries {
		b = AppendBackupEntry(b, &m.Entries[i])
	}
	return endFrame(b, start)
}

// AppendBackupEntry appends one backup state (inside a Backup frame begun
// with BeginFrame).
func AppendBackupEntry(b []byte, e *BackupState) []byte {
	b = appendID(b, e.ID)
	b = binary.AppendUvarint(b, uint64(e.Epoch))
	b = binary.AppendUvarint(b, e.Version)
	if e.Base == 0 {
		b = append(b, 0)
		b = binary.AppendUvarint(b, uint64(e.Kind))
	} else {
		b = binary.AppendUvarint(b, e.Version-e.Base+1)
	}
	b = binary.AppendUvarint(b, uint64(e.Controller))
	b = appendBytes(b, e.Data)
	b = appendWriters(b, e.Writers)
	var hc uint64
	if e.HasHolders {
		hc = uint64(len(e.Holders)) + 1
	}
	if e.Fence != 0 {
		b = binary.AppendUvarint(b, hc<<1|1)
		b = binary.AppendUvarint(b, uint64(e.Fence))
	} else {
		b = binary.AppendUvarint(b, hc<<1)
	}
	for _, h := range e.Holders {
		b = binary.AppendUvarint(b, uint64(h))
	}
	return b
}

// Decode decodes a Backup frame body into m.
func (m *Backup) Decode(body []byte) error {
	r := reader{p: body}
	m.Entries = m.Entries[:0]
	for r.more() {
		e := BackupState{ID: r.id()}
		e.Epoch = r.u32("epoch")
		e.Version = r.uvarint("version")
		if r.err == nil && e.Version == 0 {
			return malformed("backup of %v has version 0", e.ID)
		}
		if back := r.uvarint("base distance"); back == 0 {
			e.Kind = r.kind()
		} else if r.err == nil && back-1 >= e.Version {
			return malformed("backup of %v: base distance %d from version %d", e.ID, back, e.Version)
		} else {
			e.Base = e.Version - (back - 1)
		}
		e.Controller = NodeID(r.u32("controller"))
		e.Data = r.bytes("backup data")
		e.Writers = r.writers(nil)
		hc := r.uvarint("holder count")
		if hc&1 == 1 {
			if e.Fence = NodeID(r.u32("fence")); r.err == nil && e.Fence == 0 {
				return malformed("backup of %v: fence node 0", e.ID)
			}
		}
		if r.err != nil {
			return r.err // a bad fence leaves hc unchecked: never loop over it
		}
		if n := hc >> 1; n > 0 {
			if n-1 > uint64(len(r.p)) {
				return malformed("backup of %v: holder count %d exceeds the %d bytes left", e.ID, n-1, len(r.p))
			}
			e.HasHolders = true
			for range n - 1 {
				e.Holders = append(e.Holders, NodeID(r.u32("holder")))
			}
		}
		if r.err != nil {
			return r.err
		}
		m.Entries = append(m.Entries, e)
	}
	return r.err
}

// BackupAck says the backup holds version Version of object ID at epoch
// Epoch (0: nothing; send a full state; below 2⁶³). With Resync, a backup state did
// not apply to what the backup holds: the primary sends its next from
// Version (a primary takes every state it sent as received, so an
// acknowledgement without Resync only confirms).
type BackupAck struct {
	ID      world.ObjectID
	Epoch   uint32
	Version uint64
	Resync  bool
}

// BackupAcks is a batch of backup acknowledgements.
type BackupAcks struct{ Entries []BackupAck }

// AppendBackupAcks appends m as one frame.
func AppendBackupAcks(b []byte, m *BackupAcks) []byte {
	b, start := beginFrame(b, TypeBackupAck)
	for _, e := range m.Entries {
		b = appendID(b, e.ID)
		b = binary.AppendUvarint(b, uint64(e.Epoch))
		v := e.Version << 1
		if e.Resync {
			v |= 1
		}
		b = binary.AppendUvarint(b, v)
	}
	return endFrame(b, start)
}

// Decode decodes a BackupAck frame body into m.
func (m *BackupAcks) Decode(body []byte) error {
	r := reader{p: body}
	m.Entries = m.Entries[:0]
	for r.more() {
		e := BackupAck{ID: r.id(), Epoch: r.u32("epoch")}
		v := r.uvarint("version")
		e.Version, e.Resync = v>>1, v&1 == 1
		if r.err != nil {
			return r.err
		}
		m.Entries = append(m.Entries, e)
	}
	return r.err
}

// WriteAck says the writes of the receiver (incarnation Inc) to object ID
// up to sequence Seq are applied and safe: backed up, so no failover
// loses them.
type WriteAck struct {
	ID  world.ObjectID
	Seq uint32
}

// WriteAcks is a batch of write acknowledgements to one writer.
type WriteAcks struct {
	Inc     uint16
	Entries []WriteAck
}

// AppendWriteAcks appends m as one frame.
func AppendWriteAcks(b []byte, m *WriteAcks) []byte {
	b, start := beginFrame(b, TypeWriteAcks)
	b = binary.AppendUvarint(b, uint64(m.Inc))
	for _, e := range m.Entries {
		b = appendID(b, e.ID)
		b = binary.AppendUvarint(b, uint64(e.Seq))
	}
	return endFrame(b, start)
}

// Decode decodes a WriteAcks frame body into m.
func (m *WriteAcks) Decode(body []byte) error {
	r := reader{p: body}
	inc := r.uvarint("writer incarnation")
	if r.err == nil && inc > math.MaxUint16 {
		return malformed("writer incarnation %d exceeds 16 bits", inc)
	}
	m.Inc = uint16(inc)
	m.Entries = m.Entries[:0]
	for r.more() {
		e := WriteAck{ID: r.id(), Seq: r.u32("write sequence")}
		if r.err != nil {
			return r.err
		}
		m.Entries = append(m.Entries, e)
	}
	return r.err
}

// Heartbeat says the sender is alive, which incarnation of it, and for
// how long it has been up (whole seconds; a backup policy may prefer the
// longest-lived hosts).
type Heartbeat struct {
	Inc    uint16
	Uptime time.Duration
}

// AppendHeartbeat appends m as one frame.
func AppendHeartbeat(b []byte, m *Heartbeat) []byte {
	b, start := beginFrame(b, TypeHeartbeat)
	b = binary.AppendUvarint(b, uint64(m.Inc))
	b = binary.AppendUvarint(b, uint64(max(m.Uptime, 0)/time.Second))
	return endFrame(b, start)
}

// Decode decodes a Heartbeat frame body into m.
func (m *Heartbeat) Decode(body []byte) error {
	r := reader{p: body}
	inc := r.uvarint("incarnation")
	if r.err == nil && inc > math.MaxUint16 {
		return malformed("incarnation %d exceeds 16 bits", inc)
	}
	up := r.uvarint("uptime")
	if r.err == nil && up > math.MaxInt64/uint64(time.Second) {
		return malformed("uptime %d s overflows a duration", up)
	}
	m.Uptime = time.Duration(up) * time.Second
	if r.err == nil && r.more() {
		return malformed("%d bytes after a heartbeat", len(r.p))
	}
	m.Inc = uint16(inc)
	return r.err
}

// Liveness is one node and, in a probe reply, whether it is alive and how
// long ago the replier last heard from it (whole milliseconds; 0: never,
// or in a probe).
type Liveness struct {
	Node  NodeID
	Alive bool
	Ago   time.Duration
}

// Probe is the body of Probe frames (is each node alive? Alive unused;
// sent to a node about itself, a ping) and ProbeReply frames (the
// answers).
type Probe struct{ Entries []Liveness }

// AppendProbe appends m as one frame of type t (TypeProbe or
// TypeProbeReply).
func AppendProbe(b []byte, t Type, m *Probe) []byte {
	b, start := beginFrame(b, t)
	for _, e := range m.Entries {
		v := uint64(e.Node) << 1
		if e.Alive {
			v |= 1
		}
		b = binary.AppendUvarint(b, v)
		b = appendMillis(b, e.Ago)
	}
	return endFrame(b, start)
}

// Decode decodes a Probe or ProbeReply frame body into m.
func (m *Probe) Decode(body []byte) error {
	r := reader{p: body}
	m.Entries = m.Entries[:0]
	for r.more() {
		v := r.uvarint("probed node")
		if r.err == nil && v>>1 > math.MaxUint32 {
			return malformed("probed node %d exceeds 32 bits", v>>1)
		}
		ago := r.millis("last heard")
		if r.err != nil {
			return r.err
		}
		m.Entries = append(m.Entries, Liveness{Node: NodeID(v >> 1), Alive: v&1 == 1, Ago: ago})
	}
	return r.err
}

// BeginBackup starts a Backup frame whose entries the caller appends one
// by one with AppendBackupEntry; it returns the buffer and the mark to
// pass to EndBackup.
func BeginBackup(b []byte) ([]byte, int) { return beginFrame(b, TypeBackup) }

// EndBackup finishes the frame BeginBackup started.
func EndBackup(b []byte, mark int) []byte { return endFrame(b, mark) }

// ClaimAnswer is what a Claim entry says.
type ClaimAnswer uint8

// The answers of a Claim entry.
const (
	// ClaimAsk: the sender, a fence's new backup whose primary died,
	// asks the former backup whether it may take the object over.
	ClaimAsk ClaimAnswer = iota
	// ClaimGranted: the former backup holds no copy that could take the
	// object over (it gave it up, now or before): the asker may.
	ClaimGranted
	// ClaimRefused: the former backup holds a newer copy, or took the
	// object over itself: the asker drops its copy.
	ClaimRefused
	numClaimAnswers
)

// Claim settles which of two backups takes an object over when its
// primary dies during a migration's fence: object ID at epoch Epoch (the
// dead primary's), the asker holding version Version of its state.
type Claim struct {
	ID      world.ObjectID
	Epoch   uint32
	Version uint64
	Answer  ClaimAnswer
}

// Claims is a batch of claims or answers.
type Claims struct{ Entries []Claim }

// AppendClaims appends m as one frame.
func AppendClaims(b []byte, m *Claims) []byte {
	b, start := beginFrame(b, TypeClaim)
	for _, e := range m.Entries {
		b = appendID(b, e.ID)
		b = binary.AppendUvarint(b, uint64(e.Epoch))
		b = binary.AppendUvarint(b, e.Version)
		b = append(b, byte(e.Answer))
	}
	return endFrame(b, start)
}

// Decode decodes a Claim frame body into m.
func (m *Claims) Decode(body []byte) error {
	r := reader{p: body}
	m.Entries = m.Entries[:0]
	for r.more() {
		e := Claim{ID: r.id(), Epoch: r.u32("epoch"), Version: r.uvarint("version")}
		a := r.fixed(1, "answer")
		if r.err != nil {
			return r.err
		}
		if e.Version == 0 {
			return malformed("claim of %v has version 0", e.ID)
		}
		if e.Answer = ClaimAnswer(a[0]); e.Answer >= numClaimAnswers {
			return malformed("claim of %v: answer %d", e.ID, a[0])
		}
		m.Entries = append(m.Entries, e)
	}
	return r.err
}
