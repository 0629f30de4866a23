package node

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"time"

	"github.com/overworld/overworld/internal/locate"
	"github.com/overworld/overworld/internal/replica"
	"github.com/overworld/overworld/wire"
	"github.com/overworld/overworld/world"
)

// Stats counts what a node did; all fields only grow.
type Stats struct {
	Ticks        int64
	PacketsIn    int64 // packets delivered by Step (including malformed)
	Malformed    int64 // packets rejected whole: bad header, frame, kind or delta
	Misaddressed int64 // packets whose To is another node (ignored)
	Thinks       int64 // think calls
	Created      int64
	Deleted      int64
}

// packetStats are the Stats counters of received packets, kept apart
// with the fields every packet touches (Node).
type packetStats struct {
	packetsIn, malformed, misaddressed int64
}

// Node is one node of a cluster. See the package documentation for the
// driver's duties.
type Node struct {
	// What every received packet reads and writes: the node's ID, clock,
	// store, locator, packet counters, the locator's output and the
	// outbox.
	id    wire.NodeID // cfg.ID
	now   time.Duration
	store *replica.Store
	disc  Discovery
	cstep checkedStepper // disc, if it is one (else nil)
	in    packetStats
	lout  locate.Out
	out   wire.Outbox

	cfg     Config
	holders func(world.ObjectID, []wire.NodeID) []wire.NodeID // Frame.Holders, bound once
	host    wire.NodeID
	handoff bool
	dims    int

	seq     uint32
	created map[world.ObjectID]bool
	cands   []locate.Found // discovered objects, by ID: the latest-expiring news of each
	pend    []locate.Found // discoveries since the last Tick, in arrival order
	fresh   []locate.Found // scratch: discoveries of new IDs
	stats   Stats

	// scratch, reused every frame
	ids     []world.ObjectID
	prims   []locate.Primary
	offs    []int
	ibuf    []world.Box
	aoffs   []int
	abuf    []world.Box // the primaries' anticipated boxes (world.Anticipator)
	antic   []world.Box // the node's anticipated boxes (on a client: of its own objects)
	expect  []expected  // boxes expected for objects about to arrive (Expect)
	view    []world.Box
	dead    []wire.NodeID
	frame   locate.Frame
	check   locate.Scratch
	selfPs  []wire.Packet
	each    []world.ObjectID
	erefs   []locate.PointRef // eachIndexed's, stacked like each
	ctx     context
	inThink bool

	// The location index Context.Each queries (see index.go).
	idx      *locate.Points[indexed]
	vidx     viewIndex   // over keepView
	pview    []world.Box // the view widened by Config.Prefetch
	prefetch bool
	members  []replica.Change
	touched  []world.ObjectID // objects the current think may have moved
	tsort    []world.ObjectID
	qsum     float64 // widths of this frame's Each boxes, for the cell size
	qn       int
	qavg     float64 // moving average of the frames' mean Each box width
	// linear makes Each scan every local object: the reference the index
	// is tested and benchmarked against.
	linear bool
	// pins are the preferred backups (PreferBackup), latest last.
	pins []backupPin

	// With Config.PushMutual: the interests of the replicas this node
	// holds, widened by Prefetch, each owned by its primary's node; and
	// the nodes a primary is pushed to (scratch).
	push   *locate.Boxes
	pushTo []wire.NodeID

	// With Config.FarMargin: what each peer's primaries need, as far as
	// this node knows (the interests and anticipated boxes of the replicas
	// it holds of them, widened by FarMargin), peerBoxes[peerOff[peer]].
	far       bool
	peerBoxes []world.Box
	peerOff   map[wire.NodeID][2]int
	peerScr   []peerBox
	boxScr    []world.Box
}

// peerBox is one box a peer's primary needs (ok false: the primary needs
// none, but the peer is known).
type peerBox struct {
	from wire.NodeID
	b    world.Box
	ok   bool
}

