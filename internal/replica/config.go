package replica

import (
	"errors"
	"fmt"
	"time"

	"github.com/overworld/overworld/wire"
	"github.com/overworld/overworld/world"
)

// Config tunes a Store. Zero durations and counts take the defaults of
// DefaultConfig; see Validate.
type Config struct {
	Self     wire.NodeID     // this node
	Registry *world.Registry // the game's schemas, identical on every node

	// HistoryLen is how many past states each primary keeps for delta
	// bases. 8 frames (800 ms at 10 Hz) cover a dormant holder's 400 ms
	// and a resync request's round trip; a holder whose version fell out
	// of it gets a full state. A replica keeps only the newest state it
	// received (see replicaHistory).
	HistoryLen int
	// RetransmitAfter: a holder is taken to have every update sent to it
	// (it acknowledges only to ask for a resync, when an update does not
	// apply to the version it has); so that it learns of a lost last
	// update of an object that then stays idle, the primary confirms its
	// last change with a keepalive this long after sending it. 1.5 s (the
	// keepalive period: the confirmation is the first periodic keepalive).
	RetransmitAfter time.Duration
	// KeepalivePeriod: an idle primary tells each holder "you are up to date"
	// this often, so holders can tell a quiet object from a dead one.
	// 1.5 s: a replica of a crashed node's object goes within 5.25 s.
	KeepalivePeriod time.Duration
	// ReplicaTimeout: a replica that hears nothing about its object for this
	// long is deleted. 3.5 keepalive periods survive three lost keepalives.
	ReplicaTimeout time.Duration
	// PushedTimeout: a replica this node did not ask for (pushed by Keep
	// or attachment) that hears nothing for this long is deleted sooner:
	// its push ended, and the primary's drop was lost, so nobody updates
	// it, and a game reading it would act on an old state. Default
	// KeepalivePeriod + KeepaliveWait + 500 ms (the longest silence of a
	// live one, and a trip); at most ReplicaTimeout.
	PushedTimeout time.Duration
	// RegisterPeriod: a node re-registers interest in each replica it needs
	// this often; RegistrationTTL: a primary drops a holder whose last
	// registration is older than this (3 periods tolerate 2 losses).
	RegisterPeriod  time.Duration
	RegistrationTTL time.Duration
	// PushTTL: how long a holder added by Keep (broadcast, client-server,
	// attachment) stays after the last Keep. One second rides out an object
	// wandering along the edge of a view without re-sending full states.
	PushTTL time.Duration
	// RequestRetry: a requested replica that has not arrived, or a handoff
	// not yet confirmed, is requested again after this long.
	RequestRetry time.Duration
	// ReplicaLinger: a requested replica outside the node's view is kept
	// this long before it is dropped (objects often come back at once).
	ReplicaLinger time.Duration
	// DormantAfter and DormantEvery: a requested replica that has been out
	// of the node's view for DormantAfter while it lingers (ReplicaLinger)
	// is dormant: the node tells the primary (wire.TypeDormant), which then
	// sends it updates at most once every DormantEvery instead of every
	// frame, until the replica is back in view and the node registers it
	// again (at once). Objects that come back find their replica there,
	// at most DormantEvery plus a trip stale, and lingering costs a
	// fraction of the updates. DormantEvery must be below the history
	// (HistoryLen frames), or dormant holders get full states. Defaults
	// 100 ms and 400 ms; a negative DormantEvery keeps
	// lingering replicas at the full rate.
	DormantAfter time.Duration
	DormantEvery time.Duration
	// TombstoneTTL: how long a deleted object's ID is remembered, so late or
	// reordered messages cannot bring it back.
	TombstoneTTL time.Duration
	// NoAttach turns proactive replication off: world.Attacher is
	// ignored, so attached objects (missiles) are found by discovery like
	// any other (for experiments that measure what attachment saves).
	NoAttach bool
	// KeepaliveWait: a frame of keepalives alone (nothing changed in the
	// objects it names) may wait this long for another packet to the
	// holder to ride in (wire.Outbox.CommitLater). Default 500 ms;
	// negative: keepalives go at once.
	KeepaliveWait time.Duration
	// DormantTTL: a dormant registration (wire.TypeDormant) lapses this
	// long after it arrives, without a wire.TypeDrop either way: the
	// holder drops a dormant replica when it stops lingering, at most
	// ReplicaLinger − DormantAfter after it went dormant, and sends
	// nothing. Nodes of one world must share ReplicaLinger and
	// DormantAfter. Zero (the default) means ReplicaLinger (a frame or
	// two past the holder's drop); negative: a dormant holder is registered for
	// RegistrationTTL like any other and drops its replica with a
	// wire.TypeDrop. Ignored when DormantEvery is negative.
	DormantTTL time.Duration
	// Inc is this node's incarnation (node.Config.Incarnation): its writes
	// carry it, so a restarted writer's new sequence numbers are not taken
	// for an earlier run's.
	Inc uint16
	// WriteRetry: a write not acknowledged this long after it was sent is
	// sent again, until it is acknowledged, its object is deleted, or
	// WriteGiveUp passes (then it is abandoned and counted). Defaults
	// 250 ms and 60 s.
	WriteRetry  time.Duration
	WriteGiveUp time.Duration
	// ForwardTTL: a primary that stepped down (a newer epoch replaced it)
	// points what still reaches it to the new primary for this long. (A
	// node a primary left by migration does so for a RegistrationTTL
	// after the last time its reference was used: every holder has
	// repointed by then.) Default 2 × RegistrationTTL.
	ForwardTTL time.Duration
	// BindPeriod: a primary whose object was created elsewhere re-binds it
	// at the home of its ID (the node named by the ID's origin) this
	// often; the home forgets a binding after 3 periods. Default 5 s.
	BindPeriod time.Duration
	// Failover turns warm backups on: each primary keeps a backup on
	// another node (BackupPolicy), sent every frame its state changes;
	// primary and backup exchange heartbeats every Heartbeat; a backup
	// that hears nothing from the primary's node for SuspectAfter asks
	// the other nodes to probe it (ProbeTimeout), and promotes itself when
	// Witnesses of them find it dead too. Writes are acknowledged only
	// once the backup holds them.
	Failover bool
	// Heartbeat (default 100 ms), SuspectAfter (400 ms), ProbeTimeout
	// (350 ms). Witnesses is how many other nodes must find a suspect
	// dead; 0 (the default) means a majority of the cluster with this
	// node (half of Peers, rounded up... see health.go), so that of two
	// sides of a partition at most one declares the other dead: the
	// other can neither promote a backup nor choose a new one, and a
	// primary cut off from its backup acknowledges no write.
	Heartbeat    time.Duration
	SuspectAfter time.Duration
	ProbeTimeout time.Duration
	Witnesses    int
	// Peers, if set, returns the cluster's other nodes: witnesses, and
	// backups for objects no other node holds, are chosen among them.
	Peers func() []wire.NodeID
	// Delay, if set, estimates the one-way delay between two nodes (a
	// measured or estimated latency): the default backup policy and the
	// choice of witnesses use it.
	Delay func(a, b wire.NodeID) time.Duration
	// Backup chooses a primary's backup; nil means LeastLatency.
	Backup BackupPolicy
	// OnEvent, if set, is called with every authority event (migrations,
	// promotions, writes applied and acknowledged, deaths): the lab's
	// fault checker reads them. It must not call back into the store.
	OnEvent func(Event)
	// MaxFrame: an updates frame is closed and a new one started once its
	// body exceeds this many bytes, so packets stay under the MTU.
	MaxFrame int
}

