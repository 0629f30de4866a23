// Package player is the player side of live mode: the endpoint through
// which players join a node, control their avatars and receive what their
// avatars see, and the client that speaks to it.
//
// # Pieces
//
//   - Tokens (IssueToken, Verifier): a player proves it was admitted by
//     the coordinator with a token signed by the coordinator's Ed25519
//     key, carrying the player ID, its audience (a world and the one node
//     of it the token admits to), issue and expiry times and a random
//     nonce; or, with VerifierConfig.JWTKey, a standard EdDSA JWT with the
//     same claims (jwt.go). A node's Verifier refuses a bad signature, a
//     token for another world or node, an expired or long-lived token and
//     a replayed nonce (kept until its token expires in a bounded
//     NonceStore: OpenNonceFile's survives restarts) before any per-player
//     state exists. InitKeys, LoadPrivateKey and LoadPublicKey manage the
//     coordinator key files.
//   - Limits: each endpoint's bounds on connections whose token has not
//     verified (per source address, in all, a deadline); a connection
//     takes a player slot only once its token verified.
//   - Gateway: the node side. Connection goroutines (Serve, ServeQUIC,
//     WSHandler) authenticate and queue joins, inputs and acknowledgements;
//     Frame, called by the driver once per frame on its own goroutine
//     after node.Tick (it implements live.FrameHook), admits players
//     through the game's Controller, applies their inputs, and encodes one
//     State per player, handed back to the connection's writer. Every
//     queue is bounded; a slow client's unwritten State is replaced by the
//     newer one (coalesced), so Frame never blocks.
//   - Avatar deeds (deed.go: IssueDeed, VerifyDeed): after a
//     join, and after a rejoin once the avatar is there, the gateway
//     gives the player a deed naming its avatar, the player (its
//     token's subject) and the world, signed with the node's TLS key
//     (Config.Identity) and carrying the node's certificate. A Rejoin
//     must present it, and every node of the cluster checks it with the
//     cluster CA alone (pki.Identity.VerifyIssuer), so that only the
//     player who owned an avatar takes it back after a handoff or a
//     failover, even when the node that issued the deed is dead.
//   - Encoder and View: the per-player delta encoding and its inverse.
//   - Client: the player side (Join, Run with a Brain, Handle), used by
//     `overworld bot`.
//
// # The client protocol (version 2)
//
// Every message is [version = 2] [type] [body]; integers are unsigned
// varints unless said otherwise, byte strings and strings are a varint
// length and the bytes. A QUIC connection carries the messages on its one
// bidirectional stream, each preceded by its varint length; a WebSocket
// carries one message per binary message. Client messages are at most
// MaxClientMessage bytes.
//
//	Join   (1) client → node  token
//	JoinOK (2) node → client  player, avatar ID, frame period (ns), history (frames),
//	                          space: dims, attribute names;
//	                          kinds: count, then per kind (kind 1, 2, ...):
//	                          name, field count, per field: name,
//	                          type (1 float, 2 int, 3 bool, 4 ref),
//	                          and for floats the quantum (8 bytes, IEEE 754, big-endian)
//	Input  (3) client → node  seq (1, 2, ...; increasing), game input (≤ MaxInput bytes)
//	State  (4) node → client  frame, base frame (0: none), newest input seq applied,
//	                          creations: count, per object: ID gap, kind, world.AppendDelta(nil, state)
//	                          updates:   count, per object: ID gap, world.AppendDelta(base state, state)
//	                          removals:  count, per object: ID gap
//	Ack    (5) client → node  frame
//	Leave  (6) client → node  (empty)
//	Error  (7) node → client  code, text; the node closes the connection after it
//	Redirect (8) node → client  node, QUIC address, WebSocket URL, avatar, input seq
//	Rejoin (9) client → node  token, avatar deed, avatar, input seq
//	Deed  (10) node → client  avatar deed (after JoinOK; after a Rejoin's
//	                          avatar arrived; again at half its life)
//
// A version-1 client's first message is answered with a version-1 Error
// (CodeMalformed) telling it to upgrade.
//
// A State lists the objects inside the avatar's interest boxes (from the
// node's primaries and replicas) and the avatar itself, relative to the
// base frame's list: objects that appeared (full state), changed (delta),
// or disappeared; unchanged objects are carried over from the base. IDs
// within each list increase; each is sent as its gap from the previous one
// (the first from 0). The node encodes against the newest frame the
// client acknowledged, if it still holds that frame's snapshot (the last
// "history" frames), otherwise from scratch (base 0); the client keeps as
// many snapshots, applies a State whose base it holds and that is
// newer than the newest it applied, and acknowledges it. A client may
// therefore lose or skip States (a slow client's are coalesced) and always
// reconstructs exactly the quantised state the node had.
//
// A handoff (Gateway.HandOff) moves a player to another node
// make-before-break: the avatar migrates there, the client gets a
// Redirect, rejoins the new node (Rejoin, with the input seq the old node
// reached, and the inputs after it again), and leaves the old node only
// once the new node's first State is applied; the old node sends States
// until then and ignores the player's inputs. A Client follows redirects
// once given a dialer (SetDialer, RedirectDialer).
//
// # What the caller must do
//
//  1. Build a Verifier from the coordinator's public key, and a Gateway
//     with it, the game's Controller and the node's pki.Identity (whose
//     key signs avatar deeds and whose CA checks them).
//  2. Register the Gateway as a frame hook of the node's driver: Frame(now,
//     n) once per frame, after n.Tick(now), on the goroutine that owns n.
//  3. Accept connections: ServeQUIC on a quic.Listener (QUICConfig,
//     a TLS config with NextProtos ALPN; OnQUICAccept to hear of each
//     accepted connection), WSServer's server on its wrapped listener
//     (WSHandler alone applies no pre-auth Limits), or Serve on any Conn.
package player
