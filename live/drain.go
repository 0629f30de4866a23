package live

import (
	"log/slog"
	"slices"
	"time"

	"github.com/overworld/overworld/internal/replica"
	"github.com/overworld/overworld/node"
	"github.com/overworld/overworld/wire"
	"github.com/overworld/overworld/world"
)

// The drain: when a daemon is told to stop (SIGTERM, its context
// cancelled), it hands its primaries to live peers before it exits, so
// that no object is lost and none waits for a failure detector.
//
// Once the player gateway has removed the players' avatars, the daemon
// keeps running frames with the drainer as a frame hook. Every frame the
// drainer migrates each local primary it has not handed over yet
// (node.Migrate, which takes the attached ones along) to a live peer: the
// object's backup if that peer has no more than its share, else the peer
// that received the fewest so far (the nearest first, when latency is
// emulated), never the directory's rendezvous while another peer is live.
// A peer is live when this node's failure detector has not declared it
// dead and this node's connection to it is open (a peer that stops closes
// its connections); a peer that migrates objects to this node during its
// drain is taken to be draining too, and gets none. Objects created during the
// drain (a bot's rocket) are handed over the same way; so are objects
// promoted here meanwhile. A migration that waits for the object's old
// backup to release it may be given up (EvMigrateAborted); the object is
// then tried again, and so is one whose target died before taking it (the
// core promotes it back here, EvPromoted).
//
// An object is migrated when its target acknowledges it
// (wire.TypeMigrateAck, which the new primary sends once it installed the
// object, or when it already holds it or knows it deleted): the drainer
// reads the acknowledgements from the packets the driver receives
// (DriverConfig.Inspect). The drain ends when no object can move any
// more: every object it handled is migrated or was deleted, or what is
// left has no live peer to go to or waits for the acknowledgement of a
// peer that went down (awaited: it is given a grace to be declared dead,
// which brings what it did not take back here); or when drain_timeout
// passes. When a whole cluster stops, its nodes soon find each other
// draining and end with what they hold. The DrainReport says what happened to each.

// DrainReport is what a daemon's drain did: it is logged, written to
// last-run.json and served by /debug/authority.
type DrainReport struct {
	// Reason is why nothing was migrated (no live peer, the drain is
	// off); empty when the drain ran.
	Reason string `json:"reason,omitempty"`
	// Primaries is the number of objects the drain handled: the local
	// primaries when it began, and those created or promoted here during
	// it.
	Primaries int `json:"primaries"`
	// Migrated: installed at their targets (acknowledged).
	Migrated int `json:"migrated"`
	// Unconfirmed: handed over, not acknowledged by the end (the target
	// may hold it; if it did not receive it, it is lost).
	Unconfirmed int `json:"unconfirmed"`
	// NotMigrated: still primaries here at the end; BackedUp of them have
	// a backup on a peer, which takes them over once this node is
	// declared dead (failover). The others are lost.
	NotMigrated int `json:"not_migrated"`
	BackedUp    int `json:"backed_up"`
	// Deleted: deleted by the game during the drain, or taken over by a
	// primary of a newer epoch elsewhere (stepped down).
	Deleted int `json:"deleted"`
	// ByTarget counts the migrated objects by target node.
	ByTarget map[uint32]int `json:"by_target,omitempty"`
	// NotMigratedByKind counts the objects not migrated by schema name.
	NotMigratedByKind map[string]int `json:"not_migrated_by_kind,omitempty"`
	// ElapsedMs is the drain's wall-clock time; TimedOut, whether
	// drain_timeout ended it.
	ElapsedMs float64 `json:"elapsed_ms"`
	TimedOut  bool    `json:"timed_out"`
}

// Lost returns the objects the drain left without a primary nor a backup
// elsewhere.
func (r DrainReport) Lost() int { return r.NotMigrated - r.BackedUp }

type drainState uint8

const (
	dsQueued    drainState = iota // a primary here, to hand over
	dsAsked                       // Migrate called; waiting for the old backup's release
	dsSent                        // handed over (EvMigrated); waiting for the acknowledgement
	dsInstalled                   // acknowledged by the target
	dsDeleted                     // deleted, or stepped down
)

type drainObj struct {
	state drainState
	kind  string
	to    wire.NodeID
	epoch uint32
}

// drainConfig is what a drainer needs of its daemon.
type drainConfig struct {
	self  wire.NodeID
	peers []wire.NodeID
	// avoid is the directory's rendezvous: a target only when no other
	// peer is live (0: none).
	avoid     wire.NodeID
	connected func(wire.NodeID) bool
	delay     func(a, b wire.NodeID) time.Duration // nil: unknown
	timeout   time.Duration
	log       *slog.Logger
}

