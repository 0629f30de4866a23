package locate

import (
	"cmp"
	"errors"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/overworld/overworld/wire"
	"github.com/overworld/overworld/world"
)

// Store is the soft state one rendezvous node of the ring keeps for the
// key ranges it owns (Colyseus §6.2, "Soft State Storage"): publications
// (an object's location, published by its primary's node) and
// subscriptions (a node's range queries), each stored with its own expiry
// and forgotten when it passes. A new subscription is matched at once
// against the stored publications, and a new publication against the
// stored subscriptions; each match names the subscriber to deliver the
// publication to. Matching is exact (world.Box.Contains over the store's
// dimensions) and indexed: publications in a Points grid, subscription
// boxes in a Boxes grid (index.go), proven equal to a linear scan on
// random operation sequences.
//
// A subscription is named by its subscriber and a sequence number the
// subscriber chooses (Subscription.Seq), so that a node may keep several
// independent subscriptions, each with its own TTL (the aggregation filter
// sends merged boxes separately). Subscribing again under the same name
// replaces the boxes; an unchanged refresh of a live subscription only
// extends its expiry (the subscriber already has every stored publication
// in it). A publication is named by its object: publishing again moves it
// and extends it, and is matched again (the subscribers cache publications
// for their TTL, so a refresh is what keeps them). A node is never sent its
// own publications.
//
// Expiry: every call takes the current time and first forgets everything
// whose expiry is at or before it, so no publication or subscription is
// ever seen after its TTL (Expire does only that). Time must not go
// backwards. When the ring moves part of this node's key range to another
// node, Export copies the state of that range into a Handoff for the new
// owner's Import, and Drop forgets it here.
//
// The caller (the ring-backed locator) must: build one Store per
// rendezvous node with the cluster's KeyMap; deliver every publication
// and subscription the ring routes here, with the frame's TTL; send each
// returned Match to its subscriber; call Expire once per frame; and
// Export, Drop and Import on key range changes. Store is not safe for
// concurrent use.
type Store struct {
	cfg StoreConfig
	now time.Duration

	pubs  *Points[pubEnt]
	subs  []subEnt // slots; free ones have live false
	free  []int32
	names map[subName]int32
	boxes *Boxes // owner = slot+1
	heap  []expiry

	owners []wire.NodeID
	ids    []world.ObjectID
	reach  world.Point // the longest segment stored per dimension (Sweep); only grows
	nodes  []wire.NodeID
	stats  StoreStats
}

// StoreStats counts what a Store did; all fields only grow. Published
// plus Subscribed is the rendezvous's share of the ring's load measure
// (publications and subscriptions routed here).
type StoreStats struct {
	Published   uint64 // publications stored (new or refreshed)
	Subscribed  uint64 // subscriptions stored, changed or refreshed
	Refreshed   uint64 // of those, unchanged refreshes (not matched again)
	Withdrawn   uint64 // subscriptions and publications removed on request
	Matches     uint64 // matches returned
	Told        uint64 // matches a new subscription did not return: another live subscription of its node had them
	Stale       uint64 // publications ignored: older (At) than the one stored from the same node
	Skipped     uint64 // matches not made: the publication's Skip list names the subscriber
	ExpiredPubs uint64 // publications forgotten when their TTL ran out
	ExpiredSubs uint64 // subscriptions forgotten when their TTL ran out
	Rejected    uint64 // calls rejected as bad input
	Exported    uint64 // publications and subscriptions exported
	Imported    uint64 // publications and subscriptions imported
	Dropped     uint64 // publications and subscriptions dropped after a hand-off
}

// StoreConfig configures a Store.
type StoreConfig struct {
	Dims int    // dimensions of the world's space (1 to world.MaxDims)
	Keys KeyMap // the cluster's key mapping (required)
	// MaxTTL caps the TTL accepted from any node (0: one minute), so that
	// a wrong or hostile TTL cannot pin state for ever.
	MaxTTL time.Duration
	// MaxBoxes caps the boxes of one subscription (0: 256).
	MaxBoxes int
	// Sweep: a publication with a velocity stands for the segment its
	// object covers over the next Sweep at that velocity (the period it
	// publishes at): it matches every subscription whose boxes meet the
	// segment's bounding box, so subscribers need not widen their boxes
	// for the publishers' movement between publications. 0: a
	// publication is its location alone (Colyseus §6.2's PubTime widening
	// is then the subscribers' part).
	Sweep time.Duration
	// SkipFor: a publication's Skip list holds this long after it
	// arrived (0: as long as the publication). An idle object's
	// publication lives longer than its holders stay holders; a node that
	// dropped the replica meanwhile must get it again when it subscribes.
	SkipFor time.Duration
}

