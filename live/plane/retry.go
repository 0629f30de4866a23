package plane

import (
	"fmt"
	"time"

	"github.com/overworld/overworld/control"
	"github.com/overworld/overworld/wire"
)

// Stranded migrations. A migration a node failed (an error, no answer,
// or what it migrated still on it after chainWait: settle) leaves the
// objects of a region or an instance on the old node while the placement
// holds them moved. The plane records each such migration (the node, the
// region or instance, the request, when it failed) and makes it again at
// a later poll, until it succeeds (reconciliation):
//
//   - only while nothing of its kind is in flight (the region
//     migrations; the instance plane's batches of requests, which run in
//     order), so that a retry does not race the requests of a decision
//     still being carried out;
//   - only while the placement still asks for the same move: a region
//     whose core changed, or an instance placed elsewhere (or closed),
//     drops its record, the new decision having made its own requests (a
//     decision that migrates a region or an instance drops that region's
//     or instance's records at once);
//   - only on a node of the placement that is up: a node found down or
//     taken out of the placement (an enrolled server revoked or gone)
//     drops its records, its objects failing over by another path; a
//     player host is asked while its instance's placement still names it;
//   - with a backoff: first one Poll after the failure, then twice as
//     long after each failed retry, up to retryMax (or Poll, if longer),
//     so that a node that stays unreachable is not hammered.
//
// The instance records a server did not get (its POST /admin/instances
// failed) are sent again the same way, at the next poll with no batch in
// flight.
//
// Stats counts a region migration's failures, retries and the records
// waiting (RegionMigrationErrors, RegionMigrationRetries,
// RegionMigrationsPending), InstancesState an instance's (Failed,
// MigrationRetries, MigrationsPending); both reach GET /metrics. A retry
// that succeeds is logged at Info with the retries it took.

// retryMax caps the backoff between two retries of a stranded migration.
const retryMax = 30 * time.Second

// stranded is a migration that failed, kept to be made again.
type stranded struct {
	// call is the migration (its node, box and target; no want list).
	call nodeCall
	// chain is the chained migrations that followed it in its batch (an
	// overflow's leg from the replicated host to the host): made again
	// after it.
	chain []nodeCall
	// to is the node migrated to.
	to uint32
	// region is the region migrated (-1: an instance's migration).
	region int
	// inst is the instance migrated, at the placement it had when its
	// decision was made.
	inst string
	at   instanceAt
	// err is the latest failure; first when the first one came.
	err   string
	first time.Time
	// tries is the retries made; wait the backoff after the latest
	// failure, next when the migration may be made again.
	tries int
	wait  time.Duration
	next  time.Time
	// busy: a retry is in flight.
	busy bool
}

// instanceAt is what an instance migration's target depends on: the
// instance's node and replicated host.
type instanceAt struct {
	node, replica wire.NodeID
	hosted        bool
}

func placedAt(p control.Placement) instanceAt {
	return instanceAt{node: p.Node, replica: p.Replica, hosted: p.Hosted}
}

// strandedBook is the stranded migrations of one kind, by node and
// request.
type strandedBook map[string]*stranded

// key is what identifies a migration: its node and request.
func (c nodeCall) key() string { return fmt.Sprintf("%d %s", c.node, c.q.Encode()) }

// logAttrs names a stranded migration in a log line.
func (r *stranded) logAttrs() []any {
	a := []any{"node", r.call.node, "to", r.to}
	if r.region >= 0 {
		return append(a, "region", r.region)
	}
	return append(a, "instance", r.inst)
}

// addStranded records migration r, which failed at wall (s.mu held), to be made
// again one Poll later. A record of the same migration is replaced.
func (s *Server) addStranded(b strandedBook, r *stranded, wall time.Time) {
	r.call.chained = false // its predecessor's objects are not followed again
	r.first, r.wait, r.next = wall, s.cfg.Poll, wall.Add(s.cfg.Poll)
	b[r.call.key()] = r
	s.cfg.Log.Info("migration failed: to be made again", append(r.logAttrs(), "in", r.wait, "err", r.err)...)
}

// retried settles the retry of r that ended (s.mu held): done, its
// record goes; failed, it waits twice as long as before. A record
// dropped or replaced meanwhile is left alone.
func (s *Server) retried(b strandedBook, r *stranded, err error) {
	wall, _ := s.now()
	r.busy = false
	if b[r.call.key()] != r {
		if err == nil {
			s.cfg.Log.Info("migration made again", append(r.logAttrs(), "retries", r.tries, "after", wall.Sub(r.first))...)
		}
		return
	}
	if err == nil {
		delete(b, r.call.key())
		s.cfg.Log.Info("migration made again", append(r.logAttrs(), "retries", r.tries, "after", wall.Sub(r.first))...)
		return
	}
	r.err = err.Error()
	r.wait = min(2*r.wait, max(retryMax, s.cfg.Poll))
	r.next = wall.Add(r.wait)
	s.cfg.Log.Info("migration retry failed", append(r.logAttrs(), "retries", r.tries, "in", r.wait, "err", r.err)...)
}