// drainer runs one drain on the driver's goroutine: its frame, event and
// inspect methods are called there only.
type drainer struct {
	cfg     drainConfig
	begin   time.Time
	objs    map[world.ObjectID]*drainObj
	load    map[wire.NodeID]int
	down    map[wire.NodeID]time.Time // targets seen not connected, since
	leaving map[wire.NodeID]bool      // peers that migrated objects here during the drain
	prims   []node.ObjectInfo
	acks    wire.Epochs
	done    bool
	report  DrainReport
	stop    func() // ends the drain's frames
}

func newDrainer(cfg drainConfig, stop func()) *drainer {
	return &drainer{cfg: cfg, objs: map[world.ObjectID]*drainObj{}, load: map[wire.NodeID]int{}, down: map[wire.NodeID]time.Time{},
		leaving: map[wire.NodeID]bool{}, stop: stop}
}

func (d *drainer) obj(id world.ObjectID) *drainObj {
	o := d.objs[id]
	if o == nil {
		o = &drainObj{}
		d.objs[id] = o
	}
	return o
}

// event follows the drained objects' authority events.
func (d *drainer) event(ev node.AuthorityEvent) {
	if d.done {
		return
	}
	switch ev.Kind {
	case node.EvMigrated:
		o := d.obj(ev.ID)
		if o.state == dsAsked && o.to != ev.Node {
			d.load[o.to]--
			d.load[ev.Node]++
		}
		o.state, o.to, o.epoch = dsSent, ev.Node, ev.Epoch
	case node.EvPromoted, node.EvInstalled:
		// A primary here again (its target died before taking it), or a
		// new one: hand it over again. A peer that migrates objects here
		// while this node drains is most likely draining too (a cluster
		// stopping): it is no target, or the two would pass objects
		// back and forth.
		if ev.Kind == node.EvInstalled {
			d.leaving[ev.Node] = true
		}
		if o := d.objs[ev.ID]; o != nil && o.state != dsQueued {
			if o.state == dsAsked || o.state == dsSent {
				d.load[o.to]--
			}
			o.state = dsQueued
		}
	case node.EvSteppedDown:
		if o := d.objs[ev.ID]; o != nil && o.state != dsInstalled {
			o.state = dsDeleted
		}
	case replica.EvMigrateAborted:
		// The old backup did not release the object in time: it is still
		// a primary here.
		if o := d.objs[ev.ID]; o != nil && o.state == dsAsked {
			d.load[o.to]--
			o.state = dsQueued
		}
	}
}

// inspect reads the migration acknowledgements in a received packet.
func (d *drainer) inspect(_ time.Duration, p wire.Packet) {
	// (Not p.Droppable: a received packet's class is its first frame's,
	// and an acknowledgement may follow updates.)
	if d.done {
		return
	}
	fr, err := wire.OpenFrames(p.Payload)
	if err != nil {
		return
	}
	for {
		t, body, ok := fr.Next()
		if !ok {
			return
		}
		if t != wire.TypeMigrateAck || d.acks.Decode(body) != nil {
			continue
		}
		for _, e := range d.acks.Entries {
			if o := d.objs[e.ID]; o != nil && o.state == dsSent && o.to == p.From && o.epoch == e.Epoch {
				o.state = dsInstalled
			}
		}
	}
}

// candidates returns the live peers a primary may go to: not declared
// dead, connected (a peer this node holds no connection to is likely
// down, or stopping too), and not draining themselves.
func (d *drainer) candidates(n *node.Node) []wire.NodeID {
	dead := n.Dead(nil)
	var c []wire.NodeID
	for _, p := range d.cfg.peers {
		if p != d.cfg.self && !slices.Contains(dead, p) && !d.leaving[p] && (d.cfg.connected == nil || d.cfg.connected(p)) {
			c = append(c, p)
		}
	}
	if d.cfg.avoid != 0 && len(c) > 1 {
		c = slices.DeleteFunc(c, func(p wire.NodeID) bool { return p == d.cfg.avoid })
	}
	return c
}

// target chooses where primary id goes among cands (not empty).
func (d *drainer) target(n *node.Node, id world.ObjectID, cands []wire.NodeID) wire.NodeID {
	share := (len(d.objs) + len(cands) - 1) / len(cands)
	if b, ok := n.BackupOf(id); ok && slices.Contains(cands, b) && d.load[b] < share {
		return b
	}
	best := cands[0]
	for _, c := range cands[1:] {
		lc, lb := d.load[c], d.load[best]
		if lc < lb || lc == lb && d.cfg.delay != nil && d.cfg.delay(d.cfg.self, c) < d.cfg.delay(d.cfg.self, best) {
			best = c
		}
	}
	return best
}

