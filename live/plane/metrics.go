package plane

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/overworld/overworld/wire"
)

// Metrics: GET /metrics serves the plane's counts and state in the
// Prometheus text format. A collector reads them from the plane at each
// scrape (the same figures as GET /v1/state, /v1/instances and
// /v1/hosts), so nothing is counted twice and a restarted plane's
// counters start again from zero, as Prometheus expects of a process.

// metric describes one series family of the plane.
type metric struct {
	desc *prometheus.Desc
	kind prometheus.ValueType
}

func newMetric(name, help string, kind prometheus.ValueType, labels ...string) metric {
	return metric{prometheus.NewDesc("overworld_plane_"+name, help, labels, nil), kind}
}

var (
	mJoins         = newMetric("joins_total", "Players admitted (POST /v1/join) or found on a node and placed.", prometheus.CounterValue)
	mRefused       = newMetric("joins_refused_total", "Joins refused (no room, bad samples).", prometheus.CounterValue)
	mLeaves        = newMetric("leaves_total", "Players found gone.", prometheus.CounterValue)
	mMeasures      = newMetric("measures_total", "RTT samples clients reported after their join.", prometheus.CounterValue)
	mMoves         = newMetric("moves_total", "Move and Readmit decisions of the placement.", prometheus.CounterValue)
	mHandoffs      = newMetric("handoffs_total", "Handoffs the plane asked nodes for.", prometheus.CounterValue)
	mHandoffErrors = newMetric("handoff_errors_total", "Handoffs a node refused or did not answer.", prometheus.CounterValue)
	mNodeDowns     = newMetric("node_downs_total", "Nodes found down (silent for down_after).", prometheus.CounterValue)
	mNodeUps       = newMetric("node_ups_total", "Nodes found up again.", prometheus.CounterValue)
	mRegions       = newMetric("region_migrations_total", "Regions migrated to a new core.", prometheus.CounterValue)
	mObjectsMoved  = newMetric("region_objects_moved_total", "Objects the nodes migrated for region migrations.", prometheus.CounterValue)
	mRegionErrors  = newMetric("region_migration_errors_total", "Nodes' region migrations that failed (retries included).", prometheus.CounterValue)
	mRegionRetries = newMetric("region_migration_retries_total", "Failed region migrations made again.", prometheus.CounterValue)
	mRegionPending = newMetric("region_migrations_pending", "Failed region migrations waiting to be made again.", prometheus.GaugeValue)
	mPolls         = newMetric("polls_total", "Rounds of polls of the nodes.", prometheus.CounterValue)
	mEnrolledAdd   = newMetric("enrolled_added_total", "Enrolled game servers that became placement targets.", prometheus.CounterValue)
	mEnrolledDel   = newMetric("enrolled_removed_total", "Enrolled game servers taken out of the placement.", prometheus.CounterValue)
	mNodeRTTs      = newMetric("node_rtt_refits_total", "Matrices of node RTTs the nodes measured given to the placement.", prometheus.CounterValue)
	mBadPeerRTTs   = newMetric("bad_peer_rtts_total", "Nodes' reports of their peer RTTs refused.", prometheus.CounterValue)
	mRebuilt       = newMetric("rebuilt", "1 once the plane rebuilt its state from the nodes (it admits players), else 0.", prometheus.GaugeValue)
	mPlayers       = newMetric("players", "Players the placement holds.", prometheus.GaugeValue)
	mUnplaced      = newMetric("unplaced_players", "Players in game on a node that the plane could not place (no samples), at the last poll.", prometheus.GaugeValue)
	mNodeUp        = newMetric("node_up", "1 for a node of the placement that is up, 0 for one that is down.", prometheus.GaugeValue, "node", "site")
	mNodeLoad      = newMetric("node_players", "Players the placement seats on a node.", prometheus.GaugeValue, "node")
	mNodeCap       = newMetric("node_capacity", "A node's seats.", prometheus.GaugeValue, "node")
	mInstances     = newMetric("instances", "Open instances, by where they run (server or player host).", prometheus.GaugeValue, "on")
	mInstEvents    = newMetric("instance_events_total", "Instance decisions, by kind.", prometheus.CounterValue, "kind")
	mInstFailed    = newMetric("instance_node_requests_failed_total", "Admin requests to nodes for instances that failed.", prometheus.CounterValue)
	mInstRetries   = newMetric("instance_migration_retries_total", "Failed instance migrations made again.", prometheus.CounterValue)
	mInstPending   = newMetric("instance_migrations_pending", "Failed instance migrations waiting to be made again.", prometheus.GaugeValue)
	mHostsGone     = newMetric("player_hosts_gone_total", "Player hosts the polls found gone.", prometheus.CounterValue)
	mCertsIssued   = newMetric("certificates_issued_total", "Node certificates issued (POST /v1/hosts).", prometheus.CounterValue)
	mCertsRefused  = newMetric("certificate_requests_refused_total", "Certificate requests refused, by reason.", prometheus.CounterValue, "reason")
)