// New returns a node with no objects.
func New(cfg Config) (*Node, error) {
	cfg, err := cfg.Validate()
	if err != nil {
		return nil, err
	}
	n := &Node{}
	rc := cfg.Replica
	rc.Backup = n.pinnedPolicy(rc.Backup)
	st, err := replica.NewStore(rc)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	*n = Node{id: cfg.ID, cfg: cfg, store: st, disc: cfg.Discovery, host: cfg.ID, dims: cfg.Registry.Space().Dims(),
		created: map[world.ObjectID]bool{}}
	n.holders = func(id world.ObjectID, dst []wire.NodeID) []wire.NodeID { return n.store.Holders(n.now, id, dst) }
	n.cstep, _ = cfg.Discovery.(checkedStepper)
	if h, ok := cfg.Discovery.(hoster); ok {
		n.host, n.handoff = h.Host()
	}
	n.idx = locate.NewPoints[indexed](n.dims, locate.DefaultCell)
	st.TrackMembers()
	n.vidx.boxes, n.vidx.dims = locate.NewBoxes(n.dims, locate.DefaultCell), n.dims
	n.prefetch = cfg.Prefetch != world.Point{}
	if cfg.FarMargin != (world.Point{}) {
		n.far = true
		n.peerOff = map[wire.NodeID][2]int{}
		st.SetFar(n.isFar, cfg.FarEvery)
	}
	if cfg.PushMutual && !n.handoff {
		n.push = locate.NewBoxes(n.dims, locate.DefaultCell)
	}
	n.out.MaxPayload = cfg.MaxPayload
	n.lout.Outbox = &n.out
	n.ctx.n = n
	return n, nil
}

// ID returns the node's ID.
func (n *Node) ID() wire.NodeID { return n.cfg.ID }

// origin is the origin of the object IDs this node creates: its ID, and
// its incarnation in the high 16 bits (Config.Incarnation).
func (n *Node) origin() uint32 { return uint32(n.cfg.Incarnation)<<16 | uint32(n.cfg.ID) }

// Config returns the validated configuration.
func (n *Node) Config() Config { return n.cfg }

// Now returns the time of the latest Tick or Step.
func (n *Node) Now() time.Duration { return n.now }

func (n *Node) advance(now time.Duration) {
	if now > n.now {
		n.now = now
	}
}

// Tick runs one frame at virtual time now: the think functions of the
// node's primaries in ID order (objects created during the frame think from
// the next one), then version commits, discovery and replica sync.
func (n *Node) Tick(now time.Duration) {
	n.advance(now)
	now = n.now
	n.out.Release(now) // frames that waited for a packet to ride in, due now
	n.stats.Ticks++
	n.ids = n.store.IDs(n.ids[:0], true)
	n.syncIndex()
	n.inThink = true
	prims := n.store.WalkPrimaries()
	for _, id := range n.ids {
		if obj, _, ok := prims.Primary(id); ok {
			n.stats.Thinks++
			n.touch(id)
			obj.Think(&n.ctx)
			n.settle()
		}
	}
	n.inThink = false
	n.store.Commit(now)
	n.buildFrame(now)
	n.disc.Tick(&n.frame, &n.lout)
	n.store.SetWatch(n.lout.Watch)
	n.takeLocatorOutput(now)
	n.mergeCandidates()
	kept := n.cands[:0]
	// The candidates are sorted by ID, like the store's entries: one walk
	// of both (Want adds and removes no entry).
	known := n.store.WalkKnown()
	for _, f := range n.cands {
		if f.Until < now {
			continue
		}
		// A replica's own location is newer than the publication that
		// found it: once the replica is dropped out of view, the candidate
		// no longer points into the view (an idle object's long-lived
		// publication would otherwise fetch it again and again).
		// (While it is held, the primary's publications skip this node,
		// locate.Frame.Holders: the candidate may expire meanwhile, and the
		// next publication after the replica is dropped brings it back.)
		// Not a replica this node did not ask for that is older than the
		// publication (both times are the primary's clock): nobody may
		// update it any more (a pushed replica whose drop was lost), and
		// it would hide its object's move into the view until it timed
		// out.
		// A still replica asked for and kept up by the node the candidate
		// names stands for the publications that skip this node while it
		// holds it: the candidate lives on from the replica's location for
		// the publication's TTL. Else, once the replica is dropped out of
		// view, a candidate that expired while it was held leaves the
		// object to its next publication when it comes back into view, up
		// to an idle object's IdleEvery later (5 s), and longer if that one
		// is lost. (A moving object is published every period, and the
		// replica's last location soon says little.)
		loc, from, replica, wanted := known.Known(f.ID)
		if replica && (wanted || n.producedSince(f.ID, f.At)) {
			if wanted && from == f.Node && f.Loc == loc {
				f.Heard, f.Until = now, now+(f.Until-f.Heard)
			}
			f.Loc, f.Vel = loc, world.Point{}
		}
		kept = append(kept, f)
		// Most candidates are replicas already held and requested: for
		// them Want does nothing, so the view test is skipped (not for a
		// replica whose primary fell silent: Want looks it up at f.Node).
		if !wanted && n.fetches(&f, now) {
			n.store.Want(now, f.ID, f.Node, f.Until)
		}
	}
	n.cands = kept
	n.pushAnticipating(now)
	n.buildPeerViews()
	n.pushMutual(now)
	if n.linear {
		n.store.Flush(now, n.keepView(), &n.out)
	} else {
		n.store.FlushView(now, &n.vidx, &n.out)
	}
	clear(n.created)
}

