// Package live is the second driver of ARCHITECTURE.md rule 2: it runs one
// node core (package node) on real sockets, a wall clock and goroutines.
// It owns every goroutine, socket and timer of a live node; the core stays
// a sans-IO state machine.
//
// The pieces, bottom up:
//
//   - Network and Conn: authenticated connections to peer nodes, each with
//     unreliable datagrams and reliable streams. QUICNetwork implements them
//     with quic-go and mutual TLS (package live/pki); MemNetwork is an
//     in-memory network for tests under testing/synctest.
//   - HandshakeGuard: bounds a QUIC listener's handshakes (Retry under
//     load, a cap in flight, a per-source rate) and counts the packets
//     its transport drops; both QUIC listeners of a daemon run behind
//     one. Its packet filter reads the listener's socket below quic-go
//     (keeping quic-go's batched reads) and drops what cannot lead
//     anywhere: packets for connection IDs the listener never issued
//     (its connection IDs are authenticated), malformed or undersized
//     Initials, and under load connection attempts beyond a per-source
//     and a global rate. Members is the set of node IDs a node admits in its handshakes
//     (pki.Identity.Admit asks it), filled from the peer list and
//     changeable while the node runs.
//   - Mesh (a Transport): one bounded send queue per peer, drained by one
//     goroutine per peer that dials on demand and redials with exponential
//     backoff; a packet travels as a datagram when it fits (the cores
//     recover every class from loss, as in the simulator), a larger one,
//     and what is flushed at Close, as a length-prefixed frame on one
//     reliable stream per connection. When a queue is full an update
//     packet replaces the oldest queued update (coalescing) and the drop
//     is counted. An optional per-peer
//     delay emulates WAN latency (Latency). A node sends only on the
//     connections it dialled and reads only those it accepted, so two
//     nodes that talk both ways hold two connections, each with one
//     sender: no dial races, and a broken connection is redialled by the
//     side that needs it. The sender of a packet is the node named by the
//     connection's certificate, never a field of the packet.
//   - Driver: runs the node's frames at a fixed rate (wall clock → the
//     core's time.Duration), feeds received packets to Step, runs the
//     registered FrameHooks after every Tick, and sends what Drain returns.
//   - Daemon: the "overworld node" process: a TOML DaemonConfig, the CA
//     and node certificate, the QUIC transport, the driver, Prometheus
//     metrics and /healthz, /readyz, /debug/world and /debug/authority on
//     an admin HTTP address, the player endpoints (a live/player Gateway
//     as a frame hook, served on QUIC with the node's certificate and on
//     WebSocket or wss://, tokens verified with the coordinator's public
//     key for this node's world and ID, their nonces kept in the data
//     directory), the admin endpoint's /debug/ and /admin/ for loopback
//     clients only or behind a bearer secret, and certificate reloads
//     (Reload, on SIGHUP). The node core runs with failover (warm backups, promotion when a
//     majority finds a node dead) unless the configuration turns it off,
//     with a new incarnation at every start (incarnation.go: a counter in
//     the data directory, or the wall clock). Graceful shutdown tells the
//     players first, then drains: the node's primaries migrate to live
//     peers before it exits (drain.go), and a DrainReport says what moved.
//   - PeerSet: the daemon's peers, mutable at run time (peerset.go): the
//     static list plus, with membership gossip (gossip.go,
//     hashicorp/memberlist over a seed list, encrypted with the cluster's
//     gossip key), the nodes that join while it runs; Admitted tells
//     whether a node is a peer. Discovery follows the set under every
//     architecture (follow.go): broadcast targets, and a colyseus node
//     joining the running ring and leaving it after its drain. With agones.enabled the daemon runs a
//     live/agones Agent (agonesnode.go) from start to Shutdown after the
//     drain.
//
// The caller (the command line) must: load or write a DaemonConfig and
// Validate it; provide the game (Game: the world.Registry shared by every
// node, the node's initial objects and, for the player endpoints, the
// game's player.Controller; live does not import any game); build the
// daemon with NewDaemon and Run it with a context cancelled on
// SIGTERM/SIGINT, calling Reload on SIGHUP. Tests and
// other drivers can compose Mesh and Driver directly: build a Network,
// NewMesh over it, NewDriver with the node and the mesh, AddHook, then Run
// the driver and Close the mesh, each exactly once.
package live