// ErrRendezvous reports input a Store rejects (nothing was changed).
var ErrRendezvous = errors.New("locate: bad rendezvous input")

// Publication is a stored publication.
type Publication struct {
	ID    world.ObjectID
	Node  wire.NodeID // the node holding the primary
	Loc   world.Point
	Vel   world.Point   // its object's velocity when published (units/s)
	Key   uint64        // its key (KeyMap.PointKey(Loc)); set by the store
	Until time.Duration // its expiry
	At    time.Duration // when Node published it, on Node's clock (wire.LocPub.At)
	Skip  []wire.NodeID // nodes that need no match (Pub.Skip); set by Export and Publications
}

// Subscription is a stored subscription.
type Subscription struct {
	Node   wire.NodeID // the subscriber
	Seq    uint64      // the subscriber's name for it
	Boxes  []world.Box
	Ranges []KeyRange    // the key ranges of its boxes, merged; set by the store
	Until  time.Duration // its expiry
}

// Match says: deliver publication Pub to node To.
type Match struct {
	To  wire.NodeID
	Pub Publication
}

// Handoff is the state of a key range moving between rendezvous nodes.
type Handoff struct {
	Pubs []Publication  // in ID order
	Subs []Subscription // in (Node, Seq) order
}

// newerPub reports whether a publication from node, published at at and
// expiring at until, is newer than the stored one old: by publication time
// when both come from the same node, else (clocks differ) by expiry.
func newerPub(node wire.NodeID, at, until time.Duration, old pubEnt) bool {
	if node == old.node && at != old.at {
		return at > old.at
	}
	return until > old.until
}

type pubEnt struct {
	node      wire.NodeID
	vel       world.Point
	key       uint64
	until, at time.Duration
	skip      skipSet // until now + StoreConfig.SkipFor
}

// skipUntil returns until when a Skip list received at now holds.
func (s *Store) skipUntil(now, until time.Duration) time.Duration {
	if s.cfg.SkipFor > 0 {
		return min(until, now+s.cfg.SkipFor)
	}
	return until
}

// skipSet holds a publication's Skip list (Pub.Skip, the first MaxSkip
// nodes) inline, so that storing a publication allocates nothing.
// It holds until a time: an idle object's publication lives longer than
// its holders stay holders, and a node that dropped the replica meanwhile
// must be matched again when it subscribes.
type skipSet struct {
	n     uint8
	ids   [MaxSkip]wire.NodeID
	until time.Duration
}

// set stores nodes, to hold until until.
func (s *skipSet) set(nodes []wire.NodeID, until time.Duration) {
	s.n, s.until = uint8(copy(s.ids[:], nodes)), until
}

// has reports whether node n needs no match of the publication at now.
func (s *skipSet) has(n wire.NodeID, now time.Duration) bool {
	return now < s.until && slices.Contains(s.ids[:s.n], n)
}

// list returns a copy of the nodes while they hold at now (nil when
// empty or lapsed).
func (s *skipSet) list(now time.Duration) []wire.NodeID {
	if s.n == 0 || now >= s.until {
		return nil
	}
	return slices.Clone(s.ids[:s.n])
}

type subName struct {
	node wire.NodeID
	seq  uint64
}

type subEnt struct {
	name   subName
	boxes  []world.Box
	ranges []KeyRange
	until  time.Duration
	gen    uint32 // bumped when the slot is freed
	live   bool
}

// expiry is a heap entry: a publication (slot < 0) or subscription slot
// that expires at until, if it still has that expiry (else stale).
type expiry struct {
	until time.Duration
	id    world.ObjectID // publication
	slot  int32          // subscription, or -1
	gen   uint32
}