// producedSince reports whether the replica of id this node holds is of a
// state the primary had at or after at (the primary's clock).
func (n *Node) producedSince(id world.ObjectID, at time.Duration) bool {
	p, ok := n.store.Produced(id)
	return ok && p >= at
}

// buildFrame collects the primaries' locations and interests and the view.
func (n *Node) buildFrame(now time.Duration) {
	n.ids = n.store.IDs(n.ids[:0], true)
	n.prims, n.offs, n.ibuf = n.prims[:0], n.offs[:0], n.ibuf[:0]
	n.aoffs, n.abuf = n.aoffs[:0], n.abuf[:0]
	prims := n.store.WalkPrimaries()
	for _, id := range n.ids {
		obj, ctl, _ := prims.Primary(id)
		n.offs = append(n.offs, len(n.ibuf))
		n.ibuf = n.appendInterest(n.ibuf, obj)
		n.aoffs = append(n.aoffs, len(n.abuf))
		n.abuf = n.appendAnticipated(n.abuf, obj)
		vel, hasVel := locate.MoverVelocity(obj)
		n.prims = append(n.prims, locate.Primary{ID: id, Loc: obj.State().Location(), Controller: ctl, New: n.created[id],
			Vel: vel, HasVel: hasVel})
	}
	n.offs = append(n.offs, len(n.ibuf))
	n.aoffs = append(n.aoffs, len(n.abuf))
	for i := range n.prims {
		n.prims[i].Interest = n.ibuf[n.offs[i]:n.offs[i+1]:n.offs[i+1]]
		if n.aoffs[i] < n.aoffs[i+1] {
			n.prims[i].Anticipated = n.abuf[n.aoffs[i]:n.aoffs[i+1]:n.aoffs[i+1]]
		}
	}
	// The view: the node's primaries' interests; on a client, which holds
	// no primaries, the interests of the objects it created (its players').
	n.view = n.view[:0]
	n.antic = n.antic[:0]
	if !n.handoff {
		n.view = append(n.view, n.ibuf...)
		n.antic = append(n.antic, n.abuf...)
	} else {
		n.store.Range(func(obj world.Object, primary bool) bool {
			if obj.State().ID().Origin() == n.origin() {
				n.view = n.appendInterest(n.view, obj)
				n.antic = n.appendAnticipated(n.antic, obj)
			}
			return true
		})
	}
	n.antic = n.appendExpected(n.antic, now)
	n.dead = n.store.Dead(n.dead[:0])
	n.frame = locate.Frame{Now: now, Self: n.cfg.ID, Dims: n.dims, Primaries: n.prims, View: n.view, Anticipated: n.antic,
		Holders: n.holders, Dead: n.dead}
	if n.prefetch || len(n.antic) > 0 {
		n.pview = n.pview[:0]
		for _, b := range n.view {
			n.pview = append(n.pview, b.Expand(n.cfg.Prefetch, n.cfg.Prefetch))
		}
		for _, b := range n.antic {
			n.pview = append(n.pview, b.Expand(n.cfg.Prefetch, n.cfg.Prefetch))
		}
	}
	n.vidx.build(n.keepView(), n.linear)
}