// Frame runs one frame of the drain (a frame hook): it hands over what is
// left, and ends the drain when nothing is, or at its timeout.
func (d *drainer) Frame(now time.Duration, n *node.Node) {
	if d.done {
		return
	}
	if d.begin.IsZero() {
		d.begin = time.Now()
	}
	d.prims = n.Primaries(d.prims[:0])
	for i := range d.prims {
		o := d.obj(d.prims[i].ID)
		if o.kind == "" {
			o.kind = d.prims[i].State.Schema().Name()
		}
		if o.state == dsInstalled || o.state == dsDeleted {
			o.state = dsQueued // a primary here again
		}
	}
	cands := d.candidates(n)
	for i := range d.prims {
		id := d.prims[i].ID
		clear(d.prims[i : i+1]) // drop the state reference
		o := d.objs[id]
		if o.state != dsQueued || len(cands) == 0 {
			continue
		}
		if _, prim, ok := n.Lookup(id); !ok || !prim {
			continue // moved with its anchor already
		}
		to := d.target(n, id, cands)
		ids, err := n.Migrate(now, id, to)
		if err != nil {
			d.cfg.log.Debug("drain: migration refused", "object", id, "to", to, "err", err)
			continue
		}
		for _, x := range ids {
			ox := d.obj(x)
			if ox.state == dsQueued {
				ox.state, ox.to = dsAsked, to
				d.load[to]++
			} else if ox.state == dsSent {
				d.load[ox.to]++
			}
		}
	}
	// The drain goes on while an object may still move: one here with a
	// live peer to go to, or one handed to a peer that is still live
	// (waiting for its acknowledgement). A target that stopped (its
	// connection closed) or was declared dead will not acknowledge.
	pending, waiting := false, false
	for id, o := range d.objs {
		switch o.state {
		case dsQueued, dsAsked:
			if _, _, ok := n.Lookup(id); !ok {
				o.state = dsDeleted
				continue
			}
			waiting = true
			pending = pending || len(cands) > 0
		case dsSent:
			waiting = true
			pending = pending || d.awaited(n, o.to)
		}
	}
	timedOut := time.Since(d.begin) >= d.cfg.timeout
	if pending && !timedOut {
		return
	}
	d.finish(n, timedOut && waiting)
}

// awaited reports whether the acknowledgements of target p are still
// awaited: it is live (connected, not declared dead), or it went down
// less than targetGrace ago and is not declared dead yet (when the
// failure detector declares it dead, the core promotes what it did not
// acknowledge back here, and the drain hands it to another peer).
func (d *drainer) awaited(n *node.Node, p wire.NodeID) bool {
	if slices.Contains(n.Dead(nil), p) {
		return false
	}
	if d.cfg.connected == nil || d.cfg.connected(p) {
		delete(d.down, p)
		return true
	}
	since, ok := d.down[p]
	if !ok {
		since = time.Now()
		d.down[p] = since
	}
	return time.Since(since) < targetGrace
}

// targetGrace is how long the drain waits for a migration target whose
// connection closed to be declared dead: the failure detector takes
// about a second (SuspectAfter, 400 ms, a probe, 350 ms, and frames). A
// target that stopped is not declared dead without a quorum of witnesses
// (a whole cluster stopping); the drain then ends after targetGrace.
const targetGrace = 1500 * time.Millisecond

// finish ends the drain and writes its report.
func (d *drainer) finish(n *node.Node, timedOut bool) {
	d.done = true
	r := DrainReport{Primaries: len(d.objs), TimedOut: timedOut, ElapsedMs: float64(time.Since(d.begin).Microseconds()) / 1e3}
	if len(d.candidates(n)) == 0 && len(d.objs) > 0 {
		r.Reason = "no live peer"
	}
	for id, o := range d.objs {
		switch o.state {
		case dsInstalled:
			r.Migrated++
			if r.ByTarget == nil {
				r.ByTarget = map[uint32]int{}
			}
			r.ByTarget[uint32(o.to)]++
		case dsDeleted:
			r.Deleted++
		case dsSent:
			r.Unconfirmed++
		default:
			r.NotMigrated++
			if _, ok := n.BackupOf(id); ok {
				r.BackedUp++
			}
			if r.NotMigratedByKind == nil {
				r.NotMigratedByKind = map[string]int{}
			}
			r.NotMigratedByKind[o.kind]++
		}
	}
	d.report = r
	if d.stop != nil {
		d.stop()
	}
}