// NewStore returns an empty store, or an error naming a bad field.
func NewStore(cfg StoreConfig) (*Store, error) {
	if cfg.Dims < 1 || cfg.Dims > world.MaxDims {
		return nil, fmt.Errorf("%w: store over %d dimensions (want 1 to %d)", ErrLocateConfig, cfg.Dims, world.MaxDims)
	}
	if cfg.Keys == nil {
		return nil, fmt.Errorf("%w: store without a KeyMap", ErrLocateConfig)
	}
	if cfg.MaxTTL == 0 {
		cfg.MaxTTL = time.Minute
	}
	if cfg.MaxBoxes == 0 {
		cfg.MaxBoxes = 256
	}
	if cfg.MaxTTL < 0 || cfg.MaxTTL > time.Hour || cfg.MaxBoxes < 0 || cfg.SkipFor < 0 {
		return nil, fmt.Errorf("%w: store MaxTTL %v, MaxBoxes %d (want positive, MaxTTL at most an hour)", ErrLocateConfig, cfg.MaxTTL, cfg.MaxBoxes)
	}
	return &Store{cfg: cfg, pubs: NewPoints[pubEnt](cfg.Dims, DefaultCell), names: map[subName]int32{},
		boxes: NewBoxes(cfg.Dims, DefaultCell)}, nil
}

// Config returns the store's configuration (defaults filled in).
func (s *Store) Config() StoreConfig { return s.cfg }

// Stats returns the counters.
func (s *Store) Stats() StoreStats { return s.stats }

// Len returns the number of stored publications and subscriptions.
func (s *Store) Len() (pubs, subs int) { return s.pubs.Len(), len(s.names) }

// advance checks that time does not go backwards, then expires.
func (s *Store) advance(now time.Duration) error {
	if err := s.checkTime(now); err != nil {
		return err
	}
	s.expire(now)
	return nil
}

// maxStoreTime keeps now + MaxTTL from overflowing (292 years minus an
// hour: a virtual clock never gets there).
const maxStoreTime = time.Duration(math.MaxInt64) - time.Hour

func (s *Store) checkTime(now time.Duration) error {
	switch {
	case now < s.now:
		s.stats.Rejected++
		return fmt.Errorf("%w: time %v is before the store's %v", ErrRendezvous, now, s.now)
	case now > maxStoreTime-s.cfg.MaxTTL:
		s.stats.Rejected++
		return fmt.Errorf("%w: time %v is too large", ErrRendezvous, now)
	}
	return nil
}

// Expire forgets every publication and subscription whose expiry is at or
// before now, and re-buckets the indexes when the subscriptions' typical
// box width drifted away from the cell size.
func (s *Store) Expire(now time.Duration) error {
	if err := s.advance(now); err != nil {
		return err
	}
	if c := AutoCell(s.boxes.MeanWidth(), s.boxes.Cell()); c != s.boxes.Cell() {
		s.boxes.SetCell(c)
		s.pubs.SetCell(c)
	}
	return nil
}

func (s *Store) expire(now time.Duration) {
	s.now = now
	for len(s.heap) > 0 && s.heap[0].until <= now {
		e := s.heapPop()
		if e.slot < 0 {
			if _, p, ok := s.pubs.Get(e.id); ok && p.until == e.until {
				s.pubs.Delete(e.id)
				s.stats.ExpiredPubs++
			}
		} else if sub := &s.subs[e.slot]; sub.live && sub.gen == e.gen && sub.until == e.until {
			s.removeSub(e.slot)
			s.stats.ExpiredSubs++
		}
	}
	// Refreshes leave stale entries behind: rebuild when they dominate.
	if len(s.heap) > 64 && len(s.heap) > 4*(s.pubs.Len()+len(s.names)) {
		s.rebuildHeap()
	}
}

func (s *Store) rebuildHeap() {
	s.heap = s.heap[:0]
	for i := range s.pubs.Len() {
		id, _, p := s.pubs.At(i)
		s.heap = append(s.heap, expiry{until: p.until, id: id, slot: -1})
	}
	for i := range s.subs {
		if sub := &s.subs[i]; sub.live {
			s.heap = append(s.heap, expiry{until: sub.until, slot: int32(i), gen: sub.gen})
		}
	}
	for i := len(s.heap)/2 - 1; i >= 0; i-- {
		s.down(i)
	}
}