// dropStranded forgets the records for which stale returns a reason (s.mu held).
func (s *Server) dropStranded(b strandedBook, stale func(*stranded) string) {
	for _, k := range sortedKeys(b) {
		r := b[k]
		if why := stale(r); why != "" {
			delete(b, k)
			s.cfg.Log.Info("failed migration dropped", append(r.logAttrs(), "why", why, "retries", r.tries)...)
		}
	}
}

// due returns the records to make again at wall, marked busy and
// counted as tried, in the order of their keys (s.mu held).
func (b strandedBook) due(wall time.Time) []*stranded {
	var out []*stranded
	for _, k := range sortedKeys(b) {
		if r := b[k]; !r.busy && !wall.Before(r.next) {
			r.busy = true
			r.tries++
			out = append(out, r)
		}
	}
	return out
}

// placedUp returns why node n may not be asked to migrate ("" if it
// may): it must be a node of the placement that is up.
func (s *Server) placedUp(n uint32) string {
	v, ok := s.nodes[n]
	switch {
	case !ok:
		return "node removed"
	case !v.up:
		return "node down"
	}
	return ""
}

// retryMigrations makes the stranded migrations again where the world
// still differs from the placement (s.mu held; the requests run in the
// background). PollOnce calls it after every round of polls.
func (s *Server) retryMigrations(wall time.Time) {
	s.retryRegions(wall)
	s.retryInstances(wall)
}

// retryRegions makes stranded region migrations again.
func (s *Server) retryRegions(wall time.Time) {
	s.dropStranded(s.regionStranded, func(r *stranded) string {
		if s.plane == nil {
			return "placement dropped"
		}
		if core, ok := s.plane.Core(r.region); !ok || uint32(core) != r.to {
			return "placement changed"
		}
		return s.placedUp(r.call.node)
	})
	if s.stats.Rebuilt && s.regionBusy == 0 {
		for _, r := range s.regionStranded.due(wall) {
			s.stats.RegionMigrationRetries++
			c := r.call
			c.admin = s.nodes[c.node].Admin // it may have enrolled again from elsewhere
			s.cfg.Log.Debug("migration retry", append(r.logAttrs(), "retry", r.tries)...)
			s.runRegionCall(c, r.region, r.to, r)
		}
	}
	s.stats.RegionMigrationsPending = len(s.regionStranded)
}

// retryInstances makes stranded instance migrations again.
func (s *Server) retryInstances(wall time.Time) {
	y := s.inst
	if y == nil {
		return
	}
	s.dropStranded(y.stranded, func(r *stranded) string {
		if p, ok := y.x.Where(r.inst); !ok {
			return "instance closed"
		} else if placedAt(p) != r.at {
			return "placement changed"
		}
		for _, c := range append([]nodeCall{r.call}, r.chain...) {
			if !s.isServer(c.node) {
				if s.adminOf(wire.NodeID(c.node)) == "" {
					return "player host unknown"
				}
				continue // a player host: the placement names it
			}
			if why := s.placedUp(c.node); why != "" {
				return why
			}
		}
		return ""
	})
	if s.stats.Rebuilt && s.instancesIdle() && y.resend {
		// Records a node did not get: sent again, as a batch of their own.
		y.resend = false
		if calls := s.recordCalls(); len(calls) > 0 {
			s.queueCalls(func() { s.runCalls(calls, nil) })
		}
	}
	if s.stats.Rebuilt && s.instancesIdle() {
		due := y.stranded.due(wall)
		if len(due) > 0 {
			type retry struct {
				r     *stranded
				calls []nodeCall
			}
			var rs []retry
			for _, r := range due {
				y.retries++
				calls := append([]nodeCall{r.call}, r.chain...)
				for i := range calls {
					calls[i].admin = s.adminOf(wire.NodeID(calls[i].node))
				}
				s.cfg.Log.Debug("migration retry", append(r.logAttrs(), "retry", r.tries)...)
				rs = append(rs, retry{r, calls})
			}
			s.queueCalls(func() {
				for _, x := range rs {
					s.runCalls(x.calls, x.r)
				}
			})
		}
	}
}

// instancesIdle reports whether no batch of instance requests is in
// flight (s.mu held).
func (s *Server) instancesIdle() bool {
	if s.inst.last == nil {
		return true
	}
	select {
	case <-s.inst.last:
		return true
	default:
		return false
	}
}