// pushAnticipating pushes every primary that anticipates boxes
// (world.Anticipator: a dead avatar, its respawn point) to the nodes whose
// primaries it will meet there: the primaries of the replicas this node
// holds in those boxes (it fetches them because of the anticipation).
// Interest is mostly mutual, so those nodes will want the object when it
// arrives; this way they hold it before, as discovery could only tell
// them after the move. Under client-server the server decides alone.
func (n *Node) pushAnticipating(now time.Duration) {
	if n.handoff {
		return
	}
	for i := range n.prims {
		p := &n.prims[i]
		for _, b := range p.Anticipated {
			start := len(n.each)
			if n.linear {
				n.store.Range(func(obj world.Object, primary bool) bool {
					if !primary && b.Contains(obj.State().Location(), n.dims) {
						n.each = append(n.each, obj.State().ID())
					}
					return true
				})
			} else {
				n.each = n.idx.Query(b, n.each)
			}
			for _, id := range n.each[start:] {
				if from, ok := n.store.Source(id); ok {
					n.store.Keep(now, p.ID, from)
				}
			}
			n.each = n.each[:start]
		}
	}
}

// appendAnticipated appends obj's valid, non-empty anticipated boxes
// (world.Anticipator).
func (n *Node) appendAnticipated(dst []world.Box, obj world.Object) []world.Box {
	a, ok := obj.(world.Anticipator)
	if !ok {
		return dst
	}
	return n.keepValid(a.Anticipate(dst), len(dst))
}

// appendInterest appends obj's valid, non-empty interest boxes.
func (n *Node) appendInterest(dst []world.Box, obj world.Object) []world.Box {
	return n.keepValid(obj.Interest(dst), len(dst))
}

// keepValid drops the invalid and empty boxes of boxes[start:].
func (n *Node) keepValid(boxes []world.Box, start int) []world.Box {
	kept := boxes[:start]
	for _, b := range boxes[start:] {
		if b.Validate(n.dims) == nil && !b.Empty(n.dims) {
			kept = append(kept, b)
		}
	}
	return kept
}

func (n *Node) inView(p world.Point) bool {
	if !n.linear {
		return n.vidx.Contains(p)
	}
	view := n.keepView()
	for i := range view {
		if view[i].Contains(p, n.dims) {
			return true
		}
	}
	return false
}

// fetches reports whether discovered object f is to be fetched at now:
// the location it is predicted at lies in the view, now or, when it
// moves, Config.FetchAhead from now.
func (n *Node) fetches(f *locate.Found, now time.Duration) bool {
	if n.inView(f.Where(now, n.dims)) {
		return true
	}
	return n.cfg.FetchAhead > 0 && f.Vel != (world.Point{}) && n.inView(f.Where(now+n.cfg.FetchAhead, n.dims))
}

// pushMutual pushes every primary to the nodes whose replicas held here
// need it (Config.PushMutual): the owners of the boxes of n.push that
// contain its location.
func (n *Node) pushMutual(now time.Duration) {
	if n.push == nil {
		return
	}
	for i := range n.prims {
		p := &n.prims[i]
		n.pushTo = n.push.Owners(p.Loc, n.pushTo[:0])
		for _, to := range n.pushTo {
			n.store.Keep(now, p.ID, to)
		}
	}
}

func (n *Node) takeLocatorOutput(now time.Duration) {
	for _, p := range n.lout.Push {
		n.store.Keep(now, p.ID, p.To)
	}
	for _, f := range n.lout.Found {
		if f.Node == n.cfg.ID {
			continue
		}
		n.pend = append(n.pend, f)
	}
	n.lout.Reset()
}