func (s *Store) heapPush(e expiry) {
	s.heap = append(s.heap, e)
	for i := len(s.heap) - 1; i > 0; {
		p := (i - 1) / 2
		if s.heap[p].until <= s.heap[i].until {
			break
		}
		s.heap[p], s.heap[i] = s.heap[i], s.heap[p]
		i = p
	}
}

func (s *Store) heapPop() expiry {
	e := s.heap[0]
	last := len(s.heap) - 1
	s.heap[0] = s.heap[last]
	s.heap = s.heap[:last]
	s.down(0)
	return e
}

func (s *Store) down(i int) {
	for {
		l := 2*i + 1
		if l >= len(s.heap) {
			return
		}
		if r := l + 1; r < len(s.heap) && s.heap[r].until < s.heap[l].until {
			l = r
		}
		if s.heap[i].until <= s.heap[l].until {
			return
		}
		s.heap[i], s.heap[l] = s.heap[l], s.heap[i]
		i = l
	}
}

func (s *Store) ttl(ttl time.Duration) (time.Duration, error) {
	if ttl <= 0 {
		s.stats.Rejected++
		return 0, fmt.Errorf("%w: TTL %v (want positive)", ErrRendezvous, ttl)
	}
	return s.now + min(ttl, s.cfg.MaxTTL), nil
}

func (s *Store) checkLoc(id world.ObjectID, loc *world.Point) error {
	for d := range s.cfg.Dims {
		if math.IsNaN(loc[d]) {
			s.stats.Rejected++
			return fmt.Errorf("%w: publication of %v has a NaN location (dimension %d)", ErrRendezvous, id, d)
		}
	}
	return nil
}

func (s *Store) checkBoxes(node wire.NodeID, boxes []world.Box) error {
	if len(boxes) > s.cfg.MaxBoxes {
		s.stats.Rejected++
		return fmt.Errorf("%w: subscription of node %d has %d boxes (at most %d)", ErrRendezvous, node, len(boxes), s.cfg.MaxBoxes)
	}
	for i := range boxes {
		if err := boxes[i].Validate(s.cfg.Dims); err != nil {
			s.stats.Rejected++
			return fmt.Errorf("%w: subscription of node %d, box %d: %w", ErrRendezvous, node, i, err)
		}
	}
	return nil
}

// MaxSkip is how many nodes a publication's Skip list keeps.
const MaxSkip = 8

// Pub is a publication as Publish receives it.
type Pub struct {
	ID   world.ObjectID
	Node wire.NodeID // the node holding the primary
	Loc  world.Point
	Vel  world.Point   // its object's velocity (units/s; StoreConfig.Sweep)
	At   time.Duration // when Node published it, on Node's clock
	TTL  time.Duration
	// Skip lists nodes that need no match: they hold a replica of the
	// object already (its primary sends them updates). The first MaxSkip
	// are kept; the others are matched as usual.
	Skip []wire.NodeID
}

