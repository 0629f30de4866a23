// Package wire owns the messages nodes exchange and their compact, versioned
// binary codec, plus the few identifiers every layer shares: NodeID, traffic
// Class and Packet (one datagram between two nodes).
//
// Encoders append to a caller's buffer (AppendX(b, ...) []byte) so the hot
// path does not allocate; decoders never panic on arbitrary bytes and never
// allocate more than the input can justify. Callers own the buffers they
// pass in; a Packet's Payload belongs to whoever holds the Packet.
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
	ClassUpdate      Class = iota // object updates: deltas, full states, tentative writes
	ClassDiscovery                // routing of publications and subscriptions toward rendezvous nodes
	ClassMatching                 // matched publications sent from a rendezvous node to a subscriber
	ClassMaintenance              // ring upkeep, replica requests and interest refreshes, heartbeats
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
type Packet struct {
	From, To NodeID
	Class    Class
	Payload  []byte
}
