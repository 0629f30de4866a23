package replica

import (
	"time"

	"github.com/overworld/overworld/wire"
	"github.com/overworld/overworld/world"
)

// A migration's fence leaves two nodes with a copy that could take the
// object over: the migration's target, already the backup, and the former
// backup, until it confirms that it gave its copy up. Should the primary
// die in between, the target asks the former backup first (a Claim), and
// the two copies never both become the primary:
//
//   - the target takes the object over only when granted, or when a
//     majority finds the former backup dead;
//   - the former backup grants only by giving its own copy up, and refuses
//     when it took the object over or holds a newer version of that epoch
//     (a fence that was given up made it the backup again), in which case
//     it takes the object over itself, however long ago its copy was
//     refreshed.

type claimMsg struct {
	to wire.NodeID
	c  wire.Claim
}

// claim is a copy's pending takeover, waiting for its fence's grant.
type claim struct {
	dead   wire.NodeID // the primary's node, found dead
	sentAt time.Duration
}

// startClaim holds back the takeover of copy b of id, its primary n dead,
// until its fence's former backup grants it.
func (s *Store) startClaim(now time.Duration, id world.ObjectID, b *bcopy, n wire.NodeID) {
	b.claim = &claim{dead: n, sentAt: now - s.cfg.WriteRetry}
	s.stats.Claims++
	s.flushClaim(now, id, b)
}

// flushClaim resends the question of pending claim b of id.
func (s *Store) flushClaim(now time.Duration, id world.ObjectID, b *bcopy) {
	s.au.health.watch(b.fence, now)
	if now-b.claim.sentAt < s.cfg.WriteRetry {
		return
	}
	b.claim.sentAt = now
	s.au.claimq = append(s.au.claimq, claimMsg{to: b.fence, c: wire.Claim{ID: id, Epoch: b.epoch, Version: b.version}})
}

// fenceDead takes over the objects whose claims waited for node n's
// grant: found dead by a majority, n cannot take them over.
func (s *Store) fenceDead(now time.Duration, n wire.NodeID) {
	for _, id := range sortedIDs(s.au.bk) {
		if b := s.au.bk[id]; b.claim != nil && b.fence == n {
			s.promote(now, id, b, b.claim.dead)
		}
	}
}

// claimIn handles a claim or its answer from node from.
func (s *Store) claimIn(now time.Duration, from wire.NodeID, c wire.Claim) {
	b := s.au.bk[c.ID]
	if c.Answer != wire.ClaimAsk {
		if b == nil || b.claim == nil || b.fence != from || b.epoch != c.Epoch {
			s.stats.Ignored++
			return
		}
		if c.Answer == wire.ClaimGranted {
			s.promote(now, c.ID, b, b.claim.dead)
		} else {
			delete(s.au.bk, c.ID)
		}
		return
	}
	answer := wire.ClaimGranted
	switch e := s.objs.Get(c.ID); {
	case e != nil && e.primary && e.epoch > c.Epoch:
		answer = wire.ClaimRefused // taken over here already
	case b != nil && b.epoch == c.Epoch && b.version > c.Version && b.claim == nil:
		answer = wire.ClaimRefused // backed up here again since: this copy is the newer
		b.refused = true
	case b != nil && b.epoch <= c.Epoch && b.claim == nil:
		// Give the copy up, and do not take one again from that primary
		// at that epoch (should it still be alive, cut off).
		delete(s.au.bk, c.ID)
		s.au.relIn[c.ID] = relMark{from: b.primary, epoch: c.Epoch, until: now + claimedFor}
	}
	s.au.claimq = append(s.au.claimq, claimMsg{to: from, c: wire.Claim{ID: c.ID, Epoch: c.Epoch, Version: c.Version, Answer: answer}})
}

// claimedFor is how long a former backup that granted a claim refuses new
// copies from the primary it gave up.
const claimedFor = 30 * time.Second
