// Package wire owns the messages nodes exchange and their compact, versioned
// binary codec, plus the few identifiers every layer shares: NodeID, traffic
// Class and Packet (one datagram between two nodes).
//
// A payload is one version byte followed by frames; a frame is a type byte,
// the uvarint length of its body, and the body. Object IDs travel as two
// uvarints (origin, sequence), the locators' coordinates as zigzag varints
// on a fixed-point Grid (1/16 unit by default; boxes rounded outward),
// times and lifetimes as uvarint milliseconds (an Updates frame's time in
// two bytes modulo TimeWrap), routed ring keys byte-reversed. The messages
// are Updates (deltas against the version last sent, full states,
// keepalives), Acks (resync requests), Writes (tentative writes, numbered
// per writer so that each is applied once), IDs (Register, Drop, Delete,
// Dormant), Handoffs (client-server object creation), Pubs (Publish,
// Match), Subscribe, the ring's messages, Locate (the distributed
// locator's), and the messages of authority (authority.go): Migrate,
// Epochs (MigrateAck, Release), Where, Backup, BackupAcks, WriteAcks,
// Heartbeat and Probe (Probe, ProbeReply). An Outbox batches the frames one
// step produces into one packet per destination, whatever their classes
// (Packet.Parts splits such a packet's bytes by class), up to an MTU-sized
// payload; frames committed with CommitLater wait for a packet to ride in.
//
// Callers must: encode with the AppendX functions (they append to the
// caller's buffer and do not allocate when it has room); open a received
// payload with OpenFrames and decode each frame body with the matching
// (*X).Decode, which reuses the message's slices, never panics on arbitrary
// bytes, never allocates more than the body can justify, and returns errors
// wrapping ErrMalformed. Decoded byte slices alias the payload. A Packet's
// Payload belongs to whoever holds the Packet.
//
// wire is public, unlike the protocol cores that speak it: its identifiers
// (NodeID, Packet, Class) are what every driver and every node core
// exchanges, so a simulated or live driver written outside this module
// needs them, and its byte format is the specification another
// implementation follows (docs/protocol.md, with test vectors).
package wire

import "fmt"

// NodeID names one node of a cluster. IDs are assigned by whoever builds the
// cluster (the simulator or the live coordinator) and are never reused
// within one run. Zero is a valid ID.
type NodeID uint32

// Class is the traffic class of a packet, used for per-class bandwidth
// accounting (ARCHITECTURE.md, "per-node bandwidth").
type Class uint8

// Traffic classes. The numbering is part of metrics files; append only.
const (
	ClassUpdate      Class = iota // replica sync: deltas, full states, acks, tentative writes, replica requests and drops
	ClassDiscovery                // routing of publications and subscriptions toward rendezvous nodes
	ClassMatching                 // matched publications sent from a rendezvous node to a subscriber
	ClassMaintenance              // ring upkeep (stabilisation, probes, lookups) and locator hand-offs
	ClassControl                  // coordinator traffic: joins, assignments, migrations
	NumClasses       = 5          // number of classes; valid classes are 0..NumClasses-1
)

var classNames = [NumClasses]string{"update", "discovery", "matching", "maintenance", "control"}

// String returns the class's lower-case name ("update", "discovery", ...).
func (c Class) String() string {
	if int(c) < len(classNames) {
		return classNames[c]
	}
	return fmt.Sprintf("class(%d)", uint8(c))
}

// Valid reports whether c is one of the defined classes.
func (c Class) Valid() bool { return int(c) < NumClasses }

// ParseClass is the inverse of Class.String.
func ParseClass(s string) (Class, error) {
	for i, n := range classNames {
		if n == s {
			return Class(i), nil
		}
	}
	return 0, fmt.Errorf("wire: unknown traffic class %q (want one of %v)", s, classNames)
}

// Packet is one datagram from one node to another. Payload is an encoded
// message; the network that carries it never looks inside.
//
// Class is the traffic class of the packet's header (and its version
// byte), and of all of it unless Parts is set: a packet whose frames are of
// several classes has Parts[c] = the bytes of its class-c frames.
// ClassSizes splits a packet's size by class for accounting.
type Packet struct {
	From, To NodeID
	Class    Class
	Payload  []byte
	Parts    *[NumClasses]uint32
}

// Droppable reports whether p carries replica updates alone (ClassUpdate,
// no other class): superseded by the next, such a packet may be lost, and
// the live mesh drops it first when a peer's send queue is full.
func (p *Packet) Droppable() bool { return p.Class == ClassUpdate && p.Parts == nil }

// ClassSizes returns the bytes of p per traffic class, header bytes
// (IP/UDP, added by the caller) and the version byte counted under
// p.Class.
func (p *Packet) ClassSizes(header uint64) (sizes [NumClasses]uint64) {
	total := uint64(len(p.Payload)) + header
	if p.Parts == nil || !p.Class.Valid() {
		if p.Class.Valid() {
			sizes[p.Class] = total
		}
		return sizes
	}
	rest := total
	for c, n := range p.Parts {
		if Class(c) != p.Class {
			sizes[c] = min(uint64(n), rest)
			rest -= sizes[c]
		}
	}
	sizes[p.Class] = rest
	return sizes
}
