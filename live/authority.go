package live

import (
	"encoding/json"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/overworld/overworld/internal/replica"
	"github.com/overworld/overworld/node"
	"github.com/overworld/overworld/wire"
)

// A daemon's authority log: the node core reports every authority event
// (node.AuthorityEvent: migrations, installations, promotions, deaths,
// writes) to ReplicaConfig.OnEvent on the driver's goroutine. The daemon
// counts them all (the metric overworld_authority_events_total), keeps the
// latest AuthorityLogLen of the rare ones (not writes, not backup choices)
// for /debug/authority, logs deaths and promotions once per frame, and
// hands them to the drain while it runs.

// AuthorityLogLen is how many authority events /debug/authority keeps.
const AuthorityLogLen = 4096

// AuthorityRecord is one authority event in /debug/authority: its kind
// (node.AuthorityEventKind's name), the node core's time (nanoseconds
// since the daemon's epoch: nodes sharing an epoch share the clock), the
// object, its new epoch, the other node (the target, the source, the dead
// node) and the version.
type AuthorityRecord struct {
	Kind    string `json:"kind"`
	AtNs    int64  `json:"at_ns"`
	ID      uint64 `json:"id,omitempty"`
	Epoch   uint32 `json:"epoch,omitempty"`
	Node    uint32 `json:"node,omitempty"`
	Version uint64 `json:"version,omitempty"`
}

// AuthorityLog is what /debug/authority serves: the node, its incarnation,
// whether it runs failover, every event kind's count, the latest rare
// events (oldest first; Dropped older ones no longer kept) and, once the
// node drains, its drain report.
type AuthorityLog struct {
	Node        uint32            `json:"node"`
	Incarnation uint16            `json:"incarnation"`
	Failover    bool              `json:"failover"`
	Counts      map[string]int64  `json:"counts"`
	Dropped     int64             `json:"dropped"`
	Events      []AuthorityRecord `json:"events"`
	Drain       *DrainReport      `json:"drain,omitempty"`
}

// numEventKinds bounds node.AuthorityEventKind's values.
const numEventKinds = 32

type authorityLog struct {
	node     uint32
	inc      uint16
	failover bool
	log      *slog.Logger
	counts   [numEventKinds]atomic.Int64

	mu      sync.Mutex
	ring    []AuthorityRecord
	head    int // the oldest record, once the ring is full
	dropped int64
	drain   *DrainReport

	// The driver's goroutine only.
	deaths   []wire.NodeID
	promoted map[wire.NodeID]int
	drainer  *drainer // while the node drains
}

func newAuthorityLog(self wire.NodeID, inc uint16, failover bool, log *slog.Logger) *authorityLog {
	return &authorityLog{node: uint32(self), inc: inc, failover: failover, log: log, promoted: map[wire.NodeID]int{}}
}

// event is the node's ReplicaConfig.OnEvent.
func (a *authorityLog) event(ev node.AuthorityEvent) {
	if int(ev.Kind) < numEventKinds {
		a.counts[ev.Kind].Add(1)
	}
	switch ev.Kind {
	case node.EvWriteApplied, node.EvWriteAcked, node.EvWriteAbandoned, node.EvBackup:
		return
	case node.EvDead:
		a.deaths = append(a.deaths, ev.Node)
	case node.EvPromoted:
		a.promoted[ev.Node]++
	}
	if a.drainer != nil {
		a.drainer.event(ev)
	}
	r := AuthorityRecord{Kind: ev.Kind.String(), AtNs: int64(ev.At), ID: uint64(ev.ID), Epoch: ev.Epoch, Node: uint32(ev.Node), Version: ev.Version}
	a.mu.Lock()
	if len(a.ring) < AuthorityLogLen {
		a.ring = append(a.ring, r)
	} else {
		a.ring[a.head] = r
		a.head = (a.head + 1) % len(a.ring)
		a.dropped++
	}
	a.mu.Unlock()
}

// Frame logs the frame's deaths and promotions (a frame hook).
func (a *authorityLog) Frame(now time.Duration, n *node.Node) {
	for _, d := range a.deaths {
		a.log.Warn("peer declared dead by the failure detector", "peer", d, "at", now, "promoted_here", a.promoted[d])
		delete(a.promoted, d)
	}
	a.deaths = a.deaths[:0]
	for _, d := range slices.Sorted(maps.Keys(a.promoted)) {
		a.log.Info("backups promoted: this node took over primaries", "of_node", d, "objects", a.promoted[d], "at", now)
		delete(a.promoted, d)
	}
}

func (a *authorityLog) setDrain(r DrainReport) {
	a.mu.Lock()
	a.drain = &r
	a.mu.Unlock()
}

// snapshot returns the log as /debug/authority serves it.
func (a *authorityLog) snapshot() AuthorityLog {
	s := AuthorityLog{Node: a.node, Incarnation: a.inc, Failover: a.failover, Counts: map[string]int64{}}
	for k := range a.counts {
		if v := a.counts[k].Load(); v > 0 {
			s.Counts[node.AuthorityEventKind(k).String()] = v
		}
	}
	a.mu.Lock()
	s.Events = make([]AuthorityRecord, 0, len(a.ring))
	s.Events = append(append(s.Events, a.ring[a.head:]...), a.ring[:a.head]...)
	s.Dropped, s.Drain = a.dropped, a.drain
	a.mu.Unlock()
	return s
}

func (a *authorityLog) serve(w http.ResponseWriter, _ *http.Request) {
	b, err := json.Marshal(a.snapshot())
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.Write(b)
}

var descAuth = prometheus.NewDesc("overworld_authority_events_total",
	"Authority events of the node core: migrated, installed, promoted, stepped-down, dead, migrate-aborted, backup (a backup chosen), write-applied, write-acked, write-abandoned.",
	[]string{"kind"}, nil)

// Describe implements prometheus.Collector.
func (a *authorityLog) Describe(ch chan<- *prometheus.Desc) { ch <- descAuth }

// Collect implements prometheus.Collector: every kind of event, zeros
// included.
func (a *authorityLog) Collect(ch chan<- prometheus.Metric) {
	for k := node.EvMigrated; k <= replica.EvMigrateAborted; k++ {
		ch <- prometheus.MustNewConstMetric(descAuth, prometheus.CounterValue, float64(a.counts[k].Load()), k.String())
	}
}