// Publish stores (or moves and refreshes) publication p for p.TTL (capped
// at MaxTTL), and appends to dst one Match per other node with a live
// subscription containing p.Loc that p.Skip does not list, in node order.
// A publication older than the live one stored from the same node (an
// earlier At: it was overtaken on the way) is ignored and counted as
// Stale. A NaN location, a non-positive TTL or a time before the store's
// is rejected with nothing changed.
func (s *Store) Publish(now time.Duration, p Pub, dst []Match) ([]Match, error) {
	id, node, loc, at, ttl := p.ID, p.Node, p.Loc, p.At, p.TTL
	if err := s.checkTime(now); err != nil {
		return dst, err
	}
	if err := s.checkLoc(id, &loc); err != nil {
		return dst, err
	}
	if ttl <= 0 {
		_, err := s.ttl(ttl)
		return dst, err
	}
	s.expire(now)
	if _, old, ok := s.pubs.Get(id); ok && old.node == node && old.at > at {
		s.stats.Stale++
		return dst, nil
	}
	until, _ := s.ttl(ttl)
	key := s.cfg.Keys.PointKey(loc)
	vel := s.sweepVel(&p.Vel)
	ent := pubEnt{node: node, vel: vel, key: key, until: until, at: at}
	ent.skip.set(p.Skip, s.skipUntil(now, until))
	s.pubs.Set(id, loc, ent)
	s.heapPush(expiry{until: until, id: id, slot: -1})
	s.stats.Published++
	pub := Publication{ID: id, Node: node, Loc: loc, Vel: vel, Key: key, Until: until, At: at}
	if vel == (world.Point{}) {
		s.owners = s.boxes.Owners(loc, s.owners[:0])
	} else {
		s.owners = s.boxes.Meeting(s.swept(loc, vel), s.owners[:0])
	}
	s.nodes = s.nodes[:0]
	for _, o := range s.owners {
		if n := s.subs[o-1].name.node; n != node {
			if ent.skip.has(n, now) {
				s.stats.Skipped++
				continue
			}
			s.nodes = append(s.nodes, n)
		}
	}
	slices.Sort(s.nodes)
	for i, n := range s.nodes {
		if i == 0 || n != s.nodes[i-1] {
			dst = append(dst, Match{To: n, Pub: pub})
			s.stats.Matches++
		}
	}
	return dst, nil
}

// Unpublish forgets the publication of id (when its object is deleted).
func (s *Store) Unpublish(now time.Duration, id world.ObjectID) error {
	if err := s.advance(now); err != nil {
		return err
	}
	if s.pubs.Delete(id) { // its heap entry goes stale
		s.stats.Withdrawn++
	}
	return nil
}

// Subscribe stores subscription seq of node over boxes for ttl (capped at
// MaxTTL), replacing the boxes of a previous one under the same name, and
// appends to dst a Match to node for every live publication of another
// node that one of the boxes contains and no other live subscription of
// node does (node has those already; see told), in ID order. A live subscription
// refreshed with the same boxes is only extended (no matches). No boxes
// removes the subscription. NaN bounds, too many boxes, a non-positive
// TTL or a time before the store's are rejected with nothing changed.
func (s *Store) Subscribe(now time.Duration, node wire.NodeID, seq uint64, boxes []world.Box, ttl time.Duration, dst []Match) ([]Match, error) {
	if err := s.checkTime(now); err != nil {
		return dst, err
	}
	if err := s.checkBoxes(node, boxes); err != nil {
		return dst, err
	}
	if ttl <= 0 {
		_, err := s.ttl(ttl)
		return dst, err
	}
	s.expire(now)
	name := subName{node, seq}
	slot, ok := s.names[name]
	if len(boxes) == 0 {
		if ok {
			s.removeSub(slot)
			s.stats.Withdrawn++
		}
		return dst, nil
	}
	until, _ := s.ttl(ttl)
	s.stats.Subscribed++
	if ok && slices.Equal(s.subs[slot].boxes, boxes) {
		s.stats.Refreshed++
		s.subs[slot].until = until
		s.heapPush(expiry{until: until, slot: slot, gen: s.subs[slot].gen})
		return dst, nil
	}
	if !ok {
		slot = s.newSlot(name)
	}
	sub := &s.subs[slot]
	sub.until = until
	sub.boxes = append(sub.boxes[:0], boxes...)
	sub.ranges = s.boxRanges(sub.boxes, sub.ranges[:0])
	s.boxes.Remove(wire.NodeID(slot + 1))
	for _, b := range sub.boxes {
		s.boxes.Add(wire.NodeID(slot+1), b)
	}
	s.heapPush(expiry{until: until, slot: slot, gen: sub.gen})

	s.ids = s.ids[:0]
	for _, b := range boxes {
		// A moving publication meets b if its segment does: query b
		// widened by the longest segment stored, then check each.
		s.ids = s.pubs.Query(b.Expand(s.reach, s.reach), s.ids)
	}
	if len(boxes) > 1 {
		slices.Sort(s.ids)
		s.ids = slices.Compact(s.ids)
	}
	for _, id := range s.ids {
		loc, p, _ := s.pubs.Get(id)
		if p.node == node || !s.meets(boxes, loc, p.vel) {
			continue
		}
		if p.skip.has(node, now) {
			s.stats.Skipped++
			continue
		}
		if s.told(node, slot, loc, p.vel) {
			s.stats.Told++
			continue
		}
		dst = append(dst, Match{To: node, Pub: Publication{ID: id, Node: p.node, Loc: loc, Vel: p.vel, Key: p.key, Until: p.until, At: p.at}})
		s.stats.Matches++
	}
	return dst, nil
}

