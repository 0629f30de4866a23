package replica

import (
	"time"

	"github.com/overworld/overworld/wire"
	"github.com/overworld/overworld/world"
)

// A migration's fence leaves two nodes with a copy that could take the
// object over: the migration's target, already the backup, and the former
// backup, until it gives its copy up. The two copies never both become the
// primary:
//
//   - the target asks the former backup as soon as it holds a fenced copy
//     (a Claim), resent until answered; the former backup grants by giving
//     its own copy up (what the primary's release asks of it anyway), and
//     refuses when it took the object over or holds a newer version of
//     that epoch (a fence that was given up made it the backup again);
//   - should the primary die, the target takes the object over at once if
//     it was granted and its copy is fresh; otherwise it asks again and
//     waits for the answer, or for a majority to find the former backup
//     dead;
//   - a former backup that refused takes the object over itself, however
//     long ago its copy was refreshed.
//
// Asking before the primary dies keeps the answer's round trip out of the
// failover in the common case.

type claimMsg struct {
	to wire.NodeID
	c  wire.Claim
}

// grantFresh: a granted copy refreshed within this of its primary's last
// sign of life takes the object over without asking again (a fence given
// up since, which made the former backup the backup again, stopped the
// refreshes and released this copy).
const grantFresh = 2 * backupKeepalive

// grantedFor is how long a former backup that granted a claim ignores
// backup states from before the fence that were still on their way: they
// left the primary before the fenced copy did, which the asker received
// before it asked.
const grantedFor = 100 * time.Millisecond

// askFence asks the former backup of fenced copy b of id for its grant,
// every WriteRetry until answered.
func (s *Store) askFence(now time.Duration, id world.ObjectID, b *bcopy) {
	if b.fence == 0 || b.granted && b.claimFor == 0 || now-b.askAt < s.cfg.WriteRetry && b.askAt != 0 {
		return
	}
	b.askAt = now
	s.au.claimq = append(s.au.claimq, claimMsg{to: b.fence, c: wire.Claim{ID: id, Epoch: b.epoch, Version: b.version}})
}

// startClaim holds back the takeover of copy b of id, its primary n dead,
// until its fence's former backup grants it.
func (s *Store) startClaim(now time.Duration, id world.ObjectID, b *bcopy, n wire.NodeID) {
	b.claimFor = n
	b.askAt = 0 // ask at once
	s.stats.Claims++
	s.au.health.watch(b.fence, now)
	s.askFence(now, id, b)
}

// fenceDead takes over the objects whose claims waited for node n's
// grant: found dead by a majority, n cannot take them over.
func (s *Store) fenceDead(now time.Duration, n wire.NodeID) {
	for _, id := range sortedIDs(s.au.bk) {
		if b := s.au.bk[id]; b.claimFor != 0 && b.fence == n {
			s.promote(now, id, b, b.claimFor)
		}
	}
}

// claimIn handles a claim or its answer from node from.
func (s *Store) claimIn(now time.Duration, from wire.NodeID, c wire.Claim) {
	b := s.au.bk[c.ID]
	if c.Answer != wire.ClaimAsk {
		if b == nil || b.fence != from || b.epoch != c.Epoch {
			s.stats.Ignored++
			return
		}
		switch {
		case c.Answer == wire.ClaimRefused:
			delete(s.au.bk, c.ID)
		case b.claimFor != 0:
			s.promote(now, c.ID, b, b.claimFor)
		default:
			b.granted = true
		}
		return
	}
	answer := wire.ClaimGranted
	switch e := s.objs.Get(c.ID); {
	case e != nil && e.primary && e.epoch > c.Epoch:
		answer = wire.ClaimRefused // taken over here already
	case b != nil && b.epoch == c.Epoch && b.version > c.Version && b.fence == 0:
		answer = wire.ClaimRefused // backed up here again since: this copy is the newer
		b.refused = true
	case b != nil && b.epoch <= c.Epoch && b.fence == 0:
		// Give the copy up, and take none again from states still on
		// their way from before the fence: for a moment, and no newer
		// than the asker's. A later one is the primary backing the
		// object up here again (the fence given up, or the asker found
		// dead), which must not wait.
		delete(s.au.bk, c.ID)
		s.au.relIn[c.ID] = relMark{from: b.primary, epoch: c.Epoch, version: c.Version, until: now + grantedFor}
	}
	s.au.claimq = append(s.au.claimq, claimMsg{to: from, c: wire.Claim{ID: c.ID, Epoch: c.Epoch, Version: c.Version, Answer: answer}})
}