// mergeCandidates folds the discoveries since the last Tick into the
// candidates: per ID, news replaces what is known unless it is older (see
// locate.Found.Newer; in arrival order, so of equals the latest wins).
// The news is sorted by ID first (stably, so that news of one ID folds in
// arrival order) and walked alongside the candidates, which reads them in
// order instead of a binary search's scattered lines per discovery. Most
// news is about known candidates, which are updated in place; only the
// news of new IDs is merged in, in place.
func (n *Node) mergeCandidates() {
	if len(n.pend) == 0 {
		return
	}
	pend := n.pend
	if !slices.IsSortedFunc(pend, cmpFound) {
		slices.SortStableFunc(pend, cmpFound)
	}
	fresh := n.fresh[:0]
	cands := n.cands
	i := 0
	for _, p := range pend {
		// Gallop from i to the first candidate not below p.ID.
		if i < len(cands) && cands[i].ID < p.ID {
			lo, hi := i, i+1
			for step := 2; hi < len(cands) && cands[hi].ID < p.ID; step <<= 1 {
				lo, hi = hi, hi+step
			}
			hi = min(hi, len(cands))
			lo++
			for lo < hi {
				m := int(uint(lo+hi) >> 1)
				if cands[m].ID < p.ID {
					lo = m + 1
				} else {
					hi = m
				}
			}
			i = lo
		}
		if i < len(cands) && cands[i].ID == p.ID {
			if !cands[i].Newer(p) {
				cands[i] = p
			}
			continue
		}
		if k := len(fresh) - 1; k >= 0 && fresh[k].ID == p.ID {
			if !fresh[k].Newer(p) {
				fresh[k] = p
			}
			continue
		}
		fresh = append(fresh, p)
	}
	n.pend = pend[:0]
	if len(fresh) > 0 {
		// Merged in place from the back: the candidates below the first
		// new ID stay where they are, and no second array is written (a
		// node's candidates are cold at every Tick at 10,000 players).
		m := len(cands)
		cands = slices.Grow(cands, len(fresh))[:m+len(fresh)]
		i, j := m-1, len(fresh)-1
		for w := len(cands) - 1; j >= 0; w-- {
			if i >= 0 && cands[i].ID > fresh[j].ID {
				cands[w] = cands[i]
				i--
			} else {
				cands[w] = fresh[j]
				j--
			}
		}
		n.cands = cands
	}
	n.fresh = fresh[:0]
}

func cmpFound(a, b locate.Found) int { return cmp.Compare(a.ID, b.ID) }

// Step delivers one packet addressed to this node. A packet that fails to
// decode anywhere (header, a frame, a kind, a delta or write against the
// schema) is rejected whole: nothing changes and Stats.Malformed counts it.
func (n *Node) Step(now time.Duration, p wire.Packet) {
	n.advance(now)
	now = n.now
	n.in.packetsIn++
	if p.To != n.id {
		n.in.misaddressed++
		return
	}
	held, err := n.validate(p)
	if err != nil {
		n.in.malformed++
		return
	}
	n.store.Heard(now, p.From)
	fr, _ := wire.OpenFrames(p.Payload)
	for k := 0; ; k++ {
		t, body, ok := fr.Next()
		if !ok {
			break
		}
		switch {
		case replica.Handles(t):
			_ = n.store.Apply(now, p.From, t, body) // cannot fail after check
		case k == held:
			_ = n.cstep.StepChecked(now, p.From, t, body, &n.lout)
		default:
			_ = n.disc.Step(now, p.From, t, body, &n.lout)
		}
	}
	n.store.Answer(now, &n.out)
	k := len(n.pend)
	n.takeLocatorOutput(now)
	n.fetchFound(now, n.pend[k:])
}