// told reports whether another live subscription of node than slot
// contains loc. If one does, node already has the publication stored at
// loc: that subscription was matched with it, either when the publication
// arrived (it was live then) or when it was made (the publication was
// already here). A subscriber's successive subscriptions overlap (its
// interest moves a little between refreshes), so this spares re-sending
// most of what a new subscription covers.
func (s *Store) told(node wire.NodeID, slot int32, loc, vel world.Point) bool {
	if vel == (world.Point{}) {
		s.owners = s.boxes.Owners(loc, s.owners[:0])
	} else {
		s.owners = s.boxes.Meeting(s.swept(loc, vel), s.owners[:0])
	}
	for _, o := range s.owners {
		if o != wire.NodeID(slot+1) && s.subs[o-1].name.node == node {
			return true
		}
	}
	return false
}

// sweepVel returns the velocity a publication is stored with: v's first
// Dims components if the store sweeps and they are finite, else zero. It
// widens reach to the longest segment stored.
func (s *Store) sweepVel(v *world.Point) world.Point {
	var out world.Point
	if s.cfg.Sweep <= 0 {
		return out
	}
	t := s.cfg.Sweep.Seconds()
	for d := range s.cfg.Dims {
		if math.IsNaN(v[d]) || math.IsInf(v[d], 0) {
			return world.Point{}
		}
		out[d] = v[d]
	}
	for d := range s.cfg.Dims {
		s.reach[d] = max(s.reach[d], math.Abs(out[d])*t)
	}
	return out
}

// swept returns the bounding box of the segment a publication at loc with
// velocity vel covers over Sweep.
func (s *Store) swept(loc, vel world.Point) world.Box {
	t := s.cfg.Sweep.Seconds()
	b := world.Box{Min: loc, Max: loc}
	for d := range s.cfg.Dims {
		e := loc[d] + vel[d]*t
		b.Min[d], b.Max[d] = min(loc[d], e), max(loc[d], e)
	}
	return b
}

// meets reports whether one of boxes contains loc or, for a moving
// publication, meets its segment.
func (s *Store) meets(boxes []world.Box, loc, vel world.Point) bool {
	if vel == (world.Point{}) {
		for i := range boxes {
			if boxes[i].Contains(loc, s.cfg.Dims) {
				return true
			}
		}
		return false
	}
	seg := s.swept(loc, vel)
	for i := range boxes {
		if !boxes[i].Empty(s.cfg.Dims) && boxes[i].Intersects(seg, s.cfg.Dims) {
			return true
		}
	}
	return false
}

// boxRanges returns the merged key ranges of boxes.
func (s *Store) boxRanges(boxes []world.Box, dst []KeyRange) []KeyRange {
	for _, b := range boxes {
		dst = s.cfg.Keys.BoxRanges(b, dst)
	}
	return mergeRanges(dst)
}

// mergeRanges sorts rs and merges overlapping and adjacent ranges.
func mergeRanges(rs []KeyRange) []KeyRange {
	if len(rs) < 2 {
		return rs
	}
	slices.SortFunc(rs, func(a, b KeyRange) int { return cmp.Compare(a.Lo, b.Lo) })
	out := 0
	for i := 1; i < len(rs); i++ {
		if r := &rs[out]; rs[i].Lo <= r.Hi || rs[i].Lo == r.Hi+1 {
			r.Hi = max(r.Hi, rs[i].Hi)
		} else {
			out++
			rs[out] = rs[i]
		}
	}
	return rs[:out+1]
}