var allMetrics = []metric{mJoins, mRefused, mLeaves, mMeasures, mMoves, mHandoffs, mHandoffErrors, mNodeDowns, mNodeUps,
	mRegions, mObjectsMoved, mRegionErrors, mRegionRetries, mRegionPending, mPolls, mEnrolledAdd, mEnrolledDel, mNodeRTTs, mBadPeerRTTs, mRebuilt, mPlayers, mUnplaced,
	mNodeUp, mNodeLoad, mNodeCap, mInstances, mInstEvents, mInstFailed, mInstRetries, mInstPending, mHostsGone, mCertsIssued, mCertsRefused}

// collector is the plane as a prometheus.Collector.
type collector struct{ s *Server }

// Describe implements prometheus.Collector.
func (c collector) Describe(ch chan<- *prometheus.Desc) {
	for _, m := range allMetrics {
		ch <- m.desc
	}
}

// Collect implements prometheus.Collector.
func (c collector) Collect(ch chan<- prometheus.Metric) {
	s := c.s
	emit := func(m metric, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(m.desc, m.kind, v, labels...)
	}
	s.mu.Lock()
	st := s.stats
	for _, x := range []struct {
		m metric
		v int
	}{{mJoins, st.Joins}, {mRefused, st.Refused}, {mLeaves, st.Leaves}, {mMeasures, st.Measures}, {mMoves, st.Moves},
		{mHandoffs, st.Handoffs}, {mHandoffErrors, st.HandoffErrors}, {mNodeDowns, st.NodeDowns}, {mNodeUps, st.NodeUps},
		{mRegions, st.RegionMigrations}, {mObjectsMoved, st.ObjectsMoved}, {mRegionErrors, st.RegionMigrationErrors},
		{mRegionRetries, st.RegionMigrationRetries}, {mRegionPending, st.RegionMigrationsPending}, {mPolls, st.Polls}, {mEnrolledAdd, st.EnrolledAdded},
		{mEnrolledDel, st.EnrolledRemoved}, {mNodeRTTs, st.NodeRTTs}, {mBadPeerRTTs, st.BadPeerRTTs}, {mUnplaced, st.Unplaced}} {
		emit(x.m, float64(x.v))
	}
	rebuilt := 0.0
	if st.Rebuilt {
		rebuilt = 1
	}
	emit(mRebuilt, rebuilt)
	players := 0
	if s.plane != nil {
		players = s.plane.Len()
	}
	emit(mPlayers, float64(players))
	for _, n := range s.mainNodes() {
		id := strconv.FormatUint(uint64(n.ID), 10)
		up := 0.0
		if s.nodes[n.ID].up {
			up = 1
		}
		emit(mNodeUp, up, id, n.Site)
		load := 0
		if s.plane != nil {
			load = s.plane.Load(wire.NodeID(n.ID))
		}
		emit(mNodeLoad, float64(load), id)
		emit(mNodeCap, float64(n.Capacity), id)
	}
	if s.inst != nil {
		is := s.instancesState()
		on := map[string]int{"server": 0, "player_host": 0}
		for _, p := range is.Instances {
			if p.Hosted {
				on["player_host"]++
			} else {
				on["server"]++
			}
		}
		for k, v := range on {
			emit(mInstances, float64(v), k)
		}
		for k, v := range map[string]int{"placed": is.Stats.Placed, "moved": is.Stats.Moved, "overflowed": is.Stats.Overflowed,
			"promoted": is.Stats.Promoted, "new_replica": is.Stats.NewReplicas, "lost": is.Stats.Lost} {
			emit(mInstEvents, float64(v), k)
		}
		emit(mInstFailed, float64(is.Failed))
		emit(mInstRetries, float64(is.MigrationRetries))
		emit(mInstPending, float64(is.MigrationsPending))
		emit(mHostsGone, float64(is.HostsGone))
	}
	s.mu.Unlock()
	if h := s.hosts; h != nil {
		h.mu.Lock()
		emit(mCertsIssued, float64(h.issued))
		for _, r := range []string{RefusedFlood, RefusedBadRequest, RefusedCredential, RefusedStale, RefusedReplayed, RefusedExhausted, RefusedInternal} {
			emit(mCertsRefused, float64(h.refused[r]), r)
		}
		h.mu.Unlock()
	}
}