// fetchFound asks at once for the objects found by a received packet
// (found) that lie in the view and that this node neither holds nor has
// asked for: the request leaves within the Step, not at the next Tick,
// up to a frame later, which folds the discoveries into the candidates
// as before (and decides for the objects held, whose replicas' locations
// are newer than the publications).
func (n *Node) fetchFound(now time.Duration, found []locate.Found) {
	for i := range found {
		f := &found[i]
		if f.Until < now || n.store.Wanted(f.ID) {
			continue
		}
		if _, _, held := n.store.Lookup(f.ID); held || !n.fetches(f, now) {
			continue
		}
		n.store.Want(now, f.ID, f.Node, f.Until)
	}
	n.store.Request(now, &n.out)
}

// validate checks a whole packet without changing anything. held is the
// index among the packet's frames of the last discovery frame whose
// decoding the locator keeps for StepChecked (checkedStepper), or -1.
func (n *Node) validate(p wire.Packet) (held int, err error) {
	n.store.BeginPacket()
	held = -1
	fr, err := wire.OpenFrames(p.Payload)
	if err != nil {
		return -1, err
	}
	for k := 0; ; k++ {
		t, body, ok := fr.Next()
		if !ok {
			break
		}
		switch {
		case replica.Handles(t):
			err = n.store.Check(p.From, t, body)
		case n.disc.Handles(t):
			if c, ok := n.disc.(checker); ok {
				err = c.Check(t, body)
			} else {
				err = locate.Check(t, body, &n.check)
			}
			if n.cstep != nil {
				held = k
			}
		default:
			err = fmt.Errorf("%w: %v frame not used by this architecture", wire.ErrMalformed, t)
		}
		if err != nil {
			return -1, err
		}
	}
	return held, fr.Err()
}

// Drain appends the packets to send to dst and forgets them; their payloads
// now belong to the caller. Packets addressed to this node are delivered to
// it at once instead.
func (n *Node) Drain(dst []wire.Packet) []wire.Packet {
	for n.out.Len() > 0 {
		start := len(dst)
		dst = n.out.Packets(n.id, dst)
		n.selfPs = n.selfPs[:0]
		j := start
		for _, p := range dst[start:] {
			if p.To == n.id {
				n.selfPs = append(n.selfPs, p)
			} else {
				dst[j] = p
				j++
			}
		}
		clear(dst[j:])
		dst = dst[:j]
		for _, p := range n.selfPs {
			n.Step(n.now, p)
			n.in.packetsIn-- // loopback is not traffic
		}
	}
	return dst
}

// Spawn creates a primary of kind s on this node at time now (outside think
// functions: the driver's and the game's setup), calls init on its zero
// State, and returns it. On a client of the client-server architecture the
// object is handed off to the server, and the node keeps a replica.
func (n *Node) Spawn(now time.Duration, s *world.Schema, init func(*world.State)) (world.Object, error) {
	n.advance(now)
	return n.create(s, init)
}

func (n *Node) create(s *world.Schema, init func(*world.State)) (world.Object, error) {
	if s == nil {
		return nil, fmt.Errorf("node: nil schema")
	}
	if _, ok := n.cfg.Registry.Kind(s); !ok {
		return nil, fmt.Errorf("%w (%q)", world.ErrUnregistered, s.Name())
	}
	if n.seq == math.MaxUint32 {
		return nil, errors.New("node: object IDs of this node are exhausted")
	}
	id := world.MakeObjectID(n.origin(), n.seq+1)
	st := s.NewState(id)
	if init != nil {
		init(st)
	}
	obj := s.NewObject(st)
	var err error
	if n.handoff {
		err = n.store.Handoff(n.now, obj, n.host)
	} else {
		err = n.store.AddPrimary(n.now, obj, n.cfg.ID)
	}
	if err != nil {
		return nil, err
	}
	n.touch(id) // the creator may still move it
	n.seq++
	n.created[id] = true
	n.stats.Created++
	return obj, nil
}

// Delete deletes local primary id at time now; its replicas are deleted
// everywhere.
func (n *Node) Delete(now time.Duration, id world.ObjectID) error {
	n.advance(now)
	return n.delete(id)
}