func (s *Store) newSlot(name subName) int32 {
	var slot int32
	if n := len(s.free); n > 0 {
		slot, s.free = s.free[n-1], s.free[:n-1]
	} else {
		slot = int32(len(s.subs))
		s.subs = append(s.subs, subEnt{})
	}
	s.subs[slot].name, s.subs[slot].live = name, true
	s.names[name] = slot
	return slot
}

func (s *Store) removeSub(slot int32) {
	sub := &s.subs[slot]
	s.boxes.Remove(wire.NodeID(slot + 1))
	delete(s.names, sub.name)
	*sub = subEnt{boxes: sub.boxes[:0], ranges: sub.ranges[:0], gen: sub.gen + 1}
	s.free = append(s.free, slot)
}

// Unsubscribe forgets subscription seq of node.
func (s *Store) Unsubscribe(now time.Duration, node wire.NodeID, seq uint64) error {
	if err := s.advance(now); err != nil {
		return err
	}
	if slot, ok := s.names[subName{node, seq}]; ok {
		s.removeSub(slot)
		s.stats.Withdrawn++
	}
	return nil
}

// Publications appends the stored publications to dst in ID order.
func (s *Store) Publications(dst []Publication) []Publication {
	start := len(dst)
	for i := range s.pubs.Len() {
		id, loc, p := s.pubs.At(i)
		dst = append(dst, Publication{ID: id, Node: p.node, Loc: loc, Vel: p.vel, Key: p.key, Until: p.until, At: p.at, Skip: p.skip.list(s.now)})
	}
	slices.SortFunc(dst[start:], func(a, b Publication) int { return cmp.Compare(a.ID, b.ID) })
	return dst
}

// Subscriptions appends the stored subscriptions to dst in (Node, Seq)
// order; their Boxes and Ranges are copies.
func (s *Store) Subscriptions(dst []Subscription) []Subscription {
	start := len(dst)
	for i := range s.subs {
		if sub := &s.subs[i]; sub.live {
			dst = append(dst, sub.export())
		}
	}
	slices.SortFunc(dst[start:], compareSubs)
	return dst
}

func (sub *subEnt) export() Subscription {
	x := Subscription{Node: sub.name.node, Seq: sub.name.seq, Boxes: slices.Clone(sub.boxes), Until: sub.until}
	if len(sub.ranges) > 0 {
		x.Ranges = slices.Clone(sub.ranges)
	}
	return x
}

func compareSubs(a, b Subscription) int {
	if c := cmp.Compare(a.Node, b.Node); c != 0 {
		return c
	}
	return cmp.Compare(a.Seq, b.Seq)
}

// InArc reports whether key k lies in the arc from lo to hi (inclusive)
// going up the circle: [lo, hi] when lo <= hi, else [lo, 2^64) ∪ [0, hi].
func InArc(k, lo, hi uint64) bool {
	if lo <= hi {
		return lo <= k && k <= hi
	}
	return k >= lo || k <= hi
}

// arcIntersects reports whether r shares a key with the arc [lo, hi].
func arcIntersects(r KeyRange, lo, hi uint64) bool {
	if lo <= hi {
		return r.Lo <= hi && lo <= r.Hi
	}
	return r.Hi >= lo || r.Lo <= hi
}

// arcCovers reports whether every key of r lies in the arc [lo, hi].
func arcCovers(r KeyRange, lo, hi uint64) bool {
	if lo <= hi {
		return lo <= r.Lo && r.Hi <= hi
	}
	return r.Lo >= lo || r.Hi <= hi
}

// Export fills h (reset first) with a copy of the state of the arc [lo,
// hi] (wrapping when lo > hi): the publications whose key lies in it, and
// the subscriptions with a key range that intersects it. Nothing changes.
func (s *Store) Export(lo, hi uint64, h *Handoff) {
	h.Pubs, h.Subs = h.Pubs[:0], h.Subs[:0]
	for i := range s.pubs.Len() {
		if id, loc, p := s.pubs.At(i); InArc(p.key, lo, hi) {
			// (A lapsed skip list is left out: it would hold again at the importer.)
			h.Pubs = append(h.Pubs, Publication{ID: id, Node: p.node, Loc: loc, Vel: p.vel, Key: p.key, Until: p.until, At: p.at, Skip: p.skip.list(s.now)})
		}
	}
	slices.SortFunc(h.Pubs, func(a, b Publication) int { return cmp.Compare(a.ID, b.ID) })
	for i := range s.subs {
		sub := &s.subs[i]
		if sub.live && slices.ContainsFunc(sub.ranges, func(r KeyRange) bool { return arcIntersects(r, lo, hi) }) {
			h.Subs = append(h.Subs, sub.export())
		}
	}
	slices.SortFunc(h.Subs, compareSubs)
	s.stats.Exported += uint64(len(h.Pubs) + len(h.Subs))
}

