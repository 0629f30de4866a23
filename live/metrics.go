package live

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/overworld/overworld/internal/replica"
	"github.com/overworld/overworld/node"
	"github.com/overworld/overworld/wire"
)

// Metrics exports a live node's counters to Prometheus: the transport's
// and driver's Counters, a snapshot of the core's counters and object
// counts that a frame hook (Metrics.Hook) takes on the driver's goroutine,
// histograms of frame time and replica staleness, and the players gauge
// that the player side sets. Missing replicas and discovery latency are
// not exported: they need ground truth (which objects are in a node's
// interest but not held), which no single node has; the simulator and
// "overworld cluster" measure them.
type Metrics struct {
	Registry *prometheus.Registry
	c        *Counters

	frame     prometheus.Histogram
	staleness prometheus.Histogram
	players   prometheus.Gauge

	snap atomic.Pointer[nodeSnapshot]

	mu          sync.Mutex
	lastSample  time.Duration
	sampleEvery time.Duration
	buf         []replica.Info
}

// nodeSnapshot is what the sampler reads from the core.
type nodeSnapshot struct {
	primaries, replicas int
	stats               node.Stats
	rs                  replica.Stats
}

// NewMetrics registers the node's metrics on a fresh registry.
func NewMetrics(c *Counters) *Metrics {
	m := &Metrics{Registry: prometheus.NewRegistry(), c: c, sampleEvery: time.Second}
	m.frame = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name: "overworld_frame_seconds", Help: "Wall-clock time of one frame (Tick, hooks, drain).",
		Buckets: prometheus.ExponentialBuckets(50e-6, 2, 14)})
	m.staleness = prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "overworld_replica_staleness_seconds",
		Help:    "Age of a replica's newest state (now minus the primary's production time, clocks shared through the config's epoch), sampled once a second over every replica.",
		Buckets: prometheus.ExponentialBuckets(0.005, 2, 12)})
	m.players = prometheus.NewGauge(prometheus.GaugeOpts{Name: "overworld_players", Help: "Players connected to this node (set by the player gateway)."})
	m.Registry.MustRegister(m.frame, m.staleness, m.players, (*collector)(m),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}), collectors.NewGoCollector())
	return m
}

// ObserveFrame records one frame's wall-clock time (DriverConfig.FrameTime).
func (m *Metrics) ObserveFrame(d time.Duration) { m.frame.Observe(d.Seconds()) }

// SetPlayers sets the players gauge.
func (m *Metrics) SetPlayers(n int) { m.players.Set(float64(n)) }

// Hook returns the frame hook that samples the core once a second.
func (m *Metrics) Hook() FrameHook {
	return FrameHookFunc(func(now time.Duration, n *node.Node) {
		m.mu.Lock()
		defer m.mu.Unlock()
		if m.snap.Load() != nil && now-m.lastSample < m.sampleEvery {
			return
		}
		m.lastSample = now
		m.buf = n.Objects(m.buf[:0])
		s := &nodeSnapshot{stats: n.Stats(), rs: n.ReplicaStats()}
		for i := range m.buf {
			if m.buf[i].Primary {
				s.primaries++
				continue
			}
			s.replicas++
			if m.buf[i].Version > 0 {
				m.staleness.Observe(max(0, now-m.buf[i].Produced).Seconds())
			}
		}
		clear(m.buf)
		m.snap.Store(s)
	})
}

// Primaries and Replicas return the latest sample's object counts.
func (m *Metrics) Primaries() int {
	if s := m.snap.Load(); s != nil {
		return s.primaries
	}
	return 0
}

// collector reads Counters and the snapshot at scrape time.
type collector Metrics