// Deleted reports whether object id is known on this node to be deleted
// (its primary here deleted it, or news of the deletion came) within the
// tombstone time to live.
func (n *Node) Deleted(id world.ObjectID) bool { return n.store.Deleted(id) }

func (n *Node) delete(id world.ObjectID) error {
	err := n.store.Delete(n.now, id)
	switch {
	case errors.Is(err, replica.ErrUnknown):
		return fmt.Errorf("%w: %v", world.ErrUnknownObject, id)
	case errors.Is(err, replica.ErrNotPrimary):
		return fmt.Errorf("%w: %v", world.ErrNotPrimary, id)
	case err != nil:
		return err
	}
	n.stats.Deleted++
	delete(n.created, id)
	n.touch(id)
	return nil
}

// Write applies fn to local object id: directly on a primary; on a replica
// at once and forwarded to the primary as a tentative write (how a client's
// player input reaches the server under client-server).
func (n *Node) Write(id world.ObjectID, fn func(*world.State)) error {
	n.touch(id)
	err := n.store.Write(id, fn)
	if errors.Is(err, replica.ErrUnknown) {
		return fmt.Errorf("%w: %v", world.ErrUnknownObject, id)
	}
	return err
}

// Lookup returns local object id.
func (n *Node) Lookup(id world.ObjectID) (obj world.Object, primary, ok bool) {
	return n.store.Lookup(id)
}

// Objects appends a description of every local primary and replica in ID
// order (see ObjectInfo; its States must not be modified).
func (n *Node) Objects(dst []ObjectInfo) []ObjectInfo { return n.store.Objects(dst) }

// Briefs appends the ID, version, production time, role and State of every
// local primary and replica in ID order: what Objects gives, cheaper, for
// an observer that reads every object every frame.
func (n *Node) Briefs(dst []ObjectBrief) []ObjectBrief { return n.store.Briefs(dst) }

// Primaries appends a description of every local primary in ID order
// (Objects without the replicas).
func (n *Node) Primaries(dst []ObjectInfo) []ObjectInfo { return n.store.Primaries(dst) }

// Object describes local object id.
func (n *Node) Object(id world.ObjectID) (ObjectInfo, bool) { return n.store.Object(id) }

// View appends the node's view as of the latest Tick: the valid, non-empty
// interest boxes of its primaries (on a client: of its own objects).
func (n *Node) View(dst []world.Box) []world.Box { return append(dst, n.view...) }

// keepView is the view the node fetches and keeps replicas for: the view
// and its primaries' anticipated boxes (world.Anticipator), widened by
// Config.Prefetch.
func (n *Node) keepView() []world.Box {
	if n.prefetch || len(n.antic) > 0 {
		return n.pview
	}
	return n.view
}

// Stats returns the node's counters.
func (n *Node) Stats() Stats {
	st := n.stats
	st.PacketsIn, st.Malformed, st.Misaddressed = n.in.packetsIn, n.in.malformed, n.in.misaddressed
	return st
}

// ReplicaStats returns the replica manager's counters.
func (n *Node) ReplicaStats() StoreStats { return n.store.Stats() }

// context is the world.Context think functions get.
type context struct{ n *Node }

func (c *context) Now() time.Duration { return c.n.now }
func (c *context) Rand() *rand.Rand   { return c.n.cfg.Rand }
func (c *context) Lookup(id world.ObjectID) (world.Object, bool, bool) {
	return c.n.store.Lookup(id)
}