// Drop forgets the state this node no longer owns after handing off the
// arc [lo, hi]: the publications whose key lies in it and the
// subscriptions whose key ranges lie entirely in it (one that also reaches
// keys outside the arc is kept: this node may still own them).
func (s *Store) Drop(lo, hi uint64) {
	s.ids = s.ids[:0]
	for i := range s.pubs.Len() {
		if id, _, p := s.pubs.At(i); InArc(p.key, lo, hi) {
			s.ids = append(s.ids, id)
		}
	}
	for _, id := range s.ids {
		s.pubs.Delete(id)
	}
	s.stats.Dropped += uint64(len(s.ids))
	for i := range s.subs {
		sub := &s.subs[i]
		if sub.live && !slices.ContainsFunc(sub.ranges, func(r KeyRange) bool { return !arcCovers(r, lo, hi) }) {
			s.removeSub(int32(i))
			s.stats.Dropped++
		}
	}
}

// Import merges a hand-off into the store at time now: each publication
// replaces the stored one of the same object unless that one is newer (a
// later At from the same node, else a later expiry), each subscription the
// stored one of the same name unless that one expires later; those
// already expired are skipped. Keys and ranges
// are recomputed with this store's KeyMap. Nothing is matched: the node
// that handed the range off already delivered every match between the
// state it held. Bad entries (NaN, too many boxes) or a time before the
// store's reject the whole hand-off with nothing changed.
func (s *Store) Import(now time.Duration, h *Handoff) error {
	if err := s.checkTime(now); err != nil {
		return err
	}
	for i := range h.Pubs {
		if err := s.checkLoc(h.Pubs[i].ID, &h.Pubs[i].Loc); err != nil {
			return err
		}
	}
	for i := range h.Subs {
		if err := s.checkBoxes(h.Subs[i].Node, h.Subs[i].Boxes); err != nil {
			return err
		}
	}
	s.expire(now)
	maxUntil := now + s.cfg.MaxTTL
	for _, p := range h.Pubs {
		if p.Until <= now {
			continue
		}
		if _, old, ok := s.pubs.Get(p.ID); ok && !newerPub(p.Node, p.At, p.Until, old) {
			continue
		}
		until := min(p.Until, maxUntil)
		key := s.cfg.Keys.PointKey(p.Loc)
		ent := pubEnt{node: p.Node, vel: s.sweepVel(&p.Vel), key: key, until: until, at: p.At}
		ent.skip.set(p.Skip, s.skipUntil(now, until))
		s.pubs.Set(p.ID, p.Loc, ent)
		s.heapPush(expiry{until: until, id: p.ID, slot: -1})
		s.stats.Imported++
	}
	for _, in := range h.Subs {
		if in.Until <= now || len(in.Boxes) == 0 {
			continue
		}
		name := subName{in.Node, in.Seq}
		slot, ok := s.names[name]
		if ok && s.subs[slot].until >= in.Until {
			continue
		}
		if !ok {
			slot = s.newSlot(name)
		}
		sub := &s.subs[slot]
		sub.until = min(in.Until, maxUntil)
		sub.boxes = append(sub.boxes[:0], in.Boxes...)
		sub.ranges = s.boxRanges(sub.boxes, sub.ranges[:0])
		s.boxes.Remove(wire.NodeID(slot + 1))
		for _, b := range sub.boxes {
			s.boxes.Add(wire.NodeID(slot+1), b)
		}
		s.heapPush(expiry{until: sub.until, slot: slot, gen: sub.gen})
		s.stats.Imported++
	}
	return nil
}
