// Package world is the game API of overworld: what a game developer
// implements and calls, after Colyseus (Bharambe et al., NSDI 2006) Fig. 5.
//
// A game declares each kind of object once, as a Schema: a small table of
// replicated fields (Float with a quantum, Int, Bool, Ref), the fields that
// are its naming attributes (its Location: x, y, z and any other named
// numeric attribute of the world's Space), and a constructor. An object keeps
// its replicated fields in a State owned by the runtime, so the runtime can
// snapshot it, compare it and delta-encode it without any per-object code:
// the game never writes serialisation.
//
// An Object implements three methods:
//
//   - State returns its State (location and replicated fields);
//   - Interest appends its area of interest as boxes over the Space (range
//     queries such as 10 < x < 50 && 30 < y < 100);
//   - Think runs once per frame on the object's primary, with a Context that
//     reads local primaries and replicas, creates and deletes objects, and
//     writes to replicas (forwarded to their primary as tentative updates).
//
// Three optional interfaces refine what the runtime does: Attacher (the
// object is replicated wherever another object is — Colyseus' AttachTo, for
// missiles), Mover (the object's predicted velocity, used by interest
// prediction) and Anticipator (boxes the object will need soon, such as a
// dead avatar's respawn point: the node fetches what is there beforehand,
// and pushes the object to the nodes it will meet there, without counting
// the boxes as interest).
//
// Delta encoding (AppendDelta, ApplyDelta) is field-wise: a change mask, then
// for each changed field the zig-zag varint of the difference of its quantised
// values. An avatar that moves and turns costs a few bytes per frame instead of
// its whole state. Tentative writes (AppendWrite, ApplyWrite) add numeric
// differences to the primary's current state, so concurrent writes such as
// damage from two shooters both count, and set Bool and Ref fields.
//
// Everything here is pure and deterministic: no I/O, no clock, no global
// randomness. The delta codec is written here because no library offers
// quantised field-wise deltas over a schema; it never panics on arbitrary
// bytes (it is fuzzed).
package world