// DefaultConfig returns the defaults (Self and Registry unset).
func DefaultConfig() Config {
	return Config{
		HistoryLen:      8,
		RetransmitAfter: 1500 * time.Millisecond,
		KeepalivePeriod: 1500 * time.Millisecond,
		ReplicaTimeout:  5250 * time.Millisecond,
		RegisterPeriod:  2 * time.Second,
		RegistrationTTL: 6 * time.Second,
		PushTTL:         time.Second,
		RequestRetry:    400 * time.Millisecond,
		ReplicaLinger:   time.Second,
		DormantAfter:    100 * time.Millisecond,
		DormantEvery:    400 * time.Millisecond,
		TombstoneTTL:    30 * time.Second,
		KeepaliveWait:   500 * time.Millisecond,
		MaxFrame:        1000,
		WriteRetry:      250 * time.Millisecond,
		WriteGiveUp:     60 * time.Second,
		BindPeriod:      5 * time.Second,
		Heartbeat:       100 * time.Millisecond,
		SuspectAfter:    400 * time.Millisecond,
		ProbeTimeout:    350 * time.Millisecond,
	}
}

// ErrConfig reports an invalid Config.
var ErrConfig = errors.New("replica: bad config")

// Validate returns c with defaults filled in, or an error naming the first
// bad field. It works on a copy.
func (c Config) Validate() (Config, error) {
	d := DefaultConfig()
	if c.Registry == nil {
		return c, fmt.Errorf("%w: no Registry", ErrConfig)
	}
	if c.Self > MaxNode {
		return c, fmt.Errorf("%w: node ID %d: an epoch names its node in 15 bits (IDs up to %d)", ErrConfig, c.Self, MaxNode)
	}
	fill := func(v *time.Duration, def time.Duration, name string) error {
		if *v == 0 {
			*v = def
		}
		if *v < 0 {
			return fmt.Errorf("%w: %s is negative (%v)", ErrConfig, name, *v)
		}
		return nil
	}
	for _, f := range []struct {
		v    *time.Duration
		def  time.Duration
		name string
	}{
		{&c.RetransmitAfter, d.RetransmitAfter, "RetransmitAfter"},
		{&c.KeepalivePeriod, d.KeepalivePeriod, "KeepalivePeriod"},
		{&c.ReplicaTimeout, d.ReplicaTimeout, "ReplicaTimeout"},
		{&c.RegisterPeriod, d.RegisterPeriod, "RegisterPeriod"},
		{&c.RegistrationTTL, d.RegistrationTTL, "RegistrationTTL"},
		{&c.PushTTL, d.PushTTL, "PushTTL"},
		{&c.RequestRetry, d.RequestRetry, "RequestRetry"},
		{&c.ReplicaLinger, d.ReplicaLinger, "ReplicaLinger"},
		{&c.TombstoneTTL, d.TombstoneTTL, "TombstoneTTL"},
		{&c.DormantAfter, d.DormantAfter, "DormantAfter"},
		{&c.WriteRetry, d.WriteRetry, "WriteRetry"},
		{&c.WriteGiveUp, d.WriteGiveUp, "WriteGiveUp"},
		{&c.BindPeriod, d.BindPeriod, "BindPeriod"},
		{&c.Heartbeat, d.Heartbeat, "Heartbeat"},
		{&c.SuspectAfter, d.SuspectAfter, "SuspectAfter"},
		{&c.ProbeTimeout, d.ProbeTimeout, "ProbeTimeout"},
	} {
		if err := fill(f.v, f.def, f.name); err != nil {
			return c, err
		}
	}
	// A negative DormantEvery stays negative (off), so that validating
	// twice changes nothing.
	if c.DormantEvery == 0 {
		c.DormantEvery = d.DormantEvery
	}
	if c.KeepaliveWait == 0 {
		c.KeepaliveWait = d.KeepaliveWait
	}
	if c.DormantTTL == 0 {
		c.DormantTTL = c.ReplicaLinger
	}
	if c.DormantTTL > 0 && c.DormantTTL < c.ReplicaLinger-c.DormantAfter {
		return c, fmt.Errorf("%w: DormantTTL %v is shorter than ReplicaLinger − DormantAfter (%v): a primary would forget a dormant holder that still keeps its replica",
			ErrConfig, c.DormantTTL, c.ReplicaLinger-c.DormantAfter)
	}
	if c.HistoryLen == 0 {
		c.HistoryLen = d.HistoryLen
	}
	if c.HistoryLen < 1 || c.HistoryLen > 1024 {
		return c, fmt.Errorf("%w: HistoryLen %d (want 1 to 1024)", ErrConfig, c.HistoryLen)
	}
	if c.MaxFrame == 0 {
		c.MaxFrame = d.MaxFrame
	}
	if c.MaxFrame < 64 {
		return c, fmt.Errorf("%w: MaxFrame %d (want at least 64)", ErrConfig, c.MaxFrame)
	}
	if c.PushedTimeout == 0 {
		c.PushedTimeout = min(c.ReplicaTimeout, c.KeepalivePeriod+max(c.KeepaliveWait, 0)+500*time.Millisecond)
	}
	if c.PushedTimeout <= c.KeepalivePeriod || c.PushedTimeout > c.ReplicaTimeout {
		return c, fmt.Errorf("%w: PushedTimeout %v must exceed KeepalivePeriod %v and not ReplicaTimeout %v",
			ErrConfig, c.PushedTimeout, c.KeepalivePeriod, c.ReplicaTimeout)
	}
	if c.ReplicaTimeout <= c.KeepalivePeriod {
		return c, fmt.Errorf("%w: ReplicaTimeout %v must exceed KeepalivePeriod %v (replicas of idle objects would time out)",
			ErrConfig, c.ReplicaTimeout, c.KeepalivePeriod)
	}
	if c.ForwardTTL == 0 {
		c.ForwardTTL = 2 * c.RegistrationTTL
	}
	if c.ForwardTTL < c.RegistrationTTL {
		return c, fmt.Errorf("%w: ForwardTTL %v is shorter than RegistrationTTL %v: holders would lose the moved primary", ErrConfig, c.ForwardTTL, c.RegistrationTTL)
	}
	if c.Witnesses < 0 || c.Witnesses > 1024 {
		return c, fmt.Errorf("%w: Witnesses %d (want 0, a majority, or 1 to 1024)", ErrConfig, c.Witnesses)
	}
	if c.SuspectAfter <= c.Heartbeat {
		return c, fmt.Errorf("%w: SuspectAfter %v must exceed Heartbeat %v", ErrConfig, c.SuspectAfter, c.Heartbeat)
	}
	if c.Heartbeat >= time.Second {
		return c, fmt.Errorf("%w: Heartbeat %v (want under 1 s)", ErrConfig, c.Heartbeat)
	}
	if c.RegistrationTTL <= c.RegisterPeriod {
		return c, fmt.Errorf("%w: RegistrationTTL %v must exceed RegisterPeriod %v", ErrConfig, c.RegistrationTTL, c.RegisterPeriod)
	}
	return c, nil
}