var (
	descBytes = prometheus.NewDesc("overworld_bytes_total", "Packet payload bytes by direction and traffic class.", []string{"dir", "class"}, nil)
	descMsgs  = prometheus.NewDesc("overworld_messages_total", "Packets by direction and traffic class.", []string{"dir", "class"}, nil)
	descObj   = prometheus.NewDesc("overworld_objects", "Local objects: primaries and replicas.", []string{"role"}, nil)
	descBad   = prometheus.NewDesc("overworld_malformed_total", "Received packets rejected: by the transport (bad framing or class) or by the core (bad payload).", []string{"stage"}, nil)
	simple    = []struct {
		desc *prometheus.Desc
		kind prometheus.ValueType
		get  func(c *Counters) int64
	}{
		{prometheus.NewDesc("overworld_queue_drops_total", "Packets dropped from full per-peer send queues (older updates coalesced away).", nil, nil), prometheus.CounterValue, func(c *Counters) int64 { return c.QueueDrops.Load() }},
		{prometheus.NewDesc("overworld_unroutable_total", "Packets for nodes with no known address.", nil, nil), prometheus.CounterValue, func(c *Counters) int64 { return c.Unroutable.Load() }},
		{prometheus.NewDesc("overworld_send_errors_total", "Packets lost when a connection failed while sending.", nil, nil), prometheus.CounterValue, func(c *Counters) int64 { return c.SendErrors.Load() }},
		{prometheus.NewDesc("overworld_inbox_drops_total", "Received packets dropped because the frame loop fell behind.", nil, nil), prometheus.CounterValue, func(c *Counters) int64 { return c.InboxDrops.Load() }},
		{prometheus.NewDesc("overworld_handshake_refusals_total", "TLS handshakes refused: no certificate, certificate from another CA, expired, naming another node, of a node not admitted, or revoked (overworld_peer_refusals_total has them by reason).", nil, nil), prometheus.CounterValue, func(c *Counters) int64 { return c.Refused.Load() }},
		{prometheus.NewDesc("overworld_admin_refusals_total", "Admin requests refused: a missing or wrong bearer secret, or /debug/ and /admin/ asked from off loopback without a secret.", nil, nil), prometheus.CounterValue, func(c *Counters) int64 { return c.AdminRefused.Load() }},
		{prometheus.NewDesc("overworld_dials_total", "Outgoing connection attempts.", nil, nil), prometheus.CounterValue, func(c *Counters) int64 { return c.Dials.Load() }},
		{prometheus.NewDesc("overworld_dial_errors_total", "Failed outgoing connection attempts.", nil, nil), prometheus.CounterValue, func(c *Counters) int64 { return c.DialErrors.Load() }},
		{prometheus.NewDesc("overworld_connections_accepted_total", "Authenticated incoming connections.", nil, nil), prometheus.CounterValue, func(c *Counters) int64 { return c.Accepted.Load() }},
		{prometheus.NewDesc("overworld_peers_connected", "Peers with an open outgoing connection.", nil, nil), prometheus.GaugeValue, func(c *Counters) int64 { return c.Connected.Load() }},
		{prometheus.NewDesc("overworld_frames_total", "Frames run.", nil, nil), prometheus.CounterValue, func(c *Counters) int64 { return c.Frames.Load() }},
		{prometheus.NewDesc("overworld_packets_stepped_total", "Packets delivered to the core.", nil, nil), prometheus.CounterValue, func(c *Counters) int64 { return c.Steps.Load() }},
		{prometheus.NewDesc("overworld_lost_on_close_total", "Packets still queued at shutdown.", nil, nil), prometheus.CounterValue, func(c *Counters) int64 { return c.LostOnClose.Load() }},
	}
	core = []struct {
		desc *prometheus.Desc
		get  func(s *nodeSnapshot) int64
	}{
		{prometheus.NewDesc("overworld_thinks_total", "Think calls of local primaries.", nil, nil), func(s *nodeSnapshot) int64 { return s.stats.Thinks }},
		{prometheus.NewDesc("overworld_objects_created_total", "Objects created here.", nil, nil), func(s *nodeSnapshot) int64 { return s.stats.Created }},
		{prometheus.NewDesc("overworld_objects_deleted_total", "Objects deleted here.", nil, nil), func(s *nodeSnapshot) int64 { return s.stats.Deleted }},
		{prometheus.NewDesc("overworld_updates_sent_total", "Update entries sent (deltas, full states, keepalives).", nil, nil), func(s *nodeSnapshot) int64 { return s.rs.UpdatesSent }},
		{prometheus.NewDesc("overworld_full_states_sent_total", "Full states sent.", nil, nil), func(s *nodeSnapshot) int64 { return s.rs.FullSent }},
		{prometheus.NewDesc("overworld_updates_applied_total", "Updates applied to replicas.", nil, nil), func(s *nodeSnapshot) int64 { return s.rs.Applied }},
		{prometheus.NewDesc("overworld_updates_stale_total", "Updates ignored (old version, unknown base, no replica).", nil, nil), func(s *nodeSnapshot) int64 { return s.rs.Stale }},
		{prometheus.NewDesc("overworld_not_primary_refusals_total", "Messages about an object refused because their sender is not its primary as this node knows it (a full state it asked another node for, news of a primary its epoch does not name, a migration for another node).", nil, nil), func(s *nodeSnapshot) int64 { return s.rs.NotPrimary }},
		{prometheus.NewDesc("overworld_replica_timeouts_total", "Replicas deleted because their primary fell silent.", nil, nil), func(s *nodeSnapshot) int64 { return s.rs.Timeouts }},
		{prometheus.NewDesc("overworld_replicas_dropped_total", "Replicas dropped (unneeded, or dropped by the primary).", nil, nil), func(s *nodeSnapshot) int64 { return s.rs.Dropped }},
	}
)

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descBytes
	ch <- descMsgs
	ch <- descObj
	ch <- descBad
	for _, s := range simple {
		ch <- s.desc
	}
	for _, s := range core {
		ch <- s.desc
	}
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	ct := c.c
	for cl := range wire.NumClasses {
		name := wire.Class(cl).String()
		ch <- prometheus.MustNewConstMetric(descBytes, prometheus.CounterValue, float64(ct.BytesIn[cl].Load()), "in", name)
		ch <- prometheus.MustNewConstMetric(descBytes, prometheus.CounterValue, float64(ct.BytesOut[cl].Load()), "out", name)
		ch <- prometheus.MustNewConstMetric(descMsgs, prometheus.CounterValue, float64(ct.MsgsIn[cl].Load()), "in", name)
		ch <- prometheus.MustNewConstMetric(descMsgs, prometheus.CounterValue, float64(ct.MsgsOut[cl].Load()), "out", name)
	}
	for _, s := range simple {
		ch <- prometheus.MustNewConstMetric(s.desc, s.kind, float64(s.get(ct)))
	}
	s := c.snap.Load()
	if s == nil {
		s = &nodeSnapshot{}
	}
	ch <- prometheus.MustNewConstMetric(descObj, prometheus.GaugeValue, float64(s.primaries), "primary")
	ch <- prometheus.MustNewConstMetric(descObj, prometheus.GaugeValue, float64(s.replicas), "replica")
	ch <- prometheus.MustNewConstMetric(descBad, prometheus.CounterValue, float64(ct.Malformed.Load()), "transport")
	ch <- prometheus.MustNewConstMetric(descBad, prometheus.CounterValue, float64(s.stats.Malformed), "core")
	for _, k := range core {
		ch <- prometheus.MustNewConstMetric(k.desc, prometheus.CounterValue, float64(k.get(s)))
	}
}