// Each walks a snapshot of the IDs of the objects in box, from the location
// index (fn may create and delete objects, and call Each again: nested
// calls stack their snapshots in one buffer).
func (c *context) Each(box world.Box, fn func(world.Object, bool) bool) {
	n := c.n
	if !n.linear {
		n.eachIndexed(box, fn)
		return
	}
	// The objects in box when Each is called, visited if they still
	// exist when their turn comes (what fn moves stays in the walk).
	start := len(n.each)
	n.each = n.store.IDs(n.each, false)
	kept := n.each[:start]
	for _, id := range n.each[start:] {
		if obj, _, ok := n.store.Lookup(id); ok && box.Contains(obj.State().Location(), n.dims) {
			kept = append(kept, id)
		}
	}
	n.each = kept
	ids := n.each[start:]
	defer func() { n.each = n.each[:start] }()
	for _, id := range ids {
		if obj, primary, ok := n.store.Lookup(id); ok && !fn(obj, primary) {
			return
		}
	}
}
func (c *context) Create(s *world.Schema, init func(*world.State)) (world.Object, error) {
	return c.n.create(s, init)
}
func (c *context) Delete(id world.ObjectID) error { return c.n.delete(id) }
func (c *context) Write(id world.ObjectID, fn func(*world.State)) error {
	return c.n.Write(id, fn)
}
func (c *context) WriteTo(id world.ObjectID, s *world.Schema, fn func(*world.State)) error {
	return c.n.WriteTo(id, s, fn)
}

// buildPeerViews gathers what each peer's primaries need, as far as this
// node knows: the interests and anticipated boxes of the replicas it holds
// of them (interest is mostly mutual: a holder's primaries are near the
// objects it needs, and this node holds them when its own primaries are
// near). For Config.FarMargin, the boxes widened by FarMargin, by peer;
// for Config.PushMutual, the interests widened by Prefetch, in n.push.
func (n *Node) buildPeerViews() {
	if !n.far && n.push == nil {
		return
	}
	if n.push != nil {
		n.push.Reset()
	}
	if n.far {
		n.peerBoxes = n.peerBoxes[:0]
		clear(n.peerOff)
	}
	all := n.peerScr[:0]
	m, pf := n.cfg.FarMargin, n.cfg.Prefetch
	n.store.RangeReplicas(func(obj world.Object, from wire.NodeID) bool {
		n.boxScr = n.appendInterest(n.boxScr[:0], obj)
		if n.push != nil {
			for _, b := range n.boxScr {
				n.push.Add(from, b.Expand(pf, pf))
			}
		}
		if !n.far {
			return true
		}
		n.boxScr = n.appendAnticipated(n.boxScr, obj)
		for _, b := range n.boxScr {
			all = append(all, peerBox{from: from, b: b.Expand(m, m), ok: true})
		}
		if len(n.boxScr) == 0 {
			all = append(all, peerBox{from: from})
		}
		return true
	})
	if n.push != nil {
		if c := locate.AutoCell(n.push.MeanWidth(), n.push.Cell()); c != n.push.Cell() {
			n.push.SetCell(c)
		}
	}
	if !n.far {
		return
	}
	slices.SortStableFunc(all, func(a, b peerBox) int { return cmp.Compare(a.from, b.from) })
	for i := 0; i < len(all); {
		j, start := i, len(n.peerBoxes)
		for ; j < len(all) && all[j].from == all[i].from; j++ {
			if all[j].ok {
				n.peerBoxes = append(n.peerBoxes, all[j].b)
			}
		}
		n.peerOff[all[i].from] = [2]int{start, len(n.peerBoxes)}
		i = j
	}
	n.peerScr = all[:0]
}

// isFar reports whether primary obj is far from what holder to needs (see
// Config.FarMargin): known boxes of the holder's primaries, none of which
// the object's sweep over the next FarEvery meets.
func (n *Node) isFar(to wire.NodeID, obj world.Object) bool {
	r, ok := n.peerOff[to]
	if !ok || r[0] == r[1] {
		return false // nothing known of what the holder needs
	}
	p := obj.State().Location()
	sweep := world.Box{Min: p, Max: p}
	if v, ok := locate.MoverVelocity(obj); ok {
		dt := n.cfg.FarEvery.Seconds()
		for d := range n.dims {
			q := p[d] + v[d]*dt
			sweep.Min[d], sweep.Max[d] = min(p[d], q), max(p[d], q)
		}
	}
	for _, b := range n.peerBoxes[r[0]:r[1]] {
		if b.Intersects(sweep, n.dims) {
			return false
		}
	}
	return true
}
